"""Dead-man's windows: fire ``missed`` once per passed deadline, re-armed by compare-and-set."""

from __future__ import annotations

from collections.abc import Sequence

from cronwheel.core import deadman
from cronwheel.core import notify as nt
from cronwheel.core.instants import format_instant
from cronwheel.core.model import JobStatus
from cronwheel.store.outbox.sql import Sql, insert_notification

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
        queued = sum(insert_notification(sql, subject, r, job_id, tenant, "missed", body, now_ms)
                     for r in rules if r.on is nt.NotifyOn.MISSED)  # fmt: skip
        fired.append((job_id, deadline_at, queued))
    return fired
