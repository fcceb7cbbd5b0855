"""Deleting a tenant: written once for both backends, in portable SQL run through the outbox's
``Sql`` adapter (as ``store/settled.py``).

Deletion is two steps, because a tenant's rows can be many millions and one transaction that
deletes them all would hold the writer (SQLite) or bloat one transaction (PostgreSQL):

1. ``mark``: in one transaction, refuse while the tenant has live jobs (ACTIVE, PAUSED) or
   executions in flight (unless forced), else set ``deleting_since`` and revoke its tokens.
   From then on no job is created for it, no token is made for it, and its name cannot be
   taken by a new tenant: a new tenant of that name would otherwise see the old one's history,
   calendars, job names and idempotency keys.
2. ``purge``: retention's small transactions delete what carried the tenant's name (finished
   executions and their effects, notifications, settled jobs with their watch, keys, names and
   definitions, calendars with their indexes, tokens) and, once nothing is left, the tenant
   row, in the same statement that checks nothing is left. An execution still running (a
   forced deletion's abort not yet reported) keeps its job, and so the tenant row, until it
   ends. The tenant row also stays until a grace period after the deletion was asked has
   passed (the caller's ``drop_before_ms``): a node that trusted one of its tokens a moment
   before may still send its job, which the store must refuse (while the row says
   ``deleting``), not take as the first job of a new tenant of that name (with no row).
"""

from __future__ import annotations

from cronwheel.core.tenants import ApiToken, DeletionOutcome, Role, TenantDeletion
from cronwheel.store import settled
from cronwheel.store.base import TenantIsDeleting
from cronwheel.store.outbox.sql import Sql

_IN_FLIGHT = "('PENDING', 'RUNNING', 'RETRY_WAIT')"
_FINISHED = "('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED')"

STATE = "SELECT deleting_since FROM tenants WHERE name = :tenant {lock}"
LIVE_JOBS = "SELECT count(*) FROM jobs WHERE tenant = :tenant AND status IN ('ACTIVE', 'PAUSED')"
IN_FLIGHT = f"SELECT count(*) FROM executions WHERE tenant = :tenant AND status IN {_IN_FLIGHT}"
MARK = "UPDATE tenants SET deleting_since = :now WHERE name = :tenant AND deleting_since IS NULL"
#: every token of the tenant, at once (a revoked one keeps its first revocation time)
REVOKE = """
UPDATE api_tokens SET revoked_at = :now WHERE tenant = :tenant AND revoked_at IS NULL
RETURNING token_id, token_hash, role, tenant, name, created_at, revoked_at
"""

#: each takes at most :limit rows; an execution's effects go with it (ON DELETE CASCADE), as a
#: calendar's index goes with the calendar
PURGE_EXECUTIONS = f"""
DELETE FROM executions WHERE execution_id IN (
  SELECT e.execution_id FROM jobs AS j JOIN executions AS e ON e.job_id = j.id
  WHERE j.tenant = :tenant AND e.status IN {_FINISHED} LIMIT :limit)
"""
PURGE_NOTIFICATIONS = """
DELETE FROM notifications WHERE notification_id IN (
  SELECT notification_id FROM notifications WHERE tenant = :tenant AND status <> 'RUNNING' LIMIT :limit)
"""
#: settled jobs with no execution left (settled.DELETES takes each with what is only about it)
EMPTY_JOBS = """
SELECT j.id FROM jobs AS j
WHERE j.tenant = :tenant AND j.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
  AND NOT EXISTS (SELECT 1 FROM executions AS e WHERE e.job_id = j.id)
LIMIT :limit
"""
PURGE_CALENDARS = """
DELETE FROM calendars WHERE tenant = :tenant AND name IN (
  SELECT name FROM calendars WHERE tenant = :tenant LIMIT :limit)
"""
PURGE_TOKENS = """
DELETE FROM api_tokens WHERE token_id IN (SELECT token_id FROM api_tokens WHERE tenant = :tenant LIMIT :limit)
"""
#: the tenant row goes last, in the statement that checks nothing of it is left
DROP_TENANT = """
DELETE FROM tenants WHERE name = :tenant AND deleting_since < :drop_before
  AND NOT EXISTS (SELECT 1 FROM jobs WHERE tenant = :tenant)
  AND NOT EXISTS (SELECT 1 FROM executions WHERE tenant = :tenant)
  AND NOT EXISTS (SELECT 1 FROM notifications WHERE tenant = :tenant)
  AND NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE tenant = :tenant)
  AND NOT EXISTS (SELECT 1 FROM job_names WHERE tenant = :tenant)
  AND NOT EXISTS (SELECT 1 FROM calendars WHERE tenant = :tenant)
  AND NOT EXISTS (SELECT 1 FROM api_tokens WHERE tenant = :tenant)
"""


#: the tenant of what a write names (a tenant, or a job, execution or notification of one),
#: with whether it is being deleted
TENANT_OF = {
    "tenant": "SELECT t.name, t.deleting_since FROM tenants AS t WHERE t.name = :key",
    "job": "SELECT t.name, t.deleting_since FROM jobs AS j JOIN tenants AS t ON t.name = j.tenant WHERE j.id = :key",
    "execution": "SELECT t.name, t.deleting_since FROM executions AS e JOIN tenants AS t ON t.name = e.tenant"
                 " WHERE e.execution_id = :key",
    "notification": "SELECT t.name, t.deleting_since FROM notifications AS n JOIN tenants AS t ON t.name = n.tenant"
                    " WHERE n.notification_id = :key",
}


def refuse_deleting(sql: Sql, of: str, key: str) -> None:
    """Raise ``TenantIsDeleting`` when the tenant of ``of`` ``key`` (see TENANT_OF) is being
    deleted, first thing in a write transaction that adds to that tenant. Its row is held
    (FOR KEY SHARE, where rows lock) until the write commits: ``mark`` (FOR UPDATE) and the
    final drop wait for it, so the write either lands before the mark (and retention removes
    it) or sees the mark; never a row left after the tenant went. Nothing found: no refusal
    (the write says what is missing)."""
    rows = sql.rows(f"{TENANT_OF[of]} {sql.key_share and sql.key_share + ' OF t'}", {"key": key})
    if rows and rows[0][1] is not None:
        raise TenantIsDeleting(str(rows[0][0]))


def mark(sql: Sql, name: str, now_ms: int, force: bool, lock: str) -> TenantDeletion:
    """Step 1 (see the module), in the caller's write transaction; ``lock`` holds the tenant
    row against a concurrent creation of its jobs ("" where the backend has one writer)."""
    args = {"tenant": name, "now": now_ms}
    state = sql.rows(STATE.format(lock=lock), args)
    if not state:
        return TenantDeletion(DeletionOutcome.NOT_FOUND)
    if state[0][0] is not None:
        return TenantDeletion(DeletionOutcome.DELETING, deleting_since=int(state[0][0]))
    jobs = int(sql.rows(LIVE_JOBS, args)[0][0])
    in_flight = int(sql.rows(IN_FLIGHT, args)[0][0])
    if (jobs or in_flight) and not force:
        return TenantDeletion(DeletionOutcome.NOT_EMPTY, live_jobs=jobs, in_flight=in_flight)
    sql.changes(MARK, args)
    revoked = tuple(
        ApiToken(r[0], r[1], Role(r[2]), r[3], r[4], r[5], r[6]) for r in sql.rows(REVOKE, args)
    )
    return TenantDeletion(DeletionOutcome.MARKED, live_jobs=jobs, in_flight=in_flight, revoked=revoked,
                          deleting_since=now_ms)


def purge(sql: Sql, name: str, max_rows: int, drop_before_ms: int) -> tuple[int, bool]:
    """Step 2 (see the module), in the caller's write transaction: up to about ``max_rows``
    rows of the deleting tenant ``name``, and the tenant row once none is left if its deletion
    was asked before ``drop_before_ms``. Returns ``(rows deleted, whether the tenant row
    went)``; a live tenant is left alone (``(0, False)``)."""
    args: dict[str, object] = {"tenant": name}
    state = sql.rows(STATE.format(lock=""), args)
    if not state or state[0][0] is None:
        return 0, False
    rows = 0
    for statement in (PURGE_EXECUTIONS, PURGE_NOTIFICATIONS):
        rows += sql.changes(statement, {**args, "limit": max_rows - rows})
        if rows >= max_rows:
            return rows, False
    for (job_id,) in sql.rows(EMPTY_JOBS, {**args, "limit": max(1, (max_rows - rows) // len(settled.DELETES))}):
        rows += sum(sql.changes(statement, {"id": job_id}) for statement in settled.DELETES)
    if rows >= max_rows:
        return rows, False
    for statement in (PURGE_CALENDARS, PURGE_TOKENS):
        rows += sql.changes(statement, {**args, "limit": max_rows - rows})
        if rows >= max_rows:
            return rows, False
    gone = sql.changes(DROP_TENANT, {**args, "drop_before": drop_before_ms}) == 1
    return rows + int(gone), gone
