"""The store contract for deleting a tenant (``store/tenantgone.py``): asked in one transaction,
its rows removed by retention in bounded batches, its name free only once none is left, and
nothing of a neighbour touched.

Written against ``Store`` only: every backend in ``BACKENDS`` runs it."""

from __future__ import annotations

from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core.calendar import build_calendar
from cronwheel.core.model import RetryPolicy
from cronwheel.core.records import (
    Completion,
    CreateOutcome,
    EffectVerdict,
    LeaseVerdict,
    Outcome,
    StartRequest,
)
from cronwheel.core.tenants import ApiToken, DeletionOutcome, Role, Tenant, hash_token, new_token_id
from cronwheel.store.base import Store
from tests.contract.conftest import ALL_BUCKETS, HOUR, MIN, SEC, T0, create, new_job, one_off
from tests.support.store_probe import get_tenant

#: every table that carries a tenant's name, directly or through its jobs
TABLES = {
    "jobs": "SELECT count(*) FROM jobs WHERE tenant = :t",
    "job_definitions": "SELECT count(*) FROM job_definitions d JOIN jobs j ON j.id = d.job_id WHERE j.tenant = :t",
    "job_watch": "SELECT count(*) FROM job_watch w JOIN jobs j ON j.id = w.job_id WHERE j.tenant = :t",
    "executions": "SELECT count(*) FROM executions WHERE tenant = :t",
    "effects": "SELECT count(*) FROM effects f JOIN executions e ON e.execution_id = f.execution_id WHERE e.tenant = :t",
    "notifications": "SELECT count(*) FROM notifications WHERE tenant = :t",
    "idempotency_keys": "SELECT count(*) FROM idempotency_keys WHERE tenant = :t",
    "job_names": "SELECT count(*) FROM job_names WHERE tenant = :t",
    "calendars": "SELECT count(*) FROM calendars WHERE tenant = :t",
    "calendar_indexes": "SELECT count(*) FROM calendar_indexes WHERE tenant = :t",
    "api_tokens": "SELECT count(*) FROM api_tokens WHERE tenant = :t",
    "tenants": "SELECT count(*) FROM tenants WHERE name = :t",
}
LATER = T0 + 24 * HOUR  #: a grace after every deletion these tests ask has passed
HOOK = nt.rule_from_json({"on": "failure", "via": "webhook", "url": "https://hooks.example.com/cw",
                          "secret": "0123456789abcdef-secret"})  # fmt: skip


def rows_of(store: Store, tenant: str) -> dict[str, int]:
    def read(sql: Any) -> dict[str, int]:
        return {table: int(sql.rows(q, {"t": tenant})[0][0]) for table, q in TABLES.items()}

    return store._outbox_read(read)  # type: ignore[attr-defined]


def add_token(store: Store, tenant: str, role: Role = Role.TENANT) -> ApiToken:
    tok = ApiToken(new_token_id(), hash_token(f"secret-{tenant}-{new_token_id()}"), role, tenant)
    assert store.create_token(tok, T0)
    return tok


def populate(store: Store, tenant: str) -> str:
    """A tenant with something in every table: a finished run with an effect, a dead letter
    told by a webhook, a named and keyed job, a calendar with its index, tokens. Returns the
    id of its every-minute job, left ACTIVE."""
    store.create_tenant(Tenant(tenant), T0 - HOUR)
    add_token(store, tenant)
    add_token(store, tenant, Role.WORKER)
    store.put_calendar(build_calendar("holidays", ["2026-12-25"], tenant=tenant), T0 - HOUR)
    ok = one_off(T0, tenant=tenant, name="report", key="k-1", retry=RetryPolicy(max_attempts=1))
    dead = one_off(T0, tenant=tenant, retry=RetryPolicy(max_attempts=1), notify=(HOOK,))
    ticking = new_job(next_run_at=T0, tenant=tenant, name="ticker", calendars=("holidays",))
    create(store, ok, dead, ticking, now=T0 - MIN)
    mine = [e for e in store.claim_due(ALL_BUCKETS, T0, 100).executions if e.tenant == tenant]
    assert len(mine) == 3
    for ex in mine:
        if ex.job_id == ticking.job_id:
            continue
        [g] = store.start_executions([StartRequest(ex.execution_id, f"w-{tenant}")], T0)
        assert store.record_effect(g.execution_id, f"w-{tenant}", g.lease_epoch, "mail:1", T0) is EffectVerdict.RECORDED
        outcome = Outcome.SUCCEEDED if ex.job_id == ok.job_id else Outcome.FAILED
        store.complete_executions([Completion(g.execution_id, f"w-{tenant}", g.lease_epoch, outcome)], T0 + SEC)
    return ticking.job_id


def test_a_tenant_with_live_jobs_or_runs_is_not_deleted_unless_forced(store: Store) -> None:
    ticking = populate(store, "acme")
    before = rows_of(store, "acme")
    refused = store.mark_tenant_deleting("acme", T0 + MIN)
    assert (refused.outcome, refused.live_jobs, refused.in_flight) == (DeletionOutcome.NOT_EMPTY, 1, 1)
    assert rows_of(store, "acme") == before and get_tenant(store, "acme").deleting_since is None  # type: ignore[union-attr]
    assert all(t.active for t in store.list_tokens("acme"))
    # cancelled (its PENDING tick with it), nothing is live: deleted without force
    assert store.cancel_job(ticking, T0 + MIN) is not None
    marked = store.mark_tenant_deleting("acme", T0 + 2 * MIN)
    assert (marked.outcome, marked.live_jobs, marked.in_flight) == (DeletionOutcome.MARKED, 0, 0)
    assert sorted(t.role.value for t in marked.revoked) == ["tenant", "worker"]


def test_a_deleting_tenant_takes_no_job_no_token_and_keeps_its_name(store: Store) -> None:
    populate(store, "acme")
    forced = store.mark_tenant_deleting("acme", T0 + MIN, force=True)
    assert (forced.outcome, forced.live_jobs, forced.in_flight, forced.deleting_since) == (DeletionOutcome.MARKED, 1, 1, T0 + MIN)
    assert {t.token_id for t in forced.revoked} == {t.token_id for t in store.list_tokens("acme")}
    assert all(store.get_token_by_hash(t.token_hash).revoked_at == T0 + MIN for t in forced.revoked)  # type: ignore[union-attr]
    again = store.mark_tenant_deleting("acme", T0 + 2 * MIN, force=True)
    assert (again.outcome, again.deleting_since, again.revoked) == (DeletionOutcome.DELETING, T0 + MIN, ())
    assert store.mark_tenant_deleting("nobody", T0).outcome is DeletionOutcome.NOT_FOUND
    # no new job, not even a replay of a stored key (its job is going away); a neighbour's go in
    results = store.create_jobs([one_off(T0 + HOUR, tenant="acme"), one_off(T0 + HOUR, tenant="acme", key="k-1"),
                                 one_off(T0 + HOUR, tenant="zeta", key="k-1")], T0 + 2 * MIN)  # fmt: skip
    assert [r.outcome for r in results] == [CreateOutcome.TENANT_DELETING, CreateOutcome.TENANT_DELETING, CreateOutcome.CREATED]
    assert not store.create_token(ApiToken(new_token_id(), hash_token("late"), Role.TENANT, "acme"), T0 + 2 * MIN)
    assert store.create_tenant(Tenant("acme", weight=5), T0 + 2 * MIN) is None
    # nor is it changed any more: as far as its users go it is gone
    assert store.update_tenant("acme", {"weight": 5}, T0 + 2 * MIN) is None
    assert store.tenant_notify("acme") is None and not store.set_tenant_notify("acme", (HOOK,), T0 + 2 * MIN)
    assert get_tenant(store, "acme").weight == 1  # type: ignore[union-attr]
    listed = {t.name: t.deleting_since for t in store.list_tenants()}
    assert listed == {"acme": T0 + MIN, "default": None, "zeta": None}


def test_retention_removes_every_row_of_the_tenant_in_bounded_batches_and_nothing_of_a_neighbour(store: Store) -> None:
    """A neighbour with the same job names, keys and calendar, and a run in progress throughout,
    loses nothing; the deleted tenant's name, once free, is a new tenant with nothing of the old."""
    ticking = populate(store, "acme")
    populate(store, "zeta")
    # the neighbour's run, RUNNING while acme goes
    running = store.claim_due(ALL_BUCKETS, T0 + MIN, 100).executions
    zeta_ex = next(e for e in running if e.tenant == "zeta")
    [zg] = store.start_executions([StartRequest(zeta_ex.execution_id, "w-zeta")], T0 + MIN)
    neighbour = rows_of(store, "zeta")
    assert all(n > 0 for n in neighbour.values()), neighbour
    assert store.mark_tenant_deleting("acme", T0 + 2 * MIN, force=True).outcome is DeletionOutcome.MARKED
    assert store.cancel_job(ticking, T0 + 2 * MIN) is not None  # what the engine does when forced
    before = sum(rows_of(store, "acme").values())
    passes, gone = 0, False
    while not gone:
        deleted, gone = store.purge_tenant("acme", 3, LATER)
        assert deleted <= 3 + 5, deleted  # a batch ends at its budget (a job's own rows go together)
        passes += 1
        assert passes < 100
        assert store.heartbeat(zg.execution_id, "w-zeta", zg.lease_epoch, T0 + 2 * MIN).verdict is LeaseVerdict.OK
    assert passes > 3  # it took several small transactions
    assert rows_of(store, "acme") == dict.fromkeys(TABLES, 0) and before > 0
    assert rows_of(store, "zeta") == neighbour
    assert store.purge_tenant("acme", 3, LATER) == (0, False)  # nothing left to do
    assert store.purge_tenant("zeta", 1000, LATER) == (0, False)  # a live tenant is never purged
    assert rows_of(store, "zeta") == neighbour
    # the name is free: a new tenant of it has nothing of the old one
    fresh = store.create_tenant(Tenant("acme", weight=3), T0 + HOUR)
    assert fresh is not None and fresh.deleting_since is None and fresh.weight == 3
    assert store.get_calendar("acme", "holidays") is None and store.find_jobs_by_name("report", "acme") == []
    [res] = store.create_jobs([one_off(T0 + 2 * HOUR, tenant="acme", name="report", key="k-1")], T0 + HOUR)
    assert res.outcome is CreateOutcome.CREATED  # not a replay of the old tenant's job
    assert store.list_tokens("acme") == []


def test_a_run_still_in_flight_keeps_the_tenant_row_until_it_ends(store: Store) -> None:
    store.create_tenant(Tenant("acme"), T0 - HOUR)
    [jid] = create(store, one_off(T0, tenant="acme", retry=RetryPolicy(max_attempts=1)))
    [ex] = store.claim_due(ALL_BUCKETS, T0, 10).executions
    [g] = store.start_executions([StartRequest(ex.execution_id, "w")], T0)
    assert store.mark_tenant_deleting("acme", T0 + SEC, force=True).in_flight == 1
    for _ in range(5):
        assert store.purge_tenant("acme", 100, LATER) == (0, False)
    assert get_tenant(store, "acme") is not None
    store.complete_executions([Completion(g.execution_id, "w", g.lease_epoch, Outcome.SUCCEEDED)], T0 + 2 * SEC)
    deleted, gone = store.purge_tenant("acme", 100, LATER)
    assert gone and deleted >= 3  # its run, its job (and definition), the tenant row
    assert get_tenant(store, "acme") is None and store.get_job(jid) is None


def test_odd_and_unicode_names_are_only_themselves(store: Store) -> None:
    """A name is a value, never a pattern: deleting ``a_c`` or ``a%`` leaves ``abc`` and ``a%b``."""
    for name in ("a_c", "abc", "a%", "a%b", "ünï"):
        populate(store, name)
    kept = {name: rows_of(store, name) for name in ("abc", "a%b", "ünï")}
    for name in ("a_c", "a%"):
        assert store.mark_tenant_deleting(name, T0 + MIN, force=True).outcome is DeletionOutcome.MARKED
        for job in store.list_jobs(name, None, 100):
            store.cancel_job(job.id, T0 + MIN)
        while not store.purge_tenant(name, 1000, LATER)[1]:
            pass
    assert {name: rows_of(store, name) for name in kept} == kept
    assert {t.name for t in store.list_tenants()} == {"default", "abc", "a%b", "ünï"}


def test_the_tenant_row_outlives_its_deletion_by_the_grace_asked(store: Store) -> None:
    """A node that trusted one of its tokens a moment before may still send a job: while the
    row is there it is refused, where with no row it would be the first job of a new tenant."""
    store.create_tenant(Tenant("acme"), T0 - HOUR)
    assert store.mark_tenant_deleting("acme", T0).outcome is DeletionOutcome.MARKED
    assert store.purge_tenant("acme", 100, T0) == (0, False)  # asked at T0: not before T0
    [late] = store.create_jobs([one_off(T0 + HOUR, tenant="acme")], T0 + SEC)
    assert late.outcome is CreateOutcome.TENANT_DELETING and get_tenant(store, "acme") is not None
    assert store.purge_tenant("acme", 100, T0 + 1) == (1, True)
    [fresh] = store.create_jobs([one_off(T0 + HOUR, tenant="acme")], T0 + 2 * SEC)
    assert fresh.outcome is CreateOutcome.CREATED  # now the first job of a new tenant of that name
    assert get_tenant(store, "acme").deleting_since is None  # type: ignore[union-attr]
