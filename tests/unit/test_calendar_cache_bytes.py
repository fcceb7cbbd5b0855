"""A store's calendar caches are bounded in what they hold in memory, whatever the calendars'
shapes: counted in dates and windows, a calendar of one date counted as one or two entries
while it held ~700 bytes (an index) or ~1,100 (parsed), so the calendars of tenants that came
and went could fill the indexes' cache to ~700 MB before its 1,000,000 entries. Each cache's
bound is worked out from tracemalloc's figure for values it really held (built as the store
builds them, put into the store's own caches)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cronwheel.core.calendar import calendar_from_json
from cronwheel.core.calendarindex import CalendarIndex
from cronwheel.store.calendars import FairCache, index_of_spec, indexes_of, parsed_of
from cronwheel.store.common import dumps, loads
from cronwheel.store.sqlite import SqliteStore

MIB = 2**20
#: the caches' documented bound, 16 MiB, with room for the estimate's error
AT_MOST = 22 * MIB


def _spec(dates: int, windows: int) -> dict[str, Any]:
    return {
        "name": "off",
        "dates": [f"{2030 + d // 336}-{1 + d // 28 % 12:02d}-{1 + d % 28:02d}" for d in range(dates)],
        "windows": [{"start": f"{2031 + w // 336}-{1 + w // 28 % 12:02d}-{1 + w % 28:02d}T01:00:00Z",
                     "end": f"{2031 + w // 336}-{1 + w // 28 % 12:02d}-{1 + w % 28:02d}T02:00:00Z"} for w in range(windows)],
    }


def _index(tenant: str, spec: dict[str, Any]) -> Any:
    return CalendarIndex.unpack("off", index_of_spec("off", dumps(spec)).pack())  # as a claim reads it back


def _parsed(tenant: str, spec: dict[str, Any]) -> Any:
    cal = calendar_from_json(loads(dumps(spec)), tenant, 1, 2, 3)
    cal.keep_index(_index(tenant, spec))  # as a read of a row with its stored index holds it
    return cal


def _full(cache: FairCache[Any], make: Callable[[str, dict[str, Any]], Any], spec: dict[str, Any], n: int) -> float:
    """What ``cache`` would hold when full of such values, one a tenant: its limit over what
    it counts for each, times what each really held (tracemalloc, the cache's own part too)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            tenant = f"soak-{i}-{i % 6}"
            cache.put(tenant, "off", i + 1, make(tenant, spec))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    counted = cache.entries / n
    cache.clear()
    return cache.limit / counted * (held / n)


@pytest.mark.parametrize(("dates", "windows", "n"), [(1, 0, 2_000), (100, 0, 300), (1, 1_000, 40)])
@pytest.mark.parametrize("which", ["indexes", "parsed"])
def test_a_full_calendar_cache_holds_its_bound_in_memory(tmp_path: Path, which: str, dates: int, windows: int, n: int) -> None:
    store = SqliteStore.open(tmp_path / "cw.db")
    try:
        cache, make = (indexes_of(store), _index) if which == "indexes" else (parsed_of(store), _parsed)
        full = _full(cache, make, _spec(dates, windows), n)
    finally:
        store.close()
    assert full <= AT_MOST, f"{which} of {dates} dates, {windows} windows: {full / MIB:.0f} MiB when full"
    assert full >= 8 * MIB, f"{which}: only {full / MIB:.1f} MiB when full: the estimate is far too high"


def test_discarding_one_calendar_keeps_a_newer_revision_and_the_byte_count() -> None:
    cache: FairCache[str] = FairCache(1000, len)
    cache.put("acme", "hol", 1, "x" * 100)
    cache.put("acme", "maint", 2, "y" * 50)
    cache.discard("acme", "hol", below=1)  # the replacement's own revision: kept
    assert cache.get("acme", "hol", 1) == "x" * 100
    cache.discard("acme", "hol", below=3)  # an older one: dropped
    assert cache.held("acme") == ["maint"] and cache.entries == 50
    cache.discard("acme", "maint")
    cache.discard("zeta", "nothing")
    assert (cache.tenants, cache.entries) == (0, 0)
