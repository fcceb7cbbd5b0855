"""Which leases the reaper may take back after the node could not hear heartbeats (a stall,
a store outage, a forward clock step): pure logic on a fake clock."""

from __future__ import annotations

from cronwheel.core.clock import FakeClock, ReapCutoff

PAUSE = 60.0
T = 1_800_000_000_000


def test_every_lease_that_ran_out_is_the_reapers_when_the_node_heard_all_along() -> None:
    clock = FakeClock(T)
    cut = ReapCutoff(PAUSE)
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == T
    clock.advance(3_600_000)
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == T + 3_600_000


def test_after_a_deaf_spell_only_leases_that_ran_out_before_it_go_until_the_pause_ends() -> None:
    clock = FakeClock(T)
    cut = ReapCutoff(PAUSE)
    clock.advance(70_000)  # the node stopped for 70 s from T
    cut.deaf(T, clock.monotonic())
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == T
    clock.advance(59_999)
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == T
    clock.advance(1)
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == clock.now_ms()


def test_an_outage_keeps_its_first_instant_and_the_pause_runs_from_its_last_failure() -> None:
    clock = FakeClock(T)
    cut = ReapCutoff(PAUSE)
    for _ in range(30):  # a failed renewal or reap each second for 30 s
        cut.deaf(clock.now_ms(), clock.monotonic())
        clock.advance(1_000)
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == T
    clock.advance(58_999)  # the last failure was at T + 29 s
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == T, "a pause from the last failure"
    clock.advance(1)
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == clock.now_ms()


def test_a_later_spell_after_the_pause_starts_afresh() -> None:
    clock = FakeClock(T)
    cut = ReapCutoff(PAUSE)
    cut.deaf(T, clock.monotonic())
    clock.advance(120_000)
    cut.deaf(clock.now_ms(), clock.monotonic())
    assert cut.cutoff(clock.now_ms(), clock.monotonic()) == T + 120_000
