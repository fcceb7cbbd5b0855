"""Contract: a job's state follows its executions once it has no further tick (a one-off):
ACTIVE while one is live, then SUCCEEDED or FAILED by the last to end; a DLQ replay or a
trigger reopens it; a purge leaves it as it is."""

from __future__ import annotations

from cronwheel.core.model import JobStatus, MisfirePolicy, RetryPolicy
from cronwheel.core.records import Completion, Outcome
from cronwheel.store.base import Store
from tests.contract.conftest import HOUR, SEC, T0, claim_all, create, new_job, one_off, start


def status(store: Store, job_id: str) -> JobStatus:
    job = store.get_job(job_id)
    assert job is not None
    return job.status


def run(store: Store, eid: str, outcome: Outcome, at: int) -> None:
    grant = start(store, eid, at)
    [res] = store.complete_executions([Completion(eid, "w1", grant.lease_epoch, outcome)], at + 1)
    assert res.status is not None


def test_a_one_off_waits_for_its_run_then_succeeds(store: Store) -> None:
    nj = one_off(T0)
    [jid] = create(store, nj)
    assert status(store, jid) is JobStatus.ACTIVE
    [ex] = claim_all(store, T0).executions
    assert status(store, jid) is JobStatus.ACTIVE  # claimed is not done
    start(store, ex.execution_id, T0)
    assert status(store, jid) is JobStatus.ACTIVE
    grant_epoch = store.get_execution(ex.execution_id).lease_epoch  # type: ignore[union-attr]
    store.complete_executions([Completion(ex.execution_id, "w1", grant_epoch, Outcome.SUCCEEDED)], T0 + SEC)
    assert status(store, jid) is JobStatus.SUCCEEDED


def test_a_failed_attempt_with_retries_left_is_not_final(store: Store) -> None:
    [jid] = create(store, one_off(T0, retry=RetryPolicy(max_attempts=2)))
    [ex] = claim_all(store, T0).executions
    run(store, ex.execution_id, Outcome.FAILED, T0)
    assert status(store, jid) is JobStatus.ACTIVE  # RETRY_WAIT: still live
    run(store, ex.execution_id, Outcome.FAILED, T0 + HOUR)
    assert status(store, jid) is JobStatus.FAILED  # DEAD


def test_dlq_replay_reopens_a_failed_job_and_a_purge_leaves_it_failed(store: Store) -> None:
    [jid] = create(store, one_off(T0, retry=RetryPolicy(max_attempts=1)))
    [ex] = claim_all(store, T0).executions
    run(store, ex.execution_id, Outcome.FAILED, T0)
    assert status(store, jid) is JobStatus.FAILED
    assert store.replay_dead(ex.execution_id, T0 + HOUR) is not None
    assert status(store, jid) is JobStatus.ACTIVE
    run(store, ex.execution_id, Outcome.FAILED, T0 + HOUR)
    assert status(store, jid) is JobStatus.FAILED
    assert store.purge_dead(ex.execution_id)
    assert status(store, jid) is JobStatus.FAILED and store.list_executions(jid) == []
    # replayed again after a success elsewhere: the last one to end decides
    [jid2] = create(store, one_off(T0, retry=RetryPolicy(max_attempts=1)))
    [ex2] = claim_all(store, T0 + 2 * HOUR).executions
    run(store, ex2.execution_id, Outcome.FAILED, T0 + 2 * HOUR)
    store.replay_dead(ex2.execution_id, T0 + 3 * HOUR)
    run(store, ex2.execution_id, Outcome.SUCCEEDED, T0 + 3 * HOUR)
    assert status(store, jid2) is JobStatus.SUCCEEDED


def test_a_trigger_reopens_a_settled_job_and_two_live_runs_settle_it_once_both_end(store: Store) -> None:
    [jid] = create(store, one_off(T0))
    [ex] = claim_all(store, T0).executions
    run(store, ex.execution_id, Outcome.SUCCEEDED, T0)
    assert status(store, jid) is JobStatus.SUCCEEDED
    again = store.trigger_job(jid, T0 + HOUR)
    assert again is not None and status(store, jid) is JobStatus.ACTIVE
    first = start(store, again.execution_id, T0 + HOUR)
    other = store.trigger_job(jid, T0 + HOUR + 1)
    assert other is not None
    store.complete_executions([Completion(again.execution_id, "w1", first.lease_epoch, Outcome.FAILED)], T0 + HOUR + 2)
    # the first trigger's run failed an attempt (RETRY_WAIT) and the second is pending: waiting
    assert status(store, jid) is JobStatus.ACTIVE


def test_a_skipped_last_tick_fails_the_job_at_once(store: Store) -> None:
    [jid] = create(store, one_off(T0, misfire=MisfirePolicy.SKIP))
    res = claim_all(store, T0 + HOUR)
    assert res.executions == [] and len(res.skipped) == 1
    assert status(store, jid) is JobStatus.FAILED


def test_recurring_jobs_and_paused_ones_are_not_settled_by_their_runs(store: Store) -> None:
    [jid] = create(store, new_job(next_run_at=T0))
    [ex] = claim_all(store, T0).executions
    run(store, ex.execution_id, Outcome.SUCCEEDED, T0)
    assert status(store, jid) is JobStatus.ACTIVE
    # a one-off paused while its run goes on is settled by that run all the same
    [once] = create(store, one_off(T0))
    [ex1] = claim_all(store, T0).executions
    assert store.set_job_status(once, [JobStatus.ACTIVE], JobStatus.PAUSED, T0) is not None
    run(store, ex1.execution_id, Outcome.SUCCEEDED, T0)
    assert status(store, once) is JobStatus.SUCCEEDED


def test_an_expired_lease_that_exhausts_the_attempts_fails_the_job(store: Store) -> None:
    [jid] = create(store, one_off(T0, retry=RetryPolicy(max_attempts=1), lease_sec=1))
    [ex] = claim_all(store, T0).executions
    start(store, ex.execution_id, T0)
    assert [r.execution_id for r in store.expire_leases(T0 + HOUR, 10)] == [ex.execution_id]
    assert status(store, jid) is JobStatus.FAILED


def test_the_last_run_is_the_latest_that_started_never_a_tick_claimed_ahead(store: Store) -> None:
    nj = new_job(schedule="*/20 * * * * *", next_run_at=T0, tenant="acme")
    [jid] = create(store, nj)
    [idle] = create(store, new_job(next_run_at=T0 + HOUR))
    first, second, third = store.claim_due(list(range(64)), T0, 100, ahead_ms=50 * SEC).executions
    assert store.last_runs([jid, idle]) == {}  # claimed, nothing started
    run(store, first.execution_id, Outcome.SUCCEEDED, T0)
    last = store.last_runs([jid, idle])
    assert list(last) == [jid] and last[jid].execution_id == first.execution_id  # not the PENDING ones
    start(store, second.execution_id, T0 + 20 * SEC)
    assert store.last_runs([jid])[jid].execution_id == second.execution_id  # running counts
    assert store.last_runs([jid], tenant="acme")[jid].execution_id == second.execution_id
    assert store.last_runs([jid], tenant="other") == {}
    assert third.execution_id not in {e.execution_id for e in store.last_runs([jid]).values()}


def test_a_triggered_only_job_waits_for_the_next_trigger_whatever_its_runs_do(store: Store) -> None:
    [jid] = create(store, new_job(schedule="@triggered", next_run_at=None))
    ex = store.trigger_job(jid, T0)
    assert ex is not None
    run(store, ex.execution_id, Outcome.SUCCEEDED, T0)
    assert status(store, jid) is JobStatus.ACTIVE  # never SUCCEEDED: a chain may trigger it again
