"""core/lagstats.py: the per-minute dispatch-lag history behind the dashboard's chart."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.lagstats import MINUTE_MS, LagHistory, bin_of, bin_upper

T0 = 1_764_460_800_000  # 2025-11-30T00:00:00Z, a minute boundary


def exact(lags: list[int], p: float) -> int:
    ordered = sorted(lags)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


@pytest.mark.parametrize(
    ("lag", "lo", "hi"),
    [(0, 0, 0), (31, 31, 31), (32, 32, 33), (63, 62, 63), (64, 64, 67), (1000, 992, 1023), (60_000, 59_392, 61_439)],
)
def test_bins_cover_the_worked_examples(lag: int, lo: int, hi: int) -> None:
    key = bin_of(lag)
    assert bin_upper(key) == hi
    assert bin_of(lo) == key == bin_of(hi) and bin_of(hi + 1) != key


@given(st.integers(min_value=0, max_value=10**9))
def test_a_bin_is_at_most_a_sixteenth_of_its_value_wide(lag: int) -> None:
    upper = bin_upper(bin_of(lag))
    assert lag <= upper <= lag + lag / 16 + 1


@given(st.lists(st.integers(min_value=-5, max_value=3_600_000), min_size=1, max_size=300))
def test_percentiles_never_understate_and_overstate_by_at_most_a_bin(lags: list[int]) -> None:
    h = LagHistory()
    for lag in lags:
        h.record(lag, T0 + 5_000)
    (minute,) = [m for m in h.snapshot(T0 + 59_999) if m.count]
    clamped = [max(0, x) for x in lags]
    assert minute.count == len(lags) and minute.max == max(clamped)
    for p, got in ((0.5, minute.p50), (0.99, minute.p99)):
        want = exact(clamped, p)
        assert got is not None and want <= got <= min(max(clamped), want + want / 16 + 1)


def test_one_slot_per_minute_oldest_first_and_old_minutes_fall_off() -> None:
    h = LagHistory(minutes=60)
    h.record(5, T0)
    h.record(7, T0 + 59_999)
    h.record(900, T0 + 3 * MINUTE_MS + 1)
    snap = h.snapshot(T0 + 3 * MINUTE_MS + 30_000)
    assert len(snap) == 60
    assert snap[-1].start_ms == T0 + 3 * MINUTE_MS and snap[-1].count == 1 and snap[-1].max == 900
    assert snap[-4].start_ms == T0 and (snap[-4].count, snap[-4].p50, snap[-4].max) == (2, 7, 7)
    assert snap[-2].count == 0 and snap[-2].p50 is None and snap[-2].max is None
    assert [m.start_ms for m in snap] == [T0 + (k - 56) * MINUTE_MS for k in range(60)]
    # an hour later the first minute is gone, and its slot is reused for the new minute
    later = T0 + 60 * MINUTE_MS
    assert all(m.count == 0 for m in h.snapshot(later + 3 * MINUTE_MS + 1) if m.start_ms < later)
    h.record(42, later)
    snap = h.snapshot(later)
    assert snap[-1].count == 1 and snap[-1].max == 42
    assert sum(m.count for m in snap) == 2  # T0 + 3 min is still inside the last hour


def test_a_clock_step_back_does_not_erase_newer_minutes() -> None:
    h = LagHistory(minutes=2)
    h.record(10, T0 + 2 * MINUTE_MS)
    h.record(99, T0)  # same slot, older minute: dropped
    snap = h.snapshot(T0 + 2 * MINUTE_MS)
    assert snap[-1].count == 1 and snap[-1].max == 10


def test_minutes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        LagHistory(minutes=0)


@given(st.lists(st.integers(min_value=-5, max_value=10**7), max_size=40), st.integers(min_value=0, max_value=3))
def test_a_batch_records_as_one_record_per_lag(lags: list[int], minute: int) -> None:
    now = T0 + minute * MINUTE_MS + 7
    one, many = LagHistory(minutes=3), LagHistory(minutes=3)
    one.record(5, T0)  # an older minute that the batch's slot may recycle
    many.record(5, T0)
    for lag in lags:
        one.record(lag, now)
    many.record_many(lags, now)
    assert one.snapshot(now) == many.snapshot(now)
