"""core/calendar.py, core/ical.py, core/backfill.py and core/chains.py: pure, on fixed instants."""

from __future__ import annotations

import pytest

from cronwheel.core import herd
from cronwheel.core import schedule as sched
from cronwheel.core.backfill import job_ticks, plan_backfill
from cronwheel.core.calendar import (
    CalendarError,
    Exclusions,
    bounded,
    build_calendar,
    split_excluded,
    upcoming,
)
from cronwheel.core.chains import (
    ChainError,
    check_chain,
    children_to_run,
    find_cycle,
    payload_with_context,
)
from cronwheel.core.ical import parse_ics
from cronwheel.core.instants import format_instant

HOUR = 3_600_000


def ms(text: str) -> int:
    return sched.parse_instant(text)


def daily_9(job: str = "j1", tz: str = "Europe/Paris"):  # type: ignore[no-untyped-def]
    return sched.parse_schedule("0 9 * * *", job, tz).next_after


def test_a_holiday_is_the_whole_local_day_on_a_dst_change() -> None:
    # 2026-03-29: Paris springs forward; the local day is 23 hours long, 2026-03-28T23:00Z..2026-03-29T22:00Z
    cal = build_calendar("holidays", ["2026-03-29"])
    paris = Exclusions("Europe/Paris", (cal,))
    assert paris.reason(ms("2026-03-28T22:59:59Z")) is None
    assert paris.reason(ms("2026-03-28T23:00:00Z")) == "calendar: holidays"
    assert paris.reason(ms("2026-03-29T21:59:59Z")) == "calendar: holidays"
    assert paris.reason(ms("2026-03-29T22:00:00Z")) is None
    # the same calendar in New York: its own midnight to midnight
    assert Exclusions("America/New_York", (cal,)).reason(ms("2026-03-29T03:59:59Z")) is None
    assert Exclusions("America/New_York", (cal,)).reason(ms("2026-03-29T04:00:00Z")) == "calendar: holidays"
    run, skipped = upcoming(daily_9(), ms("2026-03-27T12:00:00Z"), 2, paris)
    assert run == [ms("2026-03-28T08:00:00Z"), ms("2026-03-30T07:00:00Z")]  # 09:00 CET, then 09:00 CEST
    assert [(x.first_tick, x.until, x.reason) for x in skipped] == [
        (ms("2026-03-29T07:00:00Z"), ms("2026-03-29T22:00:00Z"), "calendar: holidays")]  # the local day's end, CEST


def test_local_and_absolute_windows() -> None:
    cal = build_calendar("maint", windows=[("2026-12-24T22:00", "2026-12-25T02:00"),
                                           ("2026-12-31T10:00:00Z", "2026-12-31T11:00:00Z")])  # fmt: skip
    paris = Exclusions("Europe/Paris", (cal,))
    assert paris.reason(ms("2026-12-24T20:59:59Z")) is None  # 21:59:59 local
    assert paris.reason(ms("2026-12-24T21:00:00Z")) == "calendar: maint"  # 22:00 local
    assert paris.reason(ms("2026-12-25T01:00:00Z")) is None  # 02:00 local: the end is exclusive
    assert paris.reason(ms("2026-12-31T10:30:00Z")) == "calendar: maint"  # an instant, whatever the zone
    ticks = [ms("2026-12-24T20:00:00Z"), ms("2026-12-24T22:00:00Z")]
    assert split_excluded(ticks, paris) == ([ticks[0]], [(ticks[1], "calendar: maint")])


@pytest.mark.parametrize(("dates", "windows", "match"), [
    (["2026-02-30"], [], r"dates\[0\].*day is out of range"),
    (["26-01-01"], [], r"dates\[0\].*YYYY-MM-DD"),
    ([], [("2026-01-02T00:00", "2026-01-01T00:00")], r"windows\[0\]: end .* must be after start"),
    ([], [("2026-01-01T00:00", "2026-01-02T00:00Z")], r"windows\[0\]: both ends"),
    ([], [("tomorrow", "2026-01-02T00:00")], r"windows\[0\].start: 'tomorrow' is not a date-time"),
    ([], [("2026-12-24T22:00:00+99:00", "2026-12-25T01:00Z")], r"windows\[0\].start: .* offset \+99:00 is out of range"),
    ([], [("2026-12-24T22:00Z", "2026-12-25T01:00-12:60")], r"windows\[0\].end: .* offset -12:60 is out of range"),
    # dates and bounds in 1970..9899, as every instant cronwheel keeps; an offset near the
    # year 1 or 9999 was an OverflowError (a 500)
    (["0001-01-01"], [], r"dates\[0\]: '0001-01-01' is outside 1970-01-01 .. 9899-12-31"),
    (["9900-01-01"], [], r"dates\[0\]: .* is outside 1970"),
    ([], [("9999-12-31T22:00-05:00", "9999-12-31T23:00-05:00")], r"windows\[0\].start: .* is outside 1970"),
    ([], [("0001-01-01T00:00+01:00", "0001-01-01T01:00Z")], r"windows\[0\].start: .* is outside 1970"),
    ([], [("9899-12-31T20:00Z", "9899-12-31T22:00-05:00")], r"windows\[0\].end: .* is outside 1970"),
    ([], [("1969-12-31T23:00", "1970-01-01T01:00")], r"windows\[0\].start: .* is outside 1970"),
    ([], [("9899-12-31T23:00", "9900-01-01T00:00")], r"windows\[0\].end: .* is outside 1970"),
])  # fmt: skip
def test_bad_calendars_are_refused_naming_the_entry(dates: list[str], windows: list[tuple[str, str]], match: str) -> None:
    with pytest.raises(CalendarError, match=match):
        build_calendar("c", dates, windows)


def test_the_first_and_last_days_kept_are_accepted() -> None:
    cal = build_calendar("c", ["1970-01-01", "9899-12-31"], [("1970-01-01T00:00", "9899-12-31T23:59:59"),
                                                               ("1970-01-01T00:00Z", "9899-12-31T23:59:59Z")])
    assert cal.dates == {"1970-01-01", "9899-12-31"} and len(cal.windows) == 2


def test_the_active_window_bounds_the_ticks() -> None:
    nt = bounded(sched.parse_schedule("0 * * * *", "j", "UTC").next_after, ms("2026-01-01T05:30:00Z"), ms("2026-01-01T07:00:00Z"))
    assert nt(ms("2026-01-01T00:00:00Z")) == ms("2026-01-01T06:00:00Z")
    assert nt(ms("2026-01-01T06:00:00Z")) == ms("2026-01-01T07:00:00Z")
    assert nt(ms("2026-01-01T07:00:00Z")) is None


def test_ics_all_day_and_timed_events() -> None:
    text = "\r\n".join([
        "BEGIN:VCALENDAR", "BEGIN:VEVENT", "SUMMARY:Noël", "DTSTART;VALUE=DATE:20261225", "DTEND;VALUE=DATE:20261227",
        "END:VEVENT", "BEGIN:VEVENT", "DTSTART;VALUE=DATE:20270101", "END:VEVENT",
        "BEGIN:VEVENT", "DTSTART:20261224T220000", "DTEND:20261225T020000", "END:VEVENT",
        "BEGIN:VEVENT", "DTSTART:20261231T100000Z", "DTEND:20261231T110000Z", "END:VEVENT",
        "BEGIN:VEVENT", "DTSTART;TZID=Europe/Paris:20260701T120000", "DTEND;TZID=Europe/Paris:20260701T13",
        " 0000", "END:VEVENT", "END:VCALENDAR",
    ])  # fmt: skip
    dates, windows = parse_ics(text)
    assert dates == ["2026-12-25", "2026-12-26", "2027-01-01"]
    assert windows == [("2026-12-24T22:00:00", "2026-12-25T02:00:00"), ("2026-12-31T10:00:00Z", "2026-12-31T11:00:00Z"),
                       ("2026-07-01T12:00:00+02:00", "2026-07-01T13:00:00+02:00")]  # fmt: skip
    cal = build_calendar("ics", dates, windows)
    assert Exclusions("UTC", (cal,)).reason(ms("2026-07-01T10:30:00Z")) == "calendar: ics"


def test_ics_rrule_is_refused_with_its_line() -> None:
    with pytest.raises(CalendarError, match="line 3: RRULE is not supported"):
        parse_ics("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nRRULE:FREQ=YEARLY\nEND:VEVENT\n")
    with pytest.raises(CalendarError, match="never ends"):
        parse_ics("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\n")


def test_ics_dates_outside_the_kept_range_are_refused_with_their_line() -> None:
    # an all-day event on 9999-12-31 has its end a day later: past what a date can hold
    for day in ("9999-12-31", "9900-01-01", "1969-12-31"):
        with pytest.raises(CalendarError, match=f"line 2: '{day}' is outside 1970-01-01 .. 9899-12-31"):
            parse_ics(f"BEGIN:VEVENT\nDTSTART;VALUE=DATE:{day.replace('-', '')}\nEND:VEVENT\n")
    # DTEND is the day after the event's last: 9900-01-01 ends one on the last day kept
    assert parse_ics("BEGIN:VEVENT\nDTSTART;VALUE=DATE:98991231\nDTEND;VALUE=DATE:99000101\nEND:VEVENT\n") == (["9899-12-31"], [])
    with pytest.raises(CalendarError, match="line 3: '9900-01-01' is outside"):
        parse_ics("BEGIN:VEVENT\nDTSTART;VALUE=DATE:98991231\nDTEND;VALUE=DATE:99000102\nEND:VEVENT\n")


def test_backfill_plan_skips_excluded_ticks_and_stops_at_the_limit() -> None:
    nt = job_ticks("0 * * * *", "j", "UTC", None, None)
    cal = build_calendar("c", windows=[("2026-01-01T02:00", "2026-01-01T03:00")])
    plan = plan_backfill(nt, ms("2026-01-01T00:00:00Z"), ms("2026-01-01T04:00:00Z"), Exclusions("UTC", (cal,)))
    assert plan.ticks == [ms(f"2026-01-01T0{h}:00:00Z") for h in (0, 1, 3, 4)] and not plan.truncated
    assert [(x.first_tick, x.until, x.reason) for x in plan.excluded] == [
        (ms("2026-01-01T02:00:00Z"), ms("2026-01-01T03:00:00Z"), "calendar: c")]
    big = plan_backfill(nt, ms("2026-01-01T00:00:00Z"), ms("2026-01-02T00:00:00Z"), None, limit=10)
    assert len(big.ticks) == 10 and big.truncated


def test_herd_preview_leaves_excluded_ticks_out() -> None:
    start = ms("2026-03-29T06:59:00Z")  # Paris 08:59 on the holiday
    cal = build_calendar("holidays", ["2026-03-29"])
    jobs = [herd.HerdJob("a", "0 9 * * *", "Europe/Paris"),
            herd.HerdJob("b", "0 9 * * *", "Europe/Paris", exclusions=Exclusions("Europe/Paris", (cal,)))]  # fmt: skip
    counts, _, _ = herd.count_ticks(jobs, start, 120)
    assert sum(counts) == 1 and counts[60] == 1


def test_children_cycles_and_payload() -> None:
    runs = children_to_run("jp:1767225600000", "DEAD", ["ok"], ["bad", "bad"], format_instant)
    assert [(r.job_id, r.scheduled_at) for r in runs] == [("bad", 1767225600000)]
    assert runs[0].context["parent"] == {"executionId": "jp:1767225600000", "jobId": "jp",
                                         "scheduledAt": "2026-01-01T00:00:00.000Z", "outcome": "DEAD"}  # fmt: skip
    assert children_to_run("jp:1", "RETRY_WAIT", ["ok"], ["bad"], format_instant) == []
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}, "a") == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b", "c"], "b": ["c"]}, "a") is None
    check_chain("a", ["b"], [], {"b": ["c"]})
    with pytest.raises(ChainError, match="a -> b -> a"):
        check_chain("a", [], ["b"], {"b": ["a"]})
    ctx = {"parent": {"jobId": "p"}}
    assert payload_with_context(None, ctx) == ctx
    assert payload_with_context({"k": 1}, ctx) == {"k": 1, "parent": {"jobId": "p"}}
    assert payload_with_context([1], ctx) == {"payload": [1], "parent": {"jobId": "p"}}
    assert payload_with_context([1], {"backfill": True}) == [1]


def test_an_excluded_week_is_jumped_over_not_walked() -> None:
    """An every-second job on a week of holidays: the next run is found in a few steps."""
    cal = build_calendar("week", [f"2026-12-{d}" for d in range(24, 31)])
    ny = Exclusions("America/New_York", (cal,))
    every_second = sched.parse_schedule("* * * * * *", "j", "America/New_York").next_after
    run, spans = upcoming(every_second, ms("2026-12-24T12:00:00Z"), 1, ny, scan_limit=20)
    assert run == [ms("2026-12-31T05:00:00Z")]  # 2026-12-31T00:00 in New York (EST)
    assert len(spans) == 7 and spans[-1].until == run[0]


@pytest.mark.parametrize(("window", "zone", "tick", "until"), [
    # fall back in New York (2026-11-01, 01:00-02:00 twice): a window ending at local 01:30 ends
    # first at 01:30 EDT; the second pass through 01:00-01:30 (EST) is excluded again, on its own
    (("2026-11-01T00:00", "2026-11-01T01:30"), "America/New_York", "2026-11-01T05:10:00Z", "2026-11-01T05:30:00Z"),
    (("2026-11-01T00:00", "2026-11-01T01:30"), "America/New_York", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z"),
    # spring forward in Paris (2026-03-29, 02:00-03:00 does not exist): a window ending at local
    # 02:30 ends when the clock jumps, never later
    (("2026-03-29T00:00", "2026-03-29T02:30"), "Europe/Paris", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z"),
])  # fmt: skip
def test_a_window_end_on_a_dst_change_is_never_jumped_past(window: tuple[str, str], zone: str, tick: str, until: str) -> None:
    excl = Exclusions(zone, (build_calendar("w", windows=[window]),))
    span = excl.span(ms(tick))
    assert span is not None and span[1] == ms(until)
    # and every second up to the reported end really is excluded
    for t in range(ms(tick), span[1], 60_000):
        assert excl.reason(t) == "calendar: w"


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris"])
def test_the_window_index_answers_as_a_scan_of_every_window(zone: str) -> None:
    """Windows are looked up by bisection (a job may observe 40,000 of them); the answer is
    the scan's: excluded exactly when some window holds the tick, and up to an instant that
    window (or another holding the tick) still covers."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cronwheel.core.calendar import _EPOCH
    from cronwheel.core.calendarindex import local_time as _local

    base = 1_798_761_600_000  # 2027-01-01T00:00Z
    span = st.tuples(st.integers(0, 2_000), st.integers(1, 300))  # minutes from base, length

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(span, max_size=30), st.lists(span, max_size=30), st.lists(st.integers(-10, 2_400), max_size=40))
    def check(absolute: list[tuple[int, int]], local: list[tuple[int, int]], ticks: list[int]) -> None:
        def text(minute: int, offset: bool) -> str:
            return format_instant(base + minute * 60_000)[:16] + ("Z" if offset else "")

        wins = [(text(a, True), text(a + n, True)) for a, n in absolute]
        wins += [(text(a, False), text(a + n, False)) for a, n in local]
        cal = build_calendar("c", windows=wins)
        for minute in ticks:
            tick = base + minute * 60_000
            local_s = int((_local(tick, zone) - _EPOCH).total_seconds())
            holding = [w for w in cal.windows if w.contains(tick, local_s)]
            end = cal.exclusion_end(tick, zone)
            assert (end is not None) == bool(holding), (minute, wins)
            if end is not None:
                assert end > tick
                probe = end - 1  # still excluded just before the end it gave
                probe_local = int((_local(probe, zone) - _EPOCH).total_seconds())
                assert any(w.contains(probe, probe_local) for w in cal.windows), (minute, end, wins)

    check()


def test_a_tick_is_looked_up_without_a_scan_of_the_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    from cronwheel.core.calendar import Window

    wins = [(f"2030-01-{d:02d}T00:00Z", f"2030-01-{d:02d}T12:00Z") for d in range(1, 29)] * 150  # 4,200 windows
    cal = build_calendar("many", windows=wins)

    def scanned(*_: object) -> bool:
        raise AssertionError("a window was scanned")

    monkeypatch.setattr(Window, "contains", scanned)
    assert cal.exclusion_end(1_893_456_000_000 + 3_600_000, "UTC") == 1_893_456_000_000 + 12 * 3_600_000  # 2030-01-01T01:00Z
    assert cal.exclusion_end(1_893_456_000_000 + 13 * 3_600_000, "UTC") is None
