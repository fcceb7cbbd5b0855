"""Settled jobs leave the store once the retention period has passed them by: written once for
both backends, in portable SQL run through the outbox's ``Sql`` adapter.

A job is settled when it will not run again by itself: a one-off that ran (SUCCEEDED, or
FAILED after its last attempt), or a cancelled job. Its history is pruned like any job's, but
``keep_last`` kept its newest executions, and the job itself, for ever: a delayed-job workload
of a thousand one-offs a second left 86 million jobs a day in the store. A settled job is
deleted, with everything that is only about it, once it is done with:

* it settled before the cutoff (its definition's last change: the cancel), and every one of
  its executions finished before the cutoff: nothing live, and nothing DEAD (the dead-letter
  queue keeps its job until its runs are replayed or purged);
* no notification about it is still to be told (PENDING, RUNNING, or HELD and not yet in a
  summary); told and dead-lettered notifications keep their own lifetimes (they name the job
  by id only).

Its idempotency keys go with it (a retry of its creation after that makes a new job), and so
does its name (which a SUCCEEDED or FAILED job still held). Chains need nothing: a chain only
ever starts ACTIVE children, and a missing child is skipped like a settled one.
"""

from __future__ import annotations

from cronwheel.store.outbox.sql import Sql

SETTLED = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
#: settled jobs checked at a time (``done_with``) before those found are deleted: a deletion
#: that stops at its row budget leaves at most this many checks to be made again
CHECK_CHUNK = 32
_SETTLED = "('SUCCEEDED', 'FAILED', 'CANCELLED')"

#: the next jobs in id order, with their status: read outside the write transaction, and
#: bounded, so that a store of a million live jobs and no settled one is not scanned whole
#: while the writer waits
PAGE = "SELECT id, status FROM jobs WHERE id > :after ORDER BY id LIMIT :limit"

#: the job, if it is done with (see the module docstring); locked where the backend locks rows
DONE_WITH = f"""
SELECT j.id FROM jobs AS j JOIN job_definitions AS d ON d.job_id = j.id
WHERE j.id = :id AND j.status IN {_SETTLED} AND d.updated_at < :before
  AND NOT EXISTS (
      SELECT 1 FROM executions AS e WHERE e.job_id = :id
        AND (e.status NOT IN ('SUCCEEDED', 'CANCELLED', 'SKIPPED') OR e.finished_at IS NULL OR e.finished_at >= :before))
  AND NOT EXISTS (
      SELECT 1 FROM notifications AS n WHERE n.job_id = :id
        AND (n.status IN ('PENDING', 'RUNNING') OR (n.status = 'HELD' AND n.sent_at IS NULL)))
{{lock}}
"""

#: what is only about the job, children first (an execution's effects go with it: ON DELETE CASCADE)
DELETES = (
    "DELETE FROM executions WHERE job_id = :id",
    "DELETE FROM job_watch WHERE job_id = :id",
    "DELETE FROM idempotency_keys WHERE job_id = :id",
    "DELETE FROM job_names WHERE job_id = :id",
    "DELETE FROM job_definitions WHERE job_id = :id",
    "DELETE FROM jobs WHERE id = :id",
)


def page(sql: Sql, after_job: str | None, limit: int) -> list[tuple[str, str]]:
    """The next ``limit`` jobs after ``after_job`` (id order): ``(id, status)``."""
    return [(r[0], r[1]) for r in sql.rows(PAGE, {"after": after_job or "", "limit": limit})]


def done_with(sql: Sql, job_ids: list[str], older_than_ms: int) -> list[str]:
    """Those of ``job_ids`` that are done with before ``older_than_ms``, read outside the write
    transaction: the check reads a job's whole history (up to ``keep_last`` rows), and a page
    of a thousand cancelled jobs with recent runs, none of them prunable, held the writer
    ~70 ms per hundred runs a job. ``prune`` checks again, under the lock, the few that pass."""
    check = DONE_WITH.format(lock="")
    return [job_id for job_id in job_ids if sql.rows(check, {"id": job_id, "before": older_than_ms})]


def prune(sql: Sql, job_ids: list[str], older_than_ms: int, max_rows: int) -> tuple[int, int, str | None]:
    """In the caller's write transaction, delete those of ``job_ids`` (found done with by
    ``done_with``) that still are, stopping once ``max_rows`` rows went with them (a
    transaction stays short). Returns ``(jobs deleted, rows deleted, the job it stopped at or
    None)``."""
    deleted = rows = 0
    done_with = DONE_WITH.format(lock=sql.skip_locked)
    for job_id in job_ids:
        args = {"id": job_id, "before": older_than_ms}
        if not sql.rows(done_with, args):
            continue
        rows += sum(sql.changes(statement, args) for statement in DELETES)
        deleted += 1
        if rows >= max_rows:
            return deleted, rows, job_id
    return deleted, rows, None
