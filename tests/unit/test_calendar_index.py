"""core/calendarindex.py and store/calendars.py's IndexCache: a claim's calendars as compact
indexes, read once while their rows are unchanged, and held fairly between tenants."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronwheel.core.calendar import (
    build_calendar,
    calendar_from_json,
    calendar_index_from_json,
    parse_bound,
)
from cronwheel.core.calendarindex import quick_bound
from cronwheel.store.calendars import CalendarBook, IndexCache, calendar_spec_json

BASE = 1_798_761_600_000  # 2027-01-01T00:00Z
DST_EU = 1_806_019_200_000  # 2027-03-26T00:00Z: Paris springs forward on the 28th

BOUNDS = [
    "2027-01-01T00:00", "2027-01-01T00:00:59", "2027-01-01 00:00", "2027-01-01t00:00:30",
    "2027-01-01T00:00Z", "2027-01-01T00:00:00Z", "2027-01-01T00:00:00z", "2027-01-01T00:00:00.000Z",
    "2027-01-01T00:00:00.9Z", "2027-01-01T00:00:00.1234567Z", "2027-01-01T00:00:00+05:30",
    "2027-01-01T00:00:00.250-23:59", "1970-01-01T00:00:00.999Z", "9999-12-31T23:00:00+02:00",
    "0001-01-01T00:00:00Z", "2027-03-28T02:30", "2026-11-01T01:30:00-04:00",
]  # fmt: skip


@pytest.mark.parametrize("text", BOUNDS)
def test_a_quick_bound_is_the_full_parsers_or_none(text: str) -> None:
    """The C ISO-8601 reading of a stored bound gives exactly what ``parse_bound`` gives
    (the fraction dropped, local seconds, absolute ms), or leaves the bound to it."""
    quick = quick_bound(text)
    try:
        full = parse_bound(text, "w")
    except ValueError:
        assert quick is None
        return
    if quick is not None:
        assert quick == ((True, full.absolute_ms) if full.absolute_ms is not None else (False, full.local_s))


@pytest.mark.parametrize("base", [BASE, DST_EU])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/New_York"])
def test_an_index_from_the_stored_form_excludes_what_the_calendar_does(zone: str, base: int) -> None:
    """The claim's index, built from the stored JSON, answers every tick as the parsed
    Calendar does: the same exclusion and the same end, dates in the job's zone included,
    across a DST change too."""
    span = st.tuples(st.integers(0, 4_000), st.integers(1, 600), st.sampled_from(["Z", ".000Z", "+02:00", "", ":00"]))

    @settings(max_examples=80, deadline=None, derandomize=True)
    @given(st.lists(span, max_size=20), st.lists(st.integers(0, 3), max_size=3),
           st.lists(st.integers(-60, 4_700), max_size=30))  # fmt: skip
    def check(spans: list[tuple[int, int, str]], days: list[int], ticks: list[int]) -> None:
        def text(minute: int, shape: str) -> str:
            iso = _iso(base + minute * 60_000)
            if shape in ("", ":00"):
                return iso[:16] + ("" if shape == "" else ":00")
            return iso[:19] + shape

        windows = [(text(a, shape), text(a + n, shape)) for a, n, shape in spans]
        dates = [_iso(base + d * 86_400_000)[:10] for d in days]
        cal = build_calendar("c", dates=dates, windows=windows)
        data = json.loads(calendar_spec_json(cal)) | {"name": "c"}
        parsed, index = calendar_from_json(data, "t"), calendar_index_from_json(data)
        assert index.size == len(set(dates)) + len(windows)
        for minute in ticks:
            tick = base + minute * 60_000
            assert index.exclusion_end(tick, zone) == parsed.exclusion_end(tick, zone), (minute, windows, dates)

    check()


def _iso(ms: int) -> str:
    from cronwheel.core.instants import format_instant

    return format_instant(ms)


def _row(tenant: str, name: str, windows: int, updated_at: int = 1) -> tuple[str, str, str, int, int]:
    spans = [(_iso(BASE + 2 * w * 3_600_000), _iso(BASE + (2 * w + 1) * 3_600_000)) for w in range(windows)]
    return tenant, name, calendar_spec_json(build_calendar(name, windows=spans)), 1, updated_at


def test_a_calendar_read_again_unchanged_is_not_parsed_again() -> None:
    """Each claim batch reads its jobs' calendars: the second batch over the same rows builds
    nothing (it parsed all of them, on the store's shared thread, at every batch)."""
    cache = IndexCache(1_000_000)
    rows = [_row("evil", f"cal-{c}", 50) for c in range(8)]
    first = [cache.get(r) for r in rows]
    assert cache.parses == 8
    again = [cache.get(r) for r in rows]
    assert cache.parses == 8 and all(a is b for a, b in zip(first, again, strict=True))
    # a changed row (its spec, or only its updated_at) is read anew, and answers as changed
    changed = _row("evil", "cal-0", 10, updated_at=2)
    assert cache.get(changed) is not first[0] and cache.parses == 9
    assert cache.get(changed).size == 10 and cache.get(changed) is cache.get(changed) and cache.parses == 9


def test_a_claim_batch_reads_the_indexes_held() -> None:
    """``CalendarBook.load`` (what a claim batch does first) goes through the held indexes."""
    from cronwheel.store import calendars

    rows = {r[1]: r for r in (_row("t-book", f"b-{c}", 20) for c in range(3))}
    needs = [("t-book", json.dumps(["b-0", "b-1"])), ("t-book", json.dumps(["b-2"]))]

    def fetch(pairs: list[list[str]]) -> list[tuple[str, str, str, int, int]]:
        return [rows[name] for _, name in pairs]

    calendars.INDEXES.clear()
    before = calendars.INDEXES.parses
    for _ in range(3):
        book = CalendarBook.load(needs, fetch, json.loads)
        exclusions = book.exclusions("t-book", "UTC", json.dumps(["b-0", "b-1"]))
        assert exclusions is not None and exclusions.reason(BASE + 60_000) == "calendar: b-0"
    assert calendars.INDEXES.parses - before == 3


def test_a_tenants_big_calendars_evict_its_own_not_a_neighbours() -> None:
    """Past the limit, the tenant holding the most gives up its least recently used: a
    neighbour's calendars, within their share, stay held and are not parsed again."""
    cache = IndexCache(1_000)
    acme = [_row("acme", f"a-{c}", 100) for c in range(2)]
    for r in acme:
        cache.get(r)
    for c in range(20):  # evil reads 20 x 100, twice the limit, again and again
        cache.get(_row("evil", f"e-{c}", 100))
        assert cache.entries <= 1_000
    assert cache.held("acme") == ["a-0", "a-1"]
    assert cache.held("evil") == [f"e-{c}" for c in range(12, 20)]
    parses = cache.parses
    for r in acme:
        cache.get(r)
    assert cache.parses == parses

