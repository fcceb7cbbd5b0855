"""The hierarchical timing wheel (and the instant groups built on it): never early, exactly once,
in order; no clock, no sleeping."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cronwheel.core.instantgroups import InstantGroups
from cronwheel.core.wheel import TimingWheel

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a multiple of 10 ms


def make(start: int = T0, tick: int = 10, size: int = 64) -> TimingWheel[str]:
    return TimingWheel(start, tick, size)


def levels(w: TimingWheel[str]) -> int:
    return len(w._levels)  # white-box: overflow levels are created on demand


def uncached_next_expiry(w: TimingWheel[int] | TimingWheel[str]) -> int | None:
    w._next_ok = False  # white-box: force the scan that the cache usually saves
    return w.next_expiry()


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "exc"),
    [
        ((0, 0, 64), ValueError),
        ((0, -5, 64), ValueError),
        ((0, 10, 1), ValueError),
        ((0, 10, 0), ValueError),
        ((0.5, 10, 64), TypeError),
        ((0, 10.0, 64), TypeError),
        ((0, True, 64), TypeError),
    ],
)
def test_bad_construction(args, exc):
    with pytest.raises(exc):
        TimingWheel(*args)


@pytest.mark.parametrize("bad", [150.5, float("inf"), float("nan"), "100"])
def test_non_int_times_are_refused_without_damage(bad):
    w = make(start=0)
    w.add("k", 100)
    with pytest.raises(TypeError):
        w.add("j", bad)
    with pytest.raises(TypeError):
        w.advance(bad)
    assert len(w) == 1 and "j" not in w and w.current_ms == 0
    assert w.advance(100) == [(100, "k")]


@pytest.mark.parametrize(
    ("start", "tick", "current"),
    [(0, 10, 0), (T0 + 7, 10, T0), (1005, 1000, 1000), (-15, 10, -20), (999, 1, 999)],
)
def test_current_ms_is_floored_to_tick(start, tick, current):
    w = TimingWheel[str](start, tick)
    assert w.current_ms == current
    assert len(w) == 0 and w.next_expiry() is None and w.advance(start) == []


# -- add / cancel / contains / len / deadline_of ------------------------------------------------


@pytest.mark.parametrize(
    ("start", "tick", "deadline", "accepted"),
    [
        (1000, 10, 999, False),  # in the past
        (1000, 10, 1000, False),  # now
        (1000, 10, 1009, False),  # within the current tick: due, caller handles it
        (1000, 10, 1010, True),  # first instant of the next tick
        (1005, 10, 1009, False),  # current_ms is 1000, so < 1010 is refused
        (1005, 10, 1010, True),
        (1000, 1, 1000, False),
        (1000, 1, 1001, True),
        (1000, 10, 10**15, True),  # far future: overflow levels
    ],
)
def test_add_refuses_already_due(start, tick, deadline, accepted):
    w = TimingWheel[str](start, tick, 8)
    assert w.add("k", deadline) is accepted
    assert ("k" in w) is accepted
    assert len(w) == int(accepted)
    assert w.deadline_of("k") == (deadline if accepted else None)


def test_add_cancel_contains_len_deadline_of():
    w = make()
    assert "a" not in w and w.deadline_of("a") is None and not w.cancel("a")
    assert w.add("a", T0 + 100)
    assert w.add("b", T0 + 100_000)  # overflow level
    assert w.add("c", T0 + 20)
    assert len(w) == 3 and "a" in w and "b" in w and "c" in w and 42 not in w
    assert [w.deadline_of(k) for k in "abc"] == [T0 + 100, T0 + 100_000, T0 + 20]
    assert w.cancel("b") and not w.cancel("b")
    assert len(w) == 2 and "b" not in w and w.deadline_of("b") is None
    assert w.advance(T0 + 10**9) == [(T0 + 20, "c"), (T0 + 100, "a")]
    assert len(w) == 0


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (100, 200),  # same level, later
        (200, 100),  # earlier
        (100, 105),  # same bucket
        (100, 100),  # same deadline
        (100, 5_000_000),  # level 0 -> overflow level
        (5_000_000, 100),  # overflow level -> level 0
    ],
)
def test_re_add_moves_the_key(first, second):
    w = make()
    assert w.add("k", T0 + first) and w.add("k", T0 + second)
    assert len(w) == 1 and w.deadline_of("k") == T0 + second
    assert w.next_expiry() == T0 + second
    assert w.advance(T0 + 10**8) == [(T0 + second, "k")]
    assert len(w) == 0 and w.drain() == []


def test_refused_re_add_removes_the_old_entry():
    # afterwards the key is in the wheel exactly when add() returned True: no double firing
    w = make()
    assert w.add("k", T0 + 500)
    assert not w.add("k", T0 + 3)
    assert "k" not in w and len(w) == 0 and w.next_expiry() is None
    assert w.advance(T0 + 1000) == []


def test_cancel_then_advance_fires_nothing():
    w = make()
    for i in range(100):
        w.add(f"k{i}", T0 + 10 + i * 997)
    for i in range(100):
        assert w.cancel(f"k{i}")
    assert len(w) == 0 and w.next_expiry() is None
    assert w.advance(T0 + 10**7) == []


# -- advance -------------------------------------------------------------------------------------


def test_worked_example_from_the_docstring():
    w = TimingWheel[str](0, 10, 4)
    assert not w.add("a", 5)
    assert w.add("b", 17) and w.add("c", 95)
    assert levels(w) == 2
    assert w.add("d", 300)
    assert levels(w) == 3
    assert w.advance(15) == [] and w.current_ms == 10 and "b" in w
    assert w.advance(25) == [(17, "b")] and w.current_ms == 20
    assert w.advance(85) == [] and w.next_expiry() == 95
    assert w.advance(100) == [(95, "c")]
    assert w.advance(10**9) == [(300, "d")]
    assert len(w) == 0 and w.current_ms == 10**9


def test_advance_returns_in_deadline_order_ties_in_insertion_order():
    w = TimingWheel[str](0, 10, 4)
    # "x" goes to an overflow level now; "y" and "z", added later with the same deadline, go
    # straight to level 0: insertion order must still win over where they were stored.
    assert w.add("x", 100)
    assert w.advance(70) == []
    assert w.add("y", 100) and w.add("w", 95) and w.add("z", 100)
    assert w.add("v", 150)
    assert w.advance(1000) == [(95, "w"), (100, "x"), (100, "y"), (100, "z"), (150, "v")]


def test_re_add_counts_as_a_new_insertion_for_ties():
    w = make()
    for k in "abc":
        w.add(k, T0 + 50)
    w.add("a", T0 + 50)
    assert w.advance(T0 + 50) == [(T0 + 50, "b"), (T0 + 50, "c"), (T0 + 50, "a")]


@pytest.mark.parametrize("tick", [1, 10, 1000])
def test_never_early_within_a_tick(tick):
    w = TimingWheel[str](0, tick, 8)
    d = 3 * tick + tick // 2  # in the middle of a tick (the tick itself when tick == 1)
    assert w.add("k", d)
    for now in range(0, d):
        assert w.advance(now) == [], now
        assert "k" in w and w.next_expiry() == d
    assert w.advance(d) == [(d, "k")]
    assert w.advance(d + 1) == []


def test_partial_bucket_keeps_what_is_not_due():
    w = make(start=0)
    for d in range(10, 20):
        w.add(f"k{d}", d)
    assert w.advance(14) == [(d, f"k{d}") for d in range(10, 15)]
    assert len(w) == 5 and w.next_expiry() == 15
    assert w.advance(14) == [] and w.advance(12) == []
    assert w.advance(17) == [(d, f"k{d}") for d in range(15, 18)]
    assert w.advance(20) == [(18, "k18"), (19, "k19")]
    assert len(w) == 0


def test_exactly_once_over_many_small_steps():
    w = TimingWheel[int](0, 10, 8)
    deadlines = {k: 10 + (k * 7919) % 50_000 for k in range(2000)}
    for k, d in deadlines.items():
        assert w.add(k, d)
    fired: list[tuple[int, int]] = []
    for now in range(0, 50_100, 7):
        batch = w.advance(now)
        assert all(d <= now for d, _ in batch)
        assert all(d > now - 7 for d, _ in batch)  # not late either: fired at the first chance
        fired.extend(batch)
    assert sorted(k for _, k in fired) == sorted(deadlines)
    assert fired == sorted(((d, k) for k, d in deadlines.items()), key=lambda e: (e[0], e[1]))
    assert len(w) == 0


def test_backwards_and_zero_steps_are_no_ops():
    w = make()
    w.add("k", T0 + 100)
    assert w.advance(T0 + 50) == []
    assert w.advance(T0 + 50) == [] and w.advance(T0 - 10**6) == []
    assert w.current_ms == T0 + 50
    assert not w.add("j", T0 + 55)  # the refusal line does not move back either
    assert w.advance(T0 + 100) == [(T0 + 100, "k")]


@pytest.mark.parametrize("jump", [10**6, 10**9, 10**12, 10**15])
def test_large_jumps_cost_buckets_not_ticks(jump):
    # with tick_ms=1 a per-tick implementation could not finish these
    w = TimingWheel[str](0, 1, 64)
    entries = [
        (d, f"k{i}")
        for i, d in enumerate([1, 63, 64, 65, 4095, 4096, 300_000, 10**7, 10**11, 10**14])
    ]
    for d, k in entries:
        assert w.add(k, d)
    assert w.advance(jump) == [e for e in entries if e[0] <= jump]
    assert len(w) == sum(1 for d, _ in entries if d > jump)
    assert w.advance(10**16) == [e for e in entries if e[0] > jump]
    assert len(w) == 0


def test_large_jump_then_reuse():
    w = TimingWheel[str](0, 10, 4)
    w.add("far", 10**12)
    assert w.advance(10**12 - 1) == []
    assert w.next_expiry() == 10**12
    assert w.add("near", 10**12 + 30)
    assert w.advance(10**12) == [(10**12, "far")]
    assert w.advance(10**12 + 30) == [(10**12 + 30, "near")]


def test_idle_wheel_creates_no_levels_and_keeps_time():
    w = TimingWheel[str](0, 10, 4)
    assert w.advance(10**15) == []
    assert levels(w) == 1 and w.current_ms == 10**15
    assert not w.add("k", 10**15 + 9) and w.add("k", 10**15 + 10)


def test_idle_jump_keeps_existing_levels_in_step():
    w = TimingWheel[str](0, 10, 4)
    assert w.add("a", 1000) and levels(w) == 4
    assert w.advance(1000) == [(1000, "a")]
    assert w.advance(10**6) == []  # idle: nothing visited, but every level's cursor moves
    for i, d in enumerate([10**6 + 10, 10**6 + 100, 10**6 + 5000, 10**6 + 700_000]):
        assert w.add(f"k{i}", d)
        assert w.next_expiry() == 10**6 + 10
    assert w.advance(10**6 + 99) == [(10**6 + 10, "k0")]
    assert w.advance(10**6 + 100) == [(10**6 + 100, "k1")]
    assert w.advance(10**6 + 4999) == []
    assert w.advance(10**6 + 5000) == [(10**6 + 5000, "k2")]
    assert w.advance(10**6 + 700_000) == [(10**6 + 700_000, "k3")]


@pytest.mark.parametrize(
    ("offset", "expected_levels"),
    [
        (10, 1),
        (639, 1),  # level 0 spans 64 * 10 ms
        (640, 2),
        (40_959, 2),  # level 1 spans 64**2 * 10 ms = 40.96 s
        (40_960, 3),
        (60_000, 3),  # the 60 s horizon
        (365 * 86_400_000, 6),  # a year
        (1000 * 365 * 86_400_000, 7),
    ],
)
def test_overflow_levels_created_on_demand(offset, expected_levels):
    w = make(start=0)
    assert w.add("k", offset)
    assert levels(w) == expected_levels
    assert w.next_expiry() == offset
    assert w.advance(offset - 1) == []
    assert w.advance(offset) == [(offset, "k")]


def test_overflow_bucket_expiry_reinserts_lower():
    w = TimingWheel[str](0, 10, 4)  # level spans: 40, 160, 640
    w.add("a", 500)  # level 2, bucket [480, 640)
    w.add("b", 630)
    assert w.advance(480) == []  # the level-2 bucket expired; both drop to lower levels
    assert len(w) == 2 and w.next_expiry() == 500
    assert w.advance(499) == []
    assert w.advance(629) == [(500, "a")]
    assert w.advance(630) == [(630, "b")]


# -- next_expiry -----------------------------------------------------------------------------------


def test_next_expiry_is_exact():
    w = TimingWheel[str](0, 10, 4)
    assert w.next_expiry() is None
    w.add("a", 37)
    assert w.next_expiry() == 37
    w.add("b", 33)
    assert w.next_expiry() == 33
    w.cancel("b")
    assert w.next_expiry() == 37
    w.add("a", 1000)  # re-add moves the minimum
    assert w.next_expiry() == 1000
    w.add("c", 999)
    assert w.next_expiry() == 999
    assert w.advance(999) == [(999, "c")]
    assert w.next_expiry() == 1000
    assert w.drain() == [(1000, "a")]
    assert w.next_expiry() is None


def test_next_expiry_sees_an_overflow_entry_earlier_than_level_0():
    # "x" was stored on level 1 at t=0; after time moves, level 0's window overlaps that bucket
    # and holds a later entry: the minimum is on the upper level.
    w = TimingWheel[str](0, 10, 4)
    w.add("x", 81)  # level 1, bucket [80, 120)
    w.add("z", 60)  # level 1, bucket [40, 80)
    assert w.advance(50) == []  # z drops to level 0, which now covers [50, 90); x stays up
    w.add("y", 85)  # level 0
    assert w.next_expiry() == 60
    assert w.advance(60) == [(60, "z")]
    assert w.next_expiry() == 81  # recomputed: level 0's first entry (85) is not the minimum
    assert uncached_next_expiry(w) == 81
    assert w.advance(81) == [(81, "x")]
    assert w.next_expiry() == 85


# -- drain -----------------------------------------------------------------------------------------


def test_drain_returns_everything_sorted_and_empties():
    w = TimingWheel[str](0, 10, 4)
    ds = {"a": 5_000_000, "b": 15, "c": 700, "d": 15, "e": 60_000}
    for k, d in ds.items():
        w.add(k, d)
    w.cancel("c")
    assert w.drain() == [(15, "b"), (15, "d"), (60_000, "e"), (5_000_000, "a")]
    assert len(w) == 0 and w.next_expiry() is None and w.drain() == []
    assert w.advance(10**9) == []
    assert w.add("a", 10**9 + 10) and w.advance(10**9 + 10) == [(10**9 + 10, "a")]


# -- properties against a reference model ----------------------------------------------------------


class WheelVsModel(RuleBasedStateMachine):
    """Random add / cancel / advance / drain, checked step by step against a dict + sorted()."""

    KEYS = st.integers(0, 11)

    @initialize(
        start=st.one_of(st.integers(-1000, 1000), st.just(T0)),
        tick=st.sampled_from([1, 2, 3, 10]),
        size=st.sampled_from([2, 3, 4, 8, 64]),
    )
    def setup(self, start: int, tick: int, size: int) -> None:
        self.wheel = TimingWheel[int](start, tick, size)
        self.tick = tick
        self.now = start
        self.seq = 0
        self.model: dict[int, tuple[int, int]] = {}  # key -> (deadline, insertion seq)

    def current_ms(self) -> int:
        return self.now // self.tick * self.tick

    @rule(
        key=KEYS,
        offset=st.one_of(
            st.integers(-20, 60),
            st.integers(0, 3000),
            st.integers(0, 10**6),
            st.integers(0, 10**13),
        ),
    )
    def add(self, key: int, offset: int) -> None:
        d = self.now + offset
        accepted = self.wheel.add(key, d)
        assert accepted == (d >= self.current_ms() + self.tick)
        self.model.pop(key, None)
        if accepted:
            self.model[key] = (d, self.seq)
            self.seq += 1

    @rule(key=KEYS)
    def cancel(self, key: int) -> None:
        assert self.wheel.cancel(key) == (key in self.model)
        self.model.pop(key, None)

    @rule(
        step=st.one_of(
            st.just(0),
            st.integers(-30, 30),
            st.integers(0, 300),
            st.integers(0, 20_000),
            st.integers(0, 10**14),
        )
    )
    def advance(self, step: int) -> None:
        target = self.now + step
        fired = self.wheel.advance(target)
        if target <= self.now:
            assert fired == []
            return
        self.now = target
        ripe = sorted((d, s, k) for k, (d, s) in self.model.items() if d <= target)
        assert fired == [(d, k) for d, _, k in ripe]
        for _, _, k in ripe:
            del self.model[k]

    @rule()
    def drain(self) -> None:
        everything = sorted((d, s, k) for k, (d, s) in self.model.items())
        assert self.wheel.drain() == [(d, k) for d, _, k in everything]
        self.model.clear()

    @invariant()
    def agrees_with_model(self) -> None:
        w = self.wheel
        assert len(w) == len(self.model)
        assert w.current_ms == self.current_ms()
        for k in range(12):
            assert (k in w) == (k in self.model)
            expected = self.model.get(k)
            assert w.deadline_of(k) == (None if expected is None else expected[0])
        # white-box: every entry sits in exactly one bucket, the one _loc points to
        stored = [k for slots in w._levels for bucket in slots for k in bucket]
        assert sorted(stored) == sorted(self.model)
        assert all(k in w._loc[k] for k in stored)
        earliest = min((d for d, _ in self.model.values()), default=None)
        assert w.next_expiry() == earliest  # exact, hence also a safe lower bound
        assert uncached_next_expiry(w) == earliest
        if earliest is not None:
            assert earliest > self.now


TestWheelVsModel = WheelVsModel.TestCase
TestWheelVsModel.settings = settings(
    max_examples=250,
    stateful_step_count=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    tick=st.sampled_from([1, 5, 10]),
    size=st.sampled_from([2, 4, 16, 64]),
    deadlines=st.lists(st.integers(1, 200_000), min_size=1, max_size=300),
    steps=st.lists(
        st.one_of(st.integers(0, 50), st.integers(0, 5_000), st.integers(0, 10**6)),
        min_size=1,
        max_size=60,
    ),
)
def test_batch_then_random_steps_fires_everything_once_in_order(tick, size, deadlines, steps):
    w = TimingWheel[int](0, tick, size)
    model = {}
    for k, d in enumerate(deadlines):
        if w.add(k, d):
            model[k] = d
        else:
            assert d < tick
    fired: list[tuple[int, int]] = []
    now = 0
    for step in steps:
        now += step
        nxt = w.next_expiry()
        batch = w.advance(now)
        assert all(d <= now for d, _ in batch)
        assert batch == sorted(batch, key=lambda e: e[0])
        if batch:
            assert nxt is not None and nxt == batch[0][0]
        fired.extend(batch)
        assert len(w) == sum(1 for d in model.values() if d > now)
    fired.extend(w.drain())
    assert fired == sorted(((d, k) for k, d in model.items()))


# -- instant groups ---------------------------------------------------------------------------


def test_instant_groups_hold_a_herd_as_one_wheel_entry() -> None:
    g = InstantGroups[str](T0, 10, 64)
    assert not g.add("due", T0)  # already due: the caller acts on it now, nothing is held
    for i in range(1_000):
        assert g.add(f"x{i}", T0 + 5_000)
    assert g.add("early", T0 + 1_000)
    assert len(g) == 1_001 and len(g._wheel) == 2  # white-box: one wheel entry per instant
    assert g.next_expiry() == T0 + 1_000
    assert g.advance(T0 + 4_999) == ["early"]
    assert g.entries()[:2] == [("x0", T0 + 5_000), ("x1", T0 + 5_000)]
    assert g.advance(T0 + 5_000) == [f"x{i}" for i in range(1_000)]  # in the order added
    assert len(g) == 0 and g.next_expiry() is None and g.advance(T0 + 10**6) == []


@settings(max_examples=150, deadline=None, database=None)
@given(
    instants=st.lists(st.integers(0, 3_000), min_size=1, max_size=200),
    steps=st.lists(st.integers(0, 400), min_size=1, max_size=30),
)
def test_instant_groups_fire_each_key_once_by_instant_then_order_added(instants, steps):
    g = InstantGroups[int](0, 5, 8)
    held = {k: d for k, d in enumerate(instants) if g.add(k, d)}
    assert all(d < 5 for k, d in enumerate(instants) if k not in held)  # refused only when due
    fired: list[int] = []
    now = 0
    for step in steps:
        now += step
        nxt = g.next_expiry()
        batch = g.advance(now)
        assert all(held[k] <= now for k in batch)
        if batch:
            assert nxt == held[batch[0]]
        fired += batch
        assert len(g) == sum(1 for d in held.values() if d > now)
    fired += g.advance(10**6)
    assert fired == sorted(held, key=lambda k: (held[k], k))
