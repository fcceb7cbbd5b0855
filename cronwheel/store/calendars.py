"""Calendars as the stores keep them: the rows of one claim batch, and the stored form."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from cronwheel.core.calendar import Calendar, Exclusions, calendar_from_json
from cronwheel.store.common import dumps


class CalendarBook:
    """The calendars one claim batch needs, read once: ``load(needs, fetch, decode)`` with
    ``needs`` the ``(tenant, calendars column)`` of the due jobs that observe calendars and
    ``fetch(pairs)`` the rows ``(tenant, name, spec, created_at, updated_at)`` of those names."""

    __slots__ = ("_by_key", "_decode")

    def __init__(self, by_key: dict[tuple[str, str], Calendar], decode: Callable[[Any], Any]) -> None:
        self._by_key = by_key
        self._decode = decode

    @classmethod
    def load(
        cls,
        needs: Sequence[tuple[str, Any]],
        fetch: Callable[[list[list[str]]], Sequence[Any]],
        decode: Callable[[Any], Any],
    ) -> CalendarBook:
        if not needs:
            return cls({}, decode)
        pairs = sorted({(tenant, name) for tenant, names in needs for name in decode(names)})
        by_key = {(r[0], r[1]): calendar_row(r, decode) for r in fetch([list(p) for p in pairs])}
        return cls(by_key, decode)

    def exclusions(self, tenant: str, timezone: str, names: Any) -> Exclusions | None:
        """What excludes a job's ticks (None: nothing). A calendar deleted since is ignored."""
        if names is None:
            return None
        found = [self._by_key[(tenant, n)] for n in self._decode(names) if (tenant, n) in self._by_key]
        return Exclusions(timezone, tuple(found)) if found else None


#: calendars parsed, by their row: each claim batch of jobs observing 8 calendars of 5,000
#: windows parsed them all again (half a second of the store's thread, which every tenant's
#: claims wait for: another tenant's every-second job started seconds late). At most this many
#: dates and windows are held, the least recently used calendar leaving first.
PARSED_ENTRIES = 50_000
_parsed: OrderedDict[tuple[Any, ...], Calendar] = OrderedDict()
_parsed_lock = threading.Lock()


def calendar_row(r: Any, decode: Callable[[Any], Any]) -> Calendar:
    """A ``(tenant, name, spec, created_at, updated_at)`` row as a Calendar (the same one for
    the same row, parsed once while it is held)."""
    key = (r[0], r[1], r[3], r[4], r[2] if isinstance(r[2], str) else dumps(r[2]))
    with _parsed_lock:
        cal = _parsed.get(key)
        if cal is not None:
            _parsed.move_to_end(key)
            return cal
    spec = dict(decode(r[2]))
    spec["name"] = r[1]
    cal = calendar_from_json(spec, r[0], r[3], r[4])
    with _parsed_lock:
        _parsed[key] = cal
        held = sum(_size(c) for c in _parsed.values())
        while held > PARSED_ENTRIES and len(_parsed) > 1:
            held -= _size(_parsed.popitem(last=False)[1])
    return cal


def _size(cal: Calendar) -> int:
    return 1 + len(cal.dates) + len(cal.windows)


def calendar_spec_json(cal: Calendar) -> str:
    """What the ``spec`` column holds (the name and tenant are columns of their own)."""
    data = cal.to_json()
    del data["name"], data["tenant"]
    return dumps(data)
