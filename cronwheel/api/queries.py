"""Headers and query strings: the Idempotency-Key header, ``limit``, ``status``, and the ``before``
and ``after`` cursors. Pure: no HTTP, no I/O, no clock."""

from __future__ import annotations

import re
from collections.abc import Callable

from cronwheel.api.fields import bad
from cronwheel.core import schedule as sched
from cronwheel.core.ids import has_execution_id_shape, has_job_id_shape
from cronwheel.core.limits import MAX_IDEMPOTENCY_KEY_CHARS, MAX_PAGE
from cronwheel.core.model import JobStatus


def parse_idempotency_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not value or len(value) > MAX_IDEMPOTENCY_KEY_CHARS or not value.isprintable() or not value.isascii():
        raise bad("Idempotency-Key", f"the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters", status=400, code="invalid_header")
    return value


def parse_limit(value: str | None, default: int, maximum: int = MAX_PAGE) -> int:
    return parse_int_query("limit", value, default, 1, maximum)


def parse_int_query(field: str, value: str | None, default: int, lo: int, hi: int) -> int:
    """A query parameter that is an integer in ``lo..hi`` (absent: ``default``), else a 400
    naming ``field``."""
    if value is None:  # an empty ``limit=`` is not an integer: refused, as the document says
        return default
    # isascii: "٣".isdigit() is True and int() takes it; len: a huge number is just refused
    # (int() refuses one of more than 4300 digits with a ValueError)
    if not (value.isascii() and value.isdigit() and len(value) <= 12) or not lo <= int(value) <= hi:
        raise bad(field, f"{field} must be an integer between {lo} and {hi}, not {value[:50]!r}", status=400, code="invalid_query")
    return int(value)


def parse_job_status(value: str | None) -> JobStatus | None:
    if value is None or value == "":
        return None
    try:
        return JobStatus(value.upper())
    except ValueError:
        choices = ", ".join(s.value.lower() for s in JobStatus)
        raise bad("status", f"status must be one of {choices}, not {value[:50]!r}", status=400, code="invalid_query") from None


def parse_ms_cursor(field: str, value: str | None) -> int | None:
    """A ``before`` cursor: the integer milliseconds from a previous page's ``next``, or an
    RFC 3339 instant."""
    if value is None or value == "":
        return None
    if value.isascii() and value.isdigit():
        if len(value) > 18:  # beyond any instant in ms, and beyond what the store binds (int64)
            raise bad(field, f"{field} is out of range: {value[:30]}…", status=400, code="invalid_query")
        return int(value)
    if sched.INSTANT_START.match(value):
        try:
            return sched.parse_instant(value)
        except ValueError as exc:  # an instant, but not one cronwheel keeps (or not a date)
            raise bad(field, f"{field}: {exc}", status=400, code="invalid_query") from None
    raise bad(field, f"{field} must be a cursor from a previous page or an RFC 3339 instant, not {value[:50]!r}", status=400, code="invalid_query")


def parse_job_cursor(value: str | None) -> str | None:
    """An ``after`` cursor of the job listing: a job id (a previous page's ``next``). Anything
    else is refused: paging after it would answer an empty page that looks like the end."""
    return _parse_id_cursor(value, has_job_id_shape, "a job id")


def parse_execution_cursor(value: str | None) -> str | None:
    """An ``after`` cursor of the dead-letter listing: an execution id."""
    return _parse_id_cursor(value, has_execution_id_shape, "an execution id")


def _parse_id_cursor(value: str | None, has_shape: Callable[[str], bool], what: str) -> str | None:
    if value is None or value == "":
        return None
    if not has_shape(value):
        raise bad("after", f"after must be the next of a previous page ({what}), not {value[:50]!r}", status=400, code="invalid_query")
    return value


#: the response header that says where a stream's body starts (``GET /v1/events``, an
#: execution's output): sent back as ``after``, it resumes the stream at the very next event or byte
CURSOR_HEADER = "Cronwheel-Cursor"
_EVENT_CURSOR = re.compile(r"([0-9a-f]{16}):([0-9]{1,18})")
_OUTPUT_CURSOR = re.compile(r"([0-9]{1,18}):([0-9]{1,18})")


def parse_event_cursor(value: str | None) -> tuple[str, int] | None:
    """``after`` of the event stream: ``LOG:SEQ``, the event log of one start of the daemon
    (16 hex digits) and the ``seq`` of the last event had of it."""
    parts = _cursor(value, _EVENT_CURSOR, "of the event stream (LOG:SEQ: 16 hex digits, ':', an event's seq)")
    return None if parts is None else (parts[0], int(parts[1]))


def parse_output_cursor(value: str | None) -> tuple[int, int] | None:
    """``after`` of an execution's output: ``EPOCH:OFFSET``, a hand-off of the execution (its
    lease epoch) and how many bytes of its output were had."""
    parts = _cursor(value, _OUTPUT_CURSOR, "of the output (EPOCH:OFFSET: a lease epoch, ':', a byte offset)")
    return None if parts is None else (int(parts[0]), int(parts[1]))


def _cursor(value: str | None, form: re.Pattern[str], what: str) -> tuple[str, str] | None:
    if value is None or value == "":
        return None
    m = form.fullmatch(value)
    if m is None:
        raise bad("after", f"after must be a {CURSOR_HEADER} {what}, not {value[:50]!r}", status=400, code="invalid_query")
    return m[1], m[2]
