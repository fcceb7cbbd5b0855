"""Hand-outs and fenced writes on running executions: starts (lease_epoch + 1), heartbeats
and completions (leaseEpoch fencing).

All run inside the caller's write transaction. A heartbeat or completion applies only if the
execution is RUNNING at exactly the lease_epoch the caller names, and its worker is the one
the lease was granted to; otherwise nothing changes and the verdict says why (CANCELLED,
LEASE_LOST, WRONG_WORKER, NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from cronwheel.core.chains import payload_with_context
from cronwheel.core.model import DEFAULT_LEASE_SEC, Grant
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    HeartbeatResult,
    LeaseVerdict,
    Outcome,
    StartRequest,
)
from cronwheel.store.base import StoreError
from cronwheel.store.common import ORIGIN, PRIORITY, JsonMemo, json_array, loads, retry_from_json
from cronwheel.store.completions import decide_completions, lease_verdict, settlements
from cronwheel.store.outbox import hooks
from cronwheel.store.sqlite import jobstate, triggers
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.rows import outbox_sql

_DEFAULT_LEASE_MS = round(DEFAULT_LEASE_SEC * 1000)


def start(conn: apsw.Connection, starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
    """``start_executions``' work inside the caller's write transaction (the first request for
    an execution names its worker)."""
    workers: dict[str, str] = {}
    for st in starts:
        workers.setdefault(st.execution_id, st.worker_id)
    return start_in(conn, workers, now_ms)


def start_in(conn: apsw.Connection, workers: dict[str, str], now_ms: int) -> list[Grant]:
    """``start`` for a map of execution id → worker id: one read of the definitions of the
    batch's jobs (an execution id is ``{jobId}:{scheduledAtMs}``), one UPDATE of the batch."""
    jobs = {eid: eid.rpartition(":")[0] for eid in workers}
    defs: dict[str, Any] = {r[0]: r for r in conn.execute(q.START_DEFINITIONS, (json_array(list(set(jobs.values()))),))}
    no_def = (None, None, DEFAULT_LEASE_SEC, 0.0, "{}", "null", None)
    triples = json_array([[eid, wid, defs.get(jobs[eid], no_def)[1]] for eid, wid in workers.items()])
    rows: list[Any] = conn.execute(q.START_EXECUTIONS, (triples, now_ms, _DEFAULT_LEASE_MS)).fetchall()
    by_id = {r[0]: r for r in rows}
    grants: list[Grant] = []
    parsed = JsonMemo()
    for eid in workers:  # in the order asked
        r = by_id.get(eid)
        if r is None:
            continue
        # the definition of the job the row names (the same one, by the id's CHECK)
        _, _, lease_sec, timeout_sec, target, payload, process = defs.get(r[1], no_def)
        if target is None:  # no definition row (cannot happen with the foreign keys on)
            lease_sec, timeout_sec, target, payload = DEFAULT_LEASE_SEC, 0.0, "{}", "null"
        context = None if r[10] is None else loads(r[10])
        grants.append(Grant(r[0], r[1], r[2], PRIORITY[r[3]], r[4], r[5], r[6], r[7],
                            lease_sec, timeout_sec, parsed(target),
                            payload_with_context(parsed(payload), context), r[8],
                            origin=ORIGIN[r[9]], process=None if process is None else parsed(process),
                            context=context))  # fmt: skip
    hooks.after_starts(outbox_sql(conn), [(g.execution_id, g.job_id, g.attempt, g.scheduled_at) for g in grants], now_ms)
    return grants


def heartbeat(conn: apsw.Connection, eid: str, worker_id: str, epoch: int, now_ms: int) -> HeartbeatResult:
    row = conn.execute(q.HEARTBEAT, (eid, epoch, now_ms, _DEFAULT_LEASE_MS, worker_id)).fetchone()
    if row is not None:
        return HeartbeatResult(LeaseVerdict.OK, int(row[0]))
    return HeartbeatResult(lease_verdict(conn.execute(q.EXECUTION_HOLDER, (eid,)).fetchone(), epoch, worker_id))


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
        notified = notify_outcomes(conn, state, updates, now_ms)
        for res in results:
            res.notified = res.execution_id in notified
    return results


def notify_outcomes(conn: apsw.Connection, state: dict[str, list[Any]], updates: list[tuple[Any, ...]], now_ms: int) -> set[str]:
    """Outcomes just written, to the notification rules (same transaction: never lost); the
    executions whose outcome queued a notification."""
    return hooks.after_outcomes(outbox_sql(conn), [(u[0], state[u[0]][4], u[2]) for u in updates], now_ms)
