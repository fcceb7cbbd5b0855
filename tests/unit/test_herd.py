"""The herd preview (core/herd.py): ticks per second of a window, with fixed instants."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cronwheel.core import herd
from cronwheel.core import schedule as sched
from cronwheel.core.herd import HerdJob, count_ticks, herd_summary, top_of_hour_suggestion


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


START = ms("2026-11-30T00:30:00")  # the top of the hour is 1800 s into the window


def test_top_of_hour_jobs_pile_on_one_second() -> None:
    jobs = [HerdJob(f"j{i}", "0 * * * *") for i in range(200)]
    jobs += [HerdJob(f"e{i}", "* * * * * *") for i in range(10)]
    s = herd_summary(jobs, START, 3600, top=3)
    assert s["windowStart"] == "2026-11-30T00:30:00.000Z"
    assert s["jobs"] == 210
    assert s["ticks"] == 200 + 10 * 3600
    assert s["maxPerSecond"] == 210
    assert s["p99PerSecond"] == 10
    first = s["busiest"][0]
    assert first == {
        "at": "2026-11-30T01:00:00.000Z", "offsetSec": 1800, "count": 210,
        "schedules": [{"schedule": "0 * * * *", "jobs": 200}, {"schedule": "* * * * * *", "jobs": 10}],
    }
    assert [b["count"] for b in s["busiest"]] == [210, 10, 10]
    assert len(s["perMinute"]) == 60 and len(s["peakPerMinute"]) == 60
    assert s["perMinute"][30] == 200 + 600 and s["perMinute"][0] == 600
    # per second, the herd minute stands out 21x; per minute only 1.3x
    assert s["peakPerMinute"][30] == 210 and s["peakPerMinute"][0] == 10


def test_hashed_jobs_spread_and_are_counted_per_job() -> None:
    jobs = [HerdJob(f"job{i}", "H * * * *") for i in range(300)]
    counts, _groups, stats = count_ticks(jobs, START, 3600)
    assert stats == {"jobs": 300, "skipped": 0}
    assert sum(counts) == 300
    assert max(counts) < 30  # spread over 60 minutes, not one second
    expected = [0] * 3600
    for i in range(300):
        fire = sched.next_fire("H * * * *", f"job{i}", "UTC", START - 1)
        assert fire is not None
        expected[(fire - START) // 1000] += 1
    assert counts == expected


def test_contributors_are_named_by_their_own_schedule_text() -> None:
    hashed = [f"job{i}" for i in range(400)]
    at_zero = [j for j in hashed if sched.next_fire("H * * * *", j, "UTC", START - 1) == ms("2026-11-30T01:00:00")]
    assert at_zero  # some of 400 ids hash to minute 0
    jobs = [HerdJob(j, "H * * * *") for j in hashed] + [HerdJob(f"t{i}", "0 * * * *") for i in range(100)]
    first = herd_summary(jobs, START, 3600, top=1)["busiest"][0]
    assert first["count"] == 100 + len(at_zero)
    assert first["schedules"] == [{"schedule": "0 * * * *", "jobs": 100}, {"schedule": "H * * * *", "jobs": len(at_zero)}]


def test_shared_schedules_cost_one_walk_not_one_per_job() -> None:
    sched.cache_clear()
    jobs = ((f"j{i}", "0 * * * *", "UTC", None) for i in range(100_000))
    counts, _groups, stats = count_ticks(jobs, START, 3600)
    assert stats["jobs"] == 100_000 and counts[1800] == 100_000 and sum(counts) == 100_000
    info = sched.cache_info()
    assert info["evaluations"] <= 3
    assert info["parse_misses"] == 1


def test_every_second_and_every_interval_are_arithmetic() -> None:
    sched.cache_clear()
    counts, _g, _s = count_ticks([HerdJob("a", "* * * * * *"), HerdJob("b", "@every 10s")], START, 3600)
    assert sched.cache_info()["evaluations"] <= 2
    assert sum(counts) == 3600 + 360
    assert min(counts) == 1 and max(counts) == 2


def test_one_off_jobs_count_at_their_run_time_and_bad_schedules_are_skipped() -> None:
    jobs = [
        HerdJob("o1", None, "UTC", START + 5_500),
        HerdJob("o2", None, "UTC", START + 3_600_000),  # just past the window
        HerdJob("o3", None, "UTC", START - 1),  # before it
        HerdJob("bad", "61 * * * *"),
        ("t1", "0 1 * * *", "Europe/London", None),  # 01:00 London = 01:00 UTC in November
    ]
    s = herd_summary(jobs, START, 3600, top=5)
    assert s["skipped"] == 1 and s["ticks"] == 2
    assert [(b["offsetSec"], b["count"]) for b in s["busiest"]] == [(5, 1), (1800, 1)]
    assert s["busiest"][0]["schedules"] == [{"schedule": "once", "jobs": 1}]


def test_window_is_bounded_and_starts_on_a_whole_second() -> None:
    counts, _g, _s = count_ticks([HerdJob("a", "* * * * * *")], START + 1, 60)
    assert len(counts) == 60 and sum(counts) == 60
    with pytest.raises(ValueError):
        count_ticks([], START, herd.MAX_WINDOW_S + 1)
    assert herd_summary([], START)["busiest"] == []


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("0 * * * *", "H * * * *"),
        ("0 2 * * *", "H 2 * * *"),
        ("*/15 * * * *", "H/15 * * * *"),
        ("0 0 * * * *", "H * * * *"),
        ("@hourly", "H * * * *"),
        ("@daily", "H H * * *"),
        ("H * * * *", None),
        ("17 * * * *", None),
        ("@every 5m", None),
    ],
)
def test_top_of_hour_suggestion(text: str, suggestion: str | None) -> None:
    assert top_of_hour_suggestion(text) == suggestion


def test_a_count_past_its_budget_of_evaluations_stops_with_herd_too_large() -> None:
    # each job has an active window, so it is counted on its own: one evaluation per tick,
    # and one more that finds the tick after the window
    starts_later = START + 60_000
    jobs = [HerdJob(f"r{i}", "*/2 * * * * *", "UTC", None, None, starts_later + i, None) for i in range(20)]
    ticks = 1770 + 19 * 1769  # from 00:31:00 (the first job), 00:31:02 (the others) to 00:59:58
    counts, _g, _s = count_ticks(jobs, START, 3600, max_evaluations=ticks + 20)
    assert sum(counts) == ticks
    with pytest.raises(herd.HerdTooLarge, match="shorter window"):
        count_ticks(jobs, START, 3600, max_evaluations=ticks + 19)
    # a schedule shared by many jobs costs one walk, whatever the number of jobs
    many = [HerdJob(f"j{i}", "*/7 * * * * *") for i in range(10_000)]
    assert sum(count_ticks(many, START, 3600, max_evaluations=541)[0]) == 10_000 * 540  # 9 a minute
    with pytest.raises(herd.HerdTooLarge):
        herd_summary(many, START, 3600, max_evaluations=540)
