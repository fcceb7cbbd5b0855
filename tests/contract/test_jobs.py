"""Contract: job submission (idempotency, group commit), reads, pause/resume, cancel."""

from __future__ import annotations

import pytest

from cronwheel.core.model import ExecStatus, JobStatus, Priority, RetryPolicy, RunAs
from cronwheel.core.records import Completion, CreateOutcome, LeaseVerdict, Outcome, StartRequest
from cronwheel.store.base import Store, StoreError
from tests.contract.conftest import (
    HOUR,
    MIN,
    T0,
    bucket_of,
    claim_all,
    create,
    job_id,
    new_job,
    one_off,
    start,
)
from tests.support.store_probe import running_count

# ---------------------------------------------------------------- create & read


def test_create_and_get_round_trips_every_field(store: Store) -> None:
    nj = new_job(
        schedule="*/5 * * * *",
        timezone="Europe/Paris",
        name="nightly",
        tenant="acme",
        payload={"a": [1, 2, {"b": None}], "ü": "ö"},
        target={"http": {"url": "https://example.com/x", "method": "POST", "headers": {"k": "v"}}},
        retry=RetryPolicy(max_attempts=7, initial_backoff_sec=2.5, max_backoff_sec=60, multiplier=3, jitter=0.1),
        timeout_sec=12.5,
        lease_sec=30,
        priority=Priority.HIGH,
        jitter_sec=9,
        managed_by="apply",
        next_run_at=T0 + 5 * MIN,
    )
    [result] = store.create_jobs([nj], T0)
    assert (result.outcome, result.job_id, result.next_run_at) == (CreateOutcome.CREATED, nj.job_id, T0 + 5 * MIN)
    job = store.get_job(nj.job_id)
    assert job is not None
    assert job.id == nj.job_id
    assert job.bucket_id == bucket_of(nj.job_id)
    assert job.status is JobStatus.ACTIVE
    assert job.next_run_at == T0 + 5 * MIN
    assert job.created_at == job.updated_at == T0
    assert job.spec == nj.spec
    assert job.tenant == "acme"


def test_the_process_setup_round_trips_and_is_granted(store: Store) -> None:
    """env, runAs, shell and stdin (a crontab's settings, user field and %) are kept as given
    and handed to the worker with every start; a job without them is granted none."""
    env = {"PATH": "/usr/local/bin:/usr/bin", "GREETING": "  hé \"quoted\" ", "EMPTY": ""}
    nj = one_off(T0, target={"command": "cat"}, env=env, run_as=RunAs("www-data", "adm"), shell="/bin/bash",
                 stdin="Dear Ann,\n\n50% done\n")  # fmt: skip
    plain = one_off(T0, target={"command": "true"})
    create(store, nj, plain)
    job = store.get_job(nj.job_id)
    assert job is not None and job.spec == nj.spec
    assert (job.spec.env, job.spec.run_as, job.spec.shell, job.spec.stdin) == (
        env, RunAs("www-data", "adm"), "/bin/bash", "Dear Ann,\n\n50% done\n")
    bare = store.get_job(plain.job_id)
    assert bare is not None and (bare.spec.env, bare.spec.run_as, bare.spec.shell, bare.spec.stdin) == ({}, None, None, None)
    claim_all(store, T0)
    grants = {g.job_id: g for g in store.start_executions(
        [StartRequest(ex.execution_id, "w1") for ex in store.ready_executions(T0, 10)], T0)}  # fmt: skip
    assert grants[nj.job_id].process == {
        "env": env, "runAs": {"user": "www-data", "group": "adm"}, "shell": "/bin/bash", "stdin": "Dear Ann,\n\n50% done\n",
    }
    assert grants[plain.job_id].process is None
    only_user = one_off(T0, target={"command": "id"}, run_as=RunAs("nobody"))
    create(store, only_user)
    got = store.get_job(only_user.job_id)
    assert got is not None and got.spec.run_as == RunAs("nobody", None) and got.spec.env == {}


def test_one_off_job_round_trips(store: Store) -> None:
    nj = one_off(T0 + HOUR)
    create(store, nj)
    job = store.get_job(nj.job_id)
    assert job is not None and job.spec.schedule is None and job.spec.run_at == T0 + HOUR
    assert job.next_run_at == T0 + HOUR


def test_create_a_batch_returns_results_in_order(store: Store) -> None:
    jobs = [new_job(next_run_at=T0 + i) for i in range(50)]
    results = store.create_jobs(jobs, T0)
    assert [r.job_id for r in results] == [j.job_id for j in jobs]
    assert [r.next_run_at for r in results] == [T0 + i for i in range(50)]
    assert all(r.outcome is CreateOutcome.CREATED for r in results)
    assert store.count_jobs() == 50
    assert store.create_jobs([], T0) == []


def test_get_job_absent_and_other_tenant(store: Store) -> None:
    nj = new_job(tenant="acme")
    create(store, nj)
    assert store.get_job("nope") is None
    assert store.get_job(nj.job_id, tenant="acme") is not None
    assert store.get_job(nj.job_id, tenant="other") is None


def test_find_jobs_by_name(store: Store) -> None:
    a, b, c = new_job(name="backup"), new_job(name="backup", tenant="t2"), new_job(name="other")
    create(store, a, b, c, new_job())
    assert sorted(j.id for j in store.find_jobs_by_name("backup")) == sorted([a.job_id, b.job_id])
    assert [j.id for j in store.find_jobs_by_name("backup", tenant="t2")] == [b.job_id]
    assert store.find_jobs_by_name("missing") == []


def test_list_jobs_paginates_by_id_and_filters(store: Store) -> None:
    jobs = [new_job(jid=f"list{i:03d}", tenant="a" if i % 2 else "b") for i in range(25)]
    create(store, *jobs)
    page1 = store.list_jobs(limit=10)
    page2 = store.list_jobs(limit=10, after_id=page1[-1].id)
    page3 = store.list_jobs(limit=10, after_id=page2[-1].id)
    ids = [j.id for j in page1 + page2 + page3]
    assert ids == sorted(j.job_id for j in jobs)
    assert len(page3) == 5
    assert [j.id for j in store.list_jobs(tenant="a", limit=100)] == [f"list{i:03d}" for i in range(1, 25, 2)]
    assert store.set_job_status("list003", [JobStatus.ACTIVE], JobStatus.PAUSED, T0) is not None
    assert [j.id for j in store.list_jobs(status=JobStatus.PAUSED)] == ["list003"]
    assert [j.id for j in store.list_jobs(tenant="b", status=JobStatus.PAUSED)] == []
    assert store.list_jobs(limit=0) == []


def test_count_jobs(store: Store) -> None:
    create(store, *(new_job(tenant="a") for _ in range(3)), *(new_job(tenant="b") for _ in range(2)))
    [paused] = create(store, new_job(tenant="a"))
    store.set_job_status(paused, [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    assert store.count_jobs() == 6
    assert store.count_jobs(tenant="a") == 4
    assert store.count_jobs(status=JobStatus.PAUSED) == 1
    assert store.count_jobs(tenant="b", status=JobStatus.ACTIVE) == 2
    assert store.count_jobs(tenant="nobody") == 0


# ---------------------------------------------------------------- idempotency


def test_same_key_same_request_replays_the_original(store: Store) -> None:
    first = new_job(key="k1", request_hash="h1", next_run_at=T0 + MIN)
    [r1] = store.create_jobs([first], T0)
    # the retry carries a new job id and another next_run_at: the original wins
    [r2] = store.create_jobs([new_job(key="k1", request_hash="h1", next_run_at=T0 + HOUR)], T0 + 5)
    assert r1.outcome is CreateOutcome.CREATED
    assert (r2.outcome, r2.job_id, r2.next_run_at) == (CreateOutcome.REPLAYED, first.job_id, T0 + MIN)
    assert store.count_jobs() == 1


def test_same_key_different_request_conflicts_and_creates_nothing(store: Store) -> None:
    first = new_job(key="k1", request_hash="h1")
    create(store, first)
    other = new_job(key="k1", request_hash="h2")
    [r] = store.create_jobs([other], T0)
    assert r.outcome is CreateOutcome.CONFLICT
    assert r.job_id == first.job_id  # names the job that holds the key
    assert store.get_job(other.job_id) is None
    assert store.count_jobs() == 1


def test_idempotency_keys_are_scoped_per_tenant(store: Store) -> None:
    a = new_job(key="k", request_hash="h", tenant="a")
    b = new_job(key="k", request_hash="h", tenant="b")
    ra, rb = store.create_jobs([a, b], T0)
    assert ra.outcome is rb.outcome is CreateOutcome.CREATED
    assert (ra.job_id, rb.job_id) == (a.job_id, b.job_id)


def test_same_key_twice_in_one_batch_behaves_sequentially(store: Store) -> None:
    a = new_job(key="k", request_hash="h")
    b = new_job(key="k", request_hash="h")
    c = new_job(key="k", request_hash="other")
    d = new_job()
    ra, rb, rc, rd = store.create_jobs([a, b, c, d], T0)
    assert ra.outcome is CreateOutcome.CREATED
    assert (rb.outcome, rb.job_id) == (CreateOutcome.REPLAYED, a.job_id)
    assert (rc.outcome, rc.job_id) == (CreateOutcome.CONFLICT, a.job_id)
    assert (rd.outcome, rd.job_id) == (CreateOutcome.CREATED, d.job_id)
    assert store.count_jobs() == 2
    assert store.get_job(b.job_id) is None and store.get_job(c.job_id) is None


def test_jobs_without_key_are_never_deduplicated(store: Store) -> None:
    results = store.create_jobs([new_job(request_hash="h"), new_job(request_hash="h")], T0)
    assert [r.outcome for r in results] == [CreateOutcome.CREATED, CreateOutcome.CREATED]


# ---------------------------------------------------------------- pause / resume


def test_pause_and_resume_are_compare_and_set(store: Store) -> None:
    [jid] = create(store, new_job())
    paused = store.set_job_status(jid, [JobStatus.ACTIVE], JobStatus.PAUSED, T0 + 1)
    assert paused is not None and paused.status is JobStatus.PAUSED and paused.updated_at == T0 + 1
    assert paused.next_run_at == T0  # kept while paused
    # wrong expectation: nothing changes
    assert store.set_job_status(jid, [JobStatus.ACTIVE], JobStatus.PAUSED, T0 + 2) is None
    assert store.due_jobs([bucket_of(jid)], T0 + HOUR, 10) == []
    resumed = store.set_job_status(jid, [JobStatus.PAUSED], JobStatus.ACTIVE, T0 + 3, next_run_at=T0 + HOUR)
    assert resumed is not None and resumed.status is JobStatus.ACTIVE and resumed.next_run_at == T0 + HOUR
    job = store.get_job(jid)
    assert job is not None and job.next_run_at == T0 + HOUR and job.updated_at == T0 + 3


def test_pausing_withdraws_the_ticks_claimed_ahead_and_a_resume_runs_them(store: Store) -> None:
    sec = 1_000
    [every20] = create(store, new_job(schedule="*/20 * * * * *", next_run_at=T0))
    [once] = create(store, one_off(T0 + 30 * sec))
    claimed = store.claim_due(list(range(64)), T0, 100, ahead_ms=50 * sec).executions  # T0, T0+20s, T0+40s and the one-off
    assert sorted(e.scheduled_at for e in claimed) == [T0, T0 + 20 * sec, T0 + 30 * sec, T0 + 40 * sec]
    start(store, f"{every20}:{T0}", T0)  # started: goes on
    for jid in (every20, once):
        assert store.set_job_status(jid, [JobStatus.ACTIVE], JobStatus.PAUSED, T0 + 5 * sec) is not None
    # the ticks not due yet are gone, as if never claimed: nothing of a paused job starts
    left = store.list_executions(every20)
    assert [(e.scheduled_at, e.status) for e in left] == [(T0, ExecStatus.RUNNING)]
    assert store.list_executions(once) == []
    assert store.start_executions([StartRequest(f"{every20}:{T0 + 20 * sec}", "w1")], T0 + 20 * sec) == []
    paused = store.get_job(every20)
    assert paused is not None and paused.next_run_at == T0 + 20 * sec  # back to the earliest withdrawn
    paused_once = store.get_job(once)
    assert paused_once is not None and paused_once.next_run_at == T0 + 30 * sec  # the one-off keeps its instant
    assert store.claim_due(list(range(64)), T0 + 6 * sec, 100, ahead_ms=50 * sec).executions == []  # paused: not claimed again
    # resumed before those instants: they are claimed and run after all
    assert store.set_job_status(every20, [JobStatus.PAUSED], JobStatus.ACTIVE, T0 + 6 * sec, next_run_at=T0 + 20 * sec)
    assert store.set_job_status(once, [JobStatus.PAUSED], JobStatus.ACTIVE, T0 + 6 * sec)
    again = store.claim_due(list(range(64)), T0 + 6 * sec, 100, ahead_ms=40 * sec).executions
    assert sorted((e.job_id, e.scheduled_at) for e in again) == sorted(
        [(every20, T0 + 20 * sec), (every20, T0 + 40 * sec), (once, T0 + 30 * sec)]
    )


def test_pausing_leaves_due_and_triggered_executions_alone(store: Store) -> None:
    [jid] = create(store, new_job(schedule="*/20 * * * * *", next_run_at=T0))
    [due] = claim_all(store, T0).executions  # due at T0, not started yet
    manual = store.trigger_job(jid, T0 + 10_000)
    assert manual is not None and manual.scheduled_at == T0 + 10_000
    assert store.set_job_status(jid, [JobStatus.ACTIVE], JobStatus.PAUSED, T0 + 1) is not None
    left = {e.execution_id: e.status for e in store.list_executions(jid)}
    assert left == {due.execution_id: ExecStatus.PENDING, manual.execution_id: ExecStatus.PENDING}


def test_set_job_status_absent_or_other_tenant(store: Store) -> None:
    [jid] = create(store, new_job(tenant="a"))
    assert store.set_job_status("nope", [JobStatus.ACTIVE], JobStatus.PAUSED, T0) is None
    assert store.set_job_status(jid, [JobStatus.ACTIVE], JobStatus.PAUSED, T0, tenant="b") is None
    job = store.get_job(jid)
    assert job is not None and job.status is JobStatus.ACTIVE
    assert store.set_job_status(jid, [JobStatus.PAUSED, JobStatus.ACTIVE], JobStatus.PAUSED, T0, tenant="a")


# ---------------------------------------------------------------- cancel


def test_cancel_job_cancels_pending_and_running_executions(store: Store) -> None:
    [jid] = create(store, new_job())
    claim_all(store, T0)
    claim_all(store, T0 + MIN)
    claim_all(store, T0 + 2 * MIN)
    running = start(store, f"{jid}:{T0}", T0 + 2 * MIN)
    retrying = start(store, f"{jid}:{T0 + MIN}", T0 + 2 * MIN)
    [res] = store.complete_executions(
        [Completion(retrying.execution_id, "w1", retrying.lease_epoch, Outcome.FAILED, error="boom")], T0 + 2 * MIN
    )
    assert res.status is ExecStatus.RETRY_WAIT

    out = store.cancel_job(jid, T0 + 3 * MIN)
    assert out is not None
    job, running_ids = out.job, out.running
    assert out.changed
    assert job.status is JobStatus.CANCELLED and job.next_run_at is None
    assert running_ids == [running.execution_id]
    for t in (T0, T0 + MIN, T0 + 2 * MIN):
        ex = store.get_execution(f"{jid}:{t}")
        assert ex is not None and ex.status is ExecStatus.CANCELLED, t
    # the running worker learns it at its next heartbeat or completion, and nothing changes
    hb = store.heartbeat(running.execution_id, "w1", running.lease_epoch, T0 + 3 * MIN)
    assert hb.verdict is LeaseVerdict.CANCELLED
    [done] = store.complete_executions(
        [Completion(running.execution_id, "w1", running.lease_epoch, Outcome.SUCCEEDED)], T0 + 3 * MIN
    )
    assert done.verdict is LeaseVerdict.CANCELLED
    ex = store.get_execution(running.execution_id)
    assert ex is not None and ex.status is ExecStatus.CANCELLED
    # no further ticks, nothing dispatchable
    assert claim_all(store, T0 + HOUR).executions == []
    assert store.ready_executions(T0 + HOUR, 10) == []
    assert running_count(store) == 0


def test_cancel_leaves_finished_executions_alone(store: Store) -> None:
    [jid] = create(store, new_job())
    claim_all(store, T0)
    g = start(store, f"{jid}:{T0}", T0)
    store.complete_executions([Completion(g.execution_id, "w1", g.lease_epoch, Outcome.SUCCEEDED)], T0 + 1)
    store.cancel_job(jid, T0 + 2)
    ex = store.get_execution(g.execution_id)
    assert ex is not None and ex.status is ExecStatus.SUCCEEDED


def test_cancel_is_idempotent_and_tenant_scoped(store: Store) -> None:
    [jid] = create(store, new_job(tenant="a"))
    assert store.cancel_job("nope", T0) is None
    assert store.cancel_job(jid, T0, tenant="b") is None
    job = store.get_job(jid)
    assert job is not None and job.status is JobStatus.ACTIVE
    first = store.cancel_job(jid, T0, tenant="a")
    again = store.cancel_job(jid, T0 + 5)
    assert first is not None and again is not None
    assert again.job.status is JobStatus.CANCELLED and again.running == []
    # how the engine tells a cancel from a repeat (it logs job.cancelled once)
    assert first.changed and not again.changed
    assert first.job.updated_at == T0 and again.job.updated_at == T0
    job = store.get_job(jid)
    assert job is not None and job.updated_at == T0  # the second cancel changed nothing


def test_cancel_jobs_cancels_many_in_one_call_each_as_cancel_job_does(store: Store) -> None:
    """A tenant's forced deletion cancels its jobs a page at a time: the answers in the order
    asked, None for an unknown job or another tenant's, one cancelled before unchanged, running
    ids told, an id given twice answered twice alike."""
    a1, a2, done = create(store, new_job(tenant="a"), new_job(tenant="a"), new_job(tenant="a"))
    [other] = create(store, new_job(tenant="b"))
    claim_all(store, T0)
    running = start(store, f"{a1}:{T0}", T0)
    store.cancel_job(done, T0)
    out = store.cancel_jobs([a1, "nope", other, done, a2, a1], T0 + 1, tenant="a")
    assert [None if r is None else (r.job.id, r.changed, r.running) for r in out] == [
        (a1, True, [running.execution_id]), None, None, (done, False, []), (a2, True, []), (a1, True, [running.execution_id]),
    ]
    assert all(store.get_job(j).status is JobStatus.CANCELLED for j in (a1, a2, done))  # type: ignore[union-attr]
    assert store.get_job(other).status is JobStatus.ACTIVE  # type: ignore[union-attr]
    assert store.heartbeat(running.execution_id, "w1", running.lease_epoch, T0 + 2).verdict is LeaseVerdict.CANCELLED
    assert store.cancel_jobs([], T0 + 2) == []


def test_cancelled_job_cannot_be_resumed_by_a_wrong_expectation(store: Store) -> None:
    [jid] = create(store, new_job())
    store.cancel_job(jid, T0)
    assert store.set_job_status(jid, [JobStatus.PAUSED], JobStatus.ACTIVE, T0, next_run_at=T0) is None


def test_a_batch_is_one_transaction(store: Store) -> None:
    """A batch that cannot be committed as a whole commits nothing (duplicate job id)."""
    jid = job_id()
    create(store, new_job(jid=jid))
    fresh = new_job(key="k", request_hash="h")
    with pytest.raises(StoreError):
        store.create_jobs([fresh, new_job(jid=jid)], T0)
    assert store.get_job(fresh.job_id) is None
    assert store.count_jobs() == 1
    [again] = store.create_jobs([fresh], T0)  # the key was not kept either
    assert again.outcome is CreateOutcome.CREATED
