"""A calendar's exclusions in the compact form a claim reads. Pure: time is an argument.

A claim batch asks "which calendar excludes this tick" of every calendar its due jobs
observe. A parsed :class:`~cronwheel.core.calendar.Calendar` keeps each window as objects
(~500 bytes a window), so few could be held between batches, and reading one again from its
stored text parsed every bound with a regular expression and a ``datetime`` (~12 µs a
window). Here a calendar is sorted integer arrays (16 bytes a window, 8 a date), built from
the stored text by the C ISO-8601 parser, so that twenty times as many can be held in the
same memory and one that is not costs a fifth of the parse. ``Calendar`` answers through the same index, so
the two never differ.
"""

from __future__ import annotations

import bisect
import struct
import sys
import zoneinfo
from array import array
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


@lru_cache(maxsize=64)
def zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


def local_time(tick_ms: int, timezone: str) -> datetime:
    """The naive local wall-clock time of an instant in ``timezone``."""
    aware = datetime.fromtimestamp(tick_ms // 1000, tz=UTC).astimezone(zone(timezone))
    return aware.replace(tzinfo=None)


def instant_at(naive: datetime, timezone: str, after: int) -> int:
    """The end of an excluded stretch that ends at local wall-clock time ``naive``, for a tick
    at ``after`` inside it: the first instant after the tick at which the local clock reaches
    ``naive``. In a fall-back overlap that is the first reading still ahead (the repeated hour
    comes back later as a stretch of its own); in a spring-forward gap, where ``naive`` never
    shows, it is the jump itself. Never later than the true end, so a caller may jump there
    without passing over a tick that runs."""
    tz = zone(timezone)
    readings = sorted(int(naive.replace(tzinfo=tz, fold=f).timestamp()) for f in (0, 1))
    if readings[0] != readings[1] and local_time(readings[0] * 1000, timezone) != naive:
        # a gap: bisect for the first second on the far side of the jump
        lo, hi = readings
        far = datetime.fromtimestamp(hi, UTC).astimezone(tz).utcoffset()
        while lo < hi:
            mid = (lo + hi) // 2
            if datetime.fromtimestamp(mid, UTC).astimezone(tz).utcoffset() == far:
                hi = mid
            else:
                lo = mid + 1
        return lo * 1000
    return next((r * 1000 for r in readings if r * 1000 > after), readings[-1] * 1000)


def quick_bound(text: str) -> tuple[bool, int] | None:
    """``(absolute, value)`` of a window bound in the shapes cronwheel writes and reads back
    (``YYYY-MM-DDTHH:MM[:SS]`` local, in seconds; ``YYYY-MM-DDTHH:MM:SS[.fff]`` then ``Z`` or
    ``±HH:MM`` absolute, in ms, the fraction dropped as ``parse_bound`` drops it), read by
    ``datetime.fromisoformat``; None for any other shape, which the full parser reads. Years
    0001 and 9999 go to the full parser too: an offset there leaves what ``datetime`` holds,
    which it refuses."""
    n = len(text)
    if n < 16 or text[10] != "T" or text[:4] in ("0001", "9999"):
        return None
    if n not in (16, 19):
        tail = 1 if text[-1] == "Z" else 6 if text[-6] in "+-" and text[-3] == ":" else 0
        head = n - tail
        if not tail or not (head == 19 or (head > 20 and text[19] == "." and text[20:head].isdigit())):
            return None
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if n in (16, 19):
        return (False, (dt - _EPOCH) // _SECOND) if dt.tzinfo is None else None
    if dt.tzinfo is None:
        return None
    return True, (dt - _EPOCH_UTC) // _SECOND * 1000


class WindowIndex:
    """Windows, for "which window holds this tick" in O(log n) rather than a scan of all of
    them at every tick: a job may observe 8 calendars of 5,000 windows, and one ``upcoming``
    or backfill asks about thousands of ticks. A window's bounds are both absolute (ms) or
    both local (seconds); each kind is sorted by start, with the latest end among each
    prefix: the tick is in some window iff that latest end, among the windows starting at or
    before it, is after it, and that end is a true end of a window holding it."""

    __slots__ = ("absolute", "local")

    def __init__(self, absolute: Sequence[tuple[int, int]], local: Sequence[tuple[int, int]]) -> None:
        self.absolute = _prefix(absolute)
        self.local = _prefix(local)

    @classmethod
    def of_arrays(cls, absolute: tuple[array[int], array[int]], local: tuple[array[int], array[int]]) -> WindowIndex:
        """From arrays already sorted and prefixed (a packed index read back)."""
        index = cls.__new__(cls)
        index.absolute, index.local = absolute, local
        return index

    def end_of(self, tick_ms: int, local_s: int, timezone: str) -> int | None:
        """The end of a window holding the tick (ms), or None."""
        starts, ends = self.absolute
        i = bisect.bisect_right(starts, tick_ms) - 1
        if i >= 0 and ends[i] > tick_ms:
            return ends[i]
        starts, ends = self.local
        i = bisect.bisect_right(starts, local_s) - 1
        if i >= 0 and ends[i] > local_s:
            return instant_at(_EPOCH + timedelta(seconds=ends[i]), timezone, tick_ms)
        return None


def _prefix(spans: Sequence[tuple[int, int]]) -> tuple[array[int], array[int]]:
    """The starts, sorted, and the latest end among each prefix, as 8-byte integer arrays
    (built whole, so that none holds the spare room of one grown by appending)."""
    starts: list[int] = []
    ends: list[int] = []
    latest = None
    for start, end in sorted(spans):
        latest = end if latest is None or end > latest else latest
        starts.append(start)
        ends.append(latest)
    return array("q", starts), array("q", ends)


#: the packed form's layout version, its first byte: a change of layout takes a new number, and
#: a stored index of another is read as missing (rebuilt from the spec), never misread
PACK_VERSION = 1
#: version, then the counts of days, absolute windows, local windows (little-endian)
_HEAD = struct.Struct("<BIII")
_SWAP = sys.byteorder != "little"  # the stored arrays are little-endian on every machine


class CalendarIndex:
    """What one calendar excludes: local days (as ``date.toordinal``, sorted) and windows."""

    __slots__ = ("days", "name", "size", "windows")

    def __init__(self, name: str, days: Sequence[int], windows: WindowIndex | None, size: int) -> None:
        """``days`` sorted here, unless already an array (then sorted by its maker)."""
        self.name = name
        self.days: array[int] = days if isinstance(days, array) else array("q", sorted(days))
        self.windows = windows
        self.size = size  #: dates and windows

    @classmethod
    def of(cls, name: str, dates: Sequence[str], absolute: Sequence[tuple[int, int]],
           local: Sequence[tuple[int, int]]) -> CalendarIndex:  # fmt: skip
        """From ``YYYY-MM-DD`` dates and window bounds (absolute in ms, local in seconds)."""
        windows = WindowIndex(absolute, local) if absolute or local else None
        days = [date.fromisoformat(d).toordinal() for d in dates]
        return cls(name, days, windows, len(days) + len(absolute) + len(local))

    def pack(self) -> bytes:
        """The index as the calendar's row keeps it (``packed``), so that a claim reads it back
        with ``unpack`` (a copy of each array) instead of parsing the calendar's spec."""
        empty = array("q")
        absolute, local = (self.windows.absolute, self.windows.local) if self.windows else ((empty, empty),) * 2
        parts = [self.days, *absolute, *local]
        if _SWAP:
            parts = [array("q", p) for p in parts]
            for p in parts:
                p.byteswap()
        head = _HEAD.pack(PACK_VERSION, len(self.days), len(absolute[0]), len(local[0]))
        return head + b"".join(p.tobytes() for p in parts)

    @classmethod
    def unpack(cls, name: str, data: bytes | None) -> CalendarIndex | None:
        """The index ``pack`` wrote, or None when ``data`` is missing, of another version or
        not the length its counts say (the caller rebuilds it from the spec)."""
        if not data or len(data) < _HEAD.size or data[0] != PACK_VERSION:
            return None
        _, days, absolute, local = _HEAD.unpack_from(data)
        if len(data) != _HEAD.size + 8 * (days + 2 * absolute + 2 * local):
            return None
        view, at, parts = memoryview(data), _HEAD.size, []
        for n in (days, absolute, absolute, local, local):
            part = array("q")
            part.frombytes(view[at:at + 8 * n])
            if _SWAP:
                part.byteswap()
            parts.append(part)
            at += 8 * n
        windows = WindowIndex.of_arrays((parts[1], parts[2]), (parts[3], parts[4])) if absolute or local else None
        return cls(name, parts[0], windows, days + absolute + local)

    def exclusion_end(self, tick_ms: int, timezone: str) -> int | None:
        """None when the tick is not excluded; else an instant up to which every tick is
        excluded too (the end of the excluded local day or window; never later than the true
        end, so that a caller may jump there without passing over a tick that runs)."""
        if not self.days and self.windows is None:
            return None
        local = local_time(tick_ms, timezone)
        if self.days:
            day = local.toordinal()
            i = bisect.bisect_left(self.days, day)
            if i < len(self.days) and self.days[i] == day:
                return instant_at(datetime.combine(local.date() + timedelta(days=1), datetime.min.time()),
                                  timezone, tick_ms)  # fmt: skip
        if self.windows is not None:
            return self.windows.end_of(tick_ms, int((local - _EPOCH).total_seconds()), timezone)
        return None
