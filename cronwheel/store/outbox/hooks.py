"""The outbox's hooks in the stores' own transactions: a job created or changed, a first attempt
started late, an outcome recorded (a completion, an expired lease, a ping)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from cronwheel.core import deadman
from cronwheel.core import notify as nt
from cronwheel.core.ids import bucket_of, execution_id
from cronwheel.core.model import ExecOrigin, ExecStatus, Execution, JobSpec, Priority
from cronwheel.store.outbox.sql import Sql, execution_body, insert_notification
from cronwheel.store.rowreader import RowReader

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


def _executions(sql: Sql, ids: Iterable[str]) -> dict[str, Execution]:
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
            queued += insert_notification(sql, eid, rule, job_id, tenant, rule.on.value, execution_body(ex, name), now_ms)
    return queued


def after_outcomes(sql: Sql, outcomes: Sequence[tuple[str, str, str]], now_ms: int) -> set[str]:
    """The outcome hook: ``(execution_id, job_id, new status)`` as just written in this
    transaction (RETRY_WAIT and DEAD are failed attempts). Jobs with no rules, no tenant
    defaults and no window cost one narrow read per batch. Returns the executions whose
    outcome queued a notification."""
    queued: set[str] = set()
    if not outcomes:
        return queued
    watched = _watched_rows(sql, sorted({job_id for _, job_id, _ in outcomes}))
    if not watched:
        return queued
    mine = [o for o in outcomes if o[1] in watched]
    execs = _executions(sql, {o[0] for o in mine})
    for eid, job_id, status in mine:
        ex = execs.get(eid)
        if ex is None:
            continue
        _, tenant, name, job_rules, tenant_rules, expect_ms, last_outcome, window_ms, deadline_at, overdue_since, _ = watched[job_id]
        rules = nt.effective_rules(nt.stored_rules(sql.decode(job_rules)), nt.stored_rules(sql.decode(tenant_rules)))
        events = nt.events_for(status, last_outcome == "failure")
        body = execution_body(ex, name)
        for rule in nt.matching(rules, events, None):
            if insert_notification(sql, eid, rule, job_id, tenant, rule.on.value, body, now_ms):
                queued.add(eid)
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
