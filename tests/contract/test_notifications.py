"""Contract: notifications as durable work, and the dead-man's windows, on every store.

Notifications are queued in the transaction that records an outcome, one per (execution,
rule) whatever happens twice; claimed, fenced and retried like executions; rate-limited per
(job, rule) with a summary; windows fire ``missed`` once per deadline, survive a reopen,
and are scanned per bucket. Time is a fake ``now_ms``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core.ids import bucket_of
from cronwheel.core.model import ExecOrigin, ExecStatus, RetryPolicy
from cronwheel.core.notify import DeliveryResult, NotificationStatus
from cronwheel.core.records import Completion, Outcome
from cronwheel.store.base import Store
from tests.contract.conftest import (
    HOUR,
    MIN,
    SEC,
    T0,
    StoreFactory,
    claim_all,
    create,
    new_job,
    one_off,
    start,
)

URL = "https://hooks.example.com/cw"
SECRET = "0123456789abcdef-secret"
ALL = list(range(64))


def rule(on: str, **kw: Any) -> nt.Rule:
    return nt.rule_from_json({"on": on, "via": "webhook", "url": URL, "secret": SECRET, **kw})


def run_once(store: Store, outcome: Outcome, at: int = T0, **kw: Any) -> tuple[str, str]:
    """A one-off job run to ``outcome``: (job id, execution id)."""
    kw.setdefault("retry", RetryPolicy(max_attempts=1))
    nj = one_off(at, **kw)
    [jid] = create(store, nj, now=at - MIN)
    [ex] = claim_all(store, at).executions
    g = start(store, ex.execution_id, at)
    store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, outcome, exit_code=3,
                                          error="boom", output="tail")], at + SEC)  # fmt: skip
    return jid, ex.execution_id


def test_an_outcome_queues_one_notification_per_matching_rule(store: Store) -> None:
    rules = (rule("failure"), rule("dead"), rule("success"))
    jid, eid = run_once(store, Outcome.FAILED, notify=rules)
    found = store.list_notifications(job_id=jid)
    assert sorted(n.event for n in found) == ["dead", "failure"]
    n = next(n for n in found if n.event == "dead")
    assert n.notification_id == f"{eid}@{rules[1].rule_id}" and n.status is NotificationStatus.PENDING
    assert n.body["executionId"] == eid and n.body["exitCode"] == 3 and n.body["output"] == "tail"
    assert n.rule == rules[1]  # the secret is kept: delivery signs with it


def test_an_outcome_says_whether_it_queued_a_notification(store: Store) -> None:
    """``CompletionResult.notified``: the node wakes its deliverer for those outcomes only, not
    after every completion batch of a herd that has no rules at all."""
    def finish(nj: Any, outcome: Outcome, at: int) -> bool:
        create(store, nj, now=at - MIN)
        [ex] = claim_all(store, at).executions
        g = start(store, ex.execution_id, at)
        [res] = store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, outcome)], at + SEC)
        return res.notified

    once = RetryPolicy(max_attempts=1)
    assert finish(one_off(T0, retry=once, notify=(rule("failure"),)), Outcome.FAILED, T0) is True
    assert finish(one_off(T0 + HOUR, retry=once, notify=(rule("failure"),)), Outcome.SUCCEEDED, T0 + HOUR) is False
    assert finish(one_off(T0 + 2 * HOUR, retry=once), Outcome.FAILED, T0 + 2 * HOUR) is False
    nj = one_off(T0 + 3 * HOUR, retry=once, notify=(rule("dead"),))  # a lost lease's outcome too
    create(store, nj, now=T0 + 3 * HOUR - MIN)
    [ex] = claim_all(store, T0 + 3 * HOUR).executions
    start(store, ex.execution_id, T0 + 3 * HOUR)
    [lost] = store.expire_leases(T0 + 5 * HOUR, 10)
    assert lost.execution_id == ex.execution_id and lost.notified is True


def test_jobs_without_rules_queue_nothing_and_tenant_defaults_apply(store: Store) -> None:
    run_once(store, Outcome.FAILED)
    assert store.list_notifications() == []
    assert store.set_tenant_notify("default", [rule("dead")], T0)
    assert store.tenant_notify("default") == (rule("dead"),)
    jid, _ = run_once(store, Outcome.FAILED, at=T0 + HOUR)
    assert [n.event for n in store.list_notifications(job_id=jid)] == ["dead"]
    # a job's own rules replace the defaults
    jid2, _ = run_once(store, Outcome.FAILED, at=T0 + 2 * HOUR, notify=(rule("failure"),))
    assert [n.event for n in store.list_notifications(job_id=jid2)] == ["failure"]
    assert not store.set_tenant_notify("nobody", [], T0) and store.tenant_notify("nobody") is None


def test_failure_is_told_once_per_execution_and_recovered_after_it(store: Store) -> None:
    rules = (rule("failure"), rule("recovered"))
    nj = one_off(T0, retry=RetryPolicy(max_attempts=3, initial_backoff_sec=0), notify=rules)
    [jid] = create(store, nj)
    [ex] = claim_all(store, T0).executions
    for attempt in (1, 2):  # two failed attempts of one execution: one failure notification
        g = start(store, ex.execution_id, T0 + attempt * MIN)
        [res] = store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, Outcome.FAILED)], T0 + attempt * MIN + 1)
        assert res.status is ExecStatus.RETRY_WAIT
    g = start(store, ex.execution_id, T0 + 3 * MIN)
    store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, Outcome.SUCCEEDED)], T0 + 3 * MIN + 1)
    assert sorted(n.event for n in store.list_notifications(job_id=jid)) == ["failure", "recovered"]


def test_late_is_told_as_the_late_run_starts(store: Store) -> None:
    rules = (rule("late", afterSec=30),)
    nj = one_off(T0, notify=rules, retry=RetryPolicy(max_attempts=2, initial_backoff_sec=0))
    [jid] = create(store, nj)
    [ex] = claim_all(store, T0).executions
    g = start(store, ex.execution_id, T0 + 45 * SEC)  # started 45 s after its tick
    [n] = store.list_notifications(job_id=jid)
    assert n.event == "late" and n.body["lagMs"] == 45 * SEC and n.body["status"] == "RUNNING"
    # its retry is not a new late start; its end tells nothing more to a late rule
    store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, Outcome.FAILED)], T0 + MIN)
    g2 = start(store, ex.execution_id, T0 + 2 * MIN)
    store.complete_executions([Completion(ex.execution_id, "w1", g2.lease_epoch, Outcome.SUCCEEDED)], T0 + 3 * MIN)
    assert len(store.list_notifications(job_id=jid)) == 1
    # on time (within afterSec): nothing; remote workers' claims are judged the same way
    jid2, _ = run_once(store, Outcome.SUCCEEDED, at=T0 + HOUR, notify=rules)
    assert store.list_notifications(job_id=jid2) == []
    nq = one_off(T0 + 2 * HOUR, notify=rules, target={"queue": "q"})
    [jq] = create(store, nq)
    claim_all(store, T0 + 2 * HOUR)
    assert len(store.claim_for_worker(["q"], "remote", 1, T0 + 2 * HOUR + 31 * SEC)) == 1
    assert [n.event for n in store.list_notifications(job_id=jq)] == ["late"]


def test_expired_lease_outcomes_notify_too(store: Store) -> None:
    nj = one_off(T0, retry=RetryPolicy(max_attempts=1), notify=(rule("dead"),))
    [jid] = create(store, nj)
    [ex] = claim_all(store, T0).executions
    start(store, ex.execution_id, T0)
    store.expire_leases(T0 + HOUR, 10)
    [n] = store.list_notifications(job_id=jid)
    assert n.event == "dead" and n.body["error"] == "lease expired"


def test_claim_is_fenced_retried_and_dead_lettered(store_factory: StoreFactory) -> None:
    store = store_factory()
    run_once(store, Outcome.FAILED, notify=(rule("dead", maxAttempts=2),))
    [n] = store.claim_notifications("node-a-1", T0 + MIN, 10, 60_000)
    assert n.status is NotificationStatus.RUNNING and n.attempt == 1 and n.lease_epoch == 1
    assert store.claim_notifications("node-b-1", T0 + MIN, 10, 60_000) == []  # one claimer at a time
    # the lease passes: another node takes it over; the first one's result is fenced
    assert store.expire_notification_leases(T0 + 3 * MIN, 10) == 1
    [n2] = store.claim_notifications("node-b-1", T0 + 3 * MIN, 10, 60_000)
    assert n2.lease_epoch == 2 and n2.attempt == 2
    assert store.finish_notifications([DeliveryResult(n.notification_id, 1, NotificationStatus.SENT)], T0 + 3 * MIN) == [False]
    assert store.finish_notifications([DeliveryResult(n.notification_id, 2, NotificationStatus.DEAD, error="refused")],
                                      T0 + 3 * MIN) == [True]  # fmt: skip
    [dead] = store.list_notifications(status=NotificationStatus.DEAD)
    assert dead.error == "refused"
    # survives a reopen, replays from zero
    reopened = store_factory()
    again = reopened.replay_notification(n.notification_id, T0 + 4 * MIN)
    assert again is not None and again.status is NotificationStatus.PENDING and again.attempt == 0
    assert reopened.replay_notification(n.notification_id, T0 + 4 * MIN) is None
    [n3] = reopened.claim_notifications("node-a-2", T0 + 4 * MIN, 10, 60_000)
    assert reopened.finish_notifications([DeliveryResult(n3.notification_id, n3.lease_epoch, NotificationStatus.SENT)],
                                         T0 + 4 * MIN) == [True]  # fmt: skip
    assert reopened.notification_counts(T0)["SENT"] == 1


def test_one_tenants_backlog_does_not_stand_between_another_tenant_and_delivery(store: Store) -> None:
    """Tenants are taken in turn, fewest deliveries under way first, oldest first within one.
    Oldest first across tenants let a tenant with a thousand failing jobs and a webhook that
    never answers (15 s a delivery, 16 at once) hold every other tenant's alerts back by the
    length of its own backlog: hours."""
    from cronwheel.core.tenants import Tenant

    for name in ("loud", "quiet"):
        store.create_tenant(Tenant(name), T0 - HOUR)
    for i in range(30):
        run_once(store, Outcome.FAILED, at=T0 + i * SEC, tenant="loud", notify=(rule("failure"),))
    for i in range(3):
        run_once(store, Outcome.FAILED, at=T0 + MIN + i * SEC, tenant="quiet", notify=(rule("failure"),))
    first = store.claim_notifications("n", T0 + HOUR, 4, 600_000)  # in turn: loud, quiet, loud, quiet
    assert sorted((n.tenant, n.created_at) for n in first) == [
        ("loud", T0 + SEC), ("loud", T0 + 2 * SEC), ("quiet", T0 + MIN + SEC), ("quiet", T0 + MIN + 2 * SEC),
    ]  # oldest first within a tenant
    # quiet's two are told: loud has two under way, quiet none, so quiet's third goes next
    done = [DeliveryResult(n.notification_id, n.lease_epoch, NotificationStatus.SENT) for n in first if n.tenant == "quiet"]
    assert store.finish_notifications(done, T0 + HOUR) == [True, True]
    [third] = store.claim_notifications("n", T0 + HOUR, 1, 600_000)
    assert third.tenant == "quiet"
    # quiet has nothing left that is due: loud takes every slot there is
    assert [n.tenant for n in store.claim_notifications("n", T0 + HOUR, 5, 600_000)] == ["loud"] * 5


def test_a_restarted_node_gives_back_its_previous_deliveries(store: Store) -> None:
    run_once(store, Outcome.FAILED, notify=(rule("dead"),))
    run_once(store, Outcome.FAILED, notify=(rule("dead"),))
    [n] = store.claim_notifications("node-a-old", T0 + MIN, 1, 600_000)
    [_neighbours] = store.claim_notifications("node-a-2-abc", T0 + MIN, 1, 600_000)  # node "node-a-2"
    assert store.release_notifications("node-a-", "node-a-new", T0 + MIN) == 1
    [again] = store.claim_notifications("node-a-new-", T0 + MIN, 10, 600_000)
    assert again.notification_id == n.notification_id and again.lease_epoch == n.lease_epoch + 1


def test_retry_waits_for_its_backoff(store: Store) -> None:
    run_once(store, Outcome.FAILED, notify=(rule("dead"),))
    [n] = store.claim_notifications("a", T0 + MIN, 10, 60_000)
    store.finish_notifications([DeliveryResult(n.notification_id, n.lease_epoch, NotificationStatus.PENDING,
                                               T0 + 2 * MIN, "HTTP 500")], T0 + MIN)  # fmt: skip
    assert store.claim_notifications("a", T0 + 2 * MIN - 1, 10, 60_000) == []
    assert len(store.claim_notifications("a", T0 + 2 * MIN, 10, 60_000)) == 1


def test_rate_limit_holds_back_and_summarizes(store: Store) -> None:
    r = rule("failure", maxPerHour=2)
    nj = new_job(schedule="* * * * *", retry=RetryPolicy(max_attempts=1), notify=(r,))
    [jid] = create(store, nj)
    sent = 0
    for i in range(5):
        now = T0 + i * MIN
        for ex in claim_all(store, now).executions:
            g = start(store, ex.execution_id, now)
            store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, Outcome.FAILED)], now + 1)
        for n in store.claim_notifications("a", now + 2, 10, 60_000):
            store.finish_notifications([DeliveryResult(n.notification_id, n.lease_epoch, NotificationStatus.SENT)], now + 3)
            sent += 1
    assert sent == 2
    held = store.list_notifications(job_id=jid, status=NotificationStatus.HELD)
    assert len(held) == 3
    assert store.summarize_held_notifications(T0 + 10 * MIN) == 0  # the rate window is still full
    # an hour after the first one went out, the rule has room: the summary comes first
    assert store.summarize_held_notifications(T0 + HOUR + 3 + 1) == 1
    [summary] = [n for n in store.list_notifications(job_id=jid) if n.event == "held"]
    assert summary.body["heldBack"] == 3 and summary.status is NotificationStatus.PENDING
    assert store.summarize_held_notifications(T0 + 3 * HOUR) == 0  # each held one is counted once
    [n] = store.claim_notifications("a", T0 + HOUR + 5, 10, 60_000)
    assert n.event == "held"  # it goes out like any other of the rule


def test_windows_fire_missed_once_per_deadline_and_rearm(store_factory: StoreFactory) -> None:
    store = store_factory()
    rules = (rule("missed"),)
    nj = new_job(schedule=None, target={"ping": {}}, next_run_at=None, expect_success_within_ms=HOUR, notify=rules)
    [jid] = create(store, nj, now=T0)
    b = [bucket_of(jid)]
    assert store.get_job(jid).window.deadline_at == T0 + HOUR  # type: ignore[union-attr]
    assert store.check_windows(b, T0 + HOUR - 1, 10) == []
    # a success (a ping) moves the window
    found, ex = store.record_ping(jid, "success", T0 + 30 * MIN)
    assert found and ex is not None and ex.status is ExecStatus.SUCCEEDED
    assert store.get_job(jid).window.deadline_at == T0 + 90 * MIN  # type: ignore[union-attr]
    # other buckets do not see it; the window survives a reopen (every node down, then back)
    assert store.check_windows([x for x in ALL if x not in b], T0 + 10 * HOUR, 10) == []
    store = store_factory()
    assert store.check_windows(b, T0 + 10 * HOUR, 10) == [(jid, T0 + 90 * MIN, 1)]  # once for the downtime
    job = store.get_job(jid)
    assert job is not None and job.window is not None and job.window.overdue_since == T0 + 90 * MIN
    assert job.window.deadline_at == T0 + 10 * HOUR + 30 * MIN
    assert store.check_windows(b, T0 + 10 * HOUR, 10) == []  # fired once
    assert store.notification_counts(T0 + 10 * HOUR)["overdueJobs"] == 1
    [n] = store.list_notifications(job_id=jid)
    assert n.subject == f"{jid}:missed:{T0 + 90 * MIN}" and n.body["lastSuccessAt"] is not None
    # a failure does not move it; a success does, and clears the overdue mark
    store.record_ping(jid, "fail", T0 + 10 * HOUR + 1, exit_code=2)
    assert store.get_job(jid).window.overdue_since is not None  # type: ignore[union-attr]
    store.record_ping(jid, "start", T0 + 10 * HOUR + 5)
    _, ok = store.record_ping(jid, "success", T0 + 10 * HOUR + 10)
    assert ok is not None and ok.started_at == T0 + 10 * HOUR + 5
    job = store.get_job(jid)
    assert job is not None and job.window is not None and job.window.overdue_since is None
    assert job.window.deadline_at == T0 + 11 * HOUR + 10
    assert store.notification_counts(T0 + 10 * HOUR)["overdueJobs"] == 0


def test_a_cancelled_watched_job_is_told_missed_once_then_retired(store: Store) -> None:
    # cancelled by mistake: its next deadline still fires, but only that one, and it stops
    # counting as overdue (an alert on cronwheel_overdue_jobs would page forever otherwise)
    nj = new_job(schedule=None, target={"ping": {}}, next_run_at=None, expect_success_within_ms=HOUR,
                 notify=(rule("missed"),))
    [jid] = create(store, nj, now=T0)
    b = [bucket_of(jid)]
    assert store.cancel_job(jid, T0 + MIN) is not None
    assert store.check_windows(b, T0 + HOUR - 1, 10) == []  # not before its deadline
    assert store.check_windows(b, T0 + HOUR, 10) == [(jid, T0 + HOUR, 1)]
    [n] = store.list_notifications(job_id=jid)
    assert n.body["cancelled"] is True
    for later in (2 * HOUR, 30 * HOUR):
        assert store.check_windows(b, T0 + later, 10) == []
    assert store.notification_counts(T0 + 30 * HOUR)["overdueJobs"] == 0
    job = store.get_job(jid)
    assert job is not None and job.window is None


def test_pings_are_history_and_notify(store: Store) -> None:
    nj = new_job(schedule=None, target={"ping": {}}, next_run_at=None, expect_success_within_ms=HOUR,
                 notify=(rule("failure"),))  # fmt: skip
    [jid] = create(store, nj, now=T0)
    assert store.record_ping("nope", "success", T0) == (False, None)
    _, a = store.record_ping(jid, "fail", T0 + 5, exit_code=7, output="disk full")
    _, b = store.record_ping(jid, "fail", T0 + 5)  # the same millisecond: the next one
    assert a is not None and b is not None and a.execution_id != b.execution_id
    hist = store.list_executions(jid)
    assert [e.status for e in hist] == [ExecStatus.DEAD, ExecStatus.DEAD] and hist[1].exit_code == 7
    assert {e.origin for e in hist} == {ExecOrigin.PING}  # not "schedule": nothing here was scheduled
    assert len(store.list_notifications(job_id=jid)) == 2
    assert store.record_ping(jid, "success", T0, tenant="someone-else") == (False, None)


def test_only_a_dead_notification_is_purged_and_only_by_its_tenant(store: Store) -> None:
    run_once(store, Outcome.FAILED, notify=(rule("failure", maxAttempts=1),))
    [n] = store.list_notifications()
    assert not store.purge_notification(n.notification_id)  # PENDING: not a dead letter
    [claimed] = store.claim_notifications("n1", T0 + 2 * SEC, 10, 30_000)
    store.finish_notifications([DeliveryResult(claimed.notification_id, claimed.lease_epoch, NotificationStatus.DEAD,
                                               error="receiver gone")], T0 + 3 * SEC)  # fmt: skip
    [dead] = store.list_notifications(status=NotificationStatus.DEAD)
    assert not store.purge_notification(dead.notification_id, tenant="someone-else")
    assert store.purge_notification(dead.notification_id, tenant=dead.tenant)
    assert store.list_notifications() == [] and not store.purge_notification(dead.notification_id)


def test_told_notifications_are_pruned_dead_ones_kept(store: Store) -> None:
    run_once(store, Outcome.FAILED, notify=(rule("failure"), rule("dead")))
    a, b = store.claim_notifications("a", T0 + MIN, 10, 60_000)
    store.finish_notifications([DeliveryResult(a.notification_id, a.lease_epoch, NotificationStatus.SENT),
                                DeliveryResult(b.notification_id, b.lease_epoch, NotificationStatus.DEAD)], T0 + MIN)  # fmt: skip
    assert store.prune_notifications(T0, 10) == 0  # not old enough
    assert store.prune_notifications(T0 + HOUR, 10) == 1
    assert [n.status for n in store.list_notifications()] == [NotificationStatus.DEAD]


def test_update_job_saves_rules_and_rearms_a_changed_window(store: Store) -> None:
    nj = new_job(schedule="0 3 * * *", next_run_at=T0 + HOUR)
    [jid] = create(store, nj, now=T0)
    job = store.get_job(jid)
    assert job is not None and job.window is None and job.spec.notify == ()
    spec = replace(job.spec, notify=(rule("failure"),), expect_success_within_ms=2 * HOUR)
    store.update_job(jid, spec, job.next_run_at, False, T0 + MIN)
    job = store.get_job(jid)
    assert job is not None and job.spec.notify == (rule("failure"),) and job.window is not None
    assert job.window.deadline_at == T0 + MIN + 2 * HOUR
    # the rules now match outcomes (the job has a watch row)
    [ex] = store.claim_due(ALL, T0 + HOUR, 10).executions
    g = start(store, ex.execution_id, T0 + HOUR)
    store.complete_executions([Completion(ex.execution_id, "w1", g.lease_epoch, Outcome.FAILED)], T0 + HOUR + 1)
    assert [n.event for n in store.list_notifications(job_id=jid)] == ["failure"]
    # the same window kept: not re-armed; removed: disarmed
    store.update_job(jid, replace(job.spec, name="renamed"), job.next_run_at, False, T0 + 2 * HOUR)
    assert store.get_job(jid).window.deadline_at == T0 + MIN + 2 * HOUR  # type: ignore[union-attr]
    store.update_job(jid, replace(job.spec, expect_success_within_ms=None, notify=()), job.next_run_at, False, T0 + 2 * HOUR)
    job = store.get_job(jid)
    assert job is not None and job.window is None and job.spec.notify == ()
    assert store.check_windows(ALL, T0 + 100 * HOUR, 10) == []
