"""Calendars as the stores keep them: the rows of one claim batch, the readers' cache, and
the stored form (the spec as JSON text, the index packed, a revision new at every write)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from cronwheel.core.calendar import (
    Calendar,
    Exclusions,
    calendar_from_json,
    calendar_index_from_json,
)
from cronwheel.core.calendarindex import CalendarIndex
from cronwheel.store.common import dumps, loads

V = TypeVar("V")


class CalendarRows(Protocol):
    """What a claim's transaction reads and writes of calendars, each call for ``pairs`` of
    ``[tenant, name]`` (a name with no row is left out of the answer)."""

    def revisions(self, pairs: list[list[str]]) -> Sequence[Any]:
        """``(tenant, name, revision)`` of the stored indexes (from an index alone)."""

    def packed(self, pairs: list[list[str]]) -> Sequence[Any]:
        """``(tenant, name, revision, packed)`` of the stored indexes."""

    def specs(self, pairs: list[list[str]]) -> Sequence[Any]:
        """``(tenant, name, revision, spec)`` of the calendars."""

    def keep(self, built: list[tuple[str, str, int, bytes]]) -> None:
        """Store indexes ``(tenant, name, revision, packed)`` built from those revisions'
        specs (one whose calendar was written since is dropped)."""


class CalendarBook:
    """The calendars one claim batch needs, read once: ``load(needs, rows, held, decode)``
    with ``needs`` the ``(tenant, calendars column)`` of the due jobs that observe calendars.

    A claim reads each calendar's stored index, never its spec: parsing specs ran on the
    store's thread, which every tenant's claims and starts share (a tenant observing 480
    calendars of 5,000 windows held it 7 s a batch). It reads the revisions first and copies
    back only the indexes it does not hold at that revision (``held``: ~0.1 ms against ~20 ms
    for 96 full calendars); one not held costs a copy (~0.2 ms for 5,000 windows), not a parse,
    so a tenant observing more than the cache holds costs a batch tens of milliseconds, not
    seconds. A calendar stored before its index was (or under another ``PACK_VERSION``) is
    built from its spec once and kept, in the claim's transaction."""

    __slots__ = ("_by_key", "_decode")

    def __init__(self, by_key: dict[tuple[str, str], CalendarIndex], decode: Callable[[Any], Any]) -> None:
        self._by_key = by_key
        self._decode = decode

    @classmethod
    def load(
        cls, needs: Sequence[tuple[str, Any]], rows: CalendarRows, held: FairCache[CalendarIndex],
        decode: Callable[[Any], Any],
    ) -> CalendarBook:  # fmt: skip
        if not needs:
            return cls({}, decode)
        pairs = sorted({(tenant, name) for tenant, names in needs for name in decode(names)})
        by_key: dict[tuple[str, str], CalendarIndex] = {}
        missed: list[list[str]] = []
        for tenant, name, revision in rows.revisions([list(p) for p in pairs]):
            index = held.get(tenant, name, int(revision))
            if index is None:
                missed.append([tenant, name])
            else:
                by_key[(tenant, name)] = index
        for tenant, name, revision, packed in rows.packed(missed) if missed else ():
            index = CalendarIndex.unpack(name, packed)
            if index is not None:
                by_key[(tenant, name)] = index
                held.put(tenant, name, int(revision), index)
        # no index stored, or of another version (a calendar deleted since has no spec either)
        stale = [list(p) for p in pairs if p not in by_key]
        if stale:
            built = [(r[0], r[1], int(r[2]), index_of_spec(r[1], r[3])) for r in rows.specs(stale)]
            rows.keep([(tenant, name, revision, index.pack()) for tenant, name, revision, index in built])
            for tenant, name, revision, index in built:
                by_key[(tenant, name)] = index
                held.put(tenant, name, revision, index)
            with STATS.lock:
                STATS.rebuilt += len(built)
        return cls(by_key, decode)

    def exclusions(self, tenant: str, timezone: str, names: Any) -> Exclusions | None:
        """What excludes a job's ticks (None: nothing). A calendar deleted since is ignored."""
        if names is None:
            return None
        found = [self._by_key[(tenant, n)] for n in self._decode(names) if (tenant, n) in self._by_key]
        return Exclusions(timezone, tuple(found)) if found else None


class CalendarStats:
    """What the calendar code built, for the tests and the benchmarks: a claim builds an index
    from a spec only for a row that has none stored (``rebuilt``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rebuilt = 0  #: indexes a claim built from a spec and wrote back


STATS = CalendarStats()


def index_of_spec(name: str, spec: Any) -> CalendarIndex:
    """A stored spec (JSON text, or as the driver decoded it) as its index."""
    data = dict(loads(spec) if isinstance(spec, str) else spec)
    data["name"] = name
    return calendar_index_from_json(data)


class FairCache(Generic[V]):
    """Values by ``(tenant, name)`` while their row's revision is unchanged, at most ``limit``
    entries in all (each value's ``size``). Past the limit the tenant holding the most gives
    up its least recently used, so a tenant whose reads fit its share is never evicted by a
    neighbour's, however many that neighbour reads."""

    def __init__(self, limit: int, size: Callable[[V], int]) -> None:
        self.limit = limit
        self._size = size
        self._held: dict[str, OrderedDict[str, tuple[int, V]]] = {}
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str, name: str, revision: int) -> V | None:
        with self._lock:
            mine = self._held.get(tenant)
            found = mine.get(name) if mine is not None else None
            if mine is None or found is None or found[0] != revision:
                return None
            mine.move_to_end(name)
            return found[1]

    def put(self, tenant: str, name: str, revision: int, value: V) -> None:
        with self._lock:
            mine = self._held.setdefault(tenant, OrderedDict())
            old = mine.pop(name, None)
            self._sizes[tenant] = self._sizes.get(tenant, 0) - (self._size(old[1]) if old else 0) + self._size(value)
            mine[name] = (revision, value)
            while sum(self._sizes.values()) > self.limit:
                most = max(self._sizes, key=lambda t: self._sizes[t])
                theirs = self._held[most]
                _, (_, gone) = theirs.popitem(last=False)
                self._sizes[most] -= self._size(gone)
                if not theirs:
                    del self._held[most], self._sizes[most]

    def forget(self, tenant: str) -> None:
        """Drop everything held for ``tenant`` (a deleted one's)."""
        with self._lock:
            self._held.pop(tenant, None)
            self._sizes.pop(tenant, None)

    def discard(self, tenant: str, name: str, below: int | None = None) -> None:
        """Drop the value held for ``(tenant, name)`` (of a revision under ``below``, if given:
        a replacement's own is kept)."""
        with self._lock:
            mine = self._held.get(tenant)
            found = mine.get(name) if mine is not None else None
            if mine is None or found is None or (below is not None and found[0] >= below):
                return
            del mine[name]
            self._sizes[tenant] -= self._size(found[1])
            if not mine:
                del self._held[tenant], self._sizes[tenant]

    @property
    def tenants(self) -> int:
        with self._lock:
            return len(self._held)

    def held(self, tenant: str) -> list[str]:
        """The names held for a tenant, least recently used first."""
        with self._lock:
            return list(self._held.get(tenant, ()))

    @property
    def entries(self) -> int:
        with self._lock:
            return sum(self._sizes.values())

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._sizes.clear()


def index_bytes(index: CalendarIndex) -> int:
    """What a held index takes in memory, about (tracemalloc's figures, cache entry included):
    ~700 bytes for the index of one date, 8 more a date, 18 a window (and their arrays)."""
    windows = index.windows
    n_windows = 0 if windows is None else len(windows.absolute[0]) + len(windows.local[0])
    return 700 + 8 * len(index.days) + (300 + 18 * n_windows if n_windows else 0)


def calendar_bytes(cal: Calendar) -> int:
    """What a held parsed calendar takes, about, its index with it: ~1,200 bytes for one date,
    150 more a date and 400 a window (as objects)."""
    return 1_200 + 150 * len(cal.dates) + 400 * len(cal.windows)


#: what a store holds between reads, in bytes (``index_bytes``, ``calendar_bytes``): the
#: claims' indexes and the API's parsed calendars (``get_calendar``, ``list_calendars``, a
#: job's upcoming ticks), each a FairCache. Counted in bytes, not in dates and windows, which
#: took a calendar of one date for 16 bytes when it held ~700: the calendars of tenants that
#: came and went stayed up to 1,000,000 of them (~700 MB) in the indexes' cache
INDEX_BYTES = 16 * 2**20
PARSED_BYTES = 16 * 2**20


def indexes_of(store: Any) -> FairCache[CalendarIndex]:
    """A store's claims' indexes, by their calendar's revision."""
    return _held(store, "_calendar_indexes", lambda: FairCache(INDEX_BYTES, index_bytes))


def parsed_of(store: Any) -> FairCache[Calendar]:
    """A store's parsed calendars, for its readers, by their row's revision."""
    return _held(store, "_parsed_calendars", lambda: FairCache(PARSED_BYTES, calendar_bytes))


def forget_calendars(store: Any, tenant: str, name: str | None = None, below: int | None = None) -> None:
    """Drop what a store holds of a deleted tenant's calendars, or of one calendar (``name``)
    deleted or replaced (its revisions under ``below``, the replacement's)."""
    for attribute in ("_calendar_indexes", "_parsed_calendars"):
        held = store.__dict__.get(attribute)
        if held is None:
            continue
        if name is None:
            held.forget(tenant)
        else:
            held.discard(tenant, name, below)


def calendars_held(store: Any) -> int:
    """Tenants a store holds calendars of, in both its caches."""
    return sum(held.tenants for a in ("_calendar_indexes", "_parsed_calendars")
               if (held := store.__dict__.get(a)) is not None)  # fmt: skip


def _held(store: Any, attribute: str, make: Callable[[], FairCache[V]]) -> FairCache[V]:
    """One cache per store, made at its first use: revisions are one store's own (two stores
    in one process count from 1 alike)."""
    held = store.__dict__.get(attribute)
    if held is None:
        held = store.__dict__.setdefault(attribute, make())
    return held  # type: ignore[no-any-return]


def calendar_row(r: Any, decode: Callable[[Any], Any], held: FairCache[Calendar]) -> Calendar:
    """A ``(tenant, name, spec, created_at, updated_at, revision, packed)`` row as a Calendar
    (the same one while ``held`` keeps its revision), answering through the row's stored
    index when it has one of this version."""
    tenant, name, revision = r[0], r[1], int(r[5])
    cal = held.get(tenant, name, revision)
    if cal is not None:
        return cal
    spec = dict(decode(r[2]))
    spec["name"] = name
    cal = calendar_from_json(spec, tenant, r[3], r[4], revision)
    index = CalendarIndex.unpack(name, r[6])
    if index is not None:
        cal.keep_index(index)
    held.put(tenant, name, revision, cal)
    return cal


def calendar_written(cal: Calendar, row: Any, held: FairCache[Calendar]) -> Calendar:
    """``cal`` as the write that stored it returned its row ``(tenant, name, spec, created_at,
    updated_at, revision)``: the same dates and windows, so not parsed back from the spec (a
    full calendar's ~200 ms on the store's thread), and held for the readers."""
    stored = replace(cal, created_at=int(row[3]), updated_at=int(row[4]), revision=int(row[5]))
    stored.keep_index(cal.index())
    held.put(stored.tenant, stored.name, stored.revision, stored)
    return stored


def calendar_spec_json(cal: Calendar) -> str:
    """What the ``spec`` column holds (the name and tenant are columns of their own)."""
    data = cal.to_json()
    del data["name"], data["tenant"]
    return dumps(data)
