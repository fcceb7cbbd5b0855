"""Contract: cluster membership, bucket leases and fenced claims (docs/scaling.md).

Written against ``Store`` only. Whose clock decides differs (PostgreSQL: the database's,
SQLite: ``now_ms``), so these tests never depend on it: a lease granted with ``ttl_ms=0``
is expired at once in both (``lease_until`` = the store's now, and a lease is live only
while ``lease_until`` > now), and a long TTL is live for the whole test.
"""

from __future__ import annotations

import threading

from cronwheel.core.model import ExecStatus
from cronwheel.core.records import StartRequest
from cronwheel.store.base import Store
from tests.contract.conftest import (
    ALL_BUCKETS,
    MIN,
    SEC,
    T0,
    StoreFactory,
    bucket_of,
    create,
    job_id,
    new_job,
)

LIVE = 10 * MIN  #: a TTL that outlives the test
EXPIRED = 0  #: a TTL that is over at once


def job_in_bucket(bucket: int) -> str:
    while True:
        jid = job_id("c")
        if bucket_of(jid) == bucket:
            return jid


def test_nodes_register_heartbeat_and_leave(store: Store) -> None:
    assert store.live_nodes(LIVE, T0) == []
    n1 = store.register_node("n1", "10.0.0.1:8080", "i1", LIVE, T0)
    assert (n1.node_id, n1.address, n1.incarnation) == ("n1", "10.0.0.1:8080", "i1")
    assert n1.started_at == n1.last_seen
    store.register_node("n2", "10.0.0.2:8080", "i2", LIVE, T0)
    nodes = store.live_nodes(LIVE, T0)
    assert [(n.node_id, n.address, n.incarnation) for n in nodes] == [("n1", "10.0.0.1:8080", "i1"), ("n2", "10.0.0.2:8080", "i2")]
    # a heartbeat keeps started_at and moves last_seen (never backwards)
    again = store.register_node("n1", "10.0.0.9:8080", "i1", LIVE, T0 + SEC)
    assert again.started_at == n1.started_at and again.last_seen >= n1.last_seen
    n1_now = store.live_nodes(LIVE, T0 + SEC)[0]
    assert n1_now.address == "10.0.0.9:8080" and n1_now.started_at == n1.started_at and n1_now.last_seen >= n1.last_seen
    # nobody has heartbeaten within a TTL of 0
    assert store.live_nodes(0, T0 + SEC) == []
    store.deregister_node("n2", "i2")
    assert [n.node_id for n in store.live_nodes(LIVE, T0 + SEC)] == ["n1"]


def test_a_live_node_id_is_not_taken_by_another_process(store: Store) -> None:
    """Two processes with one node id (cloned machines, started in the same millisecond even):
    the second's registration changes nothing while the first heartbeats, and answers with the
    first's row."""
    mine = store.register_node("n1", "10.0.0.1:8080", "first", LIVE, T0)
    other = store.register_node("n1", "10.0.0.2:8080", "second", LIVE, T0)
    assert (other.incarnation, other.address, other.last_seen) == ("first", "10.0.0.1:8080", mine.last_seen)
    # nor removed by the other's leave
    store.deregister_node("n1", "second")
    assert [(n.node_id, n.incarnation) for n in store.live_nodes(LIVE, T0 + SEC)] == [("n1", "first")]


def test_a_dead_or_watched_node_id_is_taken(store: Store) -> None:
    store.register_node("n1", "10.0.0.1:8080", "dead", LIVE, T0)
    # nobody heartbeat within the TTL (0 here): a restarted process takes the id
    assert store.register_node("n1", "10.0.0.1:8080", "restarted", EXPIRED, T0 + SEC).incarnation == "restarted"
    # a row still live, but exactly as its caller watched it (nobody moved it): taken too
    watched = store.live_nodes(LIVE, T0 + SEC)[0]
    moved = store.register_node("n1", "10.0.0.3:8080", "third", LIVE, T0 + SEC, take_from=watched.last_seen + 1)
    assert moved.incarnation == "restarted"
    taken = store.register_node("n1", "10.0.0.3:8080", "third", LIVE, T0 + SEC, take_from=watched.last_seen)
    assert taken.incarnation == "third"


def test_rows_of_nodes_not_seen_for_long_are_pruned_and_live_ones_kept(store: Store) -> None:
    """Retention deletes the rows of nodes that are gone (a pod's id is never seen again), a
    batch at a time, never a row heartbeaten within the bound; and the id is free afterwards
    as it was before (the process that held it, back from a freeze, registers it again)."""
    for i in range(3):
        store.register_node(f"pod-{i}", f"10.0.0.{i}:8080", f"i{i}", LIVE, T0)
    # heartbeaten within the bound: kept
    assert store.prune_nodes(LIVE, T0 + SEC, 10) == 0
    assert [n.node_id for n in store.live_nodes(LIVE, T0 + SEC)] == ["pod-0", "pod-1", "pod-2"]
    # nobody heartbeat within 0 ms (PostgreSQL's clock has moved on too): gone, a batch at a time
    later = T0 + 2 * LIVE
    assert store.prune_nodes(EXPIRED, later, 2) == 2
    assert store.prune_nodes(EXPIRED, later, 2) == 1
    assert store.prune_nodes(EXPIRED, later, 2) == 0
    assert store.live_nodes(LIVE, later) == [] and store.live_nodes(10**12, later) == []
    again = store.register_node("pod-1", "10.0.0.1:8080", "i1", LIVE, later)
    assert again.incarnation == "i1"
    assert [n.node_id for n in store.live_nodes(LIVE, later)] == ["pod-1"]


def test_of_two_processes_joining_with_one_id_at_once_one_gets_it(store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(2)]
    barrier = threading.Barrier(2)
    holders: list[str] = []

    def join(i: int) -> None:
        barrier.wait()
        holders.append(stores[i].register_node("n1", f"10.0.0.{i}:8080", f"i{i}", LIVE, T0).incarnation)

    threads = [threading.Thread(target=join, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(holders)) == 1, holders  # both answers name the same process: the one that got it


def test_free_buckets_are_granted_with_a_first_epoch(store: Store) -> None:
    assert store.bucket_leases() == []
    got = store.acquire_buckets("n1", [3, 1, 2], LIVE, T0)
    assert [(b, e) for b, e, _ in got.granted] == [(1, 1), (2, 1), (3, 1)]
    assert all(until == got.store_now + LIVE for _, _, until in got.granted)
    leases = store.bucket_leases()
    assert [(x.bucket_id, x.owner, x.epoch) for x in leases] == [(1, "n1", 1), (2, "n1", 1), (3, "n1", 1)]


def test_a_live_lease_is_not_granted_to_another_node(store: Store) -> None:
    store.acquire_buckets("n1", [1, 2], LIVE, T0)
    got = store.acquire_buckets("n2", [1, 2, 3], LIVE, T0)
    assert [(b, e) for b, e, _ in got.granted] == [(3, 1)]
    assert {x.bucket_id: x.owner for x in store.bucket_leases()} == {1: "n1", 2: "n1", 3: "n2"}


def test_renewal_keeps_the_epoch_and_extends_the_lease(store: Store) -> None:
    first = store.acquire_buckets("n1", [5], LIVE, T0)
    again = store.acquire_buckets("n1", [5], LIVE, T0 + SEC)
    assert [(b, e) for b, e, _ in again.granted] == [(5, 1)]
    assert again.granted[0][2] >= first.granted[0][2]


def test_an_expired_lease_is_taken_over_with_a_new_epoch(store: Store) -> None:
    store.acquire_buckets("n1", [7], EXPIRED, T0)
    got = store.acquire_buckets("n2", [7], LIVE, T0 + SEC)
    assert [(b, e) for b, e, _ in got.granted] == [(7, 2)]
    # the old owner cannot renew what moved on
    assert store.acquire_buckets("n1", [7], LIVE, T0 + SEC).granted == []
    assert [(x.owner, x.epoch) for x in store.bucket_leases()] == [("n2", 2)]


def test_our_own_expired_lease_starts_a_new_term(store: Store) -> None:
    store.acquire_buckets("n1", [7], EXPIRED, T0)
    got = store.acquire_buckets("n1", [7], LIVE, T0 + SEC)
    assert [(b, e) for b, e, _ in got.granted] == [(7, 2)]


def test_release_frees_only_our_own_leases(store: Store) -> None:
    store.acquire_buckets("n1", [1, 2], LIVE, T0)
    store.acquire_buckets("n2", [3], LIVE, T0)
    assert store.release_buckets("n1", [1, 3]) == [1]
    assert store.release_buckets("n1", []) == []
    leases = {x.bucket_id: (x.owner, x.epoch) for x in store.bucket_leases()}
    assert leases == {1: (None, 1), 2: ("n1", 1), 3: ("n2", 1)}
    # a released bucket is free at once, and the next term has a higher epoch
    got = store.acquire_buckets("n2", [1], LIVE, T0)
    assert [(b, e) for b, e, _ in got.granted] == [(1, 2)]


def test_a_single_node_holds_every_bucket(store: Store) -> None:
    got = store.acquire_buckets("solo", ALL_BUCKETS, LIVE, T0)
    assert [b for b, _, _ in got.granted] == ALL_BUCKETS
    assert len(store.acquire_buckets("solo", ALL_BUCKETS, LIVE, T0 + SEC).granted) == 64


# ---------------------------------------------------------------- fenced claims


def _due_job_in(store: Store, bucket: int) -> str:
    (jid,) = create(store, new_job(jid=job_in_bucket(bucket), next_run_at=T0))
    return jid


def test_a_fenced_claim_claims_from_buckets_held_at_that_epoch(store: Store) -> None:
    jid = _due_job_in(store, 4)
    other = _due_job_in(store, 5)
    got = store.acquire_buckets("n1", [4, 5], LIVE, T0)
    epochs = {b: e for b, e, _ in got.granted}
    res = store.claim_due(ALL_BUCKETS, T0, 100, fence=("n1", {4: epochs[4]}))
    assert [e.job_id for e in res.executions] == [jid]  # bucket 5 is not in the fence
    res = store.claim_due(ALL_BUCKETS, T0, 100, fence=("n1", {5: epochs[5] + 1}))
    assert res.executions == [] and res.jobs_claimed == 0  # wrong epoch
    res = store.claim_due(ALL_BUCKETS, T0, 100, fence=("n1", epochs))
    assert [e.job_id for e in res.executions] == [other]


def test_a_node_whose_lease_was_taken_over_claims_nothing_from_that_bucket(store: Store) -> None:
    jid = _due_job_in(store, 9)
    old = store.acquire_buckets("n1", [9], EXPIRED, T0)
    new = store.acquire_buckets("n2", [9], LIVE, T0)
    zombie = ("n1", {9: old.granted[0][1]})
    assert store.claim_due([9], T0, 100, fence=zombie).executions == []
    job = store.get_job(jid)
    assert job is not None and job.next_run_at == T0  # untouched
    res = store.claim_due([9], T0, 100, fence=("n2", {9: new.granted[0][1]}))
    assert [e.job_id for e in res.executions] == [jid]


def test_an_expired_lease_fences_its_own_holder(store: Store) -> None:
    _due_job_in(store, 11)
    got = store.acquire_buckets("n1", [11], EXPIRED, T0)
    assert store.claim_due([11], T0, 100, fence=("n1", {11: got.granted[0][1]})).executions == []


def test_a_released_bucket_fences_its_former_holder(store: Store) -> None:
    _due_job_in(store, 12)
    got = store.acquire_buckets("n1", [12], LIVE, T0)
    store.release_buckets("n1", [12])
    assert store.claim_due([12], T0, 100, fence=("n1", {12: got.granted[0][1]})).executions == []


# ---------------------------------------------------------------- the shared ready queue


def test_two_nodes_starting_the_same_executions_start_each_once(store_factory: StoreFactory) -> None:
    a, b = store_factory(), store_factory()
    create(a, *[new_job(next_run_at=T0) for _ in range(60)])
    claimed = a.claim_due(ALL_BUCKETS, T0, 1000).executions
    assert len(claimed) == 60
    ids = [e.execution_id for e in claimed]
    grants: dict[str, list[str]] = {"a": [], "b": []}
    barrier = threading.Barrier(2)

    def run(name: str, s: Store) -> None:
        barrier.wait()
        for i in range(0, len(ids), 5):  # in small batches, so that the two interleave
            batch = [StartRequest(eid, f"{name}-w") for eid in ids[i : i + 5]]
            grants[name] += [g.execution_id for g in s.start_executions(batch, T0 + SEC)]

    threads = [threading.Thread(target=run, args=(n, s)) for n, s in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not set(grants["a"]) & set(grants["b"])
    assert sorted(grants["a"] + grants["b"]) == sorted(ids)
    assert all((x := a.get_execution(eid)) is not None and x.status is ExecStatus.RUNNING for eid in ids)
