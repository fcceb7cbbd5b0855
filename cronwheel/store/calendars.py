"""Calendars as the stores keep them: the rows of one claim batch, and the stored form."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from cronwheel.core.calendar import (
    Calendar,
    Exclusions,
    calendar_from_json,
    calendar_index_from_json,
)
from cronwheel.core.calendarindex import CalendarIndex
from cronwheel.store.common import dumps, loads


class CalendarBook:
    """The calendars one claim batch needs, read once: ``load(needs, fetch, decode)`` with
    ``needs`` the ``(tenant, calendars column)`` of the due jobs that observe calendars and
    ``fetch(pairs)`` the rows ``(tenant, name, spec, created_at, updated_at)`` of those names
    (the spec as its JSON text, or parsed). Each calendar is read as the claim needs it, a
    :class:`CalendarIndex` held in :data:`INDEXES` while its row is unchanged."""

    __slots__ = ("_by_key", "_decode")

    def __init__(self, by_key: dict[tuple[str, str], CalendarIndex], decode: Callable[[Any], Any]) -> None:
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
        by_key = {(r[0], r[1]): INDEXES.get(r) for r in fetch([list(p) for p in pairs])}
        return cls(by_key, decode)

    def exclusions(self, tenant: str, timezone: str, names: Any) -> Exclusions | None:
        """What excludes a job's ticks (None: nothing). A calendar deleted since is ignored."""
        if names is None:
            return None
        found = [self._by_key[(tenant, n)] for n in self._decode(names) if (tenant, n) in self._by_key]
        return Exclusions(timezone, tuple(found)) if found else None


class IndexCache:
    """Claims' calendars, as indexes, by ``(tenant, name)`` while their row is unchanged.

    A claim batch reads the calendars its due jobs observe; parsing them again at every batch
    ran on the store's thread, which every tenant's claims and starts share: one tenant's 96
    calendars of 5,000 windows made another tenant's every-second job start 4-10 s late. So
    they are held, at most ``limit`` dates and windows in all, and when that is passed the tenant holding the most gives up its least
    recently used calendar: a tenant whose calendars fit its share is never evicted by a
    neighbour's, and a calendar read again unchanged is never parsed again."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parses = 0  #: indexes built (a test counts them)
        self._held: dict[str, OrderedDict[str, tuple[tuple[Any, ...], CalendarIndex]]] = {}
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, r: Any) -> CalendarIndex:
        """The index of a ``(tenant, name, spec, created_at, updated_at)`` row."""
        tenant, name, spec = r[0], r[1], r[2]
        version = (r[3], r[4], spec if isinstance(spec, str) else dumps(spec))
        with self._lock:
            mine = self._held.get(tenant)
            found = mine.get(name) if mine is not None else None
            if mine is not None and found is not None and found[0] == version:
                mine.move_to_end(name)
                return found[1]
        data = dict(loads(spec) if isinstance(spec, str) else spec)
        data["name"] = name
        index = calendar_index_from_json(data)
        with self._lock:
            self.parses += 1
            mine = self._held.setdefault(tenant, OrderedDict())
            old = mine.pop(name, None)
            self._sizes[tenant] = self._sizes.get(tenant, 0) - (old[1].size if old else 0) + index.size
            mine[name] = (version, index)
            self._evict()
        return index

    def held(self, tenant: str) -> list[str]:
        """The names held for a tenant, least recently used first."""
        with self._lock:
            return list(self._held.get(tenant, ()))

    @property
    def entries(self) -> int:
        """The dates and windows held, all tenants'."""
        with self._lock:
            return sum(self._sizes.values())

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._sizes.clear()

    def _evict(self) -> None:
        while sum(self._sizes.values()) > self.limit:
            tenant = max(self._sizes, key=lambda t: self._sizes[t])
            mine = self._held[tenant]
            _, (_, index) = mine.popitem(last=False)
            self._sizes[tenant] -= index.size
            if not mine:
                del self._held[tenant], self._sizes[tenant]


#: the claims' calendars (see IndexCache): 200 full calendars of 5,000 dates and windows among
#: all tenants, ~22 MB at ~22 bytes an entry (measured), about what the 50,000 parsed entries
#: held before took. A tenant may keep 1,000 full calendars: one whose due jobs observe more
#: than the limit reads its own least recently used again, at ~12 ms a full calendar.
INDEXES = IndexCache(1_000_000)


#: calendars parsed, by their row, for the API's reads of one (``get_calendar``): at most this
#: many dates and windows are held, the least recently used calendar leaving first.
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
