"""Fenced writes on running executions: heartbeats and completions (DESIGN.md invariant 4).

Both run inside the caller's write transaction. A write applies only if the execution is
RUNNING at exactly the lease_epoch the caller names; otherwise nothing changes and the verdict
says why (CANCELLED, LEASE_LOST, NOT_FOUND).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import apsw

from cronwheel.core import schedule
from cronwheel.core.model import DEFAULT_LEASE_SEC, ExecStatus, RetryPolicy
from cronwheel.core.retry import after_failure
from cronwheel.store.base import (
    Completion,
    CompletionResult,
    HeartbeatResult,
    LeaseVerdict,
    Outcome,
    StoreError,
)
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.rows import EXEC_STATUS, dumps, retry_from_json

#: stored output is cut to its last this many characters (the worker bounds it already)
MAX_OUTPUT_CHARS = 65_536
_DEFAULT_LEASE_MS = round(DEFAULT_LEASE_SEC * 1000)


@functools.lru_cache(maxsize=4096)
def _policy(retry_json: str | None, max_attempts: int) -> RetryPolicy:
    policy = retry_from_json(retry_json)
    return policy if policy.max_attempts == max_attempts else replace(policy, max_attempts=max_attempts)


def short(text: str | None, limit: int = 200) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    state = {r[0]: list(r[1:]) for r in conn.execute(q.COMPLETION_STATE, (dumps(ids),))}
    retry: dict[str, str] = {}
    failed_jobs = {state[c.execution_id][4] for c in completions
                   if c.outcome is not Outcome.SUCCEEDED and c.execution_id in state}  # fmt: skip
    if failed_jobs:
        retry = dict(conn.execute(q.RETRY_POLICIES, (dumps(sorted(failed_jobs)),)).fetchall())  # type: ignore[arg-type]
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
        updates.append((eid, epoch, new_status, finished, available_at, c.exit_code, c.error, output, reason))
        results.append(CompletionResult(eid, LeaseVerdict.OK, EXEC_STATUS[new_status], available_at))
    if updates:
        before = conn.total_changes()
        conn.executemany(q.COMPLETE_EXECUTION, updates)
        if conn.total_changes() - before != len(updates):  # impossible under the write lock
            raise StoreError("a fenced completion did not apply; nothing was committed")
    return results
