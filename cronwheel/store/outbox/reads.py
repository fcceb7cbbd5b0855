"""Reading and tidying the outbox: list, replay, prune, count."""

from __future__ import annotations

from cronwheel.core import notify as nt
from cronwheel.store.outbox.sql import NOTIFICATION_COLUMNS, Sql, notification_from_row

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
    created before ``older_than_ms``; the dead-lettered ones are not aged out (each job's
    are bounded by ``prune_dead`` alone), like the DLQ's runs."""
    rows = sql.rows(
        """SELECT notification_id FROM notifications
           WHERE status IN ('SENT', 'HELD') AND sent_at IS NOT NULL AND created_at < :before
           ORDER BY created_at LIMIT :limit""",
        {"before": older_than_ms, "limit": limit},
    )
    return sum(sql.changes("DELETE FROM notifications WHERE notification_id = :id", {"id": r[0]}) for r in rows)


def dead_page(sql: Sql, after_job: str, rows: int) -> list[tuple[str, str, int]]:
    """The next ``rows`` dead notifications after job ``after_job``, in job order, counted
    by job: (job id, tenant, count), read from the index of DEAD rows alone (version 23)."""
    found = sql.rows(
        """SELECT job_id, tenant, count(*) FROM (
               SELECT job_id, tenant FROM notifications WHERE status = 'DEAD' AND job_id > :after
               ORDER BY job_id, tenant, created_at LIMIT :rows) AS page
           GROUP BY job_id, tenant ORDER BY job_id""",
        {"after": after_job, "rows": rows},
    )
    return [(job_id, tenant, int(n)) for job_id, tenant, n in found]


def prune_dead(sql: Sql, job_id: str, keep: int, limit: int) -> tuple[int, int]:
    """Delete up to ``limit`` of one job's oldest dead notifications beyond its ``keep``
    newest; (deleted, dead ones left). One being replayed elsewhere is skipped (and is not
    DEAD once that commits). The tenant leads the order (a job's is one) so that the index
    of DEAD rows is read, not every notification of the job."""
    oldest = sql.rows(
        f"""SELECT notification_id FROM notifications WHERE job_id = :job AND status = 'DEAD'
            ORDER BY tenant DESC, created_at DESC, notification_id DESC
            LIMIT :limit OFFSET :keep {sql.skip_locked}""",
        {"job": job_id, "keep": keep, "limit": limit},
    )
    deleted = sum(
        sql.changes("DELETE FROM notifications WHERE notification_id = :id AND status = 'DEAD'", {"id": r[0]})
        for r in oldest
    )
    left = sql.rows("SELECT count(*) FROM notifications WHERE job_id = :job AND status = 'DEAD'", {"job": job_id})
    return deleted, int(left[0][0])


def dead_jobs_page(sql: Sql, after_job: str, jobs: int) -> list[tuple[str, bool]]:
    """The next ``jobs`` job ids with dead notifications after ``after_job`` (job order, from
    the index of DEAD rows alone), each with whether the job is gone from the store."""
    rows = sql.rows(
        """SELECT page.job_id, NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.id = page.job_id) FROM (
               SELECT DISTINCT job_id FROM notifications WHERE status = 'DEAD' AND job_id > :after
               ORDER BY job_id LIMIT :jobs) AS page
           ORDER BY page.job_id""",
        {"after": after_job, "jobs": jobs},
    )
    return [(job_id, bool(gone)) for job_id, gone in rows]


def prune_dead_of_gone(sql: Sql, job_ids: list[str], older_than_ms: int, limit: int) -> tuple[int, str | None]:
    """In the caller's write transaction: delete the dead notifications created before
    ``older_than_ms`` of those of ``job_ids`` still gone (checked again here: a job id that
    came back keeps them), up to ``limit`` in all. Returns ``(deleted, the job it stopped at,
    which may have more, or None)``. Each job's own rows only, so no other tenant's."""
    deleted = 0
    for job_id in job_ids:
        rows = sql.rows(
            f"""SELECT notification_id FROM notifications
                WHERE job_id = :job AND status = 'DEAD' AND created_at < :before
                  AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = :job)
                ORDER BY tenant, created_at LIMIT :limit {sql.skip_locked}""",
            {"job": job_id, "before": older_than_ms, "limit": limit - deleted},
        )
        deleted += sum(
            sql.changes("DELETE FROM notifications WHERE notification_id = :id AND status = 'DEAD'", {"id": r[0]})
            for r in rows
        )
        if deleted >= limit:
            return deleted, job_id
    return deleted, None


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
