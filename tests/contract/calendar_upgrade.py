"""What both stores promise of a calendar written before schema 25 (its index not stored):
the test of each store writes such a row with its own driver, then opens the store and checks
this."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cronwheel.core.calendar import Calendar, build_calendar
from cronwheel.store import calendars
from cronwheel.store.base import Store
from tests.contract.conftest import T0, claim_all, create, new_job


def old_calendar() -> Calendar:
    """The calendar the tests write before the upgrade, in tenant acme."""
    return build_calendar("maint", ["2026-01-02"], [("2026-01-01T01:00Z", "2026-01-01T02:00Z")], "old", "acme")


def check_indexed_at_first_claim(store: Store, rows: Callable[[str], list[Any]], cal: Calendar) -> None:
    """``cal``, stored as ('acme', 'maint') with created_at 5 and updated_at 6 before schema
    25, reads back as it was, with revision 0 and no index stored; the first claim that needs
    it builds its index once and keeps it; a write from then on is a revision of its own."""
    assert rows("SELECT revision FROM calendars") == [(0,)]
    assert rows("SELECT count(*) FROM calendar_indexes") == [(0,)]
    read = store.get_calendar("acme", "maint")
    assert read is not None and (read.dates, read.windows, read.description) == (cal.dates, cal.windows, "old")
    assert (read.created_at, read.updated_at, read.revision) == (5, 6, 0)
    job = create(store, new_job(schedule="0 * * * *", calendars=("maint",), tenant="acme", next_run_at=T0))[0]
    before = calendars.STATS.rebuilt
    assert [e.job_id for e in claim_all(store, T0).executions] == [job]
    assert [s.reason for s in claim_all(store, T0 + 3_600_000).skipped] == ["calendar: maint"]
    assert calendars.STATS.rebuilt - before == 1
    assert [tuple(r) for r in rows("SELECT revision, packed FROM calendar_indexes")] == [(0, cal.index().pack())]
    again = store.put_calendar(build_calendar("maint", tenant="acme"), T0)
    assert again is not None and again.revision > 0
    assert rows("SELECT revision FROM calendar_indexes") == [(again.revision,)]
    assert store.delete_calendar("acme", "maint") == (False, [job])
