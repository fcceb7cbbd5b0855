"""core/calendarindex.py and store/calendars.py: a claim's calendars as compact indexes, packed
with their rows and copied back, and the readers' parsed calendars held fairly between tenants."""

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
from cronwheel.core.calendarindex import PACK_VERSION, CalendarIndex, quick_bound
from cronwheel.store.calendars import STATS, CalendarBook, FairCache, calendar_spec_json

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
        # what a row keeps (written from the calendar as built) and a claim reads back
        stored = CalendarIndex.unpack("c", cal.index().pack())
        assert stored is not None and stored.size == index.size and stored.pack() == index.pack()
        for minute in ticks:
            tick = base + minute * 60_000
            end = parsed.exclusion_end(tick, zone)
            assert index.exclusion_end(tick, zone) == end, (minute, windows, dates)
            assert stored.exclusion_end(tick, zone) == end, (minute, windows, dates)

    check()


def _iso(ms: int) -> str:
    from cronwheel.core.instants import format_instant

    return format_instant(ms)


def _row(tenant: str, name: str, windows: int) -> tuple[str, str, int, bytes | None, str]:
    """``(tenant, name, revision, packed, spec)``: what a claim reads, and the spec behind it."""
    spans = [(_iso(BASE + 2 * w * 3_600_000), _iso(BASE + (2 * w + 1) * 3_600_000)) for w in range(windows)]
    cal = build_calendar(name, windows=spans)
    return tenant, name, 1, cal.index().pack(), calendar_spec_json(cal)


def test_a_packed_index_of_another_version_or_length_is_not_read() -> None:
    """A row's packed index is read back only when it is whole and of this ``PACK_VERSION``:
    anything else is missing (rebuilt from the spec), never misread."""
    packed = _row("t", "c", 3)[3]
    assert packed is not None and packed[0] == PACK_VERSION
    index = CalendarIndex.unpack("c", packed)
    assert index is not None and index.size == 3 and index.exclusion_end(BASE + 60_000, "UTC") == BASE + 3_600_000
    for bad in (None, b"", packed[:5], packed[:-1], packed + b"\0", bytes([PACK_VERSION + 1]) + packed[1:]):
        assert CalendarIndex.unpack("c", bad) is None
    empty = CalendarIndex.unpack("e", build_calendar("e").index().pack())
    assert empty is not None and empty.size == 0 and empty.exclusion_end(BASE, "UTC") is None


class _Rows:
    """``CalendarRows`` over rows in memory ``name: (tenant, name, revision, packed, spec)``,
    counting what each call read."""

    def __init__(self, rows: dict[str, tuple[str, str, int, bytes | None, str]]) -> None:
        self.rows = rows
        self.kept: list[tuple[str, str, int, bytes]] = []
        self.read: list[str] = []

    def _of(self, pairs: list[list[str]]) -> list[tuple[str, str, int, bytes | None, str]]:
        return [self.rows[name] for _, name in pairs if name in self.rows]

    def revisions(self, pairs: list[list[str]]) -> list[tuple[str, str, int]]:
        return [r[:3] for r in self._of(pairs) if r[3] is not None]

    def packed(self, pairs: list[list[str]]) -> list[tuple[str, str, int, bytes | None]]:
        self.read += [r[1] for r in self._of(pairs)]
        return [r[:4] for r in self._of(pairs) if r[3] is not None]

    def specs(self, pairs: list[list[str]]) -> list[tuple[str, str, int, str]]:
        return [(*r[:3], r[4]) for r in self._of(pairs)]

    def keep(self, built: list[tuple[str, str, int, bytes]]) -> None:
        self.kept += built
        for tenant, name, revision, packed in built:
            self.rows[name] = (tenant, name, revision, packed, self.rows[name][4])


def test_a_claim_batch_copies_the_stored_indexes_and_builds_only_the_missing() -> None:
    """``CalendarBook.load`` (what a claim batch does first) copies back the stored indexes it
    does not hold at their revision; one stored without (before version 25) is built from its
    spec once and handed back to be kept; a later batch reads revisions alone."""
    rows = _Rows({r[1]: r for r in (_row("t-book", f"b-{c}", 20) for c in range(3))})
    rows.rows["b-2"] = (*rows.rows["b-2"][:3], None, rows.rows["b-2"][4])
    needs = [("t-book", json.dumps(["b-0", "b-1"])), ("t-book", json.dumps(["b-2", "gone"]))]
    held = FairCache[CalendarIndex](1_000, lambda i: i.size)
    before = STATS.rebuilt
    book = CalendarBook.load(needs, rows, held, json.loads)
    assert STATS.rebuilt - before == 1 and [k[:3] for k in rows.kept] == [("t-book", "b-2", 1)]
    assert rows.kept[0][3] == _row("t-book", "b-2", 20)[3] and sorted(rows.read) == ["b-0", "b-1"]
    exclusions = book.exclusions("t-book", "UTC", json.dumps(["b-0", "b-1"]))
    assert exclusions is not None and exclusions.reason(BASE + 60_000) == "calendar: b-0"
    late = book.exclusions("t-book", "UTC", json.dumps(["gone", "b-2"]))
    assert late is not None and [c.name for c in late.calendars] == ["b-2"]
    rows.read.clear()
    again = CalendarBook.load(needs, rows, held, json.loads)
    assert STATS.rebuilt - before == 1 and len(rows.kept) == 1 and rows.read == []
    assert again.exclusions("t-book", "UTC", json.dumps(["b-2"])) is not None
    # a new revision (a write of the calendar) is copied back anew
    rows.rows["b-0"] = ("t-book", "b-0", 2, _row("t-book", "b-0", 3)[3], "")
    third = CalendarBook.load(needs, rows, held, json.loads)
    assert rows.read == ["b-0"] and third.exclusions("t-book", "UTC", json.dumps(["b-0"])) is not None
    assert held.get("t-book", "b-0", 2) is not None and held.get("t-book", "b-0", 1) is None


def test_a_tenants_many_reads_evict_its_own_calendars_not_a_neighbours() -> None:
    """Past the limit, the tenant holding the most gives up its least recently used: a
    neighbour's calendars, within their share, stay held; a new revision replaces the old."""
    cache = FairCache[str](1_000, lambda v: 100)
    for c in range(2):
        cache.put("acme", f"a-{c}", 1, f"a-{c}")
    for c in range(20):  # evil reads 20 x 100, twice the limit, again and again
        cache.put("evil", f"e-{c}", 1, f"e-{c}")
        assert cache.entries <= 1_000
    assert cache.held("acme") == ["a-0", "a-1"]
    assert cache.held("evil") == [f"e-{c}" for c in range(12, 20)]
    assert cache.get("acme", "a-0", 1) == "a-0" and cache.get("acme", "a-0", 2) is None
    cache.put("acme", "a-0", 2, "a-0 again")
    assert cache.get("acme", "a-0", 2) == "a-0 again" and cache.entries == 1_000
