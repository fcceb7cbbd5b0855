"""The DST policy of cron schedules, pinned.

* fixed local times (the hour field does not cover every hour): once per local time; a time in
  a spring-forward gap fires at the first valid instant after the gap; a time that occurs twice
  in a fall-back overlap fires once, at its first occurrence;
* hourly and finer (the hour field covers every hour): the wall clock; a skipped time does not
  fire, a repeated time fires twice.

Where cronsim on its own differs (6-field expressions, ``*/n`` hours, a start inside the second
pass of an overlap), the case is marked ``cronsim differs``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from cronwheel.core.schedule import parse_schedule

NY = "America/New_York"
LONDON = "Europe/London"
LORD_HOWE = "Australia/Lord_Howe"  # 30-minute DST shift at 02:00
SANTIAGO = "America/Santiago"  # changes at midnight
ZONES = [NY, LONDON, LORD_HOWE, SANTIAGO]


def local_ms(tz: str, *args: int, fold: int = 0) -> int:
    return int(datetime(*args, tzinfo=ZoneInfo(tz), fold=fold).timestamp()) * 1000  # type: ignore[arg-type, misc]


def iso(ms: int, tz: str) -> str:
    return datetime.fromtimestamp(ms / 1000, ZoneInfo(tz)).isoformat()


def fires(expr: str, tz: str, after_ms: int, n: int) -> list[str]:
    sched = parse_schedule(expr, "job-dst", tz)
    out: list[str] = []
    t: int | None = after_ms
    for _ in range(n):
        assert t is not None
        t = sched.next_after(t)
        assert t is not None
        out.append(iso(t, tz))
    return out


# (zone, expression, start as local (y, m, d, H, M[, S]) + fold, expected fire times)
PINNED = [
    # --- fixed local time, spring-forward gap: first valid instant after the gap
    ("ny gap 5-field", NY, "30 2 * * *", (2026, 3, 7, 12, 0), 0,
     ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]),
    # cronsim differs: a 6-field expression skips the day entirely
    ("ny gap 6-field", NY, "0 30 2 * * *", (2026, 3, 7, 12, 0), 0,
     ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]),
    ("ny gap collapses", NY, "0,30 2 * * *", (2026, 3, 7, 12, 0), 0,
     ["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T02:30:00-04:00"]),
    ("ny gap + 3:00 collapse", NY, "0 2,3 * * *", (2026, 3, 7, 12, 0), 0,
     ["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T03:00:00-04:00"]),
    # cronsim differs: `*/2` hours are treated as wall clock, 02:00 is lost
    ("ny every 2h", NY, "0 */2 * * *", (2026, 3, 8, 0, 30), 0,
     ["2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"]),
    ("london gap", LONDON, "30 1 * * *", (2026, 3, 28, 12, 0), 0,
     ["2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"]),
    ("lord howe 30-min gap", LORD_HOWE, "15 2 * * *", (2026, 10, 3, 12, 0), 0,
     ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"]),
    ("santiago midnight gap", SANTIAGO, "0 0 * * *", (2026, 9, 5, 12, 0), 0,
     ["2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"]),
    ("santiago midnight gap 6-field", SANTIAGO, "0 0 0 * * *", (2026, 9, 5, 12, 0), 0,
     ["2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"]),
    # --- fixed local time, fall-back overlap: once, at the first occurrence
    ("ny overlap", NY, "30 1 * * *", (2026, 10, 31, 12, 0), 0,
     ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]),
    # cronsim differs: a 6-field expression fires twice
    ("ny overlap 6-field", NY, "0 30 1 * * *", (2026, 10, 31, 12, 0), 0,
     ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]),
    ("ny overlap every 20 min of 01h", NY, "*/20 1 * * *", (2026, 11, 1, 0, 59), 0,
     ["2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00",
      "2026-11-02T01:00:00-05:00"]),
    ("london overlap", LONDON, "30 1 * * *", (2026, 10, 24, 12, 0), 0,
     ["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00"]),
    ("lord howe 30-min overlap", LORD_HOWE, "45 1 * * *", (2026, 4, 4, 12, 0), 0,
     ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"]),
    ("santiago overlap at 23h", SANTIAGO, "30 23 * * *", (2026, 4, 3, 12, 0), 0,
     ["2026-04-03T23:30:00-03:00", "2026-04-04T23:30:00-03:00", "2026-04-05T23:30:00-04:00"]),
    # cronsim differs: from inside the second pass it returns the (past) first pass
    ("ny start in second pass", NY, "45 1 * * *", (2026, 11, 1, 1, 30), 1,
     ["2026-11-02T01:45:00-05:00"]),
    ("ny start in second pass, seconds", NY, "*/20 * 1 * * *", (2026, 11, 1, 1, 59, 50), 1,
     ["2026-11-02T01:00:00-05:00"]),
    # --- hourly and finer: the wall clock
    ("ny hourly gap", NY, "0 * * * *", (2026, 3, 8, 0, 30), 0,
     ["2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"]),
    ("ny hourly overlap", NY, "30 * * * *", (2026, 11, 1, 0, 0), 0,
     ["2026-11-01T00:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00",
      "2026-11-01T02:30:00-05:00"]),
    ("ny hourly from first pass", NY, "15 * * * *", (2026, 11, 1, 1, 30), 0,
     ["2026-11-01T01:15:00-05:00", "2026-11-01T02:15:00-05:00"]),
    ("ny hourly from second pass", NY, "15 * * * *", (2026, 11, 1, 1, 30), 1,
     ["2026-11-01T02:15:00-05:00"]),
    ("ny hourly, second pass of a later minute", NY, "45 * * * *", (2026, 11, 1, 1, 30), 1,
     ["2026-11-01T01:45:00-05:00", "2026-11-01T02:45:00-05:00"]),
    ("lord howe half-hourly overlap", LORD_HOWE, "*/30 * * * *", (2026, 4, 5, 0, 50), 0,
     ["2026-04-05T01:00:00+11:00", "2026-04-05T01:30:00+11:00", "2026-04-05T01:30:00+10:30",
      "2026-04-05T02:00:00+10:30"]),
    ("lord howe hourly gap", LORD_HOWE, "0 * * * *", (2026, 10, 4, 0, 30), 0,
     ["2026-10-04T01:00:00+10:30", "2026-10-04T03:00:00+11:00"]),
    ("ny 6-field seconds across the gap", NY, "*/30 * * * * *", (2026, 3, 8, 1, 59, 0), 0,
     ["2026-03-08T01:59:30-05:00", "2026-03-08T03:00:00-04:00"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tz", "expr", "start", "fold", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in PINNED],
)
def test_pinned(tz: str, expr: str, start: tuple[int, ...], fold: int, expected: list[str]) -> None:
    assert fires(expr, tz, local_ms(tz, *start, fold=fold), len(expected)) == expected


# --- 2020-2035: a fixed-time daily job fires exactly once per local date

SWEEP_START, SWEEP_END = date(2020, 1, 1), date(2036, 1, 1)
DAILY = ["30 2 * * *", "30 1 * * *", "0 0 * * *", "15 2 * * *"]
# Santiago's overlap is 23:00-24:00, which none of DAILY hits
SWEEPS = [(tz, expr) for tz in ZONES for expr in DAILY] + [(SANTIAGO, "30 23 * * *")]


@pytest.mark.parametrize(("tz", "expr"), SWEEPS)
def test_daily_job_fires_once_per_local_date(tz: str, expr: str) -> None:
    zone = ZoneInfo(tz)
    sched = parse_schedule(expr, "job-sweep", tz)
    fields = expr.split()
    if len(fields) == 6:
        fields = fields[1:]
    minute, hour = int(fields[0]), int(fields[1])
    t: int | None = local_ms(tz, 2019, 12, 31, 23, 59, 59)
    day = SWEEP_START
    shifted = 0
    while day < SWEEP_END:
        assert t is not None
        prev, t = t, sched.next_after(t)
        assert t is not None and t > prev
        local = datetime.fromtimestamp(t / 1000, zone)
        assert local.date() == day, f"{expr} in {tz}: expected a fire on {day}, got {local}"
        if (local.hour, local.minute) != (hour, minute):
            # only in a spring-forward gap, and then at the instant the gap ends
            assert _offset(zone, t - 1000) < _offset(zone, t), local
            assert datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone) != (
                datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
                .astimezone(UTC)
                .astimezone(zone)
            )
            shifted += 1
        elif local.fold == 1:
            pytest.fail(f"second occurrence fired: {local}")
        day += timedelta(days=1)
    assert shifted <= 16  # at most one gap a year


def _offset(zone: ZoneInfo, ms: int) -> timedelta:
    off = datetime.fromtimestamp(ms / 1000, zone).utcoffset()
    assert off is not None
    return off


# --- hourly and finer follow the wall clock: a brute-force oracle around every transition


@cache
def transitions(tz: str) -> list[int]:
    """All UTC-offset changes 2020-2035, in seconds."""
    zone = ZoneInfo(tz)
    out = []
    t = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(2036, 1, 1, tzinfo=UTC).timestamp())
    off = datetime.fromtimestamp(t, zone).utcoffset()
    while t < end:
        nxt = t + 86400
        off2 = datetime.fromtimestamp(nxt, zone).utcoffset()
        if off2 != off:
            lo, hi = t, nxt
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if datetime.fromtimestamp(mid, zone).utcoffset() == off2:
                    hi = mid
                else:
                    lo = mid
            out.append(hi)
            off = off2
        t = nxt
    return out


@pytest.mark.parametrize("tz", ZONES)
def test_transitions_found(tz: str) -> None:
    assert len(transitions(tz)) >= 30  # two a year, 16 years


WALL = [("*/15 * * * *", {0, 15, 30, 45}), ("45 * * * *", {45}), ("0 * * * *", {0}),
        ("10,40 * * * *", {10, 40}), ("*/7 * * * *", set(range(0, 60, 7)))]  # fmt: skip


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize(("expr", "minutes"), WALL)
def test_wall_clock_matches_brute_force(tz: str, expr: str, minutes: set[int]) -> None:
    zone = ZoneInfo(tz)
    sched = parse_schedule(expr, "job-wall", tz)
    assert sched.wall_clock
    for tr in transitions(tz)[::3]:
        lo, hi = tr - 3 * 3600, tr + 3 * 3600
        expected = [
            s * 1000
            for s in range(lo - lo % 60 + 60, hi, 60)
            if datetime.fromtimestamp(s, zone).minute in minutes
        ]
        got = []
        t = expected[0] - 1000
        while True:
            nxt = sched.next_after(t)
            assert nxt is not None and nxt > t
            if nxt >= hi * 1000:
                break
            got.append(nxt)
            t = nxt
        # starting anywhere in between (also inside an overlap) gives the next one
        assert got == expected, (tz, expr, iso(tr * 1000, tz))
        for i in range(0, len(expected) - 1, 5):
            mid = expected[i] + 17_000
            assert sched.next_after(mid) == expected[i + 1]


@pytest.mark.parametrize(
    ("tz", "day", "count"),
    [
        (NY, date(2026, 3, 8), 23),
        (NY, date(2026, 11, 1), 25),
        (NY, date(2026, 6, 1), 24),
        (LONDON, date(2026, 3, 29), 23),
        (LONDON, date(2026, 10, 25), 25),
        (LORD_HOWE, date(2026, 10, 4), 23),  # 02:00 is skipped
        (LORD_HOWE, date(2026, 4, 5), 24),  # 01:30-02:00 repeats, no whole hour does
        (SANTIAGO, date(2026, 9, 6), 23),
        (SANTIAGO, date(2026, 4, 4), 25),  # 23:00 twice
    ],
)
def test_hourly_count_per_local_date(tz: str, day: date, count: int) -> None:
    zone = ZoneInfo(tz)
    sched = parse_schedule("0 * * * *", "job-hourly", tz)
    t: int | None = local_ms(tz, day.year, day.month, day.day) - 1000
    n = 0
    while True:
        assert t is not None
        t = sched.next_after(t)
        assert t is not None
        if datetime.fromtimestamp(t / 1000, zone).date() != day:
            break
        n += 1
    assert n == count


# --- what cronsim does on its own (documents why the wrapping exists)


def _cronsim(expr: str, tz: str, start: datetime, n: int) -> list[str]:
    it = CronSim(expr, start.replace(tzinfo=ZoneInfo(tz)))
    return [next(it).isoformat() for _ in range(n)]


def test_cronsim_native_behaviour_that_we_wrap() -> None:
    # 6-field: the spring-forward day is skipped, the fall-back time fires twice
    assert _cronsim("0 30 2 * * *", NY, datetime(2026, 3, 7, 12), 1) == [
        "2026-03-09T02:30:00-04:00"
    ]
    assert _cronsim("0 30 1 * * *", NY, datetime(2026, 10, 31, 12), 2) == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:30:00-05:00",
    ]
    # `*/2` hours count as wall clock: 02:00 on the spring-forward day is lost
    assert _cronsim("0 */2 * * *", NY, datetime(2026, 3, 8, 0, 30), 1) == [
        "2026-03-08T04:00:00-04:00"
    ]
    # from inside the second pass, the "next" fire is the first pass, in the past
    start = datetime(2026, 11, 1, 1, 30, fold=1)
    got = _cronsim("45 1 * * *", NY, start, 1)[0]
    assert datetime.fromisoformat(got) < start.replace(tzinfo=ZoneInfo(NY))
    # 5-field fixed times: the same as our policy
    assert _cronsim("30 2 * * *", NY, datetime(2026, 3, 7, 12), 1) == ["2026-03-08T03:00:00-04:00"]
    assert _cronsim("30 1 * * *", NY, datetime(2026, 10, 31, 12), 2) == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]


def test_croniter_fires_twice_where_we_fire_once() -> None:
    """The reason croniter is not used for evaluation (kept as a test oracle only)."""
    croniter_mod = pytest.importorskip("croniter")
    from importlib.metadata import version

    start = datetime(2026, 10, 31, 12, tzinfo=ZoneInfo(NY))
    ours = fires("30 1 * * *", NY, int(start.timestamp()) * 1000, 2)
    assert ours == ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]
    if version("croniter") == "7.0.0":  # the version this was observed with
        it = croniter_mod.croniter("30 1 * * *", start)
        got = [it.get_next(datetime) for _ in range(2)]
        assert [g.date() for g in got] == [date(2026, 11, 1)] * 2
        assert got[1].timestamp() - got[0].timestamp() == 3600
