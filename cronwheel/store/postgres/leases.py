"""Hand-outs and fenced writes on running executions (DESIGN.md invariant 4), for PostgreSQL.

Each runs inside the caller's transaction. A heartbeat or completion applies only if the
execution is RUNNING at exactly the lease_epoch the caller names (the condition is in the
UPDATE's WHERE clause, so it holds whatever else runs concurrently); otherwise nothing
changes and the verdict says why (CANCELLED, LEASE_LOST, NOT_FOUND).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import psycopg

from cronwheel.core import schedule
from cronwheel.core.model import DEFAULT_LEASE_SEC, ExecStatus, Grant, RetryPolicy
from cronwheel.core.retry import after_failure
from cronwheel.store.base import (
    Completion,
    CompletionResult,
    HeartbeatResult,
    LeaseVerdict,
    Outcome,
    StartRequest,
    StoreError,
)
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.rows import EXEC_STATUS, PRIORITY, retry_from_json, text

#: stored output is cut to its last this many characters (the worker bounds it already)
MAX_OUTPUT_CHARS = 65_536
_DEFAULT_LEASE_MS = round(DEFAULT_LEASE_SEC * 1000)


@functools.lru_cache(maxsize=4096)
def _policy(retry_json: str | None, max_attempts: int) -> RetryPolicy:
    policy = retry_from_json(retry_json)
    return policy if policy.max_attempts == max_attempts else replace(policy, max_attempts=max_attempts)


def short(value: str | None, limit: int = 200) -> str:
    if not value:
        return ""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def start(conn: psycopg.Connection[Any], starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
    workers: dict[str, str] = {}
    for st in starts:
        workers.setdefault(st.execution_id, st.worker_id)
    cands = conn.execute(q.START_CANDIDATES, {"ids": list(workers), "now": now_ms}).fetchall()
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
        _, _, lease_sec, timeout_sec, target, payload = defs[eid]
        if target is None:  # no definition row (cannot happen with the foreign keys)
            lease_sec, timeout_sec, target, payload = DEFAULT_LEASE_SEC, 0.0, {}, None
        grants.append(Grant(r[0], r[1], r[2], PRIORITY[r[3]], r[4], r[5], r[6], r[7],
                            lease_sec, timeout_sec, target, payload, r[8]))  # fmt: skip
    return grants


def claim_for_worker(
    conn: psycopg.Connection[Any], queues: Sequence[str], worker_id: str, max: int, now_ms: int,
    tenant: str | None,
) -> list[Grant]:
    """Store.claim_for_worker inside the caller's transaction: lock up to ``max`` queued rows
    (SKIP LOCKED: another claimer's rows are passed over), then start them."""
    args = {"queues": list(queues), "now": now_ms, "tenant": tenant, "limit": max}
    ids = [r[0] for r in conn.execute(q.QUEUE_READY, args)]
    if not ids:
        return []
    return start(conn, [StartRequest(eid, worker_id) for eid in ids], now_ms)


def heartbeat(
    conn: psycopg.Connection[Any], beats: Sequence[tuple[str, int]], now_ms: int
) -> list[HeartbeatResult]:
    """Extend the leases of ``(execution_id, lease_epoch)`` pairs, results in order."""
    args = {"ids": [b[0] for b in beats], "epochs": [b[1] for b in beats], "now": now_ms,
            "default_ms": _DEFAULT_LEASE_MS}  # fmt: skip
    extended = {(r[0], r[1]): int(r[2]) for r in conn.execute(q.HEARTBEAT, args)}
    missed = sorted({eid for eid, epoch in beats if (eid, epoch) not in extended})
    statuses: dict[str, str] = {}
    if missed:
        statuses = dict(conn.execute(q.EXECUTION_STATUSES, {"ids": missed}).fetchall())
    results: list[HeartbeatResult] = []
    for eid, epoch in beats:
        until = extended.get((eid, epoch))
        if until is not None:
            results.append(HeartbeatResult(LeaseVerdict.OK, until))
            continue
        status = statuses.get(eid)
        if status is None:
            results.append(HeartbeatResult(LeaseVerdict.NOT_FOUND))
        else:
            verdict = LeaseVerdict.CANCELLED if status == "CANCELLED" else LeaseVerdict.LEASE_LOST
            results.append(HeartbeatResult(verdict))
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
    updates: list[tuple[Any, ...]] = []
    results: list[CompletionResult] = []
    n_rand = 0 if rand01 is None else len(rand01)
    for i, c in enumerate(completions):
        eid = c.execution_id
        st = state.get(eid)
        if st is None:
            results.append(CompletionResult(eid, LeaseVerdict.NOT_FOUND))
            continue
        status, epoch, attempt, max_att, job_id = st
        if status != "RUNNING" or epoch != c.lease_epoch:
            verdict = LeaseVerdict.CANCELLED if status == "CANCELLED" else LeaseVerdict.LEASE_LOST
            results.append(CompletionResult(eid, verdict))
            continue
        output = c.output if c.output is None or len(c.output) <= MAX_OUTPUT_CHARS else c.output[-MAX_OUTPUT_CHARS:]
        available_at: int | None = None
        if c.outcome is Outcome.SUCCEEDED:
            new_status, finished, reason = "SUCCEEDED", now_ms, None
        else:
            r = rand01[i] if rand01 is not None and i < n_rand else 0.5
            after = after_failure(attempt, _policy(retry.get(job_id), max_att), now_ms, r)
            what = f"attempt {attempt}/{max_att} {c.outcome.value}"
            if c.error:
                what += f": {short(c.error)}"
            if after.status is ExecStatus.DEAD:
                new_status, finished, reason = "DEAD", now_ms, f"dead: {what}"
            else:
                available_at = after.available_at
                assert available_at is not None
                new_status, finished = "RETRY_WAIT", None
                reason = f"{what}; retry at {schedule.format_instant(available_at)}"
        st[0] = new_status  # a second completion of the same lease in this batch is stale
        updates.append((eid, epoch, new_status, finished, available_at, c.exit_code, text(c.error),
                        text(output), text(reason)))  # fmt: skip
        results.append(CompletionResult(eid, LeaseVerdict.OK, EXEC_STATUS[new_status], available_at))
    if updates:
        cols = list(zip(*updates, strict=True))
        names = ("ids", "epochs", "statuses", "finished", "available", "exit_codes", "errors",
                 "outputs", "reasons")  # fmt: skip
        cur = conn.execute(q.COMPLETE_EXECUTIONS, dict(zip(names, map(list, cols), strict=True)))
        if cur.rowcount != len(updates):  # impossible: the rows are locked by COMPLETION_STATE
            raise StoreError("a fenced completion did not apply; nothing was committed")
    return results
