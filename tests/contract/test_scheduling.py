"""Contract: the due index, the atomic batched claim, misfire and overlap policies, trigger."""

from __future__ import annotations

import pytest

from cronwheel.core import schedule
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_WAITING_RUNS
from cronwheel.core.model import (
    MISFIRE_GRACE_MS,
    MISFIRE_RUN_ALL_CAP,
    ExecOrigin,
    ExecStatus,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)
from cronwheel.core.planning import backlog_look_again
from cronwheel.core.records import Completion, LeaseVerdict, Outcome
from cronwheel.store.base import Store
from tests.contract.conftest import (
    ALL_BUCKETS,
    HOUR,
    MIN,
    SEC,
    T0,
    bucket_of,
    claim_all,
    create,
    job_id,
    new_job,
    one_off,
    start,
)


def job_in_bucket(bucket: int) -> str:
    while True:
        jid = job_id("b")
        if bucket_of(jid) == bucket:
            return jid


# ---------------------------------------------------------------- due index


def test_due_jobs_respects_buckets_time_status_order_and_limit(store: Store) -> None:
    a = [job_in_bucket(3) for _ in range(3)]
    b = job_in_bucket(5)
    create(
        store,
        new_job(jid=a[0], next_run_at=T0 + 30),
        new_job(jid=a[1], next_run_at=T0 + 10),
        new_job(jid=a[2], next_run_at=T0 + 10 * MIN),
        new_job(jid=b, next_run_at=T0 + 20),
    )
    assert store.due_jobs([3], T0 + MIN, 10) == [(a[1], T0 + 10), (a[0], T0 + 30)]
    assert store.due_jobs([3, 5], T0 + MIN, 10) == [(a[1], T0 + 10), (b, T0 + 20), (a[0], T0 + 30)]
    assert store.due_jobs([3, 5], T0 + MIN, 2) == [(a[1], T0 + 10), (b, T0 + 20)]
    assert store.due_jobs([4], T0 + HOUR, 10) == []
    assert store.due_jobs([], T0 + HOUR, 10) == []
    store.set_job_status(a[1], [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    assert store.due_jobs([3], T0 + MIN, 10) == [(a[0], T0 + 30)]


def test_due_ticks_counts_jobs_per_instant_of_owned_active_jobs(store: Store) -> None:
    a = [job_in_bucket(3) for _ in range(4)]
    b = [job_in_bucket(5) for _ in range(2)]
    create(
        store,
        *(new_job(jid=jid, next_run_at=T0 + SEC) for jid in a[:3]),
        new_job(jid=a[3], next_run_at=T0 + 10 * MIN),
        new_job(jid=b[0], next_run_at=T0 + SEC),
        new_job(jid=b[1], next_run_at=T0 - 5 * SEC),  # overdue: due all the same
    )
    assert store.due_ticks([3], T0 + MIN, 10) == [(T0 + SEC, 3)]
    assert store.due_ticks([3, 5], T0 + MIN, 10) == [(T0 - 5 * SEC, 1), (T0 + SEC, 4)]
    assert store.due_ticks([3, 5], T0 + HOUR, 10) == [(T0 - 5 * SEC, 1), (T0 + SEC, 4), (T0 + 10 * MIN, 1)]
    assert store.due_ticks([3, 5], T0 + HOUR, 2) == [(T0 - 5 * SEC, 1), (T0 + SEC, 4)]  # the limit counts instants
    assert store.due_ticks([4], T0 + HOUR, 10) == []
    assert store.due_ticks([], T0 + HOUR, 10) == []
    store.set_job_status(a[0], [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    store.set_job_status(b[1], [JobStatus.ACTIVE], JobStatus.CANCELLED, T0)
    assert store.due_ticks([3, 5], T0 + MIN, 10) == [(T0 + SEC, 3)]


def test_next_due_at(store: Store) -> None:
    x, y = job_in_bucket(1), job_in_bucket(2)
    assert store.next_due_at(ALL_BUCKETS) is None
    create(store, new_job(jid=x, next_run_at=T0 + 500), new_job(jid=y, next_run_at=T0 + 100))
    assert store.next_due_at([1]) == T0 + 500
    assert store.next_due_at([1, 2]) == T0 + 100
    assert store.next_due_at([9]) is None
    assert store.next_due_at([]) is None
    store.set_job_status(y, [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    assert store.next_due_at([1, 2]) == T0 + 500


# ---------------------------------------------------------------- claim


def test_claim_inserts_one_execution_per_tick_and_advances(store: Store) -> None:
    nj = new_job(tenant="acme", priority=Priority.HIGH, retry=RetryPolicy(max_attempts=5))
    create(store, nj)
    res = claim_all(store, T0 + 2 * SEC)
    assert res.jobs_claimed == 1
    [ex] = res.executions
    assert ex.execution_id == f"{nj.job_id}:{T0}"
    assert (ex.job_id, ex.scheduled_at, ex.status) == (nj.job_id, T0, ExecStatus.PENDING)
    assert (ex.tenant, ex.priority, ex.max_attempts) == ("acme", Priority.HIGH, 5)
    assert (ex.attempt, ex.lease_epoch, ex.available_at, ex.created_at) == (0, 0, T0, T0 + 2 * SEC)
    assert res.skipped == [] and res.replaced == []
    assert res.next_runs == [T0 + MIN]
    assert store.get_execution(ex.execution_id) == ex
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == T0 + MIN and job.status is JobStatus.ACTIVE


def test_repeated_claim_claims_nothing_new(store: Store) -> None:
    create(store, new_job(), new_job())
    assert len(claim_all(store, T0).executions) == 2
    again = claim_all(store, T0 + 30 * SEC)
    assert (again.executions, again.skipped, again.jobs_claimed) == ([], [], 0)
    assert store.count_executions() == 2


def test_claim_ahead_of_time_only_takes_due_ticks(store: Store) -> None:
    create(store, new_job(next_run_at=T0 + MIN))
    assert claim_all(store, T0 + MIN - 1).executions == []
    assert len(claim_all(store, T0 + MIN).executions) == 1


def test_a_claimed_one_off_job_has_no_further_tick_and_waits_for_its_execution(store: Store) -> None:
    nj = one_off(T0 + 5 * SEC)
    create(store, nj)
    res = claim_all(store, T0 + 5 * SEC)
    assert [e.execution_id for e in res.executions] == [f"{nj.job_id}:{T0 + 5 * SEC}"]
    assert res.next_runs == []
    job = store.get_job(nj.job_id)
    assert job is not None and job.status is JobStatus.ACTIVE and job.next_run_at is None
    assert claim_all(store, T0 + HOUR).executions == []
    assert store.next_due_at(ALL_BUCKETS) is None


def test_claim_respects_limit_and_buckets(store: Store) -> None:
    jobs = [new_job(next_run_at=T0 + i) for i in range(30)]
    create(store, *jobs)
    first = store.claim_due(ALL_BUCKETS, T0 + SEC, 10)
    assert first.jobs_claimed == 10 and len(first.executions) == 10
    # the earliest due jobs go first
    assert sorted(e.scheduled_at for e in first.executions) == [T0 + i for i in range(10)]
    some = {bucket_of(j.job_id) for j in jobs[10:15]}
    second = store.claim_due(sorted(some), T0 + SEC, 100)
    assert {bucket_of(e.job_id) for e in second.executions} <= some
    rest = store.claim_due(ALL_BUCKETS, T0 + SEC, 1000)
    assert len(first.executions) + len(second.executions) + len(rest.executions) == 30
    assert store.claim_due(ALL_BUCKETS, T0 + SEC, 0).jobs_claimed == 0
    assert store.claim_due([], T0 + SEC, 10).jobs_claimed == 0


def test_claim_skips_paused_and_cancelled_jobs(store: Store) -> None:
    p, c, ok = new_job(), new_job(), new_job()
    create(store, p, c, ok)
    store.set_job_status(p.job_id, [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    store.cancel_job(c.job_id, T0)
    assert [e.job_id for e in claim_all(store, T0).executions] == [ok.job_id]


def test_ticks_late_within_the_grace_all_run(store: Store) -> None:
    nj = new_job(schedule="* * * * * *", misfire=MisfirePolicy.SKIP, misfire_grace_sec=60)  # every second
    create(store, nj)
    job = store.get_job(nj.job_id)
    assert job is not None and job.spec.misfire_grace_sec == 60
    res = claim_all(store, T0 + 30 * SEC)
    assert [e.scheduled_at for e in res.executions] == [T0 + i * SEC for i in range(31)]
    assert {e.origin for e in res.executions} == {ExecOrigin.SCHEDULE}
    assert res.skipped == []
    assert res.next_runs == [T0 + 31 * SEC]


def test_run_all_marks_each_late_tick_as_catch_up(store: Store) -> None:
    # every second, 3 s without a scheduler, run_all with no grace: each missed tick runs late
    nj = new_job(schedule="* * * * * *", misfire=MisfirePolicy.RUN_ALL, misfire_grace_sec=0)
    create(store, nj)
    res = claim_all(store, T0 + 3 * SEC + 300)
    assert [e.scheduled_at for e in res.executions] == [T0 + i * SEC for i in range(4)]
    assert {e.origin for e in res.executions} == {ExecOrigin.CATCH_UP}  # all past the grace of 0
    assert {e.reason for e in res.executions} == {"catch-up: a tick run late, missed while no scheduler could claim it"}
    assert res.skipped == []


def test_the_default_grace_fits_the_schedule_and_marks_the_catch_up_run(store: Store) -> None:
    # every second, 8 s without a scheduler, the default run_once and grace: one run, marked
    # catch-up, standing for the 8 missed ticks (the fixed 60 s grace ran all nine)
    nj = new_job(schedule="* * * * * *")
    create(store, nj)
    now = T0 + 8 * SEC + 300
    res = claim_all(store, now)
    [run] = res.executions
    assert run.scheduled_at == T0 + 8 * SEC and run.origin is ExecOrigin.CATCH_UP
    assert run.reason == "catch-up: one run for 8 missed ticks before it"
    [skip] = res.skipped
    assert skip.scheduled_at == T0 and skip.reason is not None and "8 ticks skipped" in skip.reason
    stored = store.get_execution(run.execution_id)
    assert stored is not None and stored.origin is ExecOrigin.CATCH_UP
    # the next tick is an ordinary one
    [nxt] = claim_all(store, T0 + 9 * SEC).executions
    assert nxt.origin is ExecOrigin.SCHEDULE and nxt.reason is None


def _missed_setup(store: Store, policy: MisfirePolicy) -> tuple[str, int]:
    nj = new_job(misfire=policy)  # every minute, due T0; claimed 10 min 30 s late
    create(store, nj)
    return nj.job_id, T0 + 10 * MIN + 30 * SEC


def test_misfire_run_once_runs_the_recent_tick_and_records_one_skip(store: Store) -> None:
    jid, now = _missed_setup(store, MisfirePolicy.RUN_ONCE)
    res = claim_all(store, now)
    assert [e.scheduled_at for e in res.executions] == [T0 + 10 * MIN]
    [skip] = res.skipped
    assert skip.execution_id == f"{jid}:{T0}" and skip.status is ExecStatus.SKIPPED
    assert skip.reason == (
        f"misfire: 10 ticks skipped from {format_instant(T0)} "
        f"to {format_instant(T0 + 9 * MIN)}"
    )
    stored = store.get_execution(skip.execution_id)
    assert stored is not None and stored.status is ExecStatus.SKIPPED and stored.reason == skip.reason
    assert store.count_executions() == 2  # one row for all ten skipped ticks
    job = store.get_job(jid)
    assert job is not None and job.next_run_at == T0 + 11 * MIN


def test_misfire_run_once_without_a_recent_tick_runs_the_latest_missed(store: Store) -> None:
    nj = new_job(schedule="0 * * * *", misfire=MisfirePolicy.RUN_ONCE)  # hourly
    create(store, nj)
    res = claim_all(store, T0 + 3 * HOUR + 30 * MIN)
    assert [e.scheduled_at for e in res.executions] == [T0 + 3 * HOUR]
    [skip] = res.skipped
    assert skip.scheduled_at == T0 and skip.reason is not None and "3 ticks skipped" in skip.reason


def test_misfire_skip_runs_nothing_missed(store: Store) -> None:
    nj = new_job(schedule="0 * * * *", misfire=MisfirePolicy.SKIP)
    create(store, nj)
    res = claim_all(store, T0 + 3 * HOUR + 30 * MIN)
    assert res.executions == []
    [skip] = res.skipped
    assert skip.scheduled_at == T0 and skip.reason is not None and "4 ticks skipped" in skip.reason
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == T0 + 4 * HOUR


def test_misfire_run_all_runs_every_missed_tick_up_to_the_cap(store: Store) -> None:
    _, now = _missed_setup(store, MisfirePolicy.RUN_ALL)
    res = claim_all(store, now)
    assert [e.scheduled_at for e in res.executions] == [T0 + i * MIN for i in range(11)]
    assert res.skipped == []
    nj = new_job(misfire=MisfirePolicy.RUN_ALL)
    create(store, nj)
    late = T0 + (MISFIRE_RUN_ALL_CAP + 50) * MIN
    res = claim_all(store, late)
    mine = [e.scheduled_at for e in res.executions if e.job_id == nj.job_id]
    assert mine == [T0 + i * MIN for i in range(MISFIRE_RUN_ALL_CAP)]
    [skip] = [e for e in res.skipped if e.job_id == nj.job_id]
    assert skip.scheduled_at == T0 + MISFIRE_RUN_ALL_CAP * MIN


def test_misfire_after_a_long_outage_is_bounded(store: Store) -> None:
    nj = new_job(schedule="* * * * * *", misfire=MisfirePolicy.RUN_ONCE, misfire_grace_sec=60)  # every second
    create(store, nj)
    now = T0 + 30 * 24 * HOUR  # a month down
    res = claim_all(store, now)
    assert [e.scheduled_at for e in res.executions] == [now - MISFIRE_GRACE_MS + i * SEC for i in range(61)]
    [skip] = res.skipped
    assert skip.scheduled_at == T0
    assert skip.reason is not None and "at least" in skip.reason
    assert format_instant(now - MISFIRE_GRACE_MS - SEC) in skip.reason


def test_misfire_of_a_one_off(store: Store) -> None:
    skip, run = one_off(T0, misfire=MisfirePolicy.SKIP), one_off(T0, misfire=MisfirePolicy.RUN_ONCE)
    create(store, skip, run)
    res = claim_all(store, T0 + HOUR)
    assert [e.job_id for e in res.executions] == [run.job_id]
    assert [e.job_id for e in res.skipped] == [skip.job_id]
    # the skipped one never runs: it has nothing to wait for; the other waits for its run
    statuses = {jid: store.get_job(jid).status for jid in (skip.job_id, run.job_id)}  # type: ignore[union-attr]
    assert statuses == {skip.job_id: JobStatus.FAILED, run.job_id: JobStatus.ACTIVE}


def test_jitter_delays_available_at_deterministically(store: Store) -> None:
    nj = new_job(jitter_sec=30)
    create(store, nj)
    [ex] = claim_all(store, T0).executions
    offset = schedule.jitter_offset_ms(nj.job_id, T0, 30)
    assert ex.scheduled_at == T0 and ex.available_at == T0 + offset
    assert 0 <= offset < 30 * SEC
    if offset:
        assert store.ready_executions(T0 + offset - 1, 10) == []
    assert [e.execution_id for e in store.ready_executions(T0 + offset, 10)] == [ex.execution_id]


# ---------------------------------------------------------------- overlap


def test_overlap_allow_runs_both(store: Store) -> None:
    nj = new_job(overlap=OverlapPolicy.ALLOW)
    create(store, nj)
    claim_all(store, T0)
    start(store, f"{nj.job_id}:{T0}", T0)
    res = claim_all(store, T0 + MIN)
    assert [e.scheduled_at for e in res.executions] == [T0 + MIN]


def test_overlap_forbid_skips_while_a_run_is_live(store: Store) -> None:
    nj = new_job(overlap=OverlapPolicy.FORBID)
    create(store, nj)
    [first] = claim_all(store, T0).executions
    g = start(store, first.execution_id, T0)
    res = claim_all(store, T0 + MIN)
    assert res.executions == [] and res.jobs_claimed == 1
    [skip] = res.skipped
    assert skip.scheduled_at == T0 + MIN and skip.status is ExecStatus.SKIPPED
    assert skip.reason == f"overlap: {first.execution_id} still running"
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == T0 + 2 * MIN
    # once the run is over, the next tick runs again
    store.complete_executions([Completion(g.execution_id, "w1", g.lease_epoch, Outcome.SUCCEEDED)], T0 + MIN)
    assert [e.scheduled_at for e in claim_all(store, T0 + 2 * MIN).executions] == [T0 + 2 * MIN]


def test_overlap_forbid_counts_pending_executions_as_live(store: Store) -> None:
    nj = new_job(overlap=OverlapPolicy.FORBID, misfire=MisfirePolicy.RUN_ALL)
    create(store, nj)
    res = claim_all(store, T0 + 2 * MIN)  # three late ticks at once: the first runs
    assert [e.scheduled_at for e in res.executions] == [T0]
    assert [e.scheduled_at for e in res.skipped] == [T0 + MIN, T0 + 2 * MIN]
    assert [e.execution_id for e in store.ready_executions(T0 + HOUR, 10)] == [f"{nj.job_id}:{T0}"]


def test_overlap_replace_cancels_the_live_run(store: Store) -> None:
    nj = new_job(overlap=OverlapPolicy.REPLACE)
    create(store, nj)
    [first] = claim_all(store, T0).executions
    g = start(store, first.execution_id, T0)
    res = claim_all(store, T0 + MIN)
    new_id = f"{nj.job_id}:{T0 + MIN}"
    assert [e.execution_id for e in res.executions] == [new_id]
    assert res.replaced == [first.execution_id]
    old = store.get_execution(first.execution_id)
    assert old is not None and old.status is ExecStatus.CANCELLED and old.reason == f"replaced by {new_id}"
    assert store.heartbeat(g.execution_id, "w1", g.lease_epoch, T0 + MIN).verdict is LeaseVerdict.CANCELLED
    # a pending (not yet started) run is replaced too, but is not reported as running
    res = claim_all(store, T0 + 2 * MIN)
    assert res.replaced == []
    pending = store.get_execution(new_id)
    assert pending is not None and pending.status is ExecStatus.CANCELLED


BACKLOG = f"backlog: {MAX_WAITING_RUNS} runs of this job are overdue and waiting to start"


def test_an_allow_job_keeps_at_most_max_waiting_runs_overdue(store: Store) -> None:
    """Runs nobody starts (a tenant at maxRunning, no free worker) no longer pile up one per
    tick for ever: past the bound the tick is recorded SKIPPED, and the job runs again as soon
    as one of its waiting runs starts."""
    nj = new_job(overlap=OverlapPolicy.ALLOW)
    create(store, nj)
    for k in range(MAX_WAITING_RUNS):
        assert [e.scheduled_at for e in claim_all(store, T0 + k * MIN).executions] == [T0 + k * MIN]
    full = T0 + MAX_WAITING_RUNS * MIN
    res = claim_all(store, full)
    assert res.executions == [] and res.jobs_claimed == 1
    [skip] = res.skipped
    assert (skip.scheduled_at, skip.status, skip.reason.startswith(BACKLOG)) == (full, ExecStatus.SKIPPED, True)
    look = full + -(-(backlog_look_again(nj.job_id, full) - full) // MIN) * MIN  # its first tick from then
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == look
    # a run asked for by hand is neither held back nor counted
    manual = store.trigger_job(nj.job_id, full + 1)
    assert manual is not None and manual.status is ExecStatus.PENDING
    assert len(store.ready_executions(look, 1000)) == MAX_WAITING_RUNS + 1
    # one waiting run starts: the job's next tick runs again
    start(store, f"{nj.job_id}:{T0}", full + 2)
    assert [e.scheduled_at for e in claim_all(store, look).executions] == [look]
    assert claim_all(store, look + MIN).skipped[0].reason.startswith(BACKLOG)


def test_a_job_at_its_backlog_is_held_for_a_minute_by_one_record(store: Store) -> None:
    """An every-second job at the bound is not claimed again every second: its next run moves
    about a minute on, and one SKIPPED record stands for the ticks in between."""
    nj = new_job(overlap=OverlapPolicy.ALLOW, schedule="* * * * * *")
    create(store, nj)
    for k in range(MAX_WAITING_RUNS):
        claim_all(store, T0 + k * SEC)
    full = T0 + MAX_WAITING_RUNS * SEC
    res = claim_all(store, full)
    look = full + -(-(backlog_look_again(nj.job_id, full) - full) // SEC) * SEC  # the first tick from then
    assert res.executions == [] and res.jobs_claimed == 1 and res.next_runs == [look]
    [skip] = res.skipped
    assert skip.scheduled_at == full and skip.reason == (
        f"{BACKLOG}; {(look - full) // SEC} ticks skipped from {format_instant(full)} to {format_instant(look - SEC)}")
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == look
    assert claim_all(store, look - 1).jobs_claimed == 0


def test_runs_claimed_ahead_of_their_tick_are_not_a_backlog(store: Store) -> None:
    """Only overdue runs count: a claim ahead of time holds runs that are not late at all."""
    nj = new_job(overlap=OverlapPolicy.ALLOW)
    create(store, nj)
    first = store.claim_due(ALL_BUCKETS, T0, 1000, ahead_ms=90 * MIN)
    second = store.claim_due(ALL_BUCKETS, T0, 1000, ahead_ms=180 * MIN)
    assert len(first.executions) + len(second.executions) == 181 and first.skipped == second.skipped == []
    # once they are all overdue, ticks are held back until they start
    late = T0 + 181 * MIN
    assert [e.reason.startswith(BACKLOG) for e in claim_all(store, late).skipped] == [True]


def test_the_backlog_bound_is_per_job(store: Store) -> None:
    held = new_job(overlap=OverlapPolicy.ALLOW)
    other = new_job(overlap=OverlapPolicy.ALLOW, next_run_at=T0 + MAX_WAITING_RUNS * MIN)
    create(store, held)
    for k in range(MAX_WAITING_RUNS):
        claim_all(store, T0 + k * MIN)
    create(store, other, now=T0 + MAX_WAITING_RUNS * MIN - 1)
    res = claim_all(store, T0 + MAX_WAITING_RUNS * MIN)
    assert [e.job_id for e in res.executions] == [other.job_id]
    assert [(e.job_id, e.reason.startswith(BACKLOG)) for e in res.skipped] == [(held.job_id, True)]


def test_overlap_is_per_job(store: Store) -> None:
    a, b = new_job(overlap=OverlapPolicy.FORBID), new_job(overlap=OverlapPolicy.FORBID)
    create(store, a, b)
    claim_all(store, T0)
    start(store, f"{a.job_id}:{T0}", T0)  # a is still running at T0 + MIN
    gb = start(store, f"{b.job_id}:{T0}", T0)
    store.complete_executions([Completion(gb.execution_id, "w1", gb.lease_epoch, Outcome.SUCCEEDED)], T0 + 1)
    res = claim_all(store, T0 + MIN)
    assert [e.job_id for e in res.executions] == [b.job_id]
    assert [e.job_id for e in res.skipped] == [a.job_id]


# ---------------------------------------------------------------- trigger


def test_trigger_creates_a_pending_execution_now(store: Store) -> None:
    nj = new_job(next_run_at=T0 + HOUR, tenant="acme")
    create(store, nj)
    ex = store.trigger_job(nj.job_id, T0 + 123)
    assert ex is not None
    assert (ex.execution_id, ex.status, ex.available_at) == (f"{nj.job_id}:{T0 + 123}", ExecStatus.PENDING, T0 + 123)
    assert ex.tenant == "acme" and ex.origin is ExecOrigin.MANUAL  # not scheduled lateness
    assert store.get_execution(ex.execution_id) == ex
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == T0 + HOUR  # untouched
    assert [e.execution_id for e in store.ready_executions(T0 + 123, 10)] == [ex.execution_id]
    assert start(store, ex.execution_id, T0 + 500).origin is ExecOrigin.MANUAL


def test_trigger_takes_the_next_free_millisecond(store: Store) -> None:
    nj = new_job()
    create(store, nj)
    claim_all(store, T0)  # tick T0 exists
    ids = [store.trigger_job(nj.job_id, T0) for _ in range(3)]
    assert [e.scheduled_at for e in ids if e is not None] == [T0 + 1, T0 + 2, T0 + 3]


def test_trigger_absent_cancelled_or_other_tenant(store: Store) -> None:
    nj = new_job(tenant="a")
    create(store, nj)
    assert store.trigger_job("nope", T0) is None
    assert store.trigger_job(nj.job_id, T0, tenant="b") is None
    paused = store.set_job_status(nj.job_id, [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    assert paused is not None
    assert store.trigger_job(nj.job_id, T0, tenant="a") is not None  # paused jobs can be run by hand
    store.cancel_job(nj.job_id, T0)
    assert store.trigger_job(nj.job_id, T0 + 5) is None


def test_scheduled_tick_after_a_trigger_on_the_same_millisecond_is_not_duplicated(store: Store) -> None:
    nj = new_job()
    create(store, nj)
    triggered = store.trigger_job(nj.job_id, T0)
    assert triggered is not None and triggered.scheduled_at == T0
    res = claim_all(store, T0)
    assert res.executions == [] and res.jobs_claimed == 1  # the tick exists already: one per tick
    assert store.count_executions() == 1
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == T0 + MIN


@pytest.mark.parametrize("n_jobs", [1, 250])
def test_every_due_tick_is_claimed_exactly_once_over_time(store: Store, n_jobs: int) -> None:
    jobs = [new_job(schedule="*/20 * * * * *") for _ in range(n_jobs)]  # every 20 s
    create(store, *jobs)
    seen: list[str] = []
    for now in [*range(T0, T0 + 3 * MIN, 7 * SEC), T0 + 3 * MIN]:
        while True:
            res = store.claim_due(ALL_BUCKETS, now, 100)
            seen += [e.execution_id for e in res.executions + res.skipped]
            if res.jobs_claimed < 100:
                break
    expected = {f"{j.job_id}:{T0 + k * 20 * SEC}" for j in jobs for k in range(10)}
    assert len(seen) == len(set(seen))
    assert set(seen) == expected


def test_claim_ahead_takes_allow_jobs_early_but_guarded_jobs_only_when_due(store: Store) -> None:
    allow = new_job(next_run_at=T0 + 2 * SEC, schedule="* * * * * *")
    forbid = new_job(next_run_at=T0 + 2 * SEC, schedule="* * * * * *", overlap=OverlapPolicy.FORBID)
    replace = new_job(next_run_at=T0 + 2 * SEC, schedule="* * * * * *", overlap=OverlapPolicy.REPLACE)
    create(store, allow, forbid, replace)
    early = store.claim_due(ALL_BUCKETS, T0, 100, ahead_ms=3 * SEC)
    # the allow job: its ticks within now + ahead are claimed, none of them dispatchable yet
    assert {e.job_id for e in early.executions} == {allow.job_id}
    assert [e.scheduled_at for e in early.executions] == [T0 + 2 * SEC, T0 + 3 * SEC]
    assert store.ready_executions(T0, 100) == []
    # the guarded jobs are untouched until their tick
    for nj in (forbid, replace):
        job = store.get_job(nj.job_id)
        assert job is not None and job.next_run_at == T0 + 2 * SEC
    due = store.claim_due(ALL_BUCKETS, T0 + 2 * SEC, 100, ahead_ms=3 * SEC)
    by_job = {e.job_id: e.scheduled_at for e in due.executions}
    assert by_job[forbid.job_id] == T0 + 2 * SEC and by_job[replace.job_id] == T0 + 2 * SEC



def test_guarded_jobs_held_back_for_their_tick_do_not_hide_the_jobs_behind_them(store: Store) -> None:
    # a full batch of overlap-guarded jobs claimed ahead of their tick would otherwise take the
    # whole limit and claim nothing: the allow jobs due after them lose their lead (and a claim
    # loop that stops at a batch of none leaves them until the guarded jobs' tick)
    guarded = [new_job(next_run_at=T0 + SEC, overlap=OverlapPolicy.FORBID) for _ in range(7)]
    allow = [new_job(next_run_at=T0 + 2 * SEC) for _ in range(3)]
    create(store, *guarded, *allow)
    early = store.claim_due(ALL_BUCKETS, T0, 5, ahead_ms=3 * SEC)
    assert sorted(e.job_id for e in early.executions) == sorted(j.job_id for j in allow)
    assert early.jobs_claimed == 3
    assert store.claim_due(ALL_BUCKETS, T0, 5, ahead_ms=3 * SEC).jobs_claimed == 0
    # at their tick the guarded ones are claimed, in full batches
    at_tick = store.claim_due(ALL_BUCKETS, T0 + SEC, 5, ahead_ms=3 * SEC)
    rest = store.claim_due(ALL_BUCKETS, T0 + SEC, 5, ahead_ms=3 * SEC)
    assert at_tick.jobs_claimed == 5 and rest.jobs_claimed == 2
    assert {e.job_id for e in at_tick.executions + rest.executions} == {j.job_id for j in guarded}


def test_a_claim_can_be_restricted_to_some_jobs(store: Store) -> None:
    # the engine isolates a job whose claim fails by claiming the others by id
    ids = create(store, *(new_job(next_run_at=T0) for _ in range(4)), now=T0 - MIN)
    only = store.claim_due(ALL_BUCKETS, T0, 1000, only=ids[1:3])
    assert sorted(ex.job_id for ex in only.executions) == sorted(ids[1:3])
    assert store.claim_due(ALL_BUCKETS, T0, 1000, only=["nosuch"]).jobs_claimed == 0
    rest = claim_all(store, T0)
    assert sorted(ex.job_id for ex in rest.executions) == sorted([ids[0], ids[3]])
