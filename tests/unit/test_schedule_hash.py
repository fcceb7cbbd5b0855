"""Jenkins-style ``H``: deterministic per job id, spread evenly over ids, fields independent."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.schedule import ScheduleError, cache_clear, next_fire, parse_schedule

N_IDS = 10_000
IDS = [f"job-{i}" for i in range(N_IDS)]
T0 = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)


def field(text: str, job_id: str, index: int) -> str:
    """Field `index` (0 = second ... 5 = day-of-week) of the concrete expression."""
    return parse_schedule(text, job_id).expression.split()[index]


def chi_square(counts: Counter[int], values: range, n: int) -> float:
    expected = n / len(values)
    return sum((counts.get(v, 0) - expected) ** 2 / expected for v in values)


# critical values of chi-square at p = 0.001 for df = k - 1
CHI2_CRIT = {6: 22.46, 11: 31.26, 14: 36.12, 23: 49.73, 27: 55.48, 59: 99.61, 9: 27.88}


@pytest.mark.parametrize(
    ("text", "index", "values"),
    [
        ("H * * * *", 1, range(0, 60)),  # minute
        ("0 H * * *", 2, range(0, 24)),  # hour
        ("0 0 H * *", 3, range(1, 29)),  # day-of-month: 1-28, so every month has it
        ("0 0 1 H *", 4, range(1, 13)),  # month
        ("0 0 * * H", 5, range(0, 7)),  # day-of-week: 0-6
        ("H * * * * *", 0, range(0, 60)),  # second
    ],
)
def test_spread_over_10000_ids(text: str, index: int, values: range) -> None:
    counts = Counter(int(field(text, job_id, index)) for job_id in IDS)
    assert set(counts) == set(values)  # every value is used, none outside the range
    expected = N_IDS / len(values)
    assert chi_square(counts, values, N_IDS) < CHI2_CRIT[len(values) - 1]
    # and no value is badly over- or under-used
    assert max(counts.values()) < expected * 1.35
    assert min(counts.values()) > expected * 0.65


def test_minute_spread_per_minute_tolerance() -> None:
    """`H * * * *`: every minute 0..59 gets close to 10000/60 jobs."""
    counts = Counter(int(field("H * * * *", job_id, 1)) for job_id in IDS)
    for minute in range(60):
        assert abs(counts[minute] - N_IDS / 60) < 55, (minute, counts[minute])  # ~4 sigma


def test_fields_are_not_correlated() -> None:
    """Each field is salted with its index: minute and hour of `H H * * *` are independent."""
    pairs = [parse_schedule("H H * * *", job_id).expression.split()[1:3] for job_id in IDS]
    table = Counter((int(m) // 15, int(h) // 6) for m, h in pairs)
    rows = Counter(int(m) // 15 for m, _ in pairs)
    cols = Counter(int(h) // 6 for _, h in pairs)
    chi2 = sum(
        (table[(r, c)] - rows[r] * cols[c] / N_IDS) ** 2 / (rows[r] * cols[c] / N_IDS)
        for r in range(4)
        for c in range(4)
    )
    assert chi2 < CHI2_CRIT[9]
    # and not simply equal modulo the smaller range either
    assert sum(int(m) % 24 == int(h) for m, h in pairs) < N_IDS / 24 * 1.5


def test_same_minute_in_5_and_6_field_forms() -> None:
    for job_id in IDS[:200]:
        assert field("H * * * *", job_id, 1) == field("0 H * * * *", job_id, 1)


def test_deterministic_across_calls_and_cache_clears() -> None:
    first = {job_id: parse_schedule("H H(9-17) * * H", job_id).expression for job_id in IDS[:500]}
    cache_clear()
    for job_id, expr in first.items():
        assert parse_schedule("H H(9-17) * * H", job_id).expression == expr
        assert parse_schedule("H H(9-17) * * H", job_id).expression == expr


# Pinned: changing the hash or its salt would move every job's schedule on upgrade.
GOLDEN = [
    ("H H * * *", "job-1"),
    ("H/15 * * * *", "job-1"),
    ("H(0-29) H(9-17)/2 H * H", "job-42"),
    ("H H H H H H", "abc"),
]


EXPECTED_GOLDEN = ["0 45 17 * * *", "0 0-59/15 * * * *", "0 18 9-17/2 24 * 6", "53 51 7 2 9 0"]


def test_golden_expansions_are_stable() -> None:
    got = [parse_schedule(text, job_id).expression for text, job_id in GOLDEN]
    assert got == EXPECTED_GOLDEN


def test_h_forms() -> None:
    for job_id in IDS[:1000]:
        _check_h_forms(job_id)


def _check_h_forms(job_id: str) -> None:
    # H/n: one offset below n, then every n to the end of the range
    minutes = field("H/15 * * * *", job_id, 1)
    start = minutes.partition("-")[0]
    assert int(start) < 15 and minutes == f"{start}-59/15"
    # H(a-b): one value in a..b
    assert 9 <= int(field("0 H(9-17) * * *", job_id, 2)) <= 17
    # H(a-b)/n: offset in a..a+n-1, every n up to b
    hours = field("0 H(8-20)/4 * * *", job_id, 2)
    first = int(hours.split("-")[0])
    assert 8 <= first < 12 and hours == f"{first}-20/4"
    # lower-case h works too; a list of H terms gives one value per term, each in its range
    a, b = field("h(0-29),h(30-59) * * * *", job_id, 1).split(",")
    assert 0 <= int(a) <= 29 and 30 <= int(b) <= 59
    # a step wider than the range leaves a single value
    assert 0 <= int(field("0 0 * * H/7", job_id, 5)) <= 6


def test_h_step_offsets_spread() -> None:
    counts = Counter(int(field("H/15 * * * *", job_id, 1).split("-")[0]) for job_id in IDS)
    assert set(counts) == set(range(15))
    assert chi_square(counts, range(15), N_IDS) < CHI2_CRIT[14]


def test_h_in_month_and_day_can_make_a_job_specific_never_fires() -> None:
    """`31 H` is fine for some ids and never fires for others (the error names the schedule)."""
    outcomes: Counter[str] = Counter()
    for job_id in IDS[:200]:
        try:
            parse_schedule("0 0 31 H *", job_id)
            outcomes["ok"] += 1
        except ScheduleError as e:
            assert str(e).startswith("schedule never fires: '0 0 31 H *'")
            outcomes["never"] += 1
    assert outcomes["ok"] and outcomes["never"]


def test_hashed_fire_times_spread_the_top_of_the_hour() -> None:
    fires = Counter(next_fire("H * * * *", job_id, "UTC", T0) for job_id in IDS)
    assert len(fires) == 60
    assert max(fires.values()) < N_IDS / 60 * 1.35


def test_every_anchor_spread() -> None:
    counts = Counter(parse_schedule("@every 60s", job_id).anchor_ms // 1000 for job_id in IDS)
    assert set(counts) == set(range(60))
    assert chi_square(counts, range(60), N_IDS) < CHI2_CRIT[59]


@given(st.text(max_size=30))
def test_any_job_id_expands_into_range(job_id: str) -> None:
    parts = parse_schedule("H H H H H H", job_id).expression.split()
    bounds = [(0, 59), (0, 59), (0, 23), (1, 28), (1, 12), (0, 6)]
    for value, (lo, hi) in zip(parts, bounds, strict=True):
        assert lo <= int(value) <= hi
    assert parse_schedule("H H H H H H", job_id).next_after(T0) is not None
