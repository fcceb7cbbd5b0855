"""Calendars, active windows, backfill and chains: the store contract, on every backend.

The exclusion and chain decisions are core's (core/calendar.py, core/chains.py); these tests
check that each store applies them inside its own transactions, on a fake ``now``.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from cronwheel.core.calendar import build_calendar
from cronwheel.core.chains import ChainError
from cronwheel.core.ids import execution_id
from cronwheel.core.model import ExecOrigin, ExecStatus, JobStatus, Priority
from cronwheel.core.records import Completion, Outcome
from cronwheel.store.base import Store
from tests.contract.conftest import (
    HOUR,
    MIN,
    SEC,
    T0,
    RetryPolicy,
    StoreFactory,
    claim_all,
    create,
    new_job,
    start,
)

DAY = 24 * HOUR


# ---------------------------------------------------------------- calendars


def test_calendar_crud_is_tenant_scoped(store: Store) -> None:
    cal = build_calendar("holidays", ["2026-12-25"], [("2026-12-24T22:00", "2026-12-25T02:00")], "xmas", "acme")
    stored = store.put_calendar(cal, T0)
    assert stored.name == "holidays" and stored.tenant == "acme" and stored.dates == cal.dates
    assert stored.created_at == T0 and stored.windows == cal.windows
    assert store.get_calendar("other", "holidays") is None
    again = store.put_calendar(build_calendar("holidays", ["2026-12-26"], tenant="acme"), T0 + SEC)
    assert again.dates == frozenset({"2026-12-26"}) and again.created_at == T0 and again.updated_at == T0 + SEC
    store.put_calendar(build_calendar("maint", tenant="zeta"), T0)
    assert [c.name for c in store.list_calendars("acme")] == ["holidays"]
    assert [(c.tenant, c.name) for c in store.list_calendars()] == [("acme", "holidays"), ("zeta", "maint")]
    assert store.delete_calendar("acme", "holidays") == (True, [])
    assert store.delete_calendar("acme", "holidays") == (False, [])


def test_a_calendar_read_again_unchanged_is_not_parsed_again(store: Store) -> None:
    """Each claim batch reads the calendars its jobs observe: parsing 8 calendars of 5,000
    windows every time took half a second of the store's thread, and another tenant's
    every-second job started seconds late. An unchanged row is the calendar parsed before."""
    windows = [(f"2027-01-{d:02d}T{h:02d}:00", f"2027-01-{d:02d}T{h:02d}:30") for d in range(1, 29) for h in range(24)]
    store.put_calendar(build_calendar("big", [], windows, tenant="acme"), T0)
    first = store.get_calendar("acme", "big")
    assert first is not None and len(first.windows) == 672
    assert store.get_calendar("acme", "big") is first
    changed = store.put_calendar(build_calendar("big", ["2027-02-01"], windows, tenant="acme"), T0)  # the same ms
    assert changed is not None and changed is not first and changed.dates == frozenset({"2027-02-01"})
    assert store.get_calendar("acme", "big") is changed
    other = store.put_calendar(build_calendar("big", [], windows, tenant="zeta"), T0)
    assert other is not None and other.tenant == "zeta" and other.dates == frozenset()


def test_a_claim_parses_no_calendar_it_reads_each_ones_stored_index(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each claim batch reads the calendars its due jobs observe, on the store thread every
    tenant's claims share: parsing them there (held or not) made a tenant observing 480
    calendars of 5,000 windows hold that thread 7 s a batch. The row keeps its index, written
    with the calendar, so no claim parses one, not even the first after a start, and a
    calendar changed in the same ms is read as changed."""
    from cronwheel.store import calendars

    parsed: list[str] = []
    build = calendars.calendar_index_from_json
    monkeypatch.setattr(calendars, "calendar_index_from_json", lambda data: parsed.append(str(data["name"])) or build(data))
    tenant = f"idx-{uuid.uuid4().hex[:8]}"  # nothing held from another run in this process
    store.put_calendar(build_calendar("maint", [], [("2026-01-01T05:00Z", "2026-01-01T06:00Z")], tenant=tenant), T0)
    store.put_calendar(build_calendar("holidays", ["2026-01-02"], tenant=tenant), T0)
    create(store, new_job(schedule="0 * * * *", calendars=("maint", "holidays"), tenant=tenant, next_run_at=T0))
    for hour in range(3):
        assert [e.scheduled_at for e in claim_all(store, T0 + hour * HOUR).executions] == [T0 + hour * HOUR]
    # the same ms, other windows: the new window excludes
    store.put_calendar(build_calendar("maint", [], [("2026-01-01T03:00Z", "2026-01-01T04:00Z")], tenant=tenant), T0)
    res = claim_all(store, T0 + 3 * HOUR)
    assert res.executions == [] and [s.reason for s in res.skipped] == ["calendar: maint"]
    assert [e.scheduled_at for e in claim_all(store, T0 + 4 * HOUR).executions] == [T0 + 4 * HOUR]
    assert parsed == []


def test_every_write_of_a_calendar_is_a_revision_never_used_before(store: Store) -> None:
    """The readers hold a parsed calendar while its row's revision is unchanged: a revision is
    new at every write, a replacement in the same ms and a calendar deleted and made again
    included (created_at and updated_at alike would read back the old one), and a read
    returns the row's newest form."""
    first = store.put_calendar(build_calendar("hol", ["2026-12-25"], tenant="acme"), T0)
    assert first is not None and first.revision > 0 and store.get_calendar("acme", "hol") is first
    again = store.put_calendar(build_calendar("hol", ["2026-12-26"], tenant="acme"), T0)
    assert again is not None and again.revision > first.revision
    assert store.get_calendar("acme", "hol") is again and again.dates == frozenset({"2026-12-26"})
    assert store.delete_calendar("acme", "hol") == (True, [])
    remade = store.put_calendar(build_calendar("hol", ["2027-01-01"], tenant="acme"), T0)
    assert remade is not None and remade.revision > again.revision
    read = store.get_calendar("acme", "hol")
    assert read is not None and read.dates == frozenset({"2027-01-01"}) and read.revision == remade.revision
    assert [c.revision for c in store.list_calendars("acme")] == [remade.revision]


def test_a_tenants_calendar_excludes_its_own_jobs_ticks_not_a_neighbours(store: Store) -> None:
    """Two tenants' calendars of one name are two rows, two indexes: each job is excluded by
    its own tenant's, in one claim batch."""
    store.put_calendar(build_calendar("maint", [], [("2026-01-01T00:00Z", "2026-01-01T01:00Z")], tenant="acme"), T0)
    store.put_calendar(build_calendar("maint", [], [("2026-01-02T00:00Z", "2026-01-02T01:00Z")], tenant="zeta"), T0)
    acme, zeta = create(store, new_job(schedule="0 * * * *", calendars=("maint",), tenant="acme", next_run_at=T0),
                        new_job(schedule="0 * * * *", calendars=("maint",), tenant="zeta", next_run_at=T0))  # fmt: skip
    res = claim_all(store, T0)
    assert [e.job_id for e in res.executions] == [zeta] and [s.job_id for s in res.skipped] == [acme]
    stored = {c.tenant: c.revision for c in store.list_calendars()}
    assert stored["acme"] != stored["zeta"]


@pytest.mark.parametrize("packed", [None, "other version"])
def test_a_calendar_stored_without_its_index_is_built_once_and_written_back(
    store: Store, backend: str, tmp_path: Path, request: pytest.FixtureRequest, packed: str | None
) -> None:
    """A calendar written before version 25 (no index stored, revision 0) or packed under
    another ``PACK_VERSION`` is never misread: the first claim that needs it builds its index from the
    spec and writes it back in its transaction; the next claims copy it back."""
    from cronwheel.core.calendarindex import PACK_VERSION, CalendarIndex
    from cronwheel.store import calendars

    cal = build_calendar("maint", [], [("2026-01-01T01:00Z", "2026-01-01T02:00Z")], tenant="old")
    store.put_calendar(cal, T0)
    if packed is None:  # what migration 25 leaves of a calendar written before
        run_sql(backend, tmp_path, request, "DELETE FROM calendar_indexes")
        run_sql(backend, tmp_path, request, "UPDATE calendars SET revision = 0")
    else:
        run_sql(backend, tmp_path, request,
                "UPDATE calendar_indexes SET packed = " + ("X'09'" if backend == "sqlite" else "'\\x09'::bytea"))  # fmt: skip
    assert CalendarIndex.unpack("maint", b"\x09") is None and PACK_VERSION != 9
    job = create(store, new_job(schedule="0 * * * *", calendars=("maint",), tenant="old", next_run_at=T0))[0]
    before = calendars.STATS.rebuilt
    assert [e.job_id for e in claim_all(store, T0).executions] == [job]
    res = claim_all(store, T0 + HOUR)
    assert res.executions == [] and [s.reason for s in res.skipped] == ["calendar: maint"]
    assert calendars.STATS.rebuilt - before == 1
    assert run_sql(backend, tmp_path, request, "SELECT packed FROM calendar_indexes") == [(cal.index().pack(),)]
    assert [e.scheduled_at for e in claim_all(store, T0 + 2 * HOUR).executions] == [T0 + 2 * HOUR]
    assert calendars.STATS.rebuilt - before == 1
    read = store.get_calendar("old", "maint")
    assert read is not None and read.excludes(T0 + HOUR, "UTC") and not read.excludes(T0, "UTC")


def run_sql(backend: str, tmp_path: Path, request: pytest.FixtureRequest, query: str) -> list[tuple[object, ...]]:
    """``query`` on the store's own database, beside the store (what an older cronwheel left)."""
    if backend == "sqlite":
        import apsw

        conn = apsw.Connection(str(tmp_path / "cronwheel.db"))
        try:
            return [tuple(r) for r in conn.execute(query)]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(str(request.getfixturevalue("postgres_dsn")), autocommit=True) as pg:
        cur = pg.execute(query)
        return [tuple(r) for r in cur.fetchall()] if cur.description else []


def test_calendars_listed_as_stored_are_the_calendars_as_read(store: Store) -> None:
    """A listing splices the stored spec into its answer: it must hold exactly what the
    calendar read back holds, dates in order, windows as given, on both stores."""
    import json

    dates = ["2027-01-01", "2026-12-25", "2026-12-24"]
    store.put_calendar(build_calendar("holidays", dates, [("2026-12-24T22:00", "2026-12-25T02:00")], "xmas \u2603", "acme"), T0)
    store.put_calendar(build_calendar("bare", tenant="zeta"), T0 + SEC)
    docs = store.list_calendar_documents()
    assert [(d.tenant, d.name, d.created_at, d.updated_at) for d in docs] == [("acme", "holidays", T0, T0), ("zeta", "bare", T0 + SEC, T0 + SEC)]
    for doc, cal in zip(docs, store.list_calendars(), strict=True):
        assert json.loads(doc.spec) == {k: v for k, v in cal.to_json().items() if k not in ("name", "tenant")}
    assert json.loads(docs[0].spec)["dates"] == sorted(dates)
    assert [d.name for d in store.list_calendar_documents("zeta")] == ["bare"]


def test_calendar_documents_are_read_a_page_at_a_time_in_tenant_and_name_order(store: Store) -> None:
    names = {"acme": ["b", "a", "c"], "beta": ["a"], "zeta": ["y", "x"]}
    for tenant, mine in names.items():
        for name in mine:
            store.put_calendar(build_calendar(name, ["2026-12-25"], tenant=tenant), T0)
    everyone = [(d.tenant, d.name) for d in store.list_calendar_documents()]
    assert everyone == sorted((t, n) for t, mine in names.items() for n in mine)
    pages, after = [], None
    while page := store.list_calendar_documents(None, after, 2):
        pages.append([(d.tenant, d.name) for d in page])
        after = (page[-1].tenant, page[-1].name)
    assert pages == [everyone[0:2], everyone[2:4], everyone[4:6]]
    # one tenant's, after a name of its own: a neighbour's calendars are never in its pages
    assert [d.name for d in store.list_calendar_documents("acme", ("acme", "a"), 10)] == ["b", "c"]
    assert store.list_calendar_documents("beta", ("beta", "a"), 10) == []


def test_a_tenant_keeps_at_most_its_limit_of_calendars(store: Store) -> None:
    """A new name beyond ``max_per_tenant`` is refused (None) and nothing is written; a
    replacement of one it has still passes, other tenants are not counted, and a deletion
    makes room again."""
    for name in ("a", "b"):
        assert store.put_calendar(build_calendar(name, ["2026-01-01"], tenant="acme"), T0, max_per_tenant=2) is not None
    assert store.put_calendar(build_calendar("c", tenant="acme"), T0, max_per_tenant=2) is None
    assert store.get_calendar("acme", "c") is None
    replaced = store.put_calendar(build_calendar("b", ["2026-01-02"], tenant="acme"), T0 + SEC, max_per_tenant=2)
    assert replaced is not None and replaced.dates == frozenset({"2026-01-02"})
    assert store.put_calendar(build_calendar("c", tenant="zeta"), T0, max_per_tenant=2) is not None
    assert store.delete_calendar("acme", "a") == (True, [])
    assert store.put_calendar(build_calendar("c", tenant="acme"), T0, max_per_tenant=2) is not None
    assert [c.name for c in store.list_calendars("acme")] == ["b", "c"]


def test_two_nodes_adding_calendars_at_once_keep_the_limit(store_factory: StoreFactory) -> None:
    """The count and the insert are one step: four stores racing to add new names leave the
    tenant with exactly its limit, not the limit plus the race (three tenants, three races)."""
    stores = [store_factory() for _ in range(4)]
    for tenant in ("t1", "t2", "t3"):
        barrier = threading.Barrier(len(stores))
        kept: list[str] = []

        def add(i: int, s: Store, tenant: str = tenant, barrier: threading.Barrier = barrier, kept: list[str] = kept) -> None:
            barrier.wait()
            for n in range(30):
                if s.put_calendar(build_calendar(f"c{i}-{n}", tenant=tenant), T0, max_per_tenant=40) is not None:
                    kept.append(f"c{i}-{n}")

        threads = [threading.Thread(target=add, args=(i, s)) for i, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert len(kept) == 40 and sorted(c.name for c in stores[0].list_calendars(tenant)) == sorted(kept), tenant


def test_a_calendar_in_use_is_not_deleted(store: Store) -> None:
    store.put_calendar(build_calendar("holidays", ["2026-01-01"]), T0)
    (jid,) = create(store, new_job(calendars=("holidays",)))
    assert store.delete_calendar("default", "holidays") == (False, [jid])
    assert store.get_calendar("default", "holidays") is not None
    assert store.get_job(jid).spec.calendars == ("holidays",)  # type: ignore[union-attr]


def test_an_excluded_tick_is_recorded_skipped_with_reason_calendar(store: Store) -> None:
    # every hour; 2026-01-01 (the whole local day in Paris) is a holiday
    store.put_calendar(build_calendar("holidays", ["2026-01-01"]), T0)
    (jid,) = create(store, new_job(schedule="0 * * * *", timezone="Europe/Paris", calendars=("holidays",),
                                   next_run_at=T0))  # fmt: skip
    res = claim_all(store, T0)  # 2026-01-01T00:00Z is 01:00 in Paris: excluded
    assert res.executions == []
    (skipped,) = res.skipped
    assert skipped.execution_id == execution_id(jid, T0)
    assert skipped.status is ExecStatus.SKIPPED and skipped.reason == "calendar: holidays"
    # 2026-01-01T23:00Z is 2026-01-02T00:00 in Paris: runs
    store.claim_due(list(range(64)), T0 + 22 * HOUR, 1000)
    res = claim_all(store, T0 + 23 * HOUR)
    assert [e.scheduled_at for e in res.executions] == [T0 + 23 * HOUR]


def test_active_until_ends_the_job_and_active_from_is_kept(store: Store) -> None:
    (jid,) = create(store, new_job(schedule="0 * * * *", next_run_at=T0, active_from=T0, active_until=T0 + HOUR))
    res = claim_all(store, T0)
    assert [e.scheduled_at for e in res.executions] == [T0]
    assert store.get_job(jid).next_run_at == T0 + HOUR  # type: ignore[union-attr]
    claim_all(store, T0 + HOUR)
    job = store.get_job(jid)
    # no further tick: the job waits for its last runs, which settle it (see test_job_state)
    assert job is not None and job.status is JobStatus.ACTIVE and job.next_run_at is None
    assert job.spec.active_from == T0 and job.spec.active_until == T0 + HOUR


# ---------------------------------------------------------------- backfill


def test_backfill_twice_gives_one_execution_per_tick(store: Store) -> None:
    (jid,) = create(store, new_job(schedule="0 * * * *", next_run_at=T0 + DAY))
    ticks = [T0 + i * HOUR for i in range(5)]
    first = store.backfill(jid, ticks, T0 + DAY)
    assert first is not None and [e.scheduled_at for e in first] == ticks
    assert all(e.priority is Priority.BATCH and e.context == {"backfill": True} for e in first)
    assert store.backfill(jid, ticks, T0 + DAY) == []
    more = store.backfill(jid, [*ticks, T0 + 5 * HOUR], T0 + DAY)
    assert more is not None and [e.scheduled_at for e in more] == [T0 + 5 * HOUR]
    history = store.list_executions(jid, 100)
    assert sorted(e.scheduled_at for e in history) == [*ticks, T0 + 5 * HOUR]
    assert store.get_execution(execution_id(jid, T0)).context == {"backfill": True}  # type: ignore[union-attr]
    # not scheduling lateness: a backfilled tick is late on purpose
    assert store.get_execution(execution_id(jid, T0)).origin is ExecOrigin.BACKFILL  # type: ignore[union-attr]
    assert store.backfill("nope", ticks, T0) is None
    assert store.backfill(jid, ticks, T0, tenant="other") is None


def test_cancel_backfill_cancels_only_the_backfill_not_yet_started(store: Store) -> None:
    (jid,) = create(store, new_job(schedule="0 * * * *", next_run_at=T0))
    scheduled = claim_all(store, T0).executions[0]
    store.backfill(jid, [T0 - 2 * HOUR, T0 - HOUR], T0)
    start(store, execution_id(jid, T0 - 2 * HOUR), T0)
    assert store.cancel_backfill(jid, T0 + SEC) == 1
    assert store.get_execution(execution_id(jid, T0 - HOUR)).status is ExecStatus.CANCELLED  # type: ignore[union-attr]
    assert store.get_execution(execution_id(jid, T0 - 2 * HOUR)).status is ExecStatus.RUNNING  # type: ignore[union-attr]
    assert store.get_execution(scheduled.execution_id).status is ExecStatus.PENDING  # type: ignore[union-attr]
    assert store.cancel_backfill("nope", T0) is None


# ---------------------------------------------------------------- chains


def _run_to(store: Store, eid: str, outcome: Outcome, now: int) -> list:  # type: ignore[type-arg]
    g = start(store, eid, now)
    (res,) = store.complete_executions([Completion(eid, "w1", g.lease_epoch, outcome)], now + SEC)
    return res.triggered


def test_a_success_triggers_its_child_once_with_the_parent_in_context(store: Store) -> None:
    child, other = create(store, new_job(schedule="@triggered", next_run_at=None),
                          new_job(schedule="@triggered", next_run_at=None))  # fmt: skip
    (parent,) = create(store, new_job(schedule="0 * * * *", next_run_at=T0, on_success=(child,), on_failure=(other,)))
    peid = claim_all(store, T0).executions[0].execution_id
    (kid,) = _run_to(store, peid, Outcome.SUCCEEDED, T0)
    assert kid.execution_id == execution_id(child, T0) and kid.status is ExecStatus.PENDING
    parent_ctx = {"executionId": peid, "jobId": parent, "scheduledAt": "2026-01-01T00:00:00.000Z", "outcome": "SUCCEEDED"}
    assert kid.context == {"parent": parent_ctx}
    assert store.get_execution(kid.execution_id).origin is ExecOrigin.CHAIN  # type: ignore[union-attr]
    g = start(store, kid.execution_id, T0 + 2 * SEC)
    assert g.context == {"parent": parent_ctx}
    assert g.payload == {"parent": parent_ctx}
    assert store.get_execution(execution_id(other, T0)) is None


def test_a_retry_is_not_final_and_dead_triggers_on_failure(store: Store) -> None:
    (child,) = create(store, new_job(schedule="@triggered", next_run_at=None, payload={"k": 1}))
    (parent,) = create(store, new_job(schedule="0 * * * *", next_run_at=T0, on_failure=(child,),
                                      retry=RetryPolicy(max_attempts=2)))  # fmt: skip
    peid = claim_all(store, T0).executions[0].execution_id
    assert _run_to(store, peid, Outcome.FAILED, T0) == []  # attempt 1 of 2: RETRY_WAIT
    ex = store.get_execution(peid)
    assert ex is not None and ex.status is ExecStatus.RETRY_WAIT
    (kid,) = _run_to(store, peid, Outcome.FAILED, (ex.available_at or T0) + SEC)
    assert kid.context["parent"]["outcome"] == "DEAD"  # type: ignore[index]
    g = start(store, kid.execution_id, T0 + HOUR)
    assert g.payload["k"] == 1 and g.payload["parent"]["jobId"] == parent


def test_a_replayed_parent_does_not_trigger_the_child_again(store: Store) -> None:
    (child,) = create(store, new_job(schedule="@triggered", next_run_at=None))
    (_parent,) = create(store, new_job(schedule="0 * * * *", next_run_at=T0, on_failure=(child,), on_success=(child,),
                                      retry=RetryPolicy(max_attempts=1)))  # fmt: skip
    peid = claim_all(store, T0).executions[0].execution_id
    assert len(_run_to(store, peid, Outcome.FAILED, T0)) == 1
    assert store.replay_dead(peid, T0 + MIN) is not None
    assert _run_to(store, peid, Outcome.SUCCEEDED, T0 + 2 * MIN) == []  # same tick: the child exists
    assert len([e for e in store.list_executions(child, 10)]) == 1


def test_chain_children_must_exist_and_cycles_are_refused(store: Store) -> None:
    a, b, c = create(store, *(new_job(schedule="@triggered", next_run_at=None) for _ in range(3)))
    assert store.set_job_chain(a, [b], [], T0) is not None
    assert store.set_job_chain(b, [c], [], T0) is not None
    with pytest.raises(ChainError, match="cycle"):
        store.set_job_chain(c, [], [a], T0)
    with pytest.raises(ChainError, match="cycle"):
        store.set_job_chain(a, [a], [], T0)
    with pytest.raises(ChainError, match="no job"):
        store.set_job_chain(a, ["nope"], [], T0)
    (foreign,) = create(store, new_job(schedule="@triggered", next_run_at=None, tenant="zeta"))
    with pytest.raises(ChainError, match="same tenant"):
        store.set_job_chain(a, [foreign], [], T0)
    job = store.get_job(c)
    assert job is not None and job.spec.on_failure == ()
    assert store.set_job_chain("nope", [], [], T0) is None
    cleared = store.set_job_chain(a, [], [], T0)
    assert cleared is not None and cleared.spec.on_success == ()
    assert store.set_job_chain(c, [], [a], T0) is not None  # no cycle any more


def test_a_lease_that_expires_for_good_triggers_on_failure(store: Store) -> None:
    """The reaper's verdict is a final outcome too: the child is inserted with it."""
    (child,) = create(store, new_job(schedule="@triggered", next_run_at=None))
    create(store, new_job(schedule="0 * * * *", next_run_at=T0, on_failure=(child,), lease_sec=10,
                          retry=RetryPolicy(max_attempts=1)))  # fmt: skip
    peid = claim_all(store, T0).executions[0].execution_id
    start(store, peid, T0)
    (res,) = store.expire_leases(T0 + MIN, 10)
    assert res.status is ExecStatus.DEAD
    assert [ex.execution_id for ex in res.triggered] == [execution_id(child, T0)]
    assert store.expire_leases(T0 + 2 * MIN, 10) == []


def test_an_update_in_place_keeps_calendars_and_refuses_a_chain_cycle(store: Store) -> None:
    """``update_job`` (PATCH) writes the new fields and runs the same cycle check as set_job_chain."""
    store.put_calendar(build_calendar("holidays", ["2026-01-01"]), T0)
    a, b = create(store, *(new_job(schedule="@triggered", next_run_at=None) for _ in range(2)))
    assert store.set_job_chain(a, [b], [], T0) is not None
    job_b = store.get_job(b)
    assert job_b is not None
    with pytest.raises(ChainError, match="cycle"):
        store.update_job(b, replace(job_b.spec, on_failure=(a,)), None, False, T0 + SEC)
    assert store.get_job(b).spec.on_failure == ()  # type: ignore[union-attr]
    new = replace(job_b.spec, schedule="0 * * * *", calendars=("holidays",), active_until=T0 + HOUR)
    res = store.update_job(b, new, T0, True, T0 + SEC)
    assert res.job is not None and res.job.spec.calendars == ("holidays",) and res.job.spec.active_until == T0 + HOUR
    skipped = claim_all(store, T0).skipped
    assert [(e.job_id, e.reason) for e in skipped] == [(b, "calendar: holidays")]


def test_a_cancelled_child_does_not_block_changing_the_rest_of_the_chain(store: Store) -> None:
    a, b, c = create(store, *(new_job(schedule="@triggered", next_run_at=None) for _ in range(3)))
    assert store.set_job_chain(a, [b], [c], T0) is not None
    store.cancel_job(c, T0)
    job = store.set_job_chain(a, [], [c], T0 + SEC)  # drop b, keep the cancelled c
    assert job is not None and job.spec.on_success == () and job.spec.on_failure == (c,)
    (d,) = create(store, new_job(schedule="@triggered", next_run_at=None))
    store.cancel_job(d, T0)
    with pytest.raises(ChainError, match="CANCELLED"):
        store.set_job_chain(a, [d], [c], T0 + SEC)  # a cancelled job is never added
