"""Fenced writes on running executions: heartbeats and completions (leaseEpoch fencing).

Both run inside the caller's write transaction. A write applies only if the execution is
RUNNING at exactly the lease_epoch the caller names; otherwise nothing changes and the verdict
says why (CANCELLED, LEASE_LOST, NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from cronwheel.core.model import DEFAULT_LEASE_SEC
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    HeartbeatResult,
    LeaseVerdict,
    Outcome,
)
from cronwheel.store.base import StoreError
from cronwheel.store.common import json_array, retry_from_json
from cronwheel.store.completions import decide_completions, settlements
from cronwheel.store.outbox import hooks
from cronwheel.store.sqlite import jobstate, triggers
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.rows import outbox_sql

_DEFAULT_LEASE_MS = round(DEFAULT_LEASE_SEC * 1000)


def heartbeat(conn: apsw.Connection, eid: str, epoch: int, now_ms: int) -> HeartbeatResult:
    row = conn.execute(q.HEARTBEAT, (eid, epoch, now_ms, _DEFAULT_LEASE_MS)).fetchone()
    if row is not None:
        return HeartbeatResult(LeaseVerdict.OK, int(row[0]))
    st = conn.execute(q.EXECUTION_STATUS, (eid,)).fetchone()
    if st is None:
        return HeartbeatResult(LeaseVerdict.NOT_FOUND)
    return HeartbeatResult(LeaseVerdict.CANCELLED if st[0] == "CANCELLED" else LeaseVerdict.LEASE_LOST)


def complete(
    conn: apsw.Connection, completions: Sequence[Completion], now_ms: int, rand01: Sequence[float] | None
) -> list[CompletionResult]:
    ids = sorted({c.execution_id for c in completions})
    state = {r[0]: list(r[1:]) for r in conn.execute(q.COMPLETION_STATE, (json_array(ids),))}
    retry: dict[str, str] = {}
    failed_jobs = {state[c.execution_id][4] for c in completions
                   if c.outcome is not Outcome.SUCCEEDED and c.execution_id in state}  # fmt: skip
    if failed_jobs:
        retry = dict(conn.execute(q.RETRY_POLICIES, (json_array(sorted(failed_jobs)),)).fetchall())  # type: ignore[arg-type]
    results, updates = decide_completions(
        completions, state, lambda job_id: retry_from_json(retry.get(job_id)), now_ms, rand01
    )
    if updates:
        before = conn.total_changes()
        conn.executemany(q.COMPLETE_EXECUTION, updates)
        if conn.total_changes() - before != len(updates):  # impossible under the write lock
            raise StoreError("a fenced completion did not apply; nothing was committed")
        jobstate.settle(conn, settlements(updates, state))
        triggers.trigger_children(conn, results, now_ms)
        notify_outcomes(conn, state, updates, now_ms)
    return results


def notify_outcomes(conn: apsw.Connection, state: dict[str, list[Any]], updates: list[tuple[Any, ...]], now_ms: int) -> None:
    """Outcomes just written, to the notification rules (same transaction: never lost)."""
    hooks.after_outcomes(outbox_sql(conn), [(u[0], state[u[0]][4], u[2]) for u in updates], now_ms)
