"""History retention: finished executions are pruned; the newest keep_last per job, the DLQ
and anything live are kept."""

from __future__ import annotations

from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core.model import ExecStatus, JobStatus, RetryPolicy
from cronwheel.core.notify import NotificationStatus
from cronwheel.core.records import Completion, EffectVerdict, Outcome, StartRequest
from cronwheel.store.base import Store
from tests.contract.conftest import ALL_BUCKETS, HOUR, MIN, SEC, T0, create, new_job, one_off
from tests.support.store_probe import list_effects


def run_ticks(store: Store, n: int, *, fail_last: bool = False, fail_all: bool = False, **kw: Any) -> str:
    """An every-minute job with n finished ticks (with no retries: a failure is a dead
    letter); returns the job id."""
    nj = new_job(next_run_at=T0, schedule="* * * * *", retry=RetryPolicy(max_attempts=1), **kw)
    create(store, nj)
    for i in range(n):
        now = T0 + i * MIN
        [ex] = store.claim_due(ALL_BUCKETS, now, 10).executions
        [g] = store.start_executions([StartRequest(ex.execution_id, "w")], now)
        if fail_all and i == 0:
            assert store.record_effect(g.execution_id, "w", g.lease_epoch, "mail:1", now) is EffectVerdict.RECORDED
        outcome = Outcome.FAILED if fail_all or (fail_last and i == n - 1) else Outcome.SUCCEEDED
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


# ---------------------------------------------------------------- dead letters


def prune_dead(store: Store, keep: int, rows_per_call: int = 1, limit: int = 2) -> dict[str, tuple[str, int, int]]:
    """Every call of a pass: what each job lost, as (tenant, pruned, kept) summed per job. By
    default each call reads keep + 1 dead letters (the least it reads) and deletes two: a job's
    count is cut short by a page's end, and its deletion by the call's limit."""
    pruned: dict[str, tuple[str, int, int]] = {}
    cursor = None
    for _ in range(1000):
        found, cursor = store.prune_dead_letters(keep, cursor, rows_per_call, limit)
        for job in found:
            before = pruned.get(job.job_id, ("", 0, 0))[1]
            pruned[job.job_id] = (job.tenant, before + job.pruned, job.kept)
        if cursor is None:
            return pruned
    raise AssertionError("pruning did not finish")


def dead_ticks(store: Store, job_id: str) -> list[int]:
    return sorted(e.scheduled_at for e in store.list_executions(job_id, 100) if e.status is ExecStatus.DEAD)


def test_each_job_keeps_its_newest_dead_letters_and_loses_the_older_ones(store: Store) -> None:
    """A job failing every minute with no retries left added a dead letter a minute for ever:
    the queue is bounded per job, the oldest go (with their effects), a neighbour's stay."""
    flapping = run_ticks(store, 6, fail_all=True, tenant="acme")  # (each job fewer ticks than the
    neighbour = run_ticks(store, 5, fail_all=True, tenant="other")  # one before: its claims
    ok = run_ticks(store, 5)  # find the earlier jobs' next ticks not yet due)
    few = run_ticks(store, 2, fail_all=True, tenant="acme")
    oldest = f"{flapping}:{T0}"
    assert [effect[0] for effect in list_effects(store, oldest)] == ["mail:1"]
    pruned = prune_dead(store, keep=3)
    assert pruned == {flapping: ("acme", 3, 3), neighbour: ("other", 2, 3)}
    assert dead_ticks(store, flapping) == [T0 + i * MIN for i in (3, 4, 5)]
    assert dead_ticks(store, neighbour) == [T0 + i * MIN for i in (2, 3, 4)]
    assert dead_ticks(store, few) == [T0, T0 + MIN]
    assert len(store.list_executions(ok, 100)) == 5  # history is not the dead letters' pass's
    assert store.get_execution(oldest) is None and list_effects(store, oldest) == []
    assert store.count_executions(ExecStatus.DEAD) == 3 + 2 + 3
    assert prune_dead(store, keep=3) == {}  # at the bound: nothing more
    assert prune_dead(store, keep=1, rows_per_call=100, limit=100) == {
        flapping: ("acme", 2, 1), neighbour: ("other", 2, 1), few: ("acme", 1, 1)}  # fmt: skip

def test_a_replayed_dead_letter_is_not_counted_nor_pruned(store: Store) -> None:
    job = run_ticks(store, 4, fail_all=True)
    replayed = store.replay_dead(f"{job}:{T0}", T0 + HOUR)
    assert replayed is not None
    assert prune_dead(store, keep=3) == {}
    assert prune_dead(store, keep=2, rows_per_call=10, limit=100) == {job: ("default", 1, 2)}
    assert dead_ticks(store, job) == [T0 + 2 * MIN, T0 + 3 * MIN]
    assert store.get_execution(f"{job}:{T0}").status is ExecStatus.PENDING  # type: ignore[union-attr]


def test_the_dead_letters_pass_with_nothing_to_do_finishes(store: Store) -> None:
    assert store.prune_dead_letters(1, None, 100, 1000) == ([], None)
    run_ticks(store, 3, fail_last=True)
    assert prune_dead(store, keep=1) == {}


def dead_notifications_of(store: Store, tenant: str, n: int) -> str:
    """A job with ``n`` failed ticks whose every notification died (its receiver refused it
    for the last time); returns the job id."""
    rule = nt.rule_from_json({"on": "failure", "via": "webhook", "url": "https://hooks.example.com/cw", "secret": "0123456789abcdef-secret",
                              "maxAttempts": 1, "maxPerHour": 1000})  # fmt: skip
    job = run_ticks(store, n, fail_all=True, tenant=tenant, notify=(rule,))
    for told in store.claim_notifications("n1", T0 + HOUR, 1000, 60_000):
        assert told.job_id == job
        store.finish_notifications([nt.DeliveryResult(told.notification_id, told.lease_epoch, NotificationStatus.DEAD,
                                                      error="refused")], T0 + HOUR)  # fmt: skip
    return job


def dead_notifications(store: Store, job_id: str) -> list[int]:
    dead = store.list_notifications(job_id=job_id, status=NotificationStatus.DEAD)
    return sorted(n.body["scheduledAt"] for n in dead)


def test_each_job_keeps_its_newest_dead_notifications_and_loses_the_older_ones(store: Store) -> None:
    """A failing job whose receiver is gone added a dead notification per failure (up to its
    rule's maxPerHour) for ever: they are bounded per job like its dead letters, the oldest
    go, a neighbour's stay, and the executions' dead letters are not this pass's."""
    flapping = dead_notifications_of(store, "acme", 6)
    neighbour = dead_notifications_of(store, "other", 5)
    few = dead_notifications_of(store, "acme", 2)
    newest = dead_notifications(store, flapping)[3:]
    cursor, pruned = None, {}
    for _ in range(100):  # a page of keep + 1 (a job counted across pages), two deleted a call
        found, cursor = store.prune_dead_notifications(3, cursor, 1, 2)
        for job in found:
            pruned[job.job_id] = (job.tenant, pruned.get(job.job_id, ("", 0))[1] + job.pruned, job.kept)
        if cursor is None:
            break
    assert pruned == {flapping: ("acme", 3, 3), neighbour: ("other", 2, 3)}
    assert dead_notifications(store, flapping) == newest
    assert len(dead_notifications(store, neighbour)) == 3 and len(dead_notifications(store, few)) == 2
    assert len(dead_ticks(store, flapping)) == 6  # the runs' dead letters: the other queue's bound
    assert store.prune_dead_notifications(3, None, 100, 100) == ([], None)
    [oldest] = [n for n in store.list_notifications(job_id=few) if n.body["scheduledAt"] == dead_notifications(store, few)[0]]
    assert store.replay_notification(oldest.notification_id, T0 + 2 * HOUR) is not None
    found, cursor = store.prune_dead_notifications(0, None, 100, 100)  # a replayed one is not DEAD
    assert cursor is None and {(j.job_id, j.pruned) for j in found} == {(flapping, 3), (neighbour, 3), (few, 1)}
    assert [n.status for n in store.list_notifications(job_id=few)] == [NotificationStatus.PENDING]


def dead_notification_of_gone_job(store: Store, tenant: str, at: int) -> str:
    """A one-off that succeeded at ``at``, whose notification died, and that left the store
    (settled, pruned) with it there; returns the job id."""
    rule = nt.rule_from_json({"on": "success", "via": "webhook", "url": "https://hooks.example.com/cw",
                              "secret": "0123456789abcdef-secret", "maxAttempts": 1})  # fmt: skip
    job, _ex = finish_one_off(store, at, tenant=tenant, notify=(rule,))
    [told] = store.claim_notifications("n1", at + MIN, 10, 60_000)
    store.finish_notifications([nt.DeliveryResult(told.notification_id, told.lease_epoch, NotificationStatus.DEAD,
                                                  error="refused")], at + MIN)  # fmt: skip
    assert prune_settled(store, older_than=at + HOUR) == 1 and store.get_job(job) is None
    return job


def test_dead_notifications_of_jobs_gone_go_once_the_retention_passed_them(store: Store) -> None:
    """Each job's dead notifications are bounded while it is there; a tenant that creates and
    deletes jobs with a failing receiver left them behind without bound. Once their job is
    gone they go when older than the cutoff, in batches; a job still there keeps its own,
    and so do recent ones."""
    gone = [dead_notification_of_gone_job(store, "acme", T0 + i * SEC) for i in range(5)]
    other_gone = dead_notification_of_gone_job(store, "other", T0 + 5 * SEC)
    recent = dead_notification_of_gone_job(store, "acme", T0 + 2 * HOUR)
    there = dead_notifications_of(store, "acme", 2)  # its job is still in the store
    cutoff = T0 + 2 * HOUR  # after the first six were created, before the recent one
    calls: list[int] = []
    cursor = None
    while len(calls) < 100:  # three jobs looked at and at most two deleted a call
        deleted, cursor = store.prune_dead_notifications_of_gone_jobs(cutoff, cursor, 3, 2)
        calls.append(deleted)
        if cursor is None:
            break
    assert sum(calls) == 6 and max(calls) == 2 and len(calls) > 3, calls
    for job in [*gone, other_gone]:
        assert store.list_notifications(job_id=job) == []
    assert [n.status for n in store.list_notifications(job_id=recent)] == [NotificationStatus.DEAD]
    assert len(dead_notifications(store, there)) == 2
    assert store.prune_dead_notifications_of_gone_jobs(T0 + 100 * HOUR, None, 100, 100) == (1, None)
    assert len(dead_notifications(store, there)) == 2  # never a job's that is there


# ---------------------------------------------------------------- settled jobs


def finish_one_off(
    store: Store, at: int, outcome: Outcome = Outcome.SUCCEEDED, effect: str | None = None, **kw: Any,
) -> tuple[str, str]:
    """A one-off run once to ``outcome`` (no retry), recording ``effect`` on the way: (job id,
    execution id)."""
    kw.setdefault("retry", RetryPolicy(max_attempts=1))
    nj = one_off(at, **kw)
    [jid] = create(store, nj, now=at - MIN)
    [ex] = store.claim_due(ALL_BUCKETS, at, 10).executions
    [g] = store.start_executions([StartRequest(ex.execution_id, "w")], at)
    if effect is not None:
        assert store.record_effect(g.execution_id, "w", g.lease_epoch, effect, at) is EffectVerdict.RECORDED
    store.complete_executions([Completion(g.execution_id, "w", g.lease_epoch, outcome)], at + SEC)
    return jid, ex.execution_id


def prune_settled(store: Store, older_than: int, jobs_per_call: int = 2, max_rows: int = 5) -> int:
    total, cursor = 0, None
    for _ in range(1000):
        deleted, cursor = store.prune_settled_jobs(older_than, cursor, jobs_per_call, max_rows)
        total += deleted
        if cursor is None:
            return total
    raise AssertionError("pruning did not finish")


def test_a_settled_job_leaves_the_store_with_its_history_once_the_retention_passed_it(store: Store) -> None:
    """keep_last kept a settled job's last runs, and the job, for ever: a delayed-job workload
    grew the store by every one-off it ever ran."""
    ran, ran_ex = finish_one_off(store, T0, effect="mail:1", name="report", key="make-report-1")
    cancelled = new_job(next_run_at=T0, schedule="* * * * *")
    create(store, cancelled)
    store.claim_due(ALL_BUCKETS, T0, 10)  # a PENDING tick, cancelled with the job
    assert store.cancel_job(cancelled.job_id, T0 + SEC) is not None
    assert prune_settled(store, older_than=T0 + SEC) == 0  # not before the cutoff has passed them
    assert prune_settled(store, older_than=T0 + 2 * SEC) == 2
    assert store.get_job(ran) is None and store.get_job(cancelled.job_id) is None
    assert store.get_execution(ran_ex) is None and store.list_executions(cancelled.job_id, 10) == []
    assert list_effects(store, ran_ex) == []
    assert store.find_jobs_by_name("report") == []  # its name is free again
    # its idempotency key went with it: the same creation makes a new job
    again = one_off(T0 + HOUR, name="report", key="make-report-1")
    [res] = store.create_jobs([again], T0 + HOUR)
    assert res.job_id == again.job_id


def test_jobs_not_done_with_stay(store: Store) -> None:
    active = new_job(next_run_at=T0 + HOUR, schedule="0 * * * *")
    paused = new_job(next_run_at=T0 + HOUR, schedule="0 * * * *")
    create(store, active, paused)
    assert store.set_job_status(paused.job_id, [JobStatus.ACTIVE], JobStatus.PAUSED, T0) is not None
    dead, _ = finish_one_off(store, T0, Outcome.FAILED)  # its run is in the dead-letter queue
    recent, _ = finish_one_off(store, T0 + 10 * MIN)  # ran after the cutoff
    told, _ = finish_one_off(store, T0 + 20 * MIN, Outcome.FAILED, retry=RetryPolicy(max_attempts=1),
                             notify=(nt.rule_from_json({"on": "failure", "via": "webhook",
                                                        "url": "https://hooks.example.com/cw",
                                                        "secret": "0123456789abcdef-secret"}),))
    assert [n.status for n in store.list_notifications(job_id=told)] == [NotificationStatus.PENDING]
    assert prune_settled(store, older_than=T0 + 5 * MIN) == 0
    for jid in (active.job_id, paused.job_id, dead, recent, told):
        assert store.get_job(jid) is not None, jid
    # once its dead run is purged, and the cutoff passed the others, they go too
    [dead_ex] = [e for e in store.list_dead() if e.job_id == dead]
    assert store.purge_dead(dead_ex.execution_id)
    assert prune_settled(store, older_than=T0 + 15 * MIN) == 2  # dead, recent
    assert store.get_job(told) is not None  # its failure is still to be told
    assert store.get_job(active.job_id) is not None and store.get_job(paused.job_id) is not None


def test_a_pass_over_many_settled_jobs_pages_and_finishes(store: Store) -> None:
    ids = [finish_one_off(store, T0 + i * SEC)[0] for i in range(7)]
    assert prune_settled(store, older_than=T0 + HOUR, jobs_per_call=2, max_rows=1) == 7
    assert all(store.get_job(j) is None for j in ids)
    assert prune_settled(store, older_than=T0 + HOUR) == 0
