"""Request bodies and JSON forms of calendars, backfills and chains (the HTTP boundary): the
bodies are decoded into their structs (``api/schema.py``), the rest is the domain's to judge.

Each parser checks a body once and hands the engine model values; every refusal names the
member at fault (``windows[2].end``), as ``validation.py`` does for jobs.
"""

from __future__ import annotations

import re
from typing import Any

from cronwheel.api import answers
from cronwheel.api.decode import decode
from cronwheel.api.fields import ValidationError
from cronwheel.api.queries import parse_int_query
from cronwheel.api.schema import BackfillRequest, CalendarRequest, ChainRequest
from cronwheel.core import schedule as sched
from cronwheel.core.calendar import (
    NAME_RE,
    Calendar,
    CalendarError,
    build_calendar,
)
from cronwheel.core.instants import format_instant

MAX_UPCOMING = 1000
_WINDOW_MEMBER = re.compile(r"^(windows\[\d+\])\.")
_ENTRY_RE = re.compile(r"^(?:dates|windows)\[\d+\](?:\.(?:start|end))?$")


def _bad(field: str | None, detail: str, status: int = 422, code: str = "invalid_field") -> ValidationError:
    return ValidationError(field, detail, status=status, code=code)






def check_calendar_name(name: str, creating: bool = False) -> str:
    """A name that cannot exist reads as absent (404), except when it is being created (422)."""
    if not NAME_RE.fullmatch(name):
        detail = f"{name[:80]!r} is not a calendar name: 1 to 64 letters, digits, '_', '.' or '-'"
        raise _bad("name", detail) if creating else _bad("name", detail, status=404, code="not_found")
    return name


def parse_calendar_body(name: str, body: Any, tenant: str) -> Calendar:
    """``PUT /v1/calendars/{name}``: ``{description, dates: [YYYY-MM-DD], windows: [{start, end}]}``
    (``schema.CalendarRequest``); the dates and windows themselves are the calendar's to judge."""
    try:
        req = decode(CalendarRequest, body)
    except ValidationError as exc:
        window = _WINDOW_MEMBER.match(exc.field or "")
        if window is None:
            raise
        # a window's shape is refused naming the window, as it always was
        where = window.group(1)
        raise _bad(where, f"{where} must be an object with exactly start and end, as strings ({exc.detail})") from None
    windows = [(w.start, w.end) for w in req.windows or ()]
    try:
        return build_calendar(name, list(req.dates or ()), windows, req.description or "", tenant)
    except CalendarError as exc:
        head = str(exc).split(":", 1)[0]
        raise _bad(head if _ENTRY_RE.fullmatch(head) else None, str(exc)) from None


def calendar_answer(cal: Calendar) -> answers.Calendar:
    return answers.Calendar(
        name=cal.name, tenant=cal.tenant, description=cal.description, dates=sorted(cal.dates),
        windows=[answers.CalendarWindowAnswer(start=w.start.text, end=w.end.text) for w in cal.windows],
        created_at=format_instant(cal.created_at or None), updated_at=format_instant(cal.updated_at or None),
    )


def parse_backfill_body(body: Any) -> tuple[int, int, bool]:
    """``POST /v1/jobs/{id}/backfill``: ``{from, to, dryRun}`` (``schema.BackfillRequest``),
    RFC 3339 instants in 1970..9899 (no ``+DURATION``: a backfill names its range)."""
    req = decode(BackfillRequest, body)
    bounds: list[int] = []
    for field, value in (("from", req.from_), ("to", req.to)):
        text = value.strip()
        if text.startswith("+"):
            raise _bad(field, f"{field} must be an RFC 3339 instant: a backfill names its range (+DURATION is for runAt)")
        try:
            at = sched.parse_instant(text)
        except ValueError as exc:
            raise _bad(field, f"{field}: {exc}") from None
        bounds.append(at)
    if bounds[1] < bounds[0]:
        raise _bad("to", "to must not be before from")
    return bounds[0], bounds[1], bool(req.dry_run)


def parse_chain_body(body: Any) -> tuple[list[str], list[str]]:
    """``PUT /v1/jobs/{id}/chain``: ``{onSuccess: [jobId], onFailure: [jobId]}`` (absent: none),
    as ``schema.ChainRequest`` says."""
    req = decode(ChainRequest, body)
    return list(dict.fromkeys(req.on_success or ())), list(dict.fromkeys(req.on_failure or ()))


def parse_upcoming_query(count: str | None, start: str | None, now_ms: int) -> tuple[int, int]:
    n = parse_int_query("count", count, 5, 1, MAX_UPCOMING)
    after = now_ms
    if start is not None:
        try:
            after = sched.parse_instant(start, now_ms)
        except ValueError as exc:
            raise _bad("from", f"from: {exc}", status=400, code="invalid_query") from None
    return n, after
