"""Schedules: when a job fires. Pure code: time is always an argument, never read.

Why one module: every way a job's time is written (cron with H, the macros, ``@every``, an
RFC 3339 instant or a ``+duration``) is parsed here, against one grammar of durations, one
range of instants (1970..9899) and one error type (``ScheduleError``); the cron fields' own
parsing is ``cron.py``, the DST mapping is the rest of this file.

Times are integers: milliseconds since the Unix epoch, UTC. Cron fire times are whole seconds.

Syntax (``man 5 cronwheel`` has the full reference):

* cron, 5 fields ``min hour dom month dow`` or 6 fields with a leading ``second``: ``*``,
  ``a``, ``a-b``, ``*/n``, ``a/n``, ``a-b/n``, lists ``a,b``, names (``JAN``, ``MON``; any case),
  ``?`` (= ``*`` in day-of-month / day-of-week), ``L`` and ``LW`` in day-of-month, ``5L`` (last
  Friday) and ``5#2`` (second Friday) in day-of-week, and Jenkins' hash ``H``, ``H/n``,
  ``H(a-b)``, ``H(a-b)/n`` in every field (see ``cron.py``). Day-of-month and day-of-week are
  AND-ed when either starts with ``*`` (or is ``?``), OR-ed otherwise (Vixie/Debian cron).
* macros ``@yearly`` ``@annually`` ``@monthly`` ``@weekly`` ``@daily`` ``@midnight``
  ``@hourly`` (fixed times, not hashed).
* ``@every <duration>`` (``90s``, ``5m``, ``1h30m``, ``2d``; a whole number of seconds, at
  least 1 s): fires at ``anchor + k * interval`` for every integer ``k``, where
  ``anchor = stable_hash("cronwheel:every:" + job_id) % interval`` (whole seconds after the
  epoch). Deterministic and restart-stable, yet jobs with the same interval are spread over
  it. The time zone plays no part.
* one-off jobs: :func:`once`, with the instant from :func:`parse_instant` (RFC 3339 or
  ``+90s`` relative to now); :func:`cronwheel.core.instants.format_instant` writes an
  instant back as RFC 3339.

Evaluation is by ``cronsim`` over *local wall-clock* (naive) date-times; the mapping to UTC
instants is done here, with this DST policy (see ``tests/unit/test_schedule_dst.py``):

* a schedule whose hour field does not cover all 24 hours (a job at fixed local times) fires
  once per matching local time: a time that falls in a spring-forward gap fires at the first
  valid instant after the gap (several such times collapse into that one instant); a time that
  occurs twice in a fall-back overlap fires once, at its first occurrence;
* a schedule whose hour field covers every hour (hourly and finer) follows the wall clock: a
  time skipped by a gap does not fire, a time that occurs twice fires twice.

Expensive work is memoised (``core/memo.py``, each memo bounded in bytes): parsing per ``(text,
zone)``, shared by every job of that text and zone unless the schedule depends on the job's id
(``H``, ``@every``: then per ``(text, job_id, zone)`` as well); evaluation per ``(concrete
expression, zone, after-second)``, so many jobs sharing an expression cost one cronsim
evaluation per distinct instant.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from cronsim import CronSim

from cronwheel.core.cron import MACROS, ScheduleError, Template, compile_expression, parse_template
from cronwheel.core.ids import stable_hash
from cronwheel.core.instants import format_instant, utc_offset
from cronwheel.core.limits import MAX_INSTANT_MS
from cronwheel.core.memo import Memo

__all__ = [
    "TRIGGERED",
    "Schedule",
    "ScheduleError",
    "cache_clear",
    "cache_info",
    "jitter_offset_ms",
    "next_fire",
    "once",
    "parse_duration",
    "parse_instant",
    "parse_schedule",
    "validate_timezone",
]

_SEC = timedelta(seconds=1)
#: the schedule of a job that has no ticks of its own: it runs when triggered (by hand, by a
#: chain, by a backfill never: it has no ticks to fill)
TRIGGERED = "@triggered"
#: evaluations are answered for instants in [year 2, year 9900); beyond, "never again"
_MIN_S = int(datetime(2, 1, 1, tzinfo=UTC).timestamp())
_MAX_S = MAX_INSTANT_MS // 1000
#: the longest fall-back overlap we look ahead for (real ones are 30 min to 2 h)
_OVERLAP_LOOKAHEAD_S = 3 * 3600


# ---------------------------------------------------------------------------------------------
# Schedule


@dataclass(frozen=True, slots=True)
class Schedule:
    """An immutable, hashable schedule. Build it with :func:`parse_schedule` or :func:`once`."""

    text: str  #: as given by the user
    timezone: str  #: IANA name
    kind: str  #: "cron" | "every" | "once" | "never" (``@triggered``)
    #: the job whose id the schedule depends on (``H`` terms, ``@every``'s anchor); empty when it
    #: depends on none, as one Schedule then serves every job of its text and zone
    job_id: str = ""
    #: cron: the concrete 6-field expression handed to cronsim (H expanded, names resolved);
    #: every: ``@every <n>s``; once: the RFC 3339 instant
    expression: str = ""
    wall_clock: bool = False  #: cron: every hour matches, follows the wall clock over DST
    interval_ms: int = 0  #: every
    anchor_ms: int = 0  #: every: a fire time in [0, interval_ms)
    run_at_ms: int = 0  #: once

    def next_after(self, after_ms: int) -> int | None:
        """The first fire time strictly after ``after_ms``; None if it never fires again."""
        if self.kind == "cron":
            key = (self.expression, self.timezone, self.wall_clock, after_ms // 1000)
            fire_s = _NEXT.held.get(key, _UNKNOWN)
            if fire_s is _UNKNOWN:
                fire_s = _NEXT.put(key, _cron_next(*key))
            # past the year 9899 nothing fires (see below), a computed tick no more than a given one
            return None if fire_s is None or fire_s >= _MAX_S else fire_s * 1000
        if self.kind == "every":
            k = (after_ms - self.anchor_ms) // self.interval_ms + 1
            fire = self.anchor_ms + k * self.interval_ms
            # past the year 9899 nothing fires: no store column or RFC 3339 text would hold it
            return fire if fire < MAX_INSTANT_MS else None
        if self.kind == "never":
            return None
        return self.run_at_ms if after_ms < self.run_at_ms else None


def parse_schedule(text: str, job_id: str, timezone: str = "UTC") -> Schedule:
    """Parse a cron expression, macro or ``@every`` interval for one job (memoised).

    Raises :class:`ScheduleError` with a precise message naming the field and the token.
    """
    # the hot path (every tick a claim takes): two dict reads when the memos hold the schedule
    found = _SHARED.held.get((text, timezone))
    if found is None:
        found = _parse_shared(text, timezone)
    if isinstance(found, Schedule):
        return found
    mine = found.by_job.get(job_id)
    return mine if mine is not None else found.for_job(job_id)


def next_fire(text: str, job_id: str, timezone: str, after_ms: int) -> int | None:
    """``parse_schedule(text, job_id, timezone).next_after(after_ms)``, both memoised."""
    found = _SHARED.held.get((text, timezone))  # parse_schedule's lookups, without its call
    if found is None:
        found = _parse_shared(text, timezone)
    if isinstance(found, Schedule):
        return found.next_after(after_ms)
    mine = found.by_job.get(job_id)
    return (mine if mine is not None else found.for_job(job_id)).next_after(after_ms)


def once(run_at_ms: int) -> Schedule:
    """A one-off schedule: ``next_after(t)`` is ``run_at_ms`` while ``t < run_at_ms``, else None."""
    text = format_instant(run_at_ms)
    return Schedule(text=text, timezone="UTC", kind="once", expression=text, run_at_ms=run_at_ms)


def cache_info() -> dict[str, int]:
    """Memoisation counters (for the tests and the benchmarks; hits are not counted, which would
    cost the hot path): ``parse_misses`` is texts parsed, ``job_misses`` the schedules made for
    one job's id (``H``, ``@every``), ``evaluations`` cronsim runs; sizes in entries and bytes."""
    return {
        "parse_misses": _SHARED.misses,
        "job_misses": _PER_JOB.misses,
        "parse_size": len(_SHARED) + len(_PER_JOB),
        "parse_bytes": _SHARED.bytes + _PER_JOB.bytes,
        "evaluations": _NEXT.misses,
        "eval_size": len(_NEXT),
        "eval_bytes": _NEXT.bytes,
    }


def cache_clear() -> None:
    for memo in (_SHARED, _PER_JOB, _NEXT):
        memo.clear()


_MACRO_LIST = ", ".join([*MACROS, "@every <interval>", TRIGGERED])


class _PerJob:
    """A schedule parsed but for the job's id it depends on: cron with ``H`` terms (its
    template), or ``@every`` (its interval); and its jobs' schedules, by job id (a lookup by the
    id alone, faster than by ``(text, job_id, zone)``), which ``_PER_JOB`` bounds."""

    __slots__ = ("by_job", "interval_s", "template", "text", "timezone")

    def __init__(self, text: str, timezone: str, template: Template | None, interval_s: int = 0) -> None:
        self.text = text
        self.timezone = timezone
        self.template = template  #: cron
        self.interval_s = interval_s  #: @every
        self.by_job: dict[str, Schedule] = {}

    def for_job(self, job_id: str) -> Schedule:
        if not isinstance(job_id, str):
            raise ScheduleError(f"job id must be a string, not {type(job_id).__name__}")
        if self.template is None:
            anchor_s = stable_hash(f"cronwheel:every:{job_id}") % self.interval_s
            made = Schedule(text=self.text, timezone=self.timezone, kind="every", job_id=job_id,
                            expression=f"@every {self.interval_s}s", interval_ms=self.interval_s * 1000,
                            anchor_ms=anchor_s * 1000)  # fmt: skip
        else:
            compiled = compile_expression(self.template.expand(job_id), self.text)
            made = Schedule(text=self.text, timezone=self.timezone, kind="cron", job_id=job_id,
                            expression=compiled.expression, wall_clock=compiled.wall_clock)  # fmt: skip
        return _PER_JOB.put(job_id, made, self.by_job)


def _parse_shared(text: str, timezone: str) -> Schedule | _PerJob:
    return _SHARED.put((text, timezone), _parse(text, timezone))


def _parse(text: str, timezone: str) -> Schedule | _PerJob:
    """The schedule of ``text`` in ``timezone``, or what is parsed of it before a job's id."""
    if not isinstance(text, str):
        raise ScheduleError(f"schedule must be a string, not {type(text).__name__}")
    validate_timezone(timezone)
    body = text.strip()
    if not body:
        raise ScheduleError("schedule is empty")
    if body.startswith("@"):
        name, *rest = body.split(None, 1)
        name = name.lower()
        arg = rest[0].strip() if rest else ""
        if name == "@every":
            return _PerJob(text, timezone, None, _every_seconds(arg))
        if name == TRIGGERED:
            if arg:
                raise ScheduleError(f"{name} takes no arguments, got {arg!r}")
            return Schedule(text=text, timezone=timezone, kind="never", expression=TRIGGERED)
        if name not in MACROS:
            raise ScheduleError(f"unknown macro {name!r}; expected one of {_MACRO_LIST}")
        if arg:
            raise ScheduleError(f"{name} takes no arguments, got {arg!r}")
        body = MACROS[name]
    if _DATE_ONLY.fullmatch(body):  # not a cron expression of one field: a one-off's date
        raise _date_without_time(body)
    if _DURATION_ONLY.fullmatch(body):  # '5m': a one-off's offset or an interval, without its sign
        raise ScheduleError(f"{body!r} is a duration, not a schedule: write '+{body}' to run once {body} from now, "
                            f"or '@every {body}' to run every {body}")
    zone = _ZONE_PREFIX.match(body)
    if zone is not None:
        raise _zone_in_schedule(zone, body)
    template = parse_template(body)
    if template.hashed:  # checked for each job's id: '0 0 31 H *' fires for some, never for others
        return _PerJob(text, timezone, template)
    compiled = compile_expression(template.canonical, text)
    return Schedule(text=text, timezone=timezone, kind="cron", expression=compiled.expression,
                    wall_clock=compiled.wall_clock)  # fmt: skip


def _every_seconds(arg: str) -> int:
    """``@every``'s interval in whole seconds."""
    if not arg:
        raise ScheduleError("@every needs an interval, e.g. '@every 5m'")
    try:
        seconds = _duration(arg)
    except ScheduleError as e:
        raise ScheduleError(f"@every: {e}") from None
    if seconds < 1:
        raise ScheduleError(f"@every: interval must be at least 1s, got {arg!r}")
    if seconds != seconds.to_integral_value():
        raise ScheduleError(f"@every: interval must be a whole number of seconds, got {arg!r}")
    return int(seconds)


# ---------------------------------------------------------------------------------------------
# The memos, each bounded in bytes: what an entry holds, about (tracemalloc's figures, the
# entry's key and slots included; bench/bench_schedule_memo.py measures them)

#: an entry of the shared memo, besides its text and its expression (or H template, counted
#: as long as the text): the key, the Schedule or _PerJob, two string headers (~220 measured)
_SHARED_ENTRY = 320
#: an entry of the per-job memo, besides the job's id and its expression (which the compiled
#: expressions' cache often shares): the Schedule, the id's string header (~190 measured)
_PER_JOB_ENTRY = 200
#: an entry of the evaluations' memo: its key (the expression is the Schedule's) and answer
#: (~185-230 measured)
_NEXT_ENTRY = 200


def _shared_bytes(key: tuple[str, str], _value: Schedule | _PerJob) -> int:
    return _SHARED_ENTRY + 2 * len(key[0])


def _job_bytes(job_id: str, value: Schedule) -> int:
    return _PER_JOB_ENTRY + len(job_id) + len(value.expression)


#: parsed schedules by ``(text, zone)``: one entry per distinct text, however many jobs share it
#: (~12,000 short texts, ~1,800 of the longest, 1,000 characters)
SHARED_BYTES = 4 * 2**20
#: schedules of one job's id (H, @every), by id in their _PerJob: ~35,000 jobs, more than a
#: claim batch takes (a tick's next is computed a few times in its claim). A million hashed jobs
#: turn it over in a day whatever its size: a miss costs ~8 µs (expanding H), not a cronsim run
PER_JOB_BYTES = 8 * 2**20
#: next ticks by ``(expression, zone, wall_clock, after-second)``: ~21,000, far more than the
#: seconds a claim spans take (the herd's jobs of one expression share one), and walks' ticks
NEXT_BYTES = 4 * 2**20

_SHARED: Memo[tuple[str, str], Schedule | _PerJob] = Memo(SHARED_BYTES, _shared_bytes)
#: its entries are in their _PerJob's ``by_job``
_PER_JOB: Memo[str, Schedule] = Memo(PER_JOB_BYTES, _job_bytes)
_NEXT: Memo[tuple[str, str, bool, int], int | None] = Memo(NEXT_BYTES, lambda _k, _v: _NEXT_ENTRY)
#: what ``_NEXT.held.get`` answers for a key it does not hold (not a second: they are in years
#: 2..9899, and this object is no computed one)
_UNKNOWN = -(1 << 62)


# ---------------------------------------------------------------------------------------------
# Evaluation: cronsim over naive local time, mapped to UTC with the DST policy above


def _cron_next(expression: str, tz_name: str, wall_clock: bool, after_s: int) -> int | None:
    """First fire second strictly after ``after_s`` (``next_after`` memoises it: the hot path)."""
    if after_s >= _MAX_S:
        return None
    after_s = max(after_s, _MIN_S)
    tz = zoneinfo.ZoneInfo(tz_name)
    local = datetime.fromtimestamp(after_s, tz)
    naive = local.replace(tzinfo=None)
    if wall_clock:
        return _next_wall_clock(expression, tz, after_s, local)
    if local.fold and _ambiguous(naive, tz):
        # after_s is in the second pass of a fall-back overlap: the first pass of every local
        # time until the overlap ends is already in the past
        naive = _overlap_end(naive, tz) - _SEC
    for cand in _naive_fires(expression, naive):
        fire = _first_instant(cand, tz)
        if fire > after_s:
            return fire
    return None


def _next_wall_clock(
    expression: str, tz: zoneinfo.ZoneInfo, after_s: int, local: datetime
) -> int | None:
    """Wall-clock semantics: the first instant after ``after_s`` whose local time matches."""
    naive = local.replace(tzinfo=None)
    best: int | None = None
    for cand in _naive_fires(expression, naive):
        first = _to_ts(cand.replace(tzinfo=tz, fold=0))
        second = _to_ts(cand.replace(tzinfo=tz, fold=1))
        if first != second and _is_imaginary(cand, tz, first):
            continue  # in a spring-forward gap: the wall clock never shows this time
        # later local times map to later first passes; if after_s is in the second pass of
        # an overlap, `first` may be past while `second` is not
        fire = first if first > after_s else second
        if fire > after_s:
            best = fire
            break
    # Local times before `naive` occur again after after_s if a fall-back is just ahead.
    ahead_s = after_s + _OVERLAP_LOOKAHEAD_S
    offset, offset_ahead = local.utcoffset(), datetime.fromtimestamp(ahead_s, tz).utcoffset()
    if offset is not None and offset_ahead is not None and offset_ahead < offset:
        transition = _transition(after_s, ahead_s, tz)
        overlap_start = datetime.fromtimestamp(transition, tz).replace(tzinfo=None)
        for cand in _naive_fires(expression, overlap_start - _SEC):
            if _ambiguous(cand, tz):  # in the overlap: its second pass is after the transition
                second = _to_ts(cand.replace(tzinfo=tz, fold=1))
                best = second if best is None else min(best, second)
            break
    return best


def _transition(lo: int, hi: int, tz: zoneinfo.ZoneInfo) -> int:
    """The first second in (lo, hi] whose UTC offset is that of ``hi`` (one change between)."""
    target = datetime.fromtimestamp(hi, tz).utcoffset()
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, tz).utcoffset() == target:
            hi = mid
        else:
            lo = mid
    return hi


def _naive_fires(expression: str, start: datetime) -> Iterator[datetime]:
    """cronsim's matches strictly after the naive ``start``, without its 50-year give-up."""
    last = start
    while True:
        try:
            for cand in CronSim(expression, last):
                last = cand
                yield cand
        except OverflowError:  # ran past year 9999
            return
        # cronsim searched 50 years past `last` and gave up: resume from there
        if last.year + 50 >= 9900:
            return
        last = datetime(last.year + 50, 1, 1) - _SEC


def _to_ts(aware: datetime) -> int:
    return int(aware.timestamp())


def _is_imaginary(naive: datetime, tz: zoneinfo.ZoneInfo, ts: int) -> bool:
    return datetime.fromtimestamp(ts, tz).replace(tzinfo=None) != naive


def _ambiguous(naive: datetime, tz: zoneinfo.ZoneInfo) -> bool:
    first = _to_ts(naive.replace(tzinfo=tz, fold=0))
    second = _to_ts(naive.replace(tzinfo=tz, fold=1))
    return first != second and not _is_imaginary(naive, tz, first)


def _first_instant(naive: datetime, tz: zoneinfo.ZoneInfo) -> int:
    """The instant of a local time: its first occurrence, or the end of the gap it is in."""
    first = _to_ts(naive.replace(tzinfo=tz, fold=0))
    second = _to_ts(naive.replace(tzinfo=tz, fold=1))
    if first == second or not _is_imaginary(naive, tz, first):
        return min(first, second)
    # In a gap: fold=0 maps it after the transition, fold=1 before. Find the transition.
    return _transition(min(first, second), max(first, second), tz)


def _overlap_end(naive: datetime, tz: zoneinfo.ZoneInfo) -> datetime:
    """The first local time after ``naive`` (which is ambiguous) that is not ambiguous."""
    first = _to_ts(naive.replace(tzinfo=tz, fold=0))
    second = _to_ts(naive.replace(tzinfo=tz, fold=1))
    lo, hi = 0, second - first  # ambiguous at naive+lo, not at naive+hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _ambiguous(naive + timedelta(seconds=mid), tz):
            lo = mid
        else:
            hi = mid
    return naive + timedelta(seconds=hi)


# ---------------------------------------------------------------------------------------------
# Durations, instants, time zones, jitter

_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|d|h|m|s)")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_PLAIN_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_UNIT_SECONDS = {
    "d": Decimal(86400),
    "h": Decimal(3600),
    "m": Decimal(60),
    "s": Decimal(1),
    "ms": Decimal("0.001"),
}


def _duration(text: str) -> Decimal:
    """Exact seconds of a duration such as ``90s``, ``1h30m``, ``500ms`` or ``30``."""
    if not isinstance(text, str):
        raise ScheduleError(f"duration must be a string, not {type(text).__name__}")
    body = text.strip()
    if _PLAIN_NUMBER.fullmatch(body):
        return Decimal(body)
    if not body:
        raise ScheduleError("duration is empty")
    total = Decimal(0)
    seen: set[str] = set()
    pos = 0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if m is None:
            lead = _NUMBER.match(body, pos)
            if lead is None:
                where = f" (at {body[pos:]!r})" if pos else ""
            elif lead.end() < len(body):
                where = f" (at {body[lead.end() :]!r})"
            else:
                where = f" (no unit after {lead.group()!r})"
            raise ScheduleError(
                f"invalid duration {text!r}: expected e.g. '90s', '5m', '1h30m', '2d', '500ms'{where}"
            )
        number, unit = m.groups()
        if unit in seen:
            raise ScheduleError(f"invalid duration {text!r}: unit '{unit}' appears twice")
        seen.add(unit)
        total += Decimal(number) * _UNIT_SECONDS[unit]
        pos = m.end()
    return total


def parse_duration(text: str) -> float:
    """Seconds in ``90s``, ``5m``, ``1h30m``, ``2d``, ``500ms`` or plain ``30`` (seconds)."""
    seconds = _duration(text)
    if seconds * 1000 >= MAX_INSTANT_MS:  # as float, 400 nines would be infinity: not JSON
        raise ScheduleError(f"duration {text[:40]!r}{'…' if len(text) > 40 else ''} is longer than the 7,900 "
                            "years to the latest instant cronwheel keeps")
    return float(seconds)


_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})?"
)


#: how an RFC 3339 instant starts (a date, then T or a space)
INSTANT_START = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]")
_DATE_ONLY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


#: a duration alone (``5m``, ``1h30m``), which people type for "in five minutes" or "every five"
_DURATION_ONLY = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?(?:ms|d|h|m|s))+")
#: robfig/cron's (and old Kubernetes CronJobs') ``CRON_TZ=Zone`` or ``TZ=Zone`` in front of the fields
_ZONE_PREFIX = re.compile(r"(CRON_TZ|TZ)=(\S*)\s*", re.IGNORECASE)


def _zone_in_schedule(zone: re.Match[str], body: str) -> ScheduleError:
    """Say where the zone goes: the fields read the time in the job's ``timezone``, one value
    for its schedule, its calendars and its windows."""
    rest = body[zone.end():]
    return ScheduleError(f"a time zone is not part of the schedule: give it as the job's timezone "
                         f"(timezone {zone.group(2)[:64]!r}, `--tz` on the command line) and the schedule as {rest[:100]!r}")


def _date_without_time(body: str) -> ScheduleError:
    """A date alone, what people type first for a one-off: say which instant to write."""
    return ScheduleError(f"{body!r} is a date without a time of day: write {body}T00:00:00Z for midnight UTC, "
                         f"or give your offset, e.g. {body}T00:00:00+02:00")


def looks_like_instant(text: str) -> bool:
    """An RFC 3339 instant or a ``+DURATION`` offset: a one-off, not a recurring schedule."""
    text = text.strip()
    return text.startswith("+") or bool(INSTANT_START.match(text))


def parse_instant(text: str, now_ms: int | None = None) -> int:
    """An RFC 3339 instant (``2026-12-01T10:00:00Z``, ``...+02:00``; an offset is required)
    or a duration after ``now_ms`` (``+90s``, ``+1h30m``), as ms since the epoch, in
    1970..9899 (ScheduleError outside it)."""
    if not isinstance(text, str):
        raise ScheduleError(f"time must be a string, not {type(text).__name__}")
    body = text.strip()
    if body.startswith("+"):
        amount = body[1:]
        if amount and amount.replace(".", "", 1).isdigit():
            # '+30' could mean seconds or minutes (at(1) says minutes): say which
            raise ScheduleError(f"relative time {text!r} needs a unit: +{amount}s, +{amount}m, +{amount}h or +{amount}d")
        if now_ms is None:
            raise ScheduleError(f"relative time {text!r} needs the current time")
        delay = (_duration(body[1:]) * 1000).to_integral_value(ROUND_HALF_EVEN)
        if now_ms + delay >= MAX_INSTANT_MS:
            raise ScheduleError(f"relative time {text!r} is past the year 9899, the latest instant cronwheel keeps")
        return now_ms + int(delay)
    m = _RFC3339.fullmatch(body)
    if m is None:
        if _DATE_ONLY.fullmatch(body):
            raise _date_without_time(body)
        raise ScheduleError(
            f"invalid time {text!r}: expected RFC 3339 like '2026-12-01T10:00:00Z' or '+90s'"
        )
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction, offset = m.group(7), m.group(8)
    if offset is None:
        raise ScheduleError(f"time {text!r} has no UTC offset; add 'Z' or e.g. '+02:00'")
    delta = utc_offset(offset)
    if delta is None:
        raise ScheduleError(f"invalid time {text!r}: offset {offset} is out of range")
    try:
        local = datetime(year, month, day, hour, minute, second)
    except ValueError as e:
        raise ScheduleError(f"invalid time {text!r}: {e}") from None
    seconds = int((local - delta - datetime(1970, 1, 1)) // _SEC)
    millis = 0
    if fraction:
        millis = int((Decimal(fraction) * 1000).to_integral_value(ROUND_FLOOR))
    if not 0 <= seconds * 1000 + millis < MAX_INSTANT_MS:  # cron arithmetic near year 1 goes astray
        raise ScheduleError(f"time {text!r} is outside 1970..9899, the instants cronwheel keeps")
    return seconds * 1000 + millis


def validate_timezone(name: str) -> zoneinfo.ZoneInfo:
    """The ``ZoneInfo`` of an IANA name; ScheduleError("unknown time zone 'Mars/Base'")."""
    if not isinstance(name, str) or not name or name != name.strip():
        raise ScheduleError(f"unknown time zone {name!r}")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"unknown time zone {name!r}") from None


def jitter_offset_ms(job_id: str, tick_ms: int, jitter_sec: int) -> int:
    """A deterministic delay in ``[0, jitter_sec * 1000)`` for one tick; 0 when jitter_sec is 0."""
    if jitter_sec < 0:
        raise ScheduleError(f"jitter must be >= 0 seconds, got {jitter_sec}")
    if jitter_sec == 0:
        return 0
    return stable_hash(f"cronwheel:jitter:{job_id}:{tick_ms}") % (jitter_sec * 1000)
