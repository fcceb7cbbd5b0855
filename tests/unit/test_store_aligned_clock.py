"""A cluster node's clock is the database's: ``StoreAlignedClock`` (core.clock), on a fake
clock. In a cluster one node's instants are compared by another (execution leases, the
shared ready queue), so a node with a skewed clock reaped the others' live runs."""

from __future__ import annotations

from cronwheel.core.clock import FakeClock, StepDetector, StoreAlignedClock

NOW = 1_767_225_600_000


def test_a_node_in_sync_is_not_moved() -> None:
    clock = StoreAlignedClock(FakeClock(NOW), tolerance_ms=500)
    assert clock.align(NOW + 400, NOW - 5, NOW + 5) is None
    assert clock.now_ms() == NOW and clock.offset_ms == 0


def test_a_node_ahead_or_behind_runs_on_the_database_s_clock() -> None:
    base = FakeClock(NOW)
    clock = StoreAlignedClock(base, tolerance_ms=500)
    # the database read NOW - 30 s half-way through a 10 ms call: this node is 30 s ahead (by 29,995 ms)
    assert clock.align(NOW - 30_000, NOW - 10, NOW) == -29_995
    assert clock.now_ms() == NOW - 29_995
    base.advance(1_000)
    assert clock.now_ms() == NOW + 1_000 - 29_995
    assert clock.monotonic() == base.monotonic()
    # jitter within the tolerance does not move it back and forth
    assert clock.align(NOW + 1_000 - 29_800, NOW + 1_000, NOW + 1_000) is None
    # its clock is fixed (NTP stepped it): back to none at all
    base.set(NOW - 30_000 + 2_000)
    assert clock.align(NOW - 30_000 + 2_000, NOW - 30_000 + 2_000, NOW - 30_000 + 2_000) == 0
    assert clock.now_ms() == NOW - 28_000


def test_a_slow_round_trip_tells_too_little_to_move_the_clock() -> None:
    clock = StoreAlignedClock(FakeClock(NOW), tolerance_ms=500)
    assert clock.align(NOW + 60_000, NOW - 600, NOW + 1) is None
    assert clock.offset_ms == 0


def test_a_loop_built_before_the_node_s_clock_was_aligned_sees_the_alignment_as_a_step() -> None:
    """The scheduler's and the dispatcher's wheels are built on the clock's instant when the
    node is put together, before its first membership turn aligns it: a node 30 s ahead kept
    wheels 30 s in the future (a wheel cannot move back) and started nothing for ~20 s. Their
    step detectors observe that instant, so the first turn sees the alignment and rebuilds."""
    clock = StoreAlignedClock(FakeClock(NOW + 30_000), tolerance_ms=500)
    steps = StepDetector.since(clock)
    assert clock.align(NOW, NOW + 30_000 - 5, NOW + 30_000 + 5) == -30_000
    assert steps.observe(clock.now_ms(), clock.monotonic()) == -30_000
    assert StepDetector().observe(clock.now_ms(), clock.monotonic()) == 0  # a detector with no past sees none
