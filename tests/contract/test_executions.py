"""Contract: the ready queue, hand-out with fencing, heartbeats, completions, the reaper."""

from __future__ import annotations

from typing import Any

from cronwheel.core.model import ExecStatus, Priority, RetryPolicy
from cronwheel.core.records import Completion, CompletionResult, LeaseVerdict, Outcome, StartRequest
from cronwheel.core.retry import backoff_ms
from cronwheel.store.base import Store
from tests.contract.conftest import HOUR, MIN, SEC, T0, claim_all, create, new_job, one_off, start
from tests.support.store_probe import next_available_at, running_count, running_for_worker

RETRY = RetryPolicy(max_attempts=3, initial_backoff_sec=10, max_backoff_sec=100, multiplier=2, jitter=0.5)


def pending(store: Store, **kw: Any) -> str:
    """A job with one PENDING execution at T0; returns its execution id."""
    nj = one_off(T0, **kw)
    create(store, nj)
    [ex] = claim_all(store, T0).executions
    return ex.execution_id


def fail(store: Store, eid: str, epoch: int, now: int, rand: float = 0.5, **kw: Any) -> CompletionResult:
    [res] = store.complete_executions([Completion(eid, "w1", epoch, Outcome.FAILED, **kw)], now, [rand])
    return res


# ---------------------------------------------------------------- ready queue


def test_ready_executions_order_availability_and_pagination(store: Store) -> None:
    jobs = [one_off(T0 + i * SEC) for i in range(5)] + [one_off(T0 + 2 * SEC)]
    create(store, *jobs)
    claim_all(store, T0 + 10 * SEC)
    ready = store.ready_executions(T0 + 10 * SEC, 100)
    keys = [(e.available_at, e.execution_id) for e in ready]
    # by available_at; ties (here two at T0 + 2 s) in the store's own order
    assert [at for at, _ in keys] == sorted(at for at, _ in keys) and len(set(keys)) == 6
    assert [e.execution_id for e in store.ready_executions(T0 + 2 * SEC, 100)] == [e for _, e in keys[:4]]
    for size in (1, 2, 3, 4):  # every page boundary, the one between the two ties included
        pages, after = [], None
        while page := store.ready_executions(T0 + 10 * SEC, size, after):
            pages += page
            after = (page[-1].available_at, page[-1].execution_id)
        assert [e.execution_id for e in pages] == [e for _, e in keys]
    assert store.ready_executions(T0 + 10 * SEC, 0) == []
    assert next_available_at(store) == T0


def test_next_available_at_follows_retries(store: Store) -> None:
    assert next_available_at(store) is None
    eid = pending(store, retry=RETRY)
    g = start(store, eid, T0)
    assert next_available_at(store) is None  # nothing dispatchable while it runs
    res = fail(store, eid, g.lease_epoch, T0 + SEC)
    assert next_available_at(store) == res.available_at == T0 + SEC + 10 * SEC


# ---------------------------------------------------------------- start


def test_start_hands_out_with_a_new_epoch_and_a_lease(store: Store) -> None:
    eid = pending(store, lease_sec=30, timeout_sec=99, payload={"p": 1}, target={"command": "x"}, tenant="acme",
                  priority=Priority.BATCH)  # fmt: skip
    [g] = store.start_executions([StartRequest(eid, "w7")], T0 + SEC)
    assert (g.execution_id, g.attempt, g.lease_epoch) == (eid, 1, 1)
    assert (g.lease_until, g.lease_sec, g.timeout_sec) == (T0 + SEC + 30 * SEC, 30, 99)
    assert (g.target, g.payload, g.tenant, g.priority, g.scheduled_at) == (
        {"command": "x"}, {"p": 1}, "acme", Priority.BATCH, T0,
    )  # fmt: skip
    ex = store.get_execution(eid)
    assert ex is not None
    assert (ex.status, ex.worker_id, ex.lease_until, ex.started_at) == (ExecStatus.RUNNING, "w7", g.lease_until, T0 + SEC)
    assert running_count(store) == 1
    assert [e.execution_id for e in running_for_worker(store, "w7")] == [eid]
    assert running_for_worker(store, "w8") == []


def test_start_refuses_what_is_not_dispatchable(store: Store) -> None:
    eid = pending(store)
    later = one_off(T0 + HOUR)
    create(store, later)
    assert store.start_executions([StartRequest("nope:1", "w1")], T0) == []
    start(store, eid, T0)
    # already running: a second start (another node racing) gets nothing
    assert store.start_executions([StartRequest(eid, "w2")], T0) == []
    # duplicates in one call are handed out once
    other = pending(store)
    grants = store.start_executions([StartRequest(other, "w1"), StartRequest(other, "w2")], T0)
    assert [(g.execution_id, g.lease_epoch) for g in grants] == [(other, 1)]
    # not yet available (retry backoff)
    retry_eid = pending(store, retry=RETRY)
    g = start(store, retry_eid, T0)
    res = fail(store, retry_eid, g.lease_epoch, T0)
    assert store.start_executions([StartRequest(retry_eid, "w1")], T0 + SEC) == []
    again = start(store, retry_eid, res.available_at)
    assert (again.attempt, again.lease_epoch) == (2, 2)


def test_start_many_in_one_call_keeps_request_order(store: Store) -> None:
    jobs = [one_off(T0) for _ in range(20)]
    create(store, *jobs)
    ids = [e.execution_id for e in claim_all(store, T0).executions]
    ids.reverse()
    grants = store.start_executions([StartRequest(i, f"w{n % 3}") for n, i in enumerate(ids)], T0)
    assert [g.execution_id for g in grants] == ids
    assert running_count(store) == 20
    assert len(running_for_worker(store, "w0")) == 7


def test_started_at_is_the_first_start(store: Store) -> None:
    eid = pending(store, retry=RETRY)
    g = start(store, eid, T0 + 5)
    res = fail(store, eid, g.lease_epoch, T0 + 10)
    start(store, eid, res.available_at)
    ex = store.get_execution(eid)
    assert ex is not None and ex.started_at == T0 + 5


# ---------------------------------------------------------------- heartbeat


def test_heartbeat_extends_only_the_current_epoch(store: Store) -> None:
    eid = pending(store, lease_sec=20)
    g = start(store, eid, T0)
    hb = store.heartbeat(eid, "w1", g.lease_epoch, T0 + 15 * SEC)
    assert (hb.verdict, hb.extend_until) == (LeaseVerdict.OK, T0 + 35 * SEC)
    ex = store.get_execution(eid)
    assert ex is not None and ex.lease_until == T0 + 35 * SEC
    stale = store.heartbeat(eid, "w1", g.lease_epoch - 1, T0 + 16 * SEC)
    future = store.heartbeat(eid, "w1", g.lease_epoch + 1, T0 + 16 * SEC)
    assert stale.verdict is future.verdict is LeaseVerdict.LEASE_LOST
    assert stale.extend_until is None
    ex = store.get_execution(eid)
    assert ex is not None and ex.lease_until == T0 + 35 * SEC  # unchanged
    assert store.heartbeat("nope:1", "w1", 1, T0).verdict is LeaseVerdict.NOT_FOUND


def test_heartbeat_after_completion_is_lease_lost(store: Store) -> None:
    eid = pending(store)
    g = start(store, eid, T0)
    store.complete_executions([Completion(eid, "w1", g.lease_epoch, Outcome.SUCCEEDED)], T0 + 1)
    assert store.heartbeat(eid, "w1", g.lease_epoch, T0 + 2).verdict is LeaseVerdict.LEASE_LOST


def test_heartbeat_many(store: Store) -> None:
    a, b = pending(store, lease_sec=10), pending(store, lease_sec=10)
    ga, gb = start(store, a, T0), start(store, b, T0)
    results = store.heartbeat_many([(a, "w1", ga.lease_epoch), (b, "w1", gb.lease_epoch + 5), ("x:1", "w1", 1)], T0 + SEC)
    assert [r.verdict for r in results] == [LeaseVerdict.OK, LeaseVerdict.LEASE_LOST, LeaseVerdict.NOT_FOUND]
    assert results[0].extend_until == T0 + 11 * SEC
    assert store.heartbeat_many([], T0) == []


# ---------------------------------------------------------------- complete


def test_complete_success(store: Store) -> None:
    eid = pending(store)
    g = start(store, eid, T0)
    [res] = store.complete_executions(
        [Completion(eid, "w1", g.lease_epoch, Outcome.SUCCEEDED, exit_code=0, output="ok\n")], T0 + 5 * SEC
    )
    assert (res.execution_id, res.verdict, res.status, res.available_at) == (eid, LeaseVerdict.OK, ExecStatus.SUCCEEDED, None)
    ex = store.get_execution(eid)
    assert ex is not None
    assert (ex.status, ex.finished_at, ex.exit_code, ex.output, ex.error) == (ExecStatus.SUCCEEDED, T0 + 5 * SEC, 0, "ok\n", None)
    assert running_count(store) == 0
    assert store.complete_executions([], T0) == []


def test_failure_becomes_retry_wait_with_backoff(store: Store) -> None:
    eid = pending(store, retry=RETRY)
    g = start(store, eid, T0)
    res = fail(store, eid, g.lease_epoch, T0 + SEC, rand=0.9, exit_code=3, error="exit 3", output="tail")
    expected = T0 + SEC + backoff_ms(1, RETRY, 0.9)
    assert (res.verdict, res.status, res.available_at) == (LeaseVerdict.OK, ExecStatus.RETRY_WAIT, expected)
    ex = store.get_execution(eid)
    assert ex is not None
    assert (ex.status, ex.available_at, ex.exit_code, ex.error, ex.output) == (ExecStatus.RETRY_WAIT, expected, 3, "exit 3", "tail")
    assert ex.finished_at is None and ex.reason is not None and "exit 3" in ex.reason
    # the retry is dispatchable once its time has come, with attempt 2 and a new epoch
    assert store.ready_executions(expected - 1, 10) == []
    assert [e.execution_id for e in store.ready_executions(expected, 10)] == [eid]
    # and when the retry succeeds, its reason says so (not "…; retry at …" any more)
    again = start(store, eid, expected)
    [res] = store.complete_executions([Completion(eid, "w1", again.lease_epoch, Outcome.SUCCEEDED)], expected + 1)
    ex = store.get_execution(eid)
    assert ex is not None and (ex.status, ex.reason) == (ExecStatus.SUCCEEDED, "succeeded at attempt 2/3")


def test_default_rand_is_one_half(store: Store) -> None:
    eid = pending(store, retry=RETRY)
    g = start(store, eid, T0)
    [res] = store.complete_executions([Completion(eid, "w1", g.lease_epoch, Outcome.TIMED_OUT)], T0)
    assert res.available_at == T0 + backoff_ms(1, RETRY, 0.5)


def test_dead_after_max_attempts(store: Store) -> None:
    eid = pending(store, retry=RETRY)
    now = T0
    for attempt in (1, 2, 3):
        g = start(store, eid, now)
        assert (g.attempt, g.lease_epoch) == (attempt, attempt)
        res = fail(store, eid, g.lease_epoch, now + 1, error=f"boom {attempt}")
        now = res.available_at or now + 1
    assert (res.verdict, res.status, res.available_at) == (LeaseVerdict.OK, ExecStatus.DEAD, None)
    ex = store.get_execution(eid)
    assert ex is not None and ex.status is ExecStatus.DEAD and ex.error == "boom 3" and ex.attempt == 3
    assert ex.finished_at is not None
    assert store.ready_executions(T0 + HOUR, 10) == []
    assert [e.execution_id for e in store.list_dead()] == [eid]


def test_an_attempt_interrupted_by_the_daemons_stop_runs_again_and_is_not_counted(store: Store) -> None:
    eid = pending(store, retry=RetryPolicy(max_attempts=1))  # no retries: one failure is dead
    g = start(store, eid, T0)
    [res] = store.complete_executions([Completion(eid, "w1", g.lease_epoch, Outcome.INTERRUPTED, error="stopped")], T0 + 5)
    assert (res.verdict, res.status, res.available_at) == (LeaseVerdict.OK, ExecStatus.RETRY_WAIT, T0 + 5)
    ex = store.get_execution(eid)
    assert ex is not None and (ex.status, ex.max_attempts, ex.finished_at) == (ExecStatus.RETRY_WAIT, 2, None)
    assert ex.reason is not None and "attempt 1/1 interrupted" in ex.reason and "not counted" in ex.reason
    assert store.list_dead() == [] and [e.execution_id for e in store.ready_executions(T0 + 5, 10)] == [eid]
    # it runs again with a new epoch; the old lease is fenced; a real failure now is its one attempt
    again = start(store, eid, T0 + 6)
    assert (again.attempt, again.lease_epoch) == (2, 2)
    assert fail(store, eid, g.lease_epoch, T0 + 7).verdict is LeaseVerdict.LEASE_LOST
    assert fail(store, eid, again.lease_epoch, T0 + 7).status is ExecStatus.DEAD


def test_stale_epoch_completion_is_lease_lost_and_changes_nothing(store: Store) -> None:
    eid = pending(store, retry=RETRY)
    g1 = start(store, eid, T0)
    r = fail(store, eid, g1.lease_epoch, T0)
    g2 = start(store, eid, r.available_at)
    before = store.get_execution(eid)
    [res] = store.complete_executions([Completion(eid, "w-zombie", g1.lease_epoch, Outcome.SUCCEEDED)], T0 + HOUR)
    assert (res.verdict, res.status) == (LeaseVerdict.LEASE_LOST, None)
    assert store.get_execution(eid) == before
    [ok] = store.complete_executions([Completion(eid, "w1", g2.lease_epoch, Outcome.SUCCEEDED)], T0 + HOUR)
    assert ok.verdict is LeaseVerdict.OK


def test_completion_batch_is_fenced_per_item(store: Store) -> None:
    a, b = pending(store), pending(store)
    ga, gb = start(store, a, T0), start(store, b, T0)
    results = store.complete_executions(
        [
            Completion(a, "w1", ga.lease_epoch, Outcome.SUCCEEDED),
            Completion(b, "w1", gb.lease_epoch + 1, Outcome.SUCCEEDED),
            Completion("nope:5", "w1", 1, Outcome.SUCCEEDED),
            Completion(a, "w1", ga.lease_epoch, Outcome.FAILED),  # the same lease twice: already done
        ],
        T0 + 1,
    )
    assert [r.verdict for r in results] == [LeaseVerdict.OK, LeaseVerdict.LEASE_LOST, LeaseVerdict.NOT_FOUND, LeaseVerdict.LEASE_LOST]
    ea, eb = store.get_execution(a), store.get_execution(b)
    assert ea is not None and ea.status is ExecStatus.SUCCEEDED
    assert eb is not None and eb.status is ExecStatus.RUNNING


def test_completion_of_a_pending_execution_is_lease_lost(store: Store) -> None:
    eid = pending(store)
    [res] = store.complete_executions([Completion(eid, "w1", 0, Outcome.SUCCEEDED)], T0)
    assert res.verdict is LeaseVerdict.LEASE_LOST
    ex = store.get_execution(eid)
    assert ex is not None and ex.status is ExecStatus.PENDING


# ---------------------------------------------------------------- the reaper


def test_expire_leases_retries_and_fences_the_old_epoch(store: Store) -> None:
    eid = pending(store, retry=RETRY, lease_sec=10)
    g = start(store, eid, T0)
    assert store.expire_leases(T0 + 10 * SEC, 100) == []  # lease_until is not yet passed
    [res] = store.expire_leases(T0 + 10 * SEC + 1, 100)
    assert (res.execution_id, res.verdict, res.status) == (eid, LeaseVerdict.OK, ExecStatus.RETRY_WAIT)
    assert res.available_at is not None
    lo, hi = backoff_ms(1, RETRY, 0.0), backoff_ms(1, RETRY, 0.999999)
    assert T0 + 10 * SEC + 1 + lo <= res.available_at <= T0 + 10 * SEC + 1 + hi
    ex = store.get_execution(eid)
    assert ex is not None and ex.error == "lease expired" and ex.status is ExecStatus.RETRY_WAIT
    # the zombie worker is fenced everywhere
    assert store.heartbeat(eid, "w1", g.lease_epoch, T0 + 11 * SEC).verdict is LeaseVerdict.LEASE_LOST
    [late] = store.complete_executions([Completion(eid, "w1", g.lease_epoch, Outcome.SUCCEEDED)], T0 + 11 * SEC)
    assert late.verdict is LeaseVerdict.LEASE_LOST
    # the new hand-out gets epoch + 1 and the old one stays fenced
    g2 = start(store, eid, res.available_at, worker="w2")
    assert (g2.lease_epoch, g2.attempt) == (g.lease_epoch + 1, 2)
    assert store.heartbeat(eid, "w1", g.lease_epoch, res.available_at).verdict is LeaseVerdict.LEASE_LOST
    assert store.heartbeat(eid, "w2", g2.lease_epoch, res.available_at).verdict is LeaseVerdict.OK


def test_expire_leases_sends_the_last_attempt_to_the_dlq(store: Store) -> None:
    eid = pending(store, retry=RetryPolicy(max_attempts=1), lease_sec=5)
    start(store, eid, T0)
    [res] = store.expire_leases(T0 + HOUR, 10)
    assert res.status is ExecStatus.DEAD
    assert [e.execution_id for e in store.list_dead()] == [eid]


def test_expire_leases_respects_limit_and_spares_live_leases(store: Store) -> None:
    ids = [pending(store, lease_sec=10) for _ in range(5)]
    for eid in ids:
        start(store, eid, T0)
    keep = pending(store, lease_sec=3600)
    start(store, keep, T0)
    first = store.expire_leases(T0 + MIN, 3)
    rest = store.expire_leases(T0 + MIN, 100)
    assert len(first) == 3 and len(rest) == 2
    assert {r.execution_id for r in first + rest} == set(ids)
    assert [e.execution_id for e in running_for_worker(store, "w1")] == [keep]
    assert store.expire_leases(T0 + MIN, 0) == []


def test_expire_leases_spares_those_that_ran_out_after_the_given_instant(store: Store) -> None:
    early, late = pending(store, lease_sec=10), pending(store, lease_sec=40)
    start(store, early, T0)
    start(store, late, T0)
    # both ran out by T0 + MIN; only the one that ran out before T0 + 20 s goes, at T0 + MIN
    [res] = store.expire_leases(T0 + MIN, 100, T0 + 20 * SEC)
    assert res.execution_id == early and res.status is ExecStatus.RETRY_WAIT
    assert res.available_at is not None and res.available_at >= T0 + MIN  # its backoff runs from now
    assert [e.execution_id for e in running_for_worker(store, "w1")] == [late]
    assert [r.execution_id for r in store.expire_leases(T0 + MIN, 100)] == [late]


# ---------------------------------------------------------------- reads


def test_list_and_count_executions(store: Store) -> None:
    nj = new_job(tenant="acme")
    create(store, nj)
    for k in range(5):
        claim_all(store, T0 + k * MIN)
    history = store.list_executions(nj.job_id, limit=3)
    assert [e.scheduled_at for e in history] == [T0 + 4 * MIN, T0 + 3 * MIN, T0 + 2 * MIN]
    older = store.list_executions(nj.job_id, limit=3, before=history[-1].scheduled_at)
    assert [e.scheduled_at for e in older] == [T0 + MIN, T0]
    assert store.list_executions(nj.job_id, tenant="other") == []
    assert store.list_executions("nope") == []
    g = start(store, f"{nj.job_id}:{T0}", T0 + 5 * MIN)
    fail(store, g.execution_id, g.lease_epoch, T0 + 5 * MIN)
    start(store, f"{nj.job_id}:{T0 + MIN}", T0 + 5 * MIN)
    assert store.count_executions() == 5
    assert store.count_executions(ExecStatus.PENDING) == 3
    assert store.count_executions(ExecStatus.RUNNING) == 1
    assert store.count_executions(ExecStatus.RETRY_WAIT) == 1
    assert store.count_executions(ExecStatus.SUCCEEDED) == 0
    assert store.count_executions(ExecStatus.PENDING, tenant="acme") == 3
    assert store.count_executions(tenant="other") == 0
    assert store.get_execution(g.execution_id, tenant="acme") is not None
    assert store.get_execution(g.execution_id, tenant="other") is None
    assert store.get_execution("nope:1") is None


def test_dispatch_loop_drains_everything_once(store: Store) -> None:
    """End to end on the store alone: claim, start, complete; every tick runs exactly once."""
    jobs = [new_job(schedule="*/30 * * * * *") for _ in range(40)]
    create(store, *jobs)
    done: list[str] = []
    for now in range(T0, T0 + 5 * MIN + 1, 10 * SEC):
        claim_all(store, now)
        ready = store.ready_executions(now, 1000)
        grants = store.start_executions([StartRequest(e.execution_id, "w") for e in ready], now)
        results = store.complete_executions([Completion(g.execution_id, "w", g.lease_epoch, Outcome.SUCCEEDED) for g in grants], now)
        assert all(r.verdict is LeaseVerdict.OK for r in results)
        done += [g.execution_id for g in grants]
    assert len(done) == len(set(done)) == 40 * 11
    assert store.count_executions(ExecStatus.SUCCEEDED) == 40 * 11


def test_running_with_worker_prefix_finds_a_previous_incarnations_leases(store: Store) -> None:
    a, b, c = pending(store), pending(store), pending(store)
    store.start_executions(
        [StartRequest(a, "node1-old-w0-0"), StartRequest(b, "node1-new-w0-0"), StartRequest(c, "node10-old-w0-0")],
        T0 + SEC,
    )
    assert {e.execution_id for e in store.running_with_worker_prefix("node1-")} == {a, b}
    assert [e.execution_id for e in store.running_with_worker_prefix("node1-old-")] == [a]
    assert store.running_with_worker_prefix("node2-") == []
    # a prefix with LIKE wildcards matches literally
    assert store.running_with_worker_prefix("node_-") == []


def test_what_lists_executions_leaves_their_output_out(store: Store) -> None:
    """A page of a thousand executions read up to 64 MB of output tails that no listing shows:
    lists carry none, the execution itself does."""
    nj = one_off(T0, retry=RetryPolicy(max_attempts=2, initial_backoff_sec=0))
    create(store, nj)
    [ex] = claim_all(store, T0).executions
    g = start(store, ex.execution_id, T0)
    store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, Outcome.FAILED, output="o" * 1000,
                                          error="e")], T0 + SEC)  # fmt: skip
    full = store.get_execution(ex.execution_id)
    assert full is not None and full.output == "o" * 1000 and full.status is ExecStatus.RETRY_WAIT
    [ready] = store.ready_executions(T0 + MIN, 10)
    [listed] = store.list_executions(nj.job_id, 10)
    last = store.last_runs([nj.job_id])[nj.job_id]
    for e in (ready, listed, last):
        assert e.output is None and e.error == "e" and e.execution_id == ex.execution_id
    g2 = start(store, ex.execution_id, T0 + MIN)
    store.complete_executions([Completion(ex.execution_id, "w1", g2.lease_epoch, Outcome.FAILED, output="dead")], T0 + MIN)
    [dead] = store.list_dead()
    assert dead.output is None and store.get_execution(ex.execution_id).output == "dead"  # type: ignore[union-attr]
