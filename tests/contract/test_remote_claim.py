"""Contract: queue targets and ``claim_for_worker`` (remote workers pull over the HTTP API)."""

from __future__ import annotations

import threading

from cronwheel.core.claimturns import ClaimTurns
from cronwheel.core.model import ExecStatus, Priority, RetryPolicy
from cronwheel.core.records import Completion, Outcome
from cronwheel.core.tenants import Tenant
from cronwheel.store.base import Store
from tests.contract.conftest import (
    MIN,
    SEC,
    T0,
    StoreFactory,
    claim_all,
    create,
    one_off,
)


def queued(store: Store, n: int, queue: str = "q1", at: int = T0, **kw) -> list[str]:
    """``n`` one-off jobs of a queue target, claimed: their PENDING execution ids, oldest first."""
    jobs = [one_off(at + i, target={"queue": queue}, **kw) for i in range(n)]
    create(store, *jobs)
    res = claim_all(store, at + n)
    return [ex.execution_id for ex in sorted(res.executions, key=lambda e: (e.available_at, e.execution_id))]


def test_claim_copies_the_queue_and_local_reads_see_it(store: Store) -> None:
    jobs = [one_off(T0, target={"queue": "q1"}), one_off(T0, target={"command": "true"})]
    create(store, *jobs)
    res = claim_all(store, T0)
    by_job = {ex.job_id: ex for ex in res.executions}
    assert by_job[jobs[0].job_id].queue == "q1"
    assert by_job[jobs[1].job_id].queue is None
    # the local ready queue never sees a queue target's execution
    ready = {ex.job_id: ex.queue for ex in store.ready_executions(T0, 100)}
    assert ready == {jobs[1].job_id: None}
    ex = store.get_execution(by_job[jobs[0].job_id].execution_id)
    assert ex is not None and ex.queue == "q1"
    trig = store.trigger_job(jobs[0].job_id, T0 + SEC)
    assert trig is not None and trig.queue == "q1"
    got = store.get_execution(trig.execution_id)
    assert got is not None and got.queue == "q1"


def test_claim_for_worker_starts_oldest_first_with_fencing(store: Store) -> None:
    ids = queued(store, 3)
    queued(store, 2, queue="other")
    create(store, one_off(T0, target={"command": "true"}))
    claim_all(store, T0 + 10)
    grants = store.claim_for_worker(["q1"], "remote-1", 2, T0 + SEC)
    assert [g.execution_id for g in grants] == ids[:2]
    for g in grants:
        assert (g.queue, g.attempt, g.lease_epoch) == ("q1", 1, 1)
        assert g.lease_until == T0 + SEC + round(g.lease_sec * 1000)
        assert g.target == {"queue": "q1"}
        ex = store.get_execution(g.execution_id)
        assert ex is not None and ex.status is ExecStatus.RUNNING and ex.worker_id == "remote-1"
    [g3] = store.claim_for_worker(["q1", "nope"], "remote-2", 10, T0 + SEC)
    assert g3.execution_id == ids[2]
    assert store.claim_for_worker(["q1"], "remote-2", 10, T0 + SEC) == []
    assert len(store.claim_for_worker(["other"], "remote-2", 10, T0 + SEC)) == 2
    assert store.claim_for_worker([], "remote-2", 10, T0 + SEC) == []
    assert store.claim_for_worker(["q1"], "remote-2", 0, T0 + SEC) == []


def test_claim_for_worker_takes_the_most_urgent_tier_first(store: Store) -> None:
    """A backlog of batch work does not hold up a high job that became available later."""
    batch = [one_off(T0 + i, target={"queue": "q1"}, priority=Priority.BATCH) for i in range(5)]
    normal = one_off(T0 + 20, target={"queue": "q1"})
    high = one_off(T0 + 30, target={"queue": "q1"}, priority=Priority.HIGH)
    create(store, *batch, normal, high)
    claim_all(store, T0 + 30)
    grants = store.claim_for_worker(["q1"], "remote-1", 3, T0 + SEC)
    assert [g.job_id for g in grants] == [high.job_id, normal.job_id, batch[0].job_id]
    assert [g.priority for g in grants] == [Priority.HIGH, Priority.DEFAULT, Priority.BATCH]
    rest = store.claim_for_worker(["q1"], "remote-1", 10, T0 + SEC)
    assert [g.job_id for g in rest] == [b.job_id for b in batch[1:]]  # oldest first within a tier


def test_across_tenants_only_a_tenant_granted_the_high_tier_goes_first(store: Store) -> None:
    """A worker of no tenant serves every tenant's queue: there a high execution of a tenant
    without allow_high_priority ranks as default (oldest first among them), as the local
    dispatcher queues it; the grant, given or withdrawn, counts at the next claim. A tenant's
    own worker still takes its high ones first: that orders its own work only."""
    store.create_tenant(Tenant("evil"), T0)
    store.create_tenant(Tenant("vip", allow_high_priority=True), T0)
    acme = one_off(T0, target={"queue": "q1"}, tenant="acme")
    flood = [one_off(T0 + 10 + i, target={"queue": "q1"}, tenant="evil", priority=Priority.HIGH) for i in range(3)]
    vip = one_off(T0 + 20, target={"queue": "q1"}, tenant="vip", priority=Priority.HIGH)
    create(store, acme, *flood, vip)
    claim_all(store, T0 + 20)
    [own] = store.claim_for_worker(["q1"], "evil-worker", 1, T0 + SEC, tenant="evil")
    assert own.job_id == flood[0].job_id
    grants = store.claim_for_worker(["q1"], "remote-1", 2, T0 + SEC)
    assert [g.job_id for g in grants] == [vip.job_id, acme.job_id]
    store.update_tenant("evil", {"allow_high_priority": True}, T0 + SEC)
    extra = one_off(T0 + 40, target={"queue": "q1"}, tenant="acme")
    create(store, extra, now=T0 + SEC)
    claim_all(store, T0 + 40)
    grants = store.claim_for_worker(["q1"], "remote-1", 10, T0 + 2 * SEC)
    assert [g.job_id for g in grants] == [flood[1].job_id, flood[2].job_id, extra.job_id]


def test_across_tenants_a_flood_queued_first_does_not_hold_a_neighbours_runs(store: Store) -> None:
    """A shared worker (of no tenant) serves tenants in turns: evil's 40 runs queued before
    acme's 3 do not all go first (oldest first, they did), whether the worker claims one at a
    time (the node's turns remembered across claims) or many at once; each tenant's own runs
    still go oldest first, across the queues the worker names."""
    flood = [one_off(T0 + i, target={"queue": "q1" if i % 2 else "q2"}, tenant="evil") for i in range(40)]
    acme = [one_off(T0 + 100 + i, target={"queue": "q1"}, tenant="acme") for i in range(3)]
    create(store, *flood, *acme)
    claim_all(store, T0 + 200)
    turns = ClaimTurns()
    one_at_a_time = [g for _ in range(4) for g in store.claim_for_worker(["q1", "q2"], "w", 1, T0 + SEC, turns=turns)]
    assert [g.tenant for g in one_at_a_time] == ["evil", "acme", "evil", "acme"], one_at_a_time
    assert [g.job_id for g in one_at_a_time if g.tenant == "evil"] == [flood[0].job_id, flood[1].job_id]
    rest = store.claim_for_worker(["q1", "q2"], "w", 5, T0 + SEC, turns=turns)
    assert [g.tenant for g in rest] == ["evil", "acme", "evil", "evil", "evil"], rest
    assert [g.job_id for g in rest if g.tenant == "evil"] == [f.job_id for f in flood[2:6]]
    left = store.claim_for_worker(["q1", "q2"], "w", 100, T0 + SEC)
    assert [g.job_id for g in left] == [f.job_id for f in flood[6:]]


def test_claim_for_worker_respects_availability_and_tenant(store: Store) -> None:
    [a] = queued(store, 1, tenant="acme")
    [b] = queued(store, 1, at=T0 + MIN)  # available only from T0 + MIN
    assert store.claim_for_worker(["q1"], "w", 10, T0 + 5, tenant="other") == []
    [g] = store.claim_for_worker(["q1"], "w", 10, T0 + 5, tenant="acme")
    assert g.execution_id == a and g.tenant == "acme"
    assert store.claim_for_worker(["q1"], "w", 10, T0 + 5) == []
    [g2] = store.claim_for_worker(["q1"], "w", 10, T0 + MIN + 5)
    assert g2.execution_id == b


def test_whether_a_claim_would_find_anything_is_a_read_that_agrees_with_the_claim(store: Store) -> None:
    """An idle worker's claim asks this first, on a read connection, and takes the write
    transaction only when it says yes: it must say yes wherever the claim would grant."""
    [a] = queued(store, 1, tenant="acme")
    queued(store, 1, at=T0 + MIN, queue="q2")  # available only from T0 + MIN
    cases = [
        (["q1"], T0 + 5, "other"), (["q1"], T0 + 5, "acme"), (["q1"], T0 + 5, None), (["q2"], T0 + 5, None),
        (["q9", "q2"], T0 + MIN + 5, None), (["q2"], T0 + MIN + 5, "acme"), ([], T0 + MIN + 5, None),
    ]
    expected = [False, True, True, False, True, False, False]
    assert [store.has_ready_for_worker(queues, now, tenant) for queues, now, tenant in cases] == expected
    [g] = store.claim_for_worker(["q1"], "w", 10, T0 + 5, tenant="acme")
    assert g.execution_id == a
    assert store.has_ready_for_worker(["q1"], T0 + 5) is False  # started: nothing ready any more
    assert store.has_ready_for_worker(["q2"], T0 + MIN + 5) is True
    assert len(store.claim_for_worker(["q2"], "w", 10, T0 + MIN + 5)) == 1


def test_retry_and_lease_expiry_are_claimed_again_with_a_new_epoch(store: Store) -> None:
    [eid] = queued(store, 1, retry=RetryPolicy(max_attempts=3, initial_backoff_sec=1, jitter=0))
    [g] = store.claim_for_worker(["q1"], "w1", 1, T0 + SEC)
    [res] = store.complete_executions([Completion(eid, "w1", g.lease_epoch, Outcome.FAILED)], T0 + SEC, [0.5])
    assert res.status is ExecStatus.RETRY_WAIT and res.available_at is not None
    assert store.claim_for_worker(["q1"], "w2", 1, res.available_at - 1) == []
    [g2] = store.claim_for_worker(["q1"], "w2", 1, res.available_at)
    assert (g2.execution_id, g2.lease_epoch, g2.attempt) == (eid, 2, 2)
    expired = store.expire_leases(g2.lease_until + 1, 100)
    assert [r.execution_id for r in expired] == [eid]
    [g3] = store.claim_for_worker(["q1"], "w3", 1, g2.lease_until + 10_000)
    assert (g3.execution_id, g3.lease_epoch) == (eid, 3)
    # the stale epoch is fenced
    [stale] = store.complete_executions([Completion(eid, "w2", 2, Outcome.SUCCEEDED)], g2.lease_until + 20_000)
    assert stale.verdict.value == "lease_lost"


def test_two_claimers_get_disjoint_sets(store_factory: StoreFactory) -> None:
    first = store_factory()
    ids = queued(first, 60)
    stores = [first, store_factory()]
    got: list[list[str]] = [[], []]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def claimer(i: int) -> None:
        try:
            barrier.wait()
            while True:
                grants = stores[i].claim_for_worker(["q1"], f"w{i}", 3, T0 + MIN)
                if not grants:
                    return
                got[i].extend(g.execution_id for g in grants)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert not set(got[0]) & set(got[1])
    assert sorted(got[0] + got[1]) == sorted(ids)
