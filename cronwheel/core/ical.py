"""The small subset of iCalendar (RFC 5545) a holiday or maintenance file needs. Pure.

Each VEVENT's DTSTART/DTEND becomes an exclusion:

* all-day events (``DTSTART;VALUE=DATE:20261225``) become excluded dates; DTEND is
  exclusive (a two-day event has DTEND two days after DTSTART), absent means one day;
* timed events become windows: a floating time (``20261224T220000``) stays local (read in
  the job's zone), a UTC time (``...Z``) or one with a ``TZID`` becomes an instant;
  DTEND absent means a zero-length event and is skipped, as it excludes nothing.

RRULE, EXDATE and DURATION are not interpreted: an event carrying them is refused with its
line number rather than half-understood (a recurring holiday comes out wrong silently
otherwise). Public holiday feeds list each occurrence as its own event.
"""

from __future__ import annotations

import zoneinfo
from datetime import date, datetime, timedelta

from cronwheel.core.calendar import CalendarError, parse_date

MAX_EVENT_DAYS = 366  #: an all-day event longer than this is refused (a typo, not a holiday)


def _unfold(text: str) -> list[tuple[int, str]]:
    """Content lines with their first line number; continuation lines start with a blank."""
    lines: list[tuple[int, str]] = []
    for no, raw in enumerate(text.splitlines(), 1):
        if raw[:1] in (" ", "\t") and lines:
            lines[-1] = (lines[-1][0], lines[-1][1] + raw[1:])
        elif raw.strip():
            lines.append((no, raw))
    return lines


def _value(no: int, line: str) -> tuple[str, dict[str, str], str]:
    head, sep, value = line.partition(":")
    if not sep:
        raise CalendarError(f"line {no}: not an iCalendar content line: {line[:60]!r}")
    name, *params = head.split(";")
    return name.upper(), {k.upper(): v for k, _, v in (p.partition("=") for p in params)}, value.strip()


def _date(no: int, value: str) -> date:
    try:
        return datetime.strptime(value[:8], "%Y%m%d").date()
    except ValueError:
        raise CalendarError(f"line {no}: {value!r} is not an iCalendar date") from None


def _datetime(no: int, value: str, params: dict[str, str]) -> str:
    """A window bound in the form ``core.calendar.parse_bound`` reads.

    Not a printed instant (so not ``core.instants.format_instant``): a bound keeps the event's
    own wall clock, local with its offset or floating without one, to the second as
    iCalendar writes it; only a ``Z`` time is UTC, and it stays in that same shape."""
    try:
        naive = datetime.strptime(value.rstrip("Zz"), "%Y%m%dT%H%M%S")
    except ValueError:
        raise CalendarError(f"line {no}: {value!r} is not an iCalendar date-time") from None
    if value.endswith(("Z", "z")):
        return naive.strftime("%Y-%m-%dT%H:%M:%SZ")
    tzid = params.get("TZID")
    if tzid:
        try:
            zone = zoneinfo.ZoneInfo(tzid.strip('"'))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise CalendarError(f"line {no}: unknown TZID {tzid!r}") from None
        aware = naive.replace(tzinfo=zone)
        off = aware.utcoffset() or timedelta(0)
        minutes = int(off.total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        return naive.strftime("%Y-%m-%dT%H:%M:%S") + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return naive.strftime("%Y-%m-%dT%H:%M:%S")


def parse_ics(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """``(dates, windows)`` of the VEVENTs in an iCalendar text."""
    dates: list[str] = []
    windows: list[tuple[str, str]] = []
    event: dict[str, tuple[int, dict[str, str], str]] | None = None
    began = 0
    for no, line in _unfold(text):
        name, params, value = _value(no, line)
        if name == "BEGIN" and value.upper() == "VEVENT":
            event, began = {}, no
        elif name == "END" and value.upper() == "VEVENT" and event is not None:
            _event(began, event, dates, windows)
            event = None
        elif event is not None:
            if name in ("RRULE", "RDATE", "EXDATE", "DURATION"):
                raise CalendarError(f"line {no}: {name} is not supported; list each occurrence as its own VEVENT")
            event[name] = (no, params, value)
    if event is not None:
        raise CalendarError(f"line {began}: VEVENT never ends (no END:VEVENT)")
    return dates, windows


def _event(
    began: int, event: dict[str, tuple[int, dict[str, str], str]], dates: list[str], windows: list[tuple[str, str]]
) -> None:
    if "DTSTART" not in event:
        raise CalendarError(f"line {began}: VEVENT without DTSTART")
    no, params, value = event["DTSTART"]
    all_day = params.get("VALUE", "").upper() == "DATE" or len(value) == 8
    if all_day:
        first = _date(no, value)
        parse_date(first.isoformat(), f"line {no}")  # a date cronwheel keeps (1970..9899)
        last = first + timedelta(days=1)
        end_no = no
        if "DTEND" in event:
            end_no, _, end_value = event["DTEND"]
            last = _date(end_no, end_value)
        days = (last - first).days
        if not 1 <= days <= MAX_EVENT_DAYS:
            raise CalendarError(f"line {no}: an all-day event must last 1 to {MAX_EVENT_DAYS} days, not {days}")
        parse_date((last - timedelta(days=1)).isoformat(), f"line {end_no}")  # DTEND: the day after the last
        dates.extend((first + timedelta(days=i)).isoformat() for i in range(days))
        return
    if "DTEND" not in event:
        return
    end_no, end_params, end_value = event["DTEND"]
    windows.append((_datetime(no, value, params), _datetime(end_no, end_value, end_params)))
