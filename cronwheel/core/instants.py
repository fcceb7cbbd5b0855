"""The one way cronwheel prints an instant: RFC 3339 in UTC with milliseconds, always.

``format_instant(1796104649194) == "2026-12-01T05:57:29.194Z"`` and a whole second keeps its
``.000`` (``"2026-12-01T05:57:29.000Z"``), so every instant has the same width and sorts as
text. The API's JSON, the event log (its ``ts`` and every ``*At`` field), the worker's
environment and headers, the store's history and notification texts and the herd preview all
print through here. Parsing is :func:`cronwheel.core.schedule.parse_instant` (which also
reads offsets and the shorter forms people type).

The year keeps four digits (strftime's ``%Y`` drops the zeros of years below 1000, so the
date is written by hand). The text of the last second formatted is kept: the event log
formats "now" for every line, and a burst of lines in one second shares one ``gmtime``.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import overload

__all__ = ["format_instant", "utc_offset"]

_last_second: tuple[int, str] = (-1 << 62, "")  # (second, its "YYYY-MM-DDTHH:MM:SS")


@overload
def format_instant(ms: int) -> str: ...
@overload
def format_instant(ms: None) -> None: ...
@overload
def format_instant(ms: int | None) -> str | None: ...
def format_instant(ms: int | None) -> str | None:
    """``ms`` since the epoch as ``YYYY-MM-DDTHH:MM:SS.mmmZ``; None stays None (an absent field)."""
    global _last_second
    if ms is None:
        return None
    secs, rem = divmod(ms, 1000)
    last = _last_second  # read once: another thread may replace it meanwhile
    if last[0] != secs:
        t = time.gmtime(secs)
        last = _last_second = (secs, f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}")
    return f"{last[1]}.{rem:03d}Z"


def utc_offset(text: str) -> timedelta | None:
    """An RFC 3339 offset (``Z``, ``+HH:MM``, ``-HH:MM``, as its parsers matched it) as the
    time to add to UTC; None when it is out of range (hours up to 23, minutes up to 59)."""
    if text in ("Z", "z"):
        return timedelta(0)
    hours, minutes = int(text[1:3]), int(text[4:6])
    if hours > 23 or minutes > 59:
        return None
    return timedelta(hours=hours, minutes=minutes) * (-1 if text[0] == "-" else 1)
