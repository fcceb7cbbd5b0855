"""Calendars and active windows: which ticks of a job are excluded. Pure: time is an argument.

A calendar is a named, tenant-scoped set of exclusions (Quartz's holiday calendar):

* ``dates``: whole local days, ``YYYY-MM-DD``, evaluated in the *job's* time zone, so one
  holiday calendar serves jobs in Paris and in New York, each skipping its own midnight to
  midnight (23 or 25 hours on a DST-change day);
* ``windows``: ``[start, end)`` ranges. A bound written without an offset
  (``2026-12-24T22:00``) is local wall-clock time in the job's zone; one with an offset
  (``...Z``, ``+02:00``) is an absolute instant (an iCalendar event with a TZID, a
  maintenance window announced in UTC).

A job names the calendars it observes; a tick excluded by any of them is recorded SKIPPED
with the reason ``calendar: NAME`` (the claim records it, this module decides).

A job's active window (``activeFrom`` / ``activeUntil``, instants) bounds its ticks: none
before ``activeFrom``, none after ``activeUntil`` (the job then completes). :func:`bounded`
wraps a ``next_tick`` function so the planner never sees a tick outside the window.

Worked example, ``0 9 * * *`` in Europe/Paris observing ``dates: [2026-03-29]`` (the spring
DST change): the 09:00 tick of 2026-03-29 is 07:00Z (CEST) and falls on that local day, so
it is excluded; 2026-03-28 09:00 (08:00Z, CET) and 2026-03-30 09:00 (07:00Z) are not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import NamedTuple

from cronwheel.core.calendarindex import CalendarIndex, quick_bound
from cronwheel.core.instants import utc_offset
from cronwheel.core.limits import MAX_CALENDAR_ENTRIES, MAX_INSTANT_MS, PATTERN_END

NextTick = Callable[[int], "int | None"]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}" + PATTERN_END)  # a schema pattern too

_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_LOCAL_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2}))?$")
_ABSOLUTE_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_EPOCH = datetime(1970, 1, 1)
#: dates and bounds are kept in 1970..9899, as every instant cronwheel keeps (core/limits.py)
_KEPT = "outside 1970-01-01 .. 9899-12-31, the dates cronwheel keeps"
_LAST_DAY = date(9899, 12, 31)


class CalendarError(ValueError):
    """A calendar that cannot be built; the message names the entry."""


@dataclass(frozen=True, slots=True)
class Bound:
    """One end of a window: local wall-clock seconds (naive) or an absolute instant (ms)."""

    local_s: int | None = None  #: seconds since 1970-01-01T00:00 of the naive local time
    absolute_ms: int | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class Window:
    start: Bound
    end: Bound

    def contains(self, tick_ms: int, local_s: int) -> bool:
        def at_or_after(b: Bound) -> bool:
            return tick_ms >= b.absolute_ms if b.absolute_ms is not None else local_s >= (b.local_s or 0)

        return at_or_after(self.start) and not at_or_after(self.end)


@dataclass(frozen=True, slots=True)
class Calendar:
    name: str
    dates: frozenset[str] = frozenset()  #: ``YYYY-MM-DD`` local days
    windows: tuple[Window, ...] = ()
    description: str = ""
    tenant: str = "default"
    created_at: int = 0
    updated_at: int = 0
    #: the stored row's, new at every write (0: not stored, or not written since version 25)
    revision: int = field(default=0, compare=False)
    _index: CalendarIndex | None = field(default=None, init=False, repr=False, compare=False)

    def excludes(self, tick_ms: int, timezone: str) -> bool:
        """Whether the tick at ``tick_ms`` falls on an excluded day or in a window, read in
        ``timezone`` (the job's zone)."""
        return self.exclusion_end(tick_ms, timezone) is not None

    def exclusion_end(self, tick_ms: int, timezone: str) -> int | None:
        """See ``CalendarIndex.exclusion_end``: a Calendar answers through its index, built at
        the first question (a listing, or a job's reading of all its tenant's calendars to
        take its own, asks none: 5,000 dates cost ~2 ms to index)."""
        return self.index().exclusion_end(tick_ms, timezone)

    def index(self) -> CalendarIndex:
        """The calendar's exclusions as a :class:`CalendarIndex` (what its row keeps packed)."""
        index = self._index
        if index is None:
            index = _index_of(self.name, sorted(self.dates), self.windows)
            self.keep_index(index)
        return index

    def keep_index(self, index: CalendarIndex) -> None:
        """Answer through ``index`` (the row's stored one, read back): it was built from this
        calendar's own dates and windows, so building it again is spared."""
        object.__setattr__(self, "_index", index)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "tenant": self.tenant,
            "description": self.description,
            "dates": sorted(self.dates),
            "windows": [{"start": w.start.text, "end": w.end.text} for w in self.windows],
        }


def parse_bound(text: str, where: str) -> Bound:
    """A window bound: ``YYYY-MM-DDTHH:MM[:SS]`` (local) or with ``Z`` / ``±HH:MM`` (absolute)."""
    m = _LOCAL_RE.fullmatch(text)
    if m is not None:
        y, mo, d, h, mi = (int(g) for g in m.groups()[:5])
        s = int(m.group(6) or 0)
        try:
            naive = datetime(y, mo, d, h, mi, s)
        except ValueError as exc:
            raise CalendarError(f"{where}: {text!r}: {exc}") from None
        return Bound(local_s=int((naive - _EPOCH).total_seconds()), text=text)
    m = _ABSOLUTE_RE.fullmatch(text)
    if m is not None:
        y, mo, d, h, mi = (int(g) for g in m.groups()[:5])
        s = int(m.group(6) or 0)
        delta = utc_offset(m.group(7))
        if delta is None:
            raise CalendarError(f"{where}: {text!r}: the offset {m.group(7)} is out of range (-23:59 to +23:59)")
        try:
            naive = datetime(y, mo, d, h, mi, s)
        except ValueError as exc:
            raise CalendarError(f"{where}: {text!r}: {exc}") from None
        try:
            utc = naive - delta  # the year 1 or 9999 with an offset leaves what datetime holds
        except OverflowError:
            raise CalendarError(f"{where}: {text!r} is {_KEPT}") from None
        return Bound(absolute_ms=int((utc - _EPOCH).total_seconds()) * 1000, text=text)
    raise CalendarError(
        f"{where}: {text!r} is not a date-time; write 2026-12-24T22:00 (the job's local time) "
        "or 2026-12-24T21:00:00Z (an instant)"
    )


def parse_date(text: str, where: str) -> str:
    m = _DATE_RE.fullmatch(text)
    if m is None:
        raise CalendarError(f"{where}: {text!r} is not a date; write YYYY-MM-DD")
    try:
        day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError as exc:
        raise CalendarError(f"{where}: {text!r}: {exc}") from None
    if not _EPOCH.date() <= day <= _LAST_DAY:
        raise CalendarError(f"{where}: {text!r} is {_KEPT}")
    return day.isoformat()


def _check_kept(window: Window, i: int) -> Window:
    """A new window's bounds in 1970..9899: an instant from the epoch to MAX_INSTANT_MS, a
    local time from 1970-01-01T00:00 to 9899-12-31T23:59:59. Checked where a calendar is
    built from a request, not where a stored one is read back (one saved before the check
    must still load)."""
    for bound, end in ((window.start, "start"), (window.end, "end")):
        value = bound.absolute_ms if bound.absolute_ms is not None else (bound.local_s or 0) * 1000
        if not 0 <= value < MAX_INSTANT_MS:
            raise CalendarError(f"windows[{i}].{end}: {bound.text!r} is {_KEPT}")
    return window


def parse_window(i: int, start_text: str, end_text: str) -> Window:
    """The ``i``-th window, checked: both ends local or both instants, the end after the start."""
    start = parse_bound(start_text, f"windows[{i}].start")
    end = parse_bound(end_text, f"windows[{i}].end")
    if (start.local_s is None) != (end.local_s is None):
        raise CalendarError(f"windows[{i}]: both ends must be local times, or both instants with an offset")
    before = (start.local_s, end.local_s) if start.local_s is not None else (start.absolute_ms, end.absolute_ms)
    if before[0] is None or before[1] is None or before[0] >= before[1]:
        raise CalendarError(f"windows[{i}]: end {end_text!r} must be after start {start_text!r}")
    return Window(start, end)


def build_calendar(
    name: str,
    dates: Iterable[str] = (),
    windows: Iterable[tuple[str, str]] = (),
    description: str = "",
    tenant: str = "default",
    created_at: int = 0,
    updated_at: int = 0,
) -> Calendar:
    """A checked :class:`Calendar`; :class:`CalendarError` names the first bad entry."""
    if not NAME_RE.fullmatch(name):
        raise CalendarError(
            f"name: {name!r} must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    days = frozenset(parse_date(d, f"dates[{i}]") for i, d in enumerate(dates))
    spans = [_check_kept(parse_window(i, start_text, end_text), i) for i, (start_text, end_text) in enumerate(windows)]
    if len(days) + len(spans) > MAX_CALENDAR_ENTRIES:
        raise CalendarError(f"a calendar holds at most {MAX_CALENDAR_ENTRIES} dates and windows together")
    return Calendar(name, days, tuple(spans), description, tenant, created_at, updated_at)


class CalendarDocument(NamedTuple):
    """A calendar as stored, its ``spec`` the JSON text of ``calendar_spec_json`` (an object
    of ``description``, ``dates`` sorted and ``windows``): what a listing sends on without
    building a :class:`Calendar` of each."""

    tenant: str
    name: str
    spec: str
    created_at: int
    updated_at: int


def calendar_from_json(
    data: dict[str, object], tenant: str, created_at: int = 0, updated_at: int = 0, revision: int = 0
) -> Calendar:
    """The stored JSON form back into a :class:`Calendar`. It was written from a checked
    calendar (``to_json``), so its dates are taken as they are, already ``YYYY-MM-DD``:
    checking them again (a regular expression, a ``date`` and its ``isoformat`` each) was
    ~2 s of a tenant's listing of 300 full calendars, in the reader every tenant's reads
    take turns at. Windows' bounds are parsed, for the instants they stand for."""
    windows = data.get("windows") or []
    dates = data.get("dates") or []
    assert isinstance(windows, list) and isinstance(dates, list)
    spans = tuple(parse_window(i, str(w["start"]), str(w["end"])) for i, w in enumerate(windows))
    return Calendar(str(data["name"]), frozenset(dates), spans, str(data.get("description") or ""),
                    tenant, created_at, updated_at, revision)  # fmt: skip


def _index_of(name: str, dates: Sequence[str], windows: Sequence[Window]) -> CalendarIndex:
    absolute = [(w.start.absolute_ms, w.end.absolute_ms) for w in windows
                if w.start.absolute_ms is not None and w.end.absolute_ms is not None]
    local = [(w.start.local_s or 0, w.end.local_s or 0) for w in windows
             if w.start.absolute_ms is None and w.end.absolute_ms is None]
    return CalendarIndex.of(name, dates, absolute, local)  # fmt: skip


def calendar_index_from_json(data: dict[str, object]) -> CalendarIndex:
    """The stored JSON form (with its ``name``) as the :class:`CalendarIndex` a claim reads,
    the same exclusions as ``calendar_from_json(data, ...)``: bounds in the shapes cronwheel
    writes are read by ``quick_bound``, any other window by ``parse_window`` as before."""
    windows = data.get("windows") or []
    dates = data.get("dates") or []
    assert isinstance(windows, list) and isinstance(dates, list)
    absolute: list[tuple[int, int]] = []
    local: list[tuple[int, int]] = []
    for i, w in enumerate(windows):
        start, end = quick_bound(str(w["start"])), quick_bound(str(w["end"]))
        if start is not None and end is not None and start[0] == end[0] and start[1] < end[1]:
            (absolute if start[0] else local).append((start[1], end[1]))
        else:
            window = parse_window(i, str(w["start"]), str(w["end"]))
            if window.start.absolute_ms is not None and window.end.absolute_ms is not None:
                absolute.append((window.start.absolute_ms, window.end.absolute_ms))
            else:
                local.append((window.start.local_s or 0, window.end.local_s or 0))
    return CalendarIndex.of(str(data["name"]), [str(d) for d in dates], absolute, local)


# ---------------------------------------------------------------- the decision


@dataclass(frozen=True, slots=True)
class Exclusions:
    """What excludes a job's ticks: its calendars, read in its time zone."""

    timezone: str = "UTC"
    calendars: Sequence[Calendar | CalendarIndex] = field(default_factory=tuple)

    def reason(self, tick_ms: int) -> str | None:
        """``calendar: NAME`` of the first calendar that excludes the tick, else None."""
        span = self.span(tick_ms)
        return None if span is None else span[0]

    def span(self, tick_ms: int) -> tuple[str, int] | None:
        """``(reason, end)`` when the tick is excluded: every tick before ``end`` is excluded
        too, by the same calendar (see ``Calendar.exclusion_end``)."""
        for cal in self.calendars:
            end = cal.exclusion_end(tick_ms, self.timezone)
            if end is not None:
                return f"calendar: {cal.name}", max(end, tick_ms + 1)
        return None


@dataclass(frozen=True, slots=True)
class ExcludedSpan:
    """Ticks a calendar excludes in a row: the first one, and the end of the exclusion."""

    first_tick: int
    until: int  #: exclusive; ticks from first_tick up to here are excluded
    reason: str


def split_excluded(ticks: Sequence[int], exclusions: Exclusions | None) -> tuple[list[int], list[tuple[int, str]]]:
    """``(ticks to run, [(tick, reason)] to record SKIPPED)``, both ascending."""
    if exclusions is None or not exclusions.calendars:
        return list(ticks), []
    run: list[int] = []
    skipped: list[tuple[int, str]] = []
    for tick in ticks:
        why = exclusions.reason(tick)
        if why is None:
            run.append(tick)
        else:
            skipped.append((tick, why))
    return run, skipped


def bounded(next_tick: NextTick, active_from: int | None, active_until: int | None) -> NextTick:
    """``next_tick`` restricted to the active window ``[active_from, active_until]``."""
    if active_from is None and active_until is None:
        return next_tick

    def inner(after: int) -> int | None:
        if active_from is not None and after < active_from - 1:
            after = active_from - 1
        nxt = next_tick(after)
        if nxt is None or (active_until is not None and nxt > active_until):
            return None
        return nxt

    return inner


def upcoming(
    next_tick: NextTick, after: int, count: int, exclusions: Exclusions | None, scan_limit: int = 100_000
) -> tuple[list[int], list[ExcludedSpan]]:
    """The next ``count`` ticks after ``after`` that run, and the excluded spans met on the
    way. An excluded day or window is jumped over in one step, so an every-second job on a
    week-long holiday costs a few evaluations; at most ``scan_limit`` steps are taken (a
    calendar excluding nearly everything ends the search)."""
    run: list[int] = []
    spans: list[ExcludedSpan] = []
    t = next_tick(after)
    steps = 0
    while t is not None and len(run) < count and steps < scan_limit:
        steps += 1
        span = exclusions.span(t) if exclusions is not None else None
        if span is None:
            run.append(t)
            t = next_tick(t)
        else:
            spans.append(ExcludedSpan(t, span[1], span[0]))
            t = next_tick(span[1] - 1)
    return run, spans
