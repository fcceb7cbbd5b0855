"""Contract: a lease is held by the worker its start named, not by whoever knows its epoch.

Another worker (one of the same tenant that learnt the execution id and the epoch) may neither
renew the lease, nor end the execution, nor record its effects: WRONG_WORKER, and nothing
changes. The daemon's own verdicts (worker None: the reaper, a grant it could not hand out)
are fenced by the epoch alone."""

from __future__ import annotations

from cronwheel.core.model import ExecStatus
from cronwheel.core.records import Completion, EffectVerdict, LeaseVerdict, Outcome
from cronwheel.store.base import Store
from tests.contract.conftest import SEC, T0, claim_all, create, one_off, start
from tests.support.store_probe import list_effects


def running(store: Store, holder: str = "w1") -> tuple[str, int]:
    create(store, one_off(T0, lease_sec=10))
    [ex] = claim_all(store, T0).executions
    return ex.execution_id, start(store, ex.execution_id, T0, worker=holder).lease_epoch


def lease_until(store: Store, eid: str) -> int | None:
    ex = store.get_execution(eid)
    assert ex is not None
    return ex.lease_until


def test_another_workers_heartbeat_at_the_current_epoch_is_refused(store: Store) -> None:
    eid, epoch = running(store)
    before = lease_until(store, eid)
    other = store.heartbeat(eid, "w2", epoch, T0 + 5 * SEC)
    assert (other.verdict, other.extend_until) == (LeaseVerdict.WRONG_WORKER, None)
    assert lease_until(store, eid) == before  # not renewed
    # a stale epoch is told as lost whoever sends it; the holder renews
    assert store.heartbeat(eid, "w2", epoch - 1, T0 + 5 * SEC).verdict is LeaseVerdict.LEASE_LOST
    assert store.heartbeat(eid, "w1", epoch, T0 + 5 * SEC).extend_until == T0 + 15 * SEC


def test_heartbeat_many_tells_each_beat_by_its_own_worker(store: Store) -> None:
    a, ea = running(store)
    b, eb = running(store, holder="w2")
    beats = [(a, "w1", ea), (a, "w2", ea), (b, "w1", eb), (b, "w2", eb)]
    assert [r.verdict for r in store.heartbeat_many(beats, T0 + SEC)] == [
        LeaseVerdict.OK, LeaseVerdict.WRONG_WORKER, LeaseVerdict.WRONG_WORKER, LeaseVerdict.OK,
    ]


def test_another_workers_completion_is_refused_and_the_holders_applies(store: Store) -> None:
    eid, epoch = running(store)
    [res] = store.complete_executions([Completion(eid, "w2", epoch, Outcome.SUCCEEDED)], T0 + SEC)
    assert res.verdict is LeaseVerdict.WRONG_WORKER
    ex = store.get_execution(eid)
    assert ex is not None and ex.status is ExecStatus.RUNNING and ex.worker_id == "w1"
    # in one batch too: the stranger's is refused, the holder's applied
    both = store.complete_executions(
        [Completion(eid, "w2", epoch, Outcome.FAILED), Completion(eid, "w1", epoch, Outcome.SUCCEEDED)], T0 + 2 * SEC
    )
    assert [r.verdict for r in both] == [LeaseVerdict.WRONG_WORKER, LeaseVerdict.OK]
    ex = store.get_execution(eid)
    assert ex is not None and ex.status is ExecStatus.SUCCEEDED


def test_the_daemons_own_verdict_is_fenced_by_the_epoch_alone(store: Store) -> None:
    eid, epoch = running(store)
    [res] = store.complete_executions([Completion(eid, None, epoch, Outcome.LOST, error="cannot hand out")], T0 + SEC)
    assert res.verdict is LeaseVerdict.OK


def test_another_worker_records_no_effect(store: Store) -> None:
    eid, epoch = running(store)
    assert store.record_effect(eid, "w2", epoch, "charge", T0) is EffectVerdict.WRONG_WORKER
    assert list_effects(store, eid) == []
    assert store.record_effect(eid, "w1", epoch, "charge", T0) is EffectVerdict.RECORDED
    # a recorded key is a duplicate for anyone: "do not perform it" either way
    assert store.record_effect(eid, "w2", epoch, "charge", T0) is EffectVerdict.DUPLICATE
    assert store.record_effect(eid, "w2", epoch - 1, "mail", T0) is EffectVerdict.FENCED
