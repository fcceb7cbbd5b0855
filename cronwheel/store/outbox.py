"""Notifications as durable work, written once for both stores.

Every function here runs inside the caller's write transaction, through a ``Sql`` adapter
that hides the two drivers' differences (parameter style, JSON columns, list parameters,
row locks). The SQL itself is portable (``ON CONFLICT``, ``RETURNING``, partial indexes).

* ``after_outcomes`` is the hook the stores call in the transaction that records an
  execution's outcome (a completion, an expired lease, a ping): it matches the job's rules
  (or its tenant's defaults) and inserts one notification per (execution, rule). The
  primary key ``subject@rule_id`` makes the dedup a constraint: the same outcome noticed
  twice is told once. It also keeps the job's watch row (last outcome, dead-man's window).
* ``claim`` / ``finish`` / ``expire`` / ``release_owner`` move notifications through
  PENDING → RUNNING → SENT | PENDING (retry) | DEAD, fenced by ``lease_epoch`` like
  executions; ``claim`` applies each rule's rate limit (HELD instead of RUNNING), and
  ``summarize_held`` later tells what was held back in one notification.
* ``check_windows`` fires ``missed`` for the dead-man's windows that passed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cronwheel.core import deadman
from cronwheel.core import notify as nt
from cronwheel.core.ids import bucket_of, execution_id
from cronwheel.core.model import ExecOrigin, ExecStatus, Execution, JobSpec, JobStatus, Priority
from cronwheel.core.schedule import format_instant
from cronwheel.store.common import RowReader

HOUR_MS = 3_600_000


@dataclass
class Sql:
    """One backend's way of running the portable statements below (``:name`` parameters)."""

    rows: Callable[[str, dict[str, Any]], list[Any]]
    changes: Callable[[str, dict[str, Any]], int]
    decode: Callable[[Any], Any]  #: a JSON column's value as read → Python
    json_cast: str  #: appended to a parameter bound into a JSON column ("" or "::json")
    skip_locked: str  #: "" or "FOR UPDATE SKIP LOCKED"
    #: a ``col IN (list)`` condition for a list parameter ``name`` of ``kind`` ("text"/"int")
    in_list: Callable[[str, str, str], str]
    list_value: Callable[[Sequence[Any]], Any]


def pg_statement(sql: str) -> str:
    """``:name`` parameters to psycopg's ``%(name)s`` (and a literal % doubled)."""
    return re.sub(r"(?<![:\w]):([a-z_][a-z0-9_]*)", r"%(\1)s", sql.replace("%", "%%"))


NOTIFICATION_COLUMNS = """notification_id, subject, rule_id, job_id, tenant, event, rule, body, status,
    attempt, lease_epoch, owner, lease_until, available_at, created_at, sent_at, error"""


def notification_from_row(sql: Sql, r: Any) -> nt.Notification:
    return nt.Notification(
        r[0], r[1], r[2], r[3], r[4], r[5], nt.rule_from_json(sql.decode(r[6])), sql.decode(r[7]),
        nt.NotificationStatus(r[8]), *r[9:17],
    )


# ---------------------------------------------------------------- jobs


def after_create(sql: Sql, watched: Sequence[tuple[str, int | None]], now_ms: int) -> None:
    """New jobs with rules of their own or a window, as ``(job_id, window_ms or None)``: each
    gets its watch row (the outcome hook looks only at jobs that have one, unless a tenant
    has default rules), and its dead-man's window is armed."""
    for job_id, window_ms in watched:
        w = None if window_ms is None else deadman.armed(window_ms, now_ms)
        sql.changes(
            """INSERT INTO job_watch (job_id, bucket_id, window_ms, deadline_at)
               VALUES (:job, :bucket, :window, :deadline)""",
            {"job": job_id, "bucket": bucket_of(job_id), "window": window_ms, "deadline": None if w is None else w.deadline_at},
        )


def after_update(sql: Sql, job_id: str, old: JobSpec, new: JobSpec, now_ms: int) -> None:
    """A job changed in place (``update_job``): its rules and window are saved; a job that
    now has either gets its watch row; a changed window is armed afresh from now (the old
    deadline and overdue mark belonged to the old promise), a removed one is disarmed."""
    sql.changes(
        f"UPDATE job_definitions SET notify = :notify{sql.json_cast}, expect_ms = :expect WHERE job_id = :job",
        {"job": job_id, "notify": json.dumps(nt.rules_to_json(new.notify)), "expect": new.expect_success_within_ms},
    )
    if new.notify or new.expect_success_within_ms is not None:
        sql.changes(
            "INSERT INTO job_watch (job_id, bucket_id) VALUES (:job, :bucket) ON CONFLICT (job_id) DO NOTHING",
            {"job": job_id, "bucket": bucket_of(job_id)},
        )
    if new.expect_success_within_ms == old.expect_success_within_ms:
        return
    w = None if new.expect_success_within_ms is None else deadman.armed(new.expect_success_within_ms, now_ms)
    sql.changes(
        """UPDATE job_watch SET window_ms = :window, deadline_at = :deadline, overdue_since = NULL
           WHERE job_id = :job""",
        {"job": job_id, "window": None if w is None else w.window_ms, "deadline": None if w is None else w.deadline_at},
    )


# ---------------------------------------------------------------- the outcome hook

_WATCHED = """
SELECT j.id, j.tenant, d.name, d.notify, t.notify, d.expect_ms, w.last_outcome, w.window_ms,
       w.deadline_at, w.overdue_since, w.last_start
FROM jobs AS j JOIN job_definitions AS d ON d.job_id = j.id JOIN tenants AS t ON t.name = j.tenant
LEFT JOIN job_watch AS w ON w.job_id = j.id
WHERE {cond} AND (CAST(d.notify AS TEXT) <> '[]' OR CAST(t.notify AS TEXT) <> '[]' OR d.expect_ms IS NOT NULL)
"""

_WATCH_PROBE = """
SELECT job_id FROM job_watch WHERE {cond}
UNION ALL
SELECT NULL FROM (SELECT 1 AS one FROM tenants WHERE CAST(notify AS TEXT) <> '[]' LIMIT 1) AS defaults
"""

_EXEC = """
SELECT execution_id, job_id, tenant, priority, scheduled_at, status, attempt, lease_epoch,
    worker_id, lease_until, available_at, created_at, started_at, finished_at, exit_code,
    error, output, reason, max_attempts, queue, context, origin
FROM executions WHERE {cond}
"""

_INSERT = """
INSERT INTO notifications (notification_id, subject, rule_id, job_id, tenant, event, rule, body,
                           status, available_at, created_at)
VALUES (:id, :subject, :rule_id, :job, :tenant, :event, :rule{json}, :body{json}, :status, :now, :now)
ON CONFLICT (notification_id) DO NOTHING
"""

#: a success moves the window; a failure leaves it alone (so that a window the watcher
#: re-armed meanwhile, in another transaction, is never written back)
_UPSERT_SUCCESS = """
INSERT INTO job_watch (job_id, bucket_id, last_outcome, last_success, window_ms, deadline_at, overdue_since)
VALUES (:job, :bucket, 'success', :success, :window, :deadline, NULL)
ON CONFLICT (job_id) DO UPDATE SET last_outcome = 'success', last_success = :success,
    window_ms = :window, deadline_at = :deadline, overdue_since = NULL, last_start = NULL
"""
_UPSERT_FAILURE = """
INSERT INTO job_watch (job_id, bucket_id, last_outcome, window_ms, deadline_at)
VALUES (:job, :bucket, 'failure', :window, :deadline)
ON CONFLICT (job_id) DO UPDATE SET last_outcome = 'failure', last_start = NULL
"""


def _insert(sql: Sql, subject: str, rule: nt.Rule, job_id: str, tenant: str, event: str,
            body: dict[str, Any], now_ms: int, status: str = "PENDING") -> int:
    nid = nt.notification_id(subject, rule)
    body = {"notificationId": nid, "event": event, "ruleId": rule.rule_id, **body}
    return sql.changes(_INSERT.format(json=sql.json_cast), {
        "id": nid, "subject": subject, "rule_id": rule.rule_id, "job": job_id, "tenant": tenant,
        "event": event, "rule": json.dumps(rule.to_json()), "body": json.dumps(body), "status": status,
        "now": now_ms,
    })


def execution_body(ex: Execution, job_name: str | None) -> dict[str, Any]:
    def iso(ms: int | None) -> str | None:
        return None if ms is None else format_instant(ms)

    return {
        "jobId": ex.job_id, "jobName": job_name, "tenant": ex.tenant, "executionId": ex.execution_id,
        "status": ex.status.value, "attempt": ex.attempt, "maxAttempts": ex.max_attempts,
        "scheduledAt": iso(ex.scheduled_at), "startedAt": iso(ex.started_at), "finishedAt": iso(ex.finished_at),
        "lagMs": None if ex.started_at is None else ex.started_at - ex.scheduled_at,
        "exitCode": ex.exit_code, "error": ex.error, "reason": ex.reason, "output": nt.output_tail(ex.output),
    }


def _watched_rows(sql: Sql, job_ids: list[str]) -> dict[str, Any]:
    """The rule-relevant rows of those of ``job_ids`` that have rules (their own or their
    tenant's) or a window, by job id. The hot path, in one statement first: the jobs that
    have a watch row (rules or a window of their own), plus a NULL row if any tenant has
    default rules (then every job may have rules to match, and all are read)."""
    found = [r[0] for r in sql.rows(_WATCH_PROBE.format(cond=sql.in_list("job_id", "ids", "text")),
                                    {"ids": sql.list_value(job_ids)})]  # fmt: skip
    if None not in found:
        if not found:
            return {}
        job_ids = found
    return {r[0]: r for r in sql.rows(_WATCHED.format(cond=sql.in_list("j.id", "ids", "text")),
                                      {"ids": sql.list_value(job_ids)})}  # fmt: skip


def _executions(sql: Sql, ids: Sequence[str]) -> dict[str, Execution]:
    reader = RowReader(sql.decode)
    return {r[0]: reader.execution(r) for r in sql.rows(
        _EXEC.format(cond=sql.in_list("execution_id", "ids", "text")), {"ids": sql.list_value(sorted(ids))}
    )}  # fmt: skip


def after_starts(sql: Sql, starts: Sequence[tuple[str, str, int, int]], now_ms: int) -> int:
    """The start hook: ``(execution_id, job_id, attempt, scheduled_at)`` just handed to a
    worker in this transaction. A first attempt started more than a ``late`` rule's
    ``afterSec`` after its tick is told now, while it runs. Starts less than a second late
    (every start of a healthy node) cost nothing: no rule can call them late."""
    late = [(eid, job_id, now_ms - at) for eid, job_id, attempt, at in starts if attempt == 1 and now_ms - at >= 1000]
    if not late:
        return 0
    watched = _watched_rows(sql, sorted({job_id for _, job_id, _ in late}))
    mine = [x for x in late if x[1] in watched]
    if not mine:
        return 0
    execs = _executions(sql, [eid for eid, _, _ in mine])
    queued = 0
    for eid, job_id, lag in mine:
        ex = execs.get(eid)
        if ex is None:
            continue
        _, tenant, name, job_rules, tenant_rules = watched[job_id][:5]
        rules = nt.effective_rules(nt.stored_rules(sql.decode(job_rules)), nt.stored_rules(sql.decode(tenant_rules)))
        for rule in nt.matching(rules, {nt.NotifyOn.LATE}, lag):
            queued += _insert(sql, eid, rule, job_id, tenant, rule.on.value, execution_body(ex, name), now_ms)
    return queued


def after_outcomes(sql: Sql, outcomes: Sequence[tuple[str, str, str]], now_ms: int) -> int:
    """The outcome hook: ``(execution_id, job_id, new status)`` as just written in this
    transaction (RETRY_WAIT and DEAD are failed attempts). Jobs with no rules, no tenant
    defaults and no window cost one narrow read per batch. Returns notifications queued."""
    if not outcomes:
        return 0
    watched = _watched_rows(sql, sorted({job_id for _, job_id, _ in outcomes}))
    if not watched:
        return 0
    mine = [o for o in outcomes if o[1] in watched]
    execs = _executions(sql, {o[0] for o in mine})
    queued = 0
    for eid, job_id, status in mine:
        ex = execs.get(eid)
        if ex is None:
            continue
        _, tenant, name, job_rules, tenant_rules, expect_ms, last_outcome, window_ms, deadline_at, overdue_since, _ = watched[job_id]
        rules = nt.effective_rules(nt.stored_rules(sql.decode(job_rules)), nt.stored_rules(sql.decode(tenant_rules)))
        events = nt.events_for(status, last_outcome == "failure")
        body = execution_body(ex, name)
        for rule in nt.matching(rules, events, None):
            queued += _insert(sql, eid, rule, job_id, tenant, rule.on.value, body, now_ms)
        succeeded = status == ExecStatus.SUCCEEDED.value
        window: deadman.Window | None = None
        if expect_ms is not None:
            window = deadman.Window(window_ms or expect_ms, deadline_at or now_ms + expect_ms, overdue_since)
            if window.window_ms != expect_ms:
                window = deadman.armed(expect_ms, now_ms)
            if succeeded:
                window = deadman.after_success(window, ex.finished_at or now_ms)
        args = {"job": job_id, "bucket": bucket_of(job_id),
                "window": None if window is None else window.window_ms,
                "deadline": None if window is None else window.deadline_at}  # fmt: skip
        if succeeded:
            sql.changes(_UPSERT_SUCCESS, {**args, "success": ex.finished_at or now_ms})
        else:
            sql.changes(_UPSERT_FAILURE, args)
        watched[job_id] = (*watched[job_id][:6], "success" if succeeded else "failure", *watched[job_id][7:])
    return queued


# ---------------------------------------------------------------- pings


def record_ping(
    sql: Sql, job_id: str, kind: str, now_ms: int, exit_code: int | None, output: str | None,
    tenant: str | None,
) -> tuple[bool, Execution | None]:
    """A ping: ``start`` remembers when the run began; ``success``/``fail`` records the run
    as a finished execution (SUCCEEDED, or DEAD: a run elsewhere has no retries here) and
    runs the outcome hook on it, so rules and the window see it like any other run.
    Returns ``(job found, execution recorded)``."""
    rows = sql.rows(
        """SELECT j.id, j.tenant, j.priority, w.last_start FROM jobs AS j
           LEFT JOIN job_watch AS w ON w.job_id = j.id
           WHERE j.id = :job AND (CAST(:tenant AS TEXT) IS NULL OR j.tenant = :tenant)""",
        {"job": job_id, "tenant": tenant},
    )
    if not rows:
        return False, None
    _, job_tenant, priority, last_start = rows[0]
    if kind == "start":
        sql.changes(
            """INSERT INTO job_watch (job_id, bucket_id, last_start) VALUES (:job, :bucket, :now)
               ON CONFLICT (job_id) DO UPDATE SET last_start = :now""",
            {"job": job_id, "bucket": bucket_of(job_id), "now": now_ms},
        )
        return True, None
    tick = now_ms
    taken = {r[0] for r in sql.rows(
        "SELECT scheduled_at FROM executions WHERE job_id = :job AND scheduled_at >= :now AND scheduled_at < :end",
        {"job": job_id, "now": now_ms, "end": now_ms + 1000},
    )}  # fmt: skip
    while tick in taken:
        tick += 1
    ok = kind == "success"
    status = ExecStatus.SUCCEEDED if ok else ExecStatus.DEAD
    started = last_start if last_start is not None and last_start <= now_ms else now_ms
    eid = execution_id(job_id, tick)
    error = None if ok else "ping: fail" + ("" if exit_code is None else f" (exit {exit_code})")
    sql.changes(
        """INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status, attempt,
               lease_epoch, available_at, created_at, started_at, finished_at, exit_code, error, output,
               reason, max_attempts, origin)
           VALUES (:id, :job, :tenant, :priority, :tick, :status, 1, 0, :tick, :now, :started, :now,
                   :exit_code, :error, :output, :reason, 1, :origin)""",
        {"id": eid, "job": job_id, "tenant": job_tenant, "priority": priority, "tick": tick,
         "status": status.value, "now": now_ms, "started": started, "exit_code": exit_code,
         "error": error, "output": output, "reason": f"ping: {kind}", "origin": ExecOrigin.PING.value},
    )  # fmt: skip
    after_outcomes(sql, [(eid, job_id, status.value)], now_ms)
    ex = Execution(eid, job_id, job_tenant, Priority(priority), tick, status, attempt=1, available_at=tick,
                   created_at=now_ms, started_at=started, finished_at=now_ms, exit_code=exit_code,
                   error=error, output=output, reason=f"ping: {kind}", max_attempts=1,
                   origin=ExecOrigin.PING)  # fmt: skip
    return True, ex


# ---------------------------------------------------------------- delivery


def claim(sql: Sql, owner: str, now_ms: int, limit: int, lease_ms: int) -> list[nt.Notification]:
    """Take up to ``limit`` PENDING notifications that are due: RUNNING under ``owner``,
    attempt + 1, lease_epoch + 1. A rule over its rate (``maxPerHour`` sent or in flight,
    per job) gets HELD instead (``summarize_held`` tells about them later)."""
    cands = sql.rows(
        f"""SELECT notification_id, job_id, rule_id, rule FROM notifications
            WHERE status = 'PENDING' AND available_at <= :now
            ORDER BY available_at, notification_id LIMIT :limit {sql.skip_locked}""",
        {"now": now_ms, "limit": limit},
    )
    used: dict[tuple[str, str], int] = {}
    claimed: list[nt.Notification] = []
    for nid, job_id, rule_id, rule_json in cands:
        key = (job_id, rule_id)
        if key not in used:
            used[key] = _sent_or_sending(sql, job_id, rule_id, now_ms)
        rule = nt.rule_from_json(sql.decode(rule_json))
        if not nt.within_rate(used[key], rule):
            sql.changes("UPDATE notifications SET status = 'HELD' WHERE notification_id = :id AND status = 'PENDING'", {"id": nid})
            continue
        rows = sql.rows(
            f"""UPDATE notifications SET status = 'RUNNING', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
                    owner = :owner, lease_until = :until
                WHERE notification_id = :id AND status = 'PENDING' RETURNING {NOTIFICATION_COLUMNS}""",
            {"id": nid, "owner": owner, "until": now_ms + lease_ms},
        )
        if rows:
            used[key] += 1
            claimed.append(notification_from_row(sql, rows[0]))
    return claimed


def _sent_or_sending(sql: Sql, job_id: str, rule_id: str, now_ms: int) -> int:
    rows = sql.rows(
        """SELECT count(*) FROM notifications WHERE job_id = :job AND rule_id = :rule
           AND ((status = 'SENT' AND sent_at > :since) OR status = 'RUNNING')""",
        {"job": job_id, "rule": rule_id, "since": now_ms - HOUR_MS},
    )
    return int(rows[0][0])


def finish(sql: Sql, results: Sequence[nt.DeliveryResult], now_ms: int) -> list[bool]:
    """Apply delivery results, each only while the notification is RUNNING at its epoch."""
    done = []
    for r in results:
        done.append(sql.changes(
            """UPDATE notifications SET status = :status, available_at = COALESCE(:avail, available_at),
                   error = :error, sent_at = :sent, owner = NULL, lease_until = NULL
               WHERE notification_id = :id AND status = 'RUNNING' AND lease_epoch = :epoch""",
            {"id": r.notification_id, "epoch": r.lease_epoch, "status": r.status.value, "avail": r.available_at,
             "error": r.error, "sent": now_ms if r.status is nt.NotificationStatus.SENT else None},
        ) == 1)  # fmt: skip
    return done


def _give_back(sql: Sql, rows: list[Any], now_ms: int, error: str) -> int:
    """RUNNING notifications whose deliverer is gone: tried again at once, or dead-lettered
    when that was their last attempt."""
    n = 0
    for nid, epoch, attempt, rule in rows:
        status = "DEAD" if attempt >= nt.rule_from_json(sql.decode(rule)).max_attempts else "PENDING"
        n += sql.changes(
            """UPDATE notifications SET status = :status, available_at = :now, error = :error,
                   owner = NULL, lease_until = NULL
               WHERE notification_id = :id AND status = 'RUNNING' AND lease_epoch = :epoch""",
            {"id": nid, "epoch": epoch, "status": status, "now": now_ms, "error": error},
        )
    return n


def expire(sql: Sql, now_ms: int, limit: int) -> int:
    rows = sql.rows(
        """SELECT notification_id, lease_epoch, attempt, rule FROM notifications
           WHERE status = 'RUNNING' AND lease_until < :now ORDER BY lease_until LIMIT :limit""",
        {"now": now_ms, "limit": limit},
    )
    return _give_back(sql, rows, now_ms, "delivery lease expired")


def release_owner(sql: Sql, prefix: str, current: str, now_ms: int) -> int:
    """A restarted node: the deliveries its previous incarnation had under way died with it."""
    rows = sql.rows(
        """SELECT notification_id, lease_epoch, attempt, rule FROM notifications
           WHERE status = 'RUNNING' AND substr(owner, 1, :n) = :prefix AND owner <> :current""",
        {"n": len(prefix), "prefix": prefix, "current": current},
    )
    return _give_back(sql, rows, now_ms, "its node stopped during delivery")


def summarize_held(sql: Sql, now_ms: int) -> int:
    """For each (job, rule) with notifications held back by the rate limit and room again
    under it: one ``held`` notification that counts them (it goes out, and counts, like any
    other of the rule); they are marked counted."""
    groups = sql.rows(
        """SELECT job_id, rule_id, tenant, count(*), min(created_at), max(created_at), max(notification_id)
           FROM notifications WHERE status = 'HELD' AND sent_at IS NULL GROUP BY job_id, rule_id, tenant""",
        {},
    )
    made = 0
    for job_id, rule_id, tenant, count, first, last, sample in groups:
        rule_row = sql.rows("SELECT rule FROM notifications WHERE notification_id = :id", {"id": sample})
        rule = nt.rule_from_json(sql.decode(rule_row[0][0]))
        if not nt.within_rate(_sent_or_sending(sql, job_id, rule_id, now_ms), rule):
            continue  # not before the rule has room again: the summary counts against its rate

        body = {"jobId": job_id, "tenant": tenant, "heldBack": int(count), "firstAt": format_instant(first),
                "lastAt": format_instant(last), "maxPerHour": rule.max_per_hour}  # fmt: skip
        made += _insert(sql, f"{job_id}:held:{now_ms}", rule, job_id, tenant, "held", body, now_ms)
        sql.changes(
            """UPDATE notifications SET sent_at = :now WHERE job_id = :job AND rule_id = :rule
               AND status = 'HELD' AND sent_at IS NULL AND created_at <= :last""",
            {"now": now_ms, "job": job_id, "rule": rule_id, "last": last},
        )
    return made


# ---------------------------------------------------------------- dead-man's windows


def check_windows(sql: Sql, buckets: Sequence[int], now_ms: int, limit: int) -> list[tuple[str, int, int]]:
    """Fire ``missed`` for each window of ``buckets`` whose deadline has come: the window is
    re-armed by compare-and-set on its deadline (two nodes, or a retried transaction, fire it
    once), then one notification per ``missed`` rule. Returns ``(job_id, deadline, queued)``."""
    if not buckets:
        return []
    rows = sql.rows(
        f"""SELECT w.job_id, w.window_ms, w.deadline_at, w.overdue_since, j.tenant, d.name, d.notify,
                   t.notify, w.last_success, j.status
            FROM job_watch AS w JOIN jobs AS j ON j.id = w.job_id
            JOIN job_definitions AS d ON d.job_id = w.job_id JOIN tenants AS t ON t.name = j.tenant
            WHERE {sql.in_list("w.bucket_id", "buckets", "int")} AND w.deadline_at <= :now
            ORDER BY w.deadline_at LIMIT :limit""",
        {"buckets": sql.list_value(list(buckets)), "now": now_ms, "limit": limit},
    )
    fired = []
    for job_id, window_ms, deadline_at, overdue_since, tenant, name, job_rules, tenant_rules, last_success, status in rows:
        missed = deadman.check(deadman.Window(window_ms, deadline_at, overdue_since), now_ms)
        if missed is None:
            continue
        cancelled = status == JobStatus.CANCELLED.value
        if cancelled:
            # cancelled, maybe by mistake: told once, when its deadline passes, then retired,
            # or a job nobody runs any more would be reported missing forever
            moved = sql.changes("DELETE FROM job_watch WHERE job_id = :job AND deadline_at = :old",
                                {"job": job_id, "old": deadline_at})
        else:
            moved = sql.changes(
                """UPDATE job_watch SET deadline_at = :next, overdue_since = :since
                   WHERE job_id = :job AND deadline_at = :old""",
                {"job": job_id, "old": deadline_at, "next": missed.window.deadline_at, "since": missed.window.overdue_since},
            )
        if not moved:
            continue
        rules = nt.effective_rules(nt.stored_rules(sql.decode(job_rules)), nt.stored_rules(sql.decode(tenant_rules)))
        body = {
            "jobId": job_id, "jobName": name, "tenant": tenant, "deadline": format_instant(deadline_at),
            "window": nt.format_window(window_ms), "overdueSince": format_instant(missed.window.overdue_since or deadline_at),
            "lastSuccessAt": None if last_success is None else format_instant(last_success),
            "cancelled": cancelled,
        }  # fmt: skip
        subject = nt.missed_subject(job_id, deadline_at)
        queued = sum(_insert(sql, subject, r, job_id, tenant, "missed", body, now_ms)
                     for r in rules if r.on is nt.NotifyOn.MISSED)  # fmt: skip
        fired.append((job_id, deadline_at, queued))
    return fired


# ---------------------------------------------------------------- reads


def list_notifications(
    sql: Sql, tenant: str | None, job_id: str | None, status: str | None, limit: int, before: str | None
) -> list[nt.Notification]:
    """Newest first (created_at, then id), paginated by ``before`` = ``<created_at>/<id>``."""
    b_at, b_id = (None, None)
    if before is not None:
        at, _, nid = before.partition("|")
        b_at, b_id = int(at), nid
    rows = sql.rows(
        f"""SELECT {NOTIFICATION_COLUMNS} FROM notifications
            WHERE (CAST(:tenant AS TEXT) IS NULL OR tenant = :tenant)
              AND (CAST(:job AS TEXT) IS NULL OR job_id = :job)
              AND (CAST(:status AS TEXT) IS NULL OR status = :status)
              AND (CAST(:b_at AS BIGINT) IS NULL OR created_at < :b_at OR (created_at = :b_at AND notification_id < :b_id))
            ORDER BY created_at DESC, notification_id DESC LIMIT :limit""",
        {"tenant": tenant, "job": job_id, "status": status, "b_at": b_at, "b_id": b_id, "limit": limit},
    )
    return [notification_from_row(sql, r) for r in rows]


def replay(sql: Sql, notification_id: str, now_ms: int, tenant: str | None) -> nt.Notification | None:
    """A DEAD or HELD notification goes out again: PENDING, attempts from zero."""
    rows = sql.rows(
        f"""UPDATE notifications SET status = 'PENDING', attempt = 0, available_at = :now, sent_at = NULL
            WHERE notification_id = :id AND status IN ('DEAD', 'HELD')
              AND (CAST(:tenant AS TEXT) IS NULL OR tenant = :tenant)
            RETURNING {NOTIFICATION_COLUMNS}""",
        {"id": notification_id, "now": now_ms, "tenant": tenant},
    )
    return notification_from_row(sql, rows[0]) if rows else None


def purge(sql: Sql, notification_id: str, tenant: str | None) -> bool:
    """Delete a DEAD notification for good (its receiver is gone, or it is not worth telling
    any more): the notifications' dead-letter queue shrinks, and an alert on it clears."""
    return sql.changes(
        """DELETE FROM notifications WHERE notification_id = :id AND status = 'DEAD'
           AND (CAST(:tenant AS TEXT) IS NULL OR tenant = :tenant)""",
        {"id": notification_id, "tenant": tenant},
    ) == 1


def prune(sql: Sql, older_than_ms: int, limit: int) -> int:
    """Delete up to ``limit`` told notifications (SENT, or HELD and counted in a summary)
    created before ``older_than_ms``; the dead-lettered ones are kept, like the DLQ's runs."""
    rows = sql.rows(
        """SELECT notification_id FROM notifications
           WHERE status IN ('SENT', 'HELD') AND sent_at IS NOT NULL AND created_at < :before
           ORDER BY created_at LIMIT :limit""",
        {"before": older_than_ms, "limit": limit},
    )
    return sum(sql.changes("DELETE FROM notifications WHERE notification_id = :id", {"id": r[0]}) for r in rows)


def counts(sql: Sql, now_ms: int) -> dict[str, int]:
    """Notifications by status, and jobs whose window is overdue (for /metrics and status)."""
    out = {s.value: 0 for s in nt.NotificationStatus}
    for status, n in sql.rows("SELECT status, count(*) FROM notifications GROUP BY status", {}):
        out[status] = int(n)
    rows = sql.rows(
        "SELECT count(*) FROM job_watch WHERE deadline_at IS NOT NULL AND (overdue_since IS NOT NULL OR deadline_at <= :now)",
        {"now": now_ms},
    )
    out["overdueJobs"] = int(rows[0][0])
    return out
