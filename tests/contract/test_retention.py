"""History retention: finished executions are pruned; the newest keep_last per job, the DLQ
and anything live are kept."""

from __future__ import annotations

from cronwheel.core.model import ExecStatus, RetryPolicy
from cronwheel.core.records import Completion, Outcome, StartRequest
from cronwheel.store.base import Store
from tests.contract.conftest import ALL_BUCKETS, MIN, SEC, T0, create, new_job


def run_ticks(store: Store, n: int, *, fail_last: bool = False) -> str:
    """An every-minute job with n finished ticks; returns the job id."""
    nj = new_job(next_run_at=T0, schedule="* * * * *", retry=RetryPolicy(max_attempts=1))
    create(store, nj)
    for i in range(n):
        now = T0 + i * MIN
        [ex] = store.claim_due(ALL_BUCKETS, now, 10).executions
        [g] = store.start_executions([StartRequest(ex.execution_id, "w")], now)
        outcome = Outcome.FAILED if fail_last and i == n - 1 else Outcome.SUCCEEDED
        store.complete_executions([Completion(g.execution_id, "w", g.lease_epoch, outcome)], now + SEC)
    return nj.job_id


def prune_all(store: Store, older_than: int, keep_last: int, jobs_per_call: int = 2, limit: int = 3) -> int:
    total, cursor = 0, None
    for _ in range(1000):
        deleted, cursor = store.prune_executions(older_than, keep_last, cursor, jobs_per_call, limit)
        total += deleted
        if cursor is None:
            return total
    raise AssertionError("pruning did not finish")


def test_prune_keeps_the_newest_per_job_and_recent_history(store: Store) -> None:
    a = run_ticks(store, 10)
    b = run_ticks(store, 4)
    # everything finished before T0 + 6 min is old; keep the 3 newest of each job regardless
    deleted = prune_all(store, older_than=T0 + 6 * MIN, keep_last=3)
    left_a = [e.scheduled_at for e in store.list_executions(a, 100)]
    left_b = [e.scheduled_at for e in store.list_executions(b, 100)]
    # a: ticks 0..9; old = finished before 6 min = ticks 0..5; the 3 newest are 7, 8, 9
    assert left_a == [T0 + i * MIN for i in (9, 8, 7, 6)]
    assert left_b == [T0 + i * MIN for i in (3, 2, 1)]
    assert deleted == 6 + 1


def test_prune_never_touches_the_dlq_or_live_executions(store: Store) -> None:
    job = run_ticks(store, 3, fail_last=True)
    live = new_job(next_run_at=T0, schedule="* * * * *")
    create(store, live)
    store.claim_due(ALL_BUCKETS, T0, 10)  # a PENDING tick of `live`
    prune_all(store, older_than=T0 + 10 * MIN, keep_last=1)
    statuses = [e.status for e in store.list_executions(job, 100)]
    assert statuses == [ExecStatus.DEAD]  # the newest (dead) one is kept, and it is the DLQ
    assert [e.status for e in store.list_executions(live.job_id, 100)] == [ExecStatus.PENDING]
    assert len(store.list_dead()) == 1


def test_prune_with_nothing_to_do_finishes(store: Store) -> None:
    assert store.prune_executions(T0, 10, None, 100, 1000) == (0, None)
    run_ticks(store, 2)
    assert prune_all(store, older_than=T0 + HOUR_AGO, keep_last=1) == 0


HOUR_AGO = -60 * MIN
