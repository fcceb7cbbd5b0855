"""The token layer of cron expressions: validation, names, ``?``, Jenkins-style ``H``.

Pure code. ``schedule.py`` is the public face; this module turns the text a user wrote into a
*concrete*, numeric, 6-field expression that ``cronsim`` evaluates. All validation happens
here, before cronsim sees anything, so that every error names the field and the token.

Fields are indexed the same way whether the user wrote 5 or 6 fields (0 = second, 1 = minute,
2 = hour, 3 = day-of-month, 4 = month, 5 = day-of-week); a 5-field expression gets second 0.

``H`` (hash) picks a value from the job id, the same on every node and after every restart::

    H          one value in the field's hash range
    H/n        every n, starting at an offset in [lo, lo+n)
    H(a-b)     one value in a..b
    H(a-b)/n   every n within a..b, starting at an offset in [a, a+n)

The hash is ``ids.stable_hash`` salted with the field and term index, so that e.g. the minute
and the hour of ``H H * * *`` are not correlated. Hash ranges are the field's range, except
day-of-month (1-28, so every month has it) and day-of-week (0-6).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from cronsim import CronSim, CronSimError

from cronwheel.core.ids import stable_hash


class ScheduleError(ValueError):
    """A schedule, instant, duration or time zone the user gave is not valid.

    ``str(e)`` is a precise, user-facing message that names the field and the token.
    """


SECOND, MINUTE, HOUR, DOM, MONTH, DOW = range(6)
FIELD_NAMES = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
#: accepted values per field (day-of-week 7 is Sunday, like 0)
FIELD_RANGES = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
#: ranges that a bare ``H`` picks from
HASH_RANGES = ((0, 59), (0, 59), (0, 23), (1, 28), (1, 12), (0, 6))
#: the largest sensible step per field: the number of distinct values
MAX_STEP = (60, 60, 24, 31, 12, 7)
MONTH_NAMES = {
    n: i
    for i, n in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1
    )
}
DAY_NAMES = {n: i for i, n in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}
_DAYS_IN_MONTH = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _err(field: int, message: str) -> ScheduleError:
    return ScheduleError(f"{FIELD_NAMES[field]} field: {message}")


def _number(field: int, token: str, term: str) -> int:
    """A number or a name (JAN, MON; any case) within the field's range."""
    name = token.upper()
    if field == MONTH and name in MONTH_NAMES:
        return MONTH_NAMES[name]
    if field == DOW and name in DAY_NAMES:
        return DAY_NAMES[name]
    if not token:
        raise _err(field, f"{term!r} is missing a number")
    if not token.isascii() or not token.isdigit():
        raise _err(field, f"{token!r} is not a number or name")
    value = int(token)
    lo, hi = FIELD_RANGES[field]
    if not lo <= value <= hi:
        raise _err(field, f"{value} is out of range {lo}-{hi}")
    return value


def _step(field: int, token: str, term: str) -> int:
    if not token:
        raise _err(field, f"{term!r} is missing the step after '/'")
    if not token.isascii() or not token.isdigit():
        raise _err(field, f"step {token!r} is not a number")
    step = int(token)
    if not 1 <= step <= MAX_STEP[field]:
        raise _err(field, f"step {step} is out of range 1-{MAX_STEP[field]}")
    return step


def _range(field: int, text: str, term: str) -> tuple[int, int]:
    """``a`` or ``a-b`` → (a, b), validated."""
    start_s, dash, end_s = text.partition("-")
    start = _number(field, start_s, term)
    if not dash:
        return start, start
    end = _number(field, end_s, term)
    if field == DOW and end == 0 < start:
        end = 7  # SAT-SUN, 5-0: Sunday closes the week
    if end < start:
        raise _err(field, f"range {text!r} goes backwards ({start} > {end})")
    return start, end


@dataclass(frozen=True, slots=True)
class HashTerm:
    """An ``H`` term, to be replaced by numbers once the job id is known."""

    field: int
    index: int  #: position in the field's comma list (part of the hash salt)
    lo: int
    hi: int
    step: int | None

    def expand(self, job_id: str) -> str:
        h = stable_hash(f"cronwheel:H:{self.field}:{self.index}:{job_id}")
        width = self.hi - self.lo + 1
        if self.step is None:
            return str(self.lo + h % width)
        start = self.lo + h % min(self.step, width)
        if start + self.step > self.hi:
            return str(start)
        return f"{start}-{self.hi}/{self.step}"

    def __str__(self) -> str:
        text = f"H({self.lo}-{self.hi})"
        return text if self.step is None else f"{text}/{self.step}"


Term = str | HashTerm


def _parse_hash(field: int, index: int, term: str) -> HashTerm:
    body, slash, step_s = term.partition("/")
    step = _step(field, step_s, term) if slash else None
    if body.upper() == "H":
        lo, hi = HASH_RANGES[field]
    elif body[:2].upper() == "H(" and body.endswith(")"):
        lo, hi = _range(field, body[2:-1], term)
    else:
        raise _err(field, f"{term!r} is not valid; use H, H/n, H(a-b) or H(a-b)/n")
    return HashTerm(field, index, lo, hi, step)


def _parse_term(field: int, index: int, term: str) -> Term:
    """One comma-separated term → a canonical numeric term, or a HashTerm."""
    if term == "":
        raise _err(field, "empty item in list")
    if not term.isascii():
        raise _err(field, f"{term!r} is not a number or name")
    up = term.upper()
    if up.startswith("H"):
        return _parse_hash(field, index, term)
    if term == "?":
        if field not in (DOM, DOW):
            raise _err(field, "'?' is only allowed in day-of-month and day-of-week")
        return "*"
    if field == DOM and up in ("L", "LW"):
        return up
    if field == DOW and "#" in term:
        day_s, _, nth_s = term.partition("#")
        day = _number(field, day_s, term)
        if not nth_s.isdigit() or not 1 <= int(nth_s) <= 5:
            raise _err(field, f"{term!r}: the week after '#' must be 1-5")
        return f"{day}#{int(nth_s)}"
    if field == DOW and up.endswith("L"):
        if up == "L":
            raise _err(field, "'L' needs a day before it, e.g. '5L' (the last Friday)")
        return f"{_number(field, term[:-1], term)}L"
    if field == DOM and (up.endswith("W") or up.startswith("L")):
        raise _err(field, f"{term!r} is not supported (of L and W, only 'L' and 'LW' are)")
    if "#" in term:
        raise _err(field, f"{term!r}: '#' is only allowed in day-of-week")
    body, slash, step_s = term.partition("/")
    step = _step(field, step_s, term) if slash else None
    if body == "*":
        return "*" if step is None else f"*/{step}"
    start, end = _range(field, body, term)
    if start == end and "-" in body:
        return str(start)  # cronsim reads a one-value range with a step as "start/step"
    text = f"{start}-{end}" if "-" in body else str(start)
    return text if step is None else f"{text}/{step}"


@dataclass(frozen=True, slots=True)
class Template:
    """A validated cron expression whose ``H`` terms are not yet expanded."""

    fields: tuple[tuple[Term, ...], ...]  #: always 6 fields
    hashed: bool  #: has at least one H term
    canonical: str  #: 6 numeric fields; H terms shown as ``H(lo-hi)[/n]``

    def expand(self, job_id: str) -> str:
        """The concrete 6-field expression for this job id (the same on every call)."""
        if not self.hashed:
            return self.canonical
        return " ".join(
            ",".join(t if isinstance(t, str) else t.expand(job_id) for t in terms)
            for terms in self.fields
        )


@lru_cache(maxsize=4096)
def parse_template(text: str) -> Template:
    """Validate a cron expression (5 or 6 fields, macros resolved by the caller)."""
    parts = text.split()
    if len(parts) not in (5, 6):
        raise ScheduleError(f"expected 5 or 6 fields, got {len(parts)}")
    if len(parts) == 5:
        parts.insert(0, "0")
    fields: list[tuple[Term, ...]] = []
    for field, part in enumerate(parts):
        fields.append(tuple(_parse_term(field, i, term) for i, term in enumerate(part.split(","))))
    hashed = any(isinstance(t, HashTerm) for terms in fields for t in terms)
    canonical = " ".join(",".join(str(t) for t in terms) for terms in fields)
    return Template(tuple(fields), hashed, canonical)


def _term_values(field: int, term: str) -> set[int]:
    """The values a canonical numeric term stands for (L, LW, nL, n#k give the empty set)."""
    lo, hi = FIELD_RANGES[field]
    body, slash, step_s = term.partition("/")
    step = int(step_s) if slash else 1
    if body == "*":
        return set(range(lo, hi + 1)[::step])
    if not body.replace("-", "").isdigit():
        return set()
    start_s, dash, end_s = body.partition("-")
    start = int(start_s)
    end = int(end_s) if dash else (hi if slash else start)
    return set(range(start, end + 1)[::step])


@dataclass(frozen=True, slots=True)
class Compiled:
    """A concrete expression, checked to fire at least once."""

    expression: str  #: 6 fields, numeric, what cronsim is given
    wall_clock: bool  #: every hour matches: follows the wall clock across DST changes


_SCAN_START = datetime(1999, 12, 31, 23, 59, 59)


@lru_cache(maxsize=4096)
def compile_expression(expression: str, source: str) -> Compiled:
    """Check a concrete 6-field expression; ``source`` is what the user wrote, for messages."""
    parts = expression.split()
    hours: set[int] = set()
    for term in parts[HOUR].split(","):
        hours |= _term_values(HOUR, term)
    days_expr = " ".join(["0", "0", "0", *parts[DOM:]])
    try:
        CronSim(expression, _SCAN_START)
        fires = _any_date(days_expr)
    except CronSimError as e:
        # cronsim's own "no month has this day" check; anything else would be a bug of ours
        if str(e).endswith("day-of-month") and all(
            max((_DAYS_IN_MONTH[m] for m in _field_values(MONTH, parts[MONTH])), default=0) < d
            for d in _field_values(DOM, parts[DOM])
        ):
            fires = False
        else:  # pragma: no cover - validation above should make this unreachable
            raise ScheduleError(f"invalid cron expression {source!r}: {e}") from None
    if not fires:
        raise ScheduleError(
            f"schedule never fires: {source!r} matches no date "
            f"(day-of-month {parts[DOM]}, month {parts[MONTH]}, day-of-week {parts[DOW]})"
        )
    return Compiled(expression, wall_clock=hours == set(range(24)))


def meaning(template: Template) -> str:
    """The template spelled by what it means, so that two spellings of one schedule compare
    equal: ``@daily``'s ``0 0 * * *`` and ``0 0 0 */1 * *``, ``MON-FRI`` and ``1-5``, ``7`` and
    ``0``, ``0,30`` and ``*/30``. Equal meanings fire at the same local times, for the same
    job id when they hash: an ``H`` field is kept term for term (each term's place salts its
    hash), so it means the same as that very field only, never as the numbers it hashes to."""
    fields = template.fields
    times = [_field_meaning(f, fields[f]) for f in (SECOND, MINUTE, HOUR, MONTH)]
    return " | ".join([*times, _days_meaning(fields)])


def _field_meaning(field: int, terms: tuple[Term, ...]) -> str:
    if _hashed(terms):
        return "H[" + ",".join(map(str, terms)) + "]"
    return _spelled(_values(field, terms))


def _hashed(terms: tuple[Term, ...]) -> bool:
    return any(isinstance(t, HashTerm) for t in terms)


def _values(field: int, terms: tuple[Term, ...]) -> set[int]:
    return {v for t in terms if isinstance(t, str) for v in _term_values(field, t)}


def _spelled(values: set[int]) -> str:
    """Sorted values as ranges: {0, 1, 2, 5} → ``0-2,5``."""
    runs: list[list[int]] = []
    for v in sorted(values):
        if runs and runs[-1][1] == v - 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _days_meaning(fields: tuple[tuple[Term, ...], ...]) -> str:
    """Which days match, by cronsim's rule (Vixie cron's): day-of-month and day-of-week are
    AND-ed when either starts with ``*``, OR-ed otherwise; so ``*/1`` is not ``1-31`` there
    (``0 0 */1 * 1`` is Mondays, ``0 0 1-31 * 1`` every day)."""
    dom, dow = fields[DOM], fields[DOW]
    if _hashed(dom) or _hashed(dow):  # whether a hashed term ANDs or ORs is its text's
        return "days H[" + ",".join(map(str, dom)) + ";" + ",".join(map(str, dow)) + "]"
    months = set(range(1, 13)) if _hashed(fields[MONTH]) else _values(MONTH, fields[MONTH])
    longest = max(_DAYS_IN_MONTH[m] for m in months)
    days = {d for d in _values(DOM, dom) if d <= longest}  # 31 in April adds no date
    dom_text = ",".join(filter(None, [_spelled(days), *sorted({t for t in dom if t in ("L", "LW")})]))
    weekdays = {d % 7 for d in _values(DOW, dow)}  # 7 is Sunday, as 0
    nths = {_nth(t) for t in dow if isinstance(t, str) and ("L" in t or "#" in t)}
    dow_text = ",".join(filter(None, [_spelled(weekdays), *(f"{d}{n}" for d, n in sorted(nths) if d not in weekdays)]))
    every_dom, every_dow = days == set(range(1, longest + 1)), weekdays == set(range(7))
    if str(dom[0]).startswith("*") or str(dow[0]).startswith("*"):  # AND: one "every" leaves the other
        if every_dom:
            return "every day" if every_dow else f"dow {dow_text}"
        return f"dom {dom_text}" if every_dow else f"dom {dom_text} and dow {dow_text}"
    if every_dom or every_dow:  # OR: one "every" is every day
        return "every day"
    return f"dom {dom_text} or dow {dow_text}" if dom_text else f"dow {dow_text}"


def _nth(term: str) -> tuple[int, str]:
    """A day-of-week term of one week of the month: ``5L`` → (5, "L"), ``7#2`` → (0, "#2");
    the caller leaves it out when its day is there every week anyway."""
    day = term.rstrip("L").partition("#")[0]
    return int(day) % 7, term[len(day) :]


def _field_values(field: int, text: str) -> set[int]:
    out: set[int] = set()
    for term in text.split(","):
        out |= _term_values(field, term)
    return out


def _any_date(days_expr: str) -> bool:
    """Does any date match? The Gregorian calendar repeats every 400 years, so scan one cycle."""
    start = _SCAN_START
    for _ in range(9):  # cronsim gives up after ~50 years per call
        try:
            next(CronSim(days_expr, start))
            return True
        except StopIteration:
            start = start.replace(year=start.year + 50)
    return False


__all__ = [
    "FIELD_NAMES",
    "MACROS",
    "Compiled",
    "HashTerm",
    "ScheduleError",
    "Template",
    "compile_expression",
    "meaning",
    "parse_template",
]
