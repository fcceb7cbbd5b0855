"""Executions the schedule did not make: backfills and chain children, for the SQLite store.

Both run inside the caller's write transaction and insert ON CONFLICT DO NOTHING, so the
``(job_id, scheduled_at)`` identity (invariant 2) is what makes a repeated backfill or a
repeated final outcome of a chain parent insert nothing. The decisions are shared with the
PostgreSQL store (``store.common``, ``core.chains``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from cronwheel.core.chains import check_chain, check_children, new_children
from cronwheel.core.model import Execution
from cronwheel.core.records import CompletionResult
from cronwheel.store import chaining
from cronwheel.store.chaining import ChildJob
from cronwheel.store.common import dumps, json_array, loads
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.claim import executemany_each


def insert(conn: apsw.Connection, made: Sequence[tuple[Execution, bool]]) -> list[Execution]:
    """Insert executions; those whose tick already existed are left out of the result."""
    rows = [(ex.execution_id, ex.job_id, ex.tenant, int(ex.priority), ex.scheduled_at, ex.available_at,
             ex.created_at, ex.reason, ex.max_attempts, int(guard), ex.queue, dumps(ex.context))
            for ex, guard in made]  # fmt: skip
    flags = executemany_each(conn, q.INSERT_EXECUTION_WITH_CONTEXT, rows)
    return [ex for i, (ex, _) in enumerate(made) if flags is None or flags[i]]


def _child_jobs(conn: apsw.Connection, ids: list[str]) -> dict[str, ChildJob]:
    return {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in conn.execute(q.CHILD_JOBS, (json_array(ids),))}


def trigger_children(conn: apsw.Connection, results: Sequence[CompletionResult], now_ms: int) -> None:
    """``store.chaining.trigger_children`` on this connection."""

    def chains_of(parents: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        return {r[0]: (_ids(r[1]), _ids(r[2])) for r in conn.execute(q.CHAINS_OF, (json_array(parents),))}

    chaining.trigger_children(results, chains_of, lambda ids: _child_jobs(conn, ids), lambda made: insert(conn, made), now_ms)


def _ids(text: str | None) -> list[str]:
    return [] if text is None else list(loads(text))


def backfill(
    conn: apsw.Connection, job_id: str, ticks: Sequence[int], now_ms: int, tenant: str | None
) -> list[Execution] | None:
    made = chaining.backfill_executions(job_id, conn.execute(q.TRIGGER_SELECT_JOB, (job_id, tenant)).fetchone(), ticks, now_ms)
    return None if made is None else insert(conn, made)


def set_chain(
    conn: apsw.Connection, job_id: str, on_success: Sequence[str], on_failure: Sequence[str], now_ms: int,
    tenant: str | None,
) -> bool:
    """Replace a job's chain after the checks of ``Store.set_job_chain``; False: no such job."""
    row = conn.execute(q.TRIGGER_SELECT_JOB, (job_id, tenant)).fetchone()
    if row is None:
        return False
    job_tenant = row[1]
    edges: dict[str, Any] = {r[0]: [*_ids(r[1]), *_ids(r[2])] for r in conn.execute(q.TENANT_CHAINS, (job_tenant,))}
    added = new_children(job_id, [*on_success, *on_failure], edges)
    check_children(job_tenant, added, {r[0]: (r[1], r[2]) for r in conn.execute(q.JOBS_TENANT_STATUS, (dumps(added),))})
    check_chain(job_id, on_success, on_failure, edges)
    conn.execute(q.SET_JOB_CHAIN, (job_id, _json_or_null(on_success), _json_or_null(on_failure), now_ms))
    return True


def _json_or_null(ids: Sequence[str]) -> str | None:
    return dumps(list(ids)) if ids else None
