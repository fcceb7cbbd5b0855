"""Executions the schedule did not make: backfills and chain children, for PostgreSQL.

Both run inside the caller's transaction and insert ON CONFLICT DO NOTHING, so the
``(job_id, scheduled_at)`` identity (invariant 2) is what makes a repeated backfill, or a
repeated final outcome of a chain parent, insert nothing. The decisions are shared with the
SQLite store (``store.common``, ``core.chains``). Chain changes of one tenant serialise on a
transaction-scoped advisory lock, so two concurrent changes cannot each pass the cycle check
and together close a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from cronwheel.core.chains import check_chain, check_children, new_children
from cronwheel.core.ids import stable_hash
from cronwheel.core.model import Execution
from cronwheel.core.records import CompletionResult
from cronwheel.store import chaining
from cronwheel.store.chaining import ChildJob
from cronwheel.store.common import dumps
from cronwheel.store.postgres import queries as q

#: advisory-lock key space of chain changes, per tenant (next to the store's other spaces:
#: jobs.IDEMPOTENCY_LOCK_SPACE … NAME_LOCK_SPACE)
CHAIN_LOCK_SPACE = 0x63770004


def insert(conn: psycopg.Connection[Any], made: Sequence[tuple[Execution, bool]]) -> list[Execution]:
    """Insert executions; those whose tick already existed are left out of the result."""
    if not made:
        return []
    cols: dict[str, list[Any]] = {
        "execution_id": [ex.execution_id for ex, _ in made],
        "job_id": [ex.job_id for ex, _ in made],
        "tenant": [ex.tenant for ex, _ in made],
        "priority": [int(ex.priority) for ex, _ in made],
        "scheduled_at": [ex.scheduled_at for ex, _ in made],
        "available_at": [ex.available_at for ex, _ in made],
        "created_at": [ex.created_at for ex, _ in made],
        "reason": [ex.reason for ex, _ in made],
        "max_attempts": [ex.max_attempts for ex, _ in made],
        "overlap_guard": [guard for _, guard in made],
        "queue": [ex.queue for ex, _ in made],
        "context": [dumps(ex.context) for ex, _ in made],
    }
    inserted = {r[0] for r in conn.execute(q.INSERT_EXECUTIONS_WITH_CONTEXT, cols)}
    return [ex for ex, _ in made if ex.execution_id in inserted]


def _child_jobs(conn: psycopg.Connection[Any], ids: list[str]) -> dict[str, ChildJob]:
    return {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in conn.execute(q.CHILD_JOBS, {"ids": ids})}


def trigger_children(conn: psycopg.Connection[Any], results: Sequence[CompletionResult], now_ms: int) -> None:
    """``store.chaining.trigger_children`` on this connection."""

    def chains_of(parents: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        return {r[0]: (r[1] or [], r[2] or []) for r in conn.execute(q.CHAINS_OF, {"ids": parents})}

    chaining.trigger_children(results, chains_of, lambda ids: _child_jobs(conn, ids), lambda made: insert(conn, made), now_ms)


def backfill(
    conn: psycopg.Connection[Any], job_id: str, ticks: Sequence[int], now_ms: int, tenant: str | None
) -> list[Execution] | None:
    row = conn.execute(q.TRIGGER_SELECT_JOB, {"id": job_id, "tenant": tenant}).fetchone()
    made = chaining.backfill_executions(job_id, row, ticks, now_ms)
    return None if made is None else insert(conn, made)


def set_chain(
    conn: psycopg.Connection[Any], job_id: str, on_success: Sequence[str], on_failure: Sequence[str],
    now_ms: int, tenant: str | None,
) -> bool:
    """Replace a job's chain after the checks of ``Store.set_job_chain``; False: no such job."""
    row = conn.execute(q.TRIGGER_SELECT_JOB, {"id": job_id, "tenant": tenant}).fetchone()
    if row is None:
        return False
    job_tenant = row[1]
    conn.execute(q.ADVISORY_XACT_LOCKS, {"space": CHAIN_LOCK_SPACE, "hashes": [stable_hash(job_tenant) % 2**32 - 2**31]})
    edges = {r[0]: [*(r[1] or []), *(r[2] or [])] for r in conn.execute(q.TENANT_CHAINS, {"tenant": job_tenant})}
    added = new_children(job_id, [*on_success, *on_failure], edges)
    found = {r[0]: (r[1], r[2]) for r in conn.execute(q.JOBS_TENANT_STATUS, {"ids": added})}
    check_children(job_tenant, added, found)
    check_chain(job_id, on_success, on_failure, edges)
    conn.execute(q.SET_JOB_CHAIN, {"id": job_id, "on_success": dumps(list(on_success)) if on_success else None,
                                   "on_failure": dumps(list(on_failure)) if on_failure else None, "now": now_ms})
    return True
