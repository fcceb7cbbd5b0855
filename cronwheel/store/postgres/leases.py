"""Hand-outs and fenced writes on running executions (leaseEpoch fencing), for PostgreSQL.

Each runs inside the caller's transaction. A heartbeat or completion applies only if the
execution is RUNNING at exactly the lease_epoch the caller names (the condition is in the
UPDATE's WHERE clause, so it holds whatever else runs concurrently); otherwise nothing
changes and the verdict says why (CANCELLED, LEASE_LOST, NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from cronwheel.core.chains import payload_with_context
from cronwheel.core.claimturns import Candidate, ClaimTurns
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
from cronwheel.store.common import ORIGIN, PRIORITY, retry_from_json
from cronwheel.store.completions import decide_completions, lease_verdict, settlements
from cronwheel.store.outbox import hooks
from cronwheel.store.postgres import jobstate, triggers
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.rows import outbox_sql, text

_DEFAULT_LEASE_MS = round(DEFAULT_LEASE_SEC * 1000)






def start(conn: psycopg.Connection[Any], starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
    workers: dict[str, str] = {}
    for st in starts:
        workers.setdefault(st.execution_id, st.worker_id)
    cands = conn.execute(q.START_CANDIDATES, {"ids": sorted(workers), "now": now_ms}).fetchall()
    if not cands:
        return []
    defs = {c[0]: c for c in cands}
    ids = [c[0] for c in cands]
    until = [now_ms + round((DEFAULT_LEASE_SEC if c[2] is None else c[2]) * 1000) for c in cands]
    args = {"ids": ids, "workers": [workers[i] for i in ids], "until": until, "now": now_ms}
    by_id = {r[0]: r for r in conn.execute(q.START_EXECUTIONS, args)}
    grants: list[Grant] = []
    for eid in workers:  # request order
        r = by_id.get(eid)
        if r is None:
            continue
        _, _, lease_sec, timeout_sec, target, payload, process, context = defs[eid]
        if target is None:  # no definition row (cannot happen with the foreign keys)
            lease_sec, timeout_sec, target, payload = DEFAULT_LEASE_SEC, 0.0, {}, None
        grants.append(Grant(r[0], r[1], r[2], PRIORITY[r[3]], r[4], r[5], r[6], r[7], lease_sec, timeout_sec,
                            target, payload_with_context(payload, context), r[8], origin=ORIGIN[r[9]],
                            process=process, context=context))  # fmt: skip
    hooks.after_starts(outbox_sql(conn), [(g.execution_id, g.job_id, g.attempt, g.scheduled_at) for g in grants], now_ms)
    return grants


def claim_for_worker(
    conn: psycopg.Connection[Any], queues: Sequence[str], worker_id: str, max: int, now_ms: int,
    tenant: str | None, turns: ClaimTurns | None,
) -> list[Grant]:
    """Store.claim_for_worker inside the caller's transaction. A tenant's worker: lock up to
    ``max`` of its queued rows (SKIP LOCKED: another claimer's rows are passed over), then
    start them. A worker of no tenant: ``turns`` picks among each tenant's first rows; a
    picked row another claimer started meanwhile is skipped by the start, and the turns pick
    again among the rest of what was offered."""
    args = {"queues": list(dict.fromkeys(queues)), "now": now_ms, "tenant": tenant, "limit": max}
    if tenant is not None:
        ids = [r[0] for r in conn.execute(q.QUEUE_READY_OF_TENANT, args)]
        return start(conn, [StartRequest(eid, worker_id) for eid in ids], now_ms) if ids else []
    offered = [Candidate(*row) for row in conn.execute(q.QUEUE_CANDIDATES, args)]
    turns = ClaimTurns() if turns is None else turns
    grants: list[Grant] = []
    while offered and len(grants) < max:
        ids = turns.pick(offered, max - len(grants))
        if not ids:
            break
        grants += start(conn, [StartRequest(eid, worker_id) for eid in ids], now_ms)
        tried = set(ids)
        offered = [c for c in offered if c.execution_id not in tried]
    return grants


def heartbeat(
    conn: psycopg.Connection[Any], beats: Sequence[tuple[str, str, int]], now_ms: int
) -> list[HeartbeatResult]:
    """Extend the leases of ``(execution_id, worker_id, lease_epoch)``, results in order."""
    args = {"ids": [b[0] for b in beats], "workers": [b[1] for b in beats], "epochs": [b[2] for b in beats],
            "now": now_ms, "default_ms": _DEFAULT_LEASE_MS}  # fmt: skip
    extended = {(r[0], r[1], r[2]): int(r[3]) for r in conn.execute(q.HEARTBEAT, args)}
    missed = sorted({eid for eid, worker, epoch in beats if (eid, epoch, worker) not in extended})
    holders: dict[str, tuple[str, int, str | None]] = {}
    if missed:
        holders = {r[0]: (r[1], r[2], r[3]) for r in conn.execute(q.EXECUTION_HOLDERS, {"ids": missed})}
    results: list[HeartbeatResult] = []
    for eid, worker, epoch in beats:
        until = extended.get((eid, epoch, worker))
        if until is not None:
            results.append(HeartbeatResult(LeaseVerdict.OK, until))
        else:
            results.append(HeartbeatResult(lease_verdict(holders.get(eid), epoch, worker)))
    return results


def complete(
    conn: psycopg.Connection[Any], completions: Sequence[Completion], now_ms: int, rand01: Sequence[float] | None
) -> list[CompletionResult]:
    ids = sorted({c.execution_id for c in completions})
    state = {r[0]: list(r[1:]) for r in conn.execute(q.COMPLETION_STATE, {"ids": ids})}
    retry: dict[str, str] = {}
    failed_jobs = {state[c.execution_id][4] for c in completions
                   if c.outcome is not Outcome.SUCCEEDED and c.execution_id in state}  # fmt: skip
    if failed_jobs:
        retry = dict(conn.execute(q.RETRY_POLICIES, {"ids": sorted(failed_jobs)}).fetchall())
    results, decided = decide_completions(
        completions, state, lambda job_id: retry_from_json(retry.get(job_id)), now_ms, rand01
    )
    # PostgreSQL text cannot hold NUL: scrub error, output and reason
    updates = [(*row[:6], text(row[6]), text(row[7]), text(row[8]), row[9]) for row in decided]
    if updates:
        cols = list(zip(*updates, strict=True))
        names = ("ids", "epochs", "statuses", "finished", "available", "exit_codes", "errors",
                 "outputs", "reasons", "extra")  # fmt: skip
        cur = conn.execute(q.COMPLETE_EXECUTIONS, dict(zip(names, map(list, cols), strict=True)))
        if cur.rowcount != len(updates):  # impossible: the rows are locked by COMPLETION_STATE
            raise StoreError("a fenced completion did not apply; nothing was committed")
        jobstate.settle(conn, settlements(decided, state))
        triggers.trigger_children(conn, results, now_ms)
        notified = notify_outcomes(conn, state, updates, now_ms)
        for res in results:
            res.notified = res.execution_id in notified
    return results


def notify_outcomes(conn: psycopg.Connection[Any], state: dict[str, list[Any]], updates: list[tuple[Any, ...]], now_ms: int) -> set[str]:
    """Outcomes just written, to the notification rules (same transaction: never lost); the
    executions whose outcome queued a notification."""
    return hooks.after_outcomes(outbox_sql(conn), [(u[0], state[u[0]][4], u[2]) for u in updates], now_ms)
