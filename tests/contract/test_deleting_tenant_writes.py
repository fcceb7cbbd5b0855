"""The store contract for the doors of a tenant being deleted (``tenantgone.refuse_deleting``):
every write that would add to it (a calendar, a run of one of its jobs by trigger, backfill,
replay, ping or resume, a chain, a notification sent again) raises ``TenantIsDeleting`` in
its own transaction and changes nothing, while a neighbour's same writes pass.

Written against ``Store`` only: every backend in ``BACKENDS`` runs it; the race with the
final drop is PostgreSQL's (SQLite has one writer)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from cronwheel.core.calendar import build_calendar
from cronwheel.core.model import ExecStatus, JobStatus
from cronwheel.core.tenants import DeletionOutcome
from cronwheel.store.base import Store, TenantIsDeleting
from tests.contract.conftest import MIN, T0, create, one_off
from tests.contract.test_tenant_deletion import LATER, populate, rows_of
from tests.support.wait import wait_for


def writes(store: Store, tenant: str, ticker: str, other: str) -> dict[str, Callable[[], Any]]:
    """Every write that adds to ``tenant`` (its job ``ticker``, paused; ``other`` another job of it)."""
    [dead] = store.list_dead(tenant)
    [told, *_] = store.list_notifications(tenant)
    at = T0 + 2 * MIN
    return {
        "calendar": lambda: store.put_calendar(build_calendar("new", ["2026-12-24"], tenant=tenant), at),
        "calendar replaced": lambda: store.put_calendar(build_calendar("holidays", ["2026-12-24"], tenant=tenant), at),
        "trigger": lambda: store.trigger_job(other, at),
        "backfill": lambda: store.backfill(ticker, [T0 - 5 * MIN], at),
        "chain": lambda: store.set_job_chain(ticker, [other], [], at),
        "resume": lambda: store.set_job_status(ticker, [JobStatus.PAUSED], JobStatus.ACTIVE, at, T0 + MIN),
        "replay": lambda: store.replay_dead(dead.execution_id, at),
        "notification replay": lambda: store.replay_notification(told.notification_id, at),
        "ping": lambda: store.record_ping(other, "success", at),
    }


def test_every_write_that_adds_to_a_deleting_tenant_is_refused_and_changes_nothing(store: Store) -> None:
    for name in ("acme", "zeta"):
        ticker = populate(store, name)
        assert store.set_job_status(ticker, [JobStatus.ACTIVE], JobStatus.PAUSED, T0) is not None
    # a job of each that a trigger, ping or chain may name (a one-off far ahead, still ACTIVE)
    other = {name: create(store, one_off(T0 + 600 * MIN, tenant=name))[0] for name in ("acme", "zeta")}
    assert store.mark_tenant_deleting("acme", T0 + MIN, force=True).outcome is DeletionOutcome.MARKED
    tickers = {j.tenant: j.id for j in store.list_jobs(None, JobStatus.PAUSED, 10)}
    before = rows_of(store, "acme")
    refused = []
    for what, write in writes(store, "acme", tickers["acme"], other["acme"]).items():
        with pytest.raises(TenantIsDeleting) as caught:
            write()
        assert caught.value.tenant == "acme", what
        refused.append(what)
    assert rows_of(store, "acme") == before  # nothing of it changed
    assert store.get_job(tickers["acme"]).status is JobStatus.PAUSED  # type: ignore[union-attr]
    assert store.list_dead("acme")[0].status is ExecStatus.DEAD
    # the neighbour's same writes pass
    for what, write in writes(store, "zeta", tickers["zeta"], other["zeta"]).items():
        write()
        refused.remove(what)
    assert not refused
    # its removals still pass (what retention would remove anyway)
    assert store.delete_calendar("acme", "holidays")[0] is False  # (its ticker uses it)
    assert store.set_job_status(other["acme"], [JobStatus.ACTIVE], JobStatus.PAUSED, T0 + 2 * MIN) is not None


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"])  # rows lock on PostgreSQL only (SQLite has one writer)
def test_a_calendar_written_while_the_deletion_is_asked_either_lands_first_or_is_refused(
    backend: str, store: Store, request: pytest.FixtureRequest,
) -> None:
    """The deletion holds the tenant row (FOR UPDATE) while it marks it; a calendar write
    waits for it, then sees the mark and is refused. Before, it did not look at the tenant:
    written in the moment between the purge of its calendars and the drop of the tenant row,
    it stayed, a row of a tenant that no longer existed."""
    postgres_dsn = str(request.getfixturevalue("postgres_dsn"))
    populate(store, "acme")
    with psycopg.connect(postgres_dsn) as marking:  # a deletion, in the middle of its transaction
        marking.execute("SELECT deleting_since FROM tenants WHERE name = 'acme' FOR UPDATE")
        marking.execute("UPDATE tenants SET deleting_since = %s WHERE name = 'acme'", (T0 + MIN,))
        outcome: list[Any] = []

        def write() -> None:
            try:
                outcome.append(store.put_calendar(build_calendar("late", ["2026-12-24"], tenant="acme"), T0 + MIN))
            except Exception as exc:  # reported below
                outcome.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        with psycopg.connect(postgres_dsn, autocommit=True) as probe:
            wait_for(lambda: outcome or probe.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0] > 0,  # type: ignore[index]
                     timeout=10, what="the calendar write to wait for the deletion")
        marking.commit()
    writer.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], TenantIsDeleting), outcome
    for job in store.list_jobs("acme", None, 100):
        store.cancel_job(job.id, T0 + MIN)
    while not store.purge_tenant("acme", 1000, LATER)[1]:
        pass
    assert rows_of(store, "acme") == dict.fromkeys(rows_of(store, "acme"), 0)  # nothing left behind
