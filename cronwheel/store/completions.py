"""What a completion does to an execution, decided once for every backend.

Pure (no driver, no clock): each backend reads the rows it needs inside its write
transaction, calls :func:`decide_completions`, and writes the result with its own SQL.
Keeping the decision in one place keeps the backends' fencing and retry semantics
identical (the contract suite checks both; this keeps them from drifting apart in the
first place).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_EFFECTS_PER_EXECUTION
from cronwheel.core.model import ExecStatus, RetryPolicy, settled_status
from cronwheel.core.records import (
    INTERRUPTED_REASON,
    Completion,
    CompletionResult,
    EffectVerdict,
    LeaseVerdict,
    Outcome,
)
from cronwheel.core.retry import after_failure
from cronwheel.store.common import EXEC_STATUS, short

#: stored output is cut to its last this many characters (the worker bounds it already)
MAX_OUTPUT_CHARS = 65_536


@functools.lru_cache(maxsize=4096)
def _with_max_attempts(policy: RetryPolicy, max_attempts: int) -> RetryPolicy:
    return policy if policy.max_attempts == max_attempts else replace(policy, max_attempts=max_attempts)


def lease_verdict(row: Sequence[Any] | None, lease_epoch: int, worker_id: str | None) -> LeaseVerdict:
    """Whether a call naming ``lease_epoch`` and ``worker_id`` holds the lease of an execution
    whose ``row`` is ``(status, lease_epoch, worker_id)`` (None: no such execution). The
    holder is the worker its start named: another worker at the same epoch (one of the same
    tenant that learnt the execution id and epoch) may neither renew nor end it. A
    ``worker_id`` of None is the daemon's own verdict (the reaper, a grant it could not hand
    out), which the epoch alone fences."""
    if row is None:
        return LeaseVerdict.NOT_FOUND
    status, epoch, holder = row[0], row[1], row[2]
    if status != "RUNNING" or epoch != lease_epoch:
        return LeaseVerdict.CANCELLED if status == "CANCELLED" else LeaseVerdict.LEASE_LOST
    if worker_id is not None and worker_id != holder:
        return LeaseVerdict.WRONG_WORKER
    return LeaseVerdict.OK


def effect_refusal(row: Sequence[Any], worker_id: str, lease_epoch: int) -> EffectVerdict | None:
    """Why a new effect key may not be recorded for an execution whose ``row`` is ``(status,
    lease_epoch, worker_id, effects)``: FENCED (a stale epoch, or no longer RUNNING),
    WRONG_WORKER (the current epoch, held by another worker), TOO_MANY; None: record it."""
    verdict = lease_verdict(row, lease_epoch, worker_id)
    if verdict is LeaseVerdict.WRONG_WORKER:
        return EffectVerdict.WRONG_WORKER
    if verdict is not LeaseVerdict.OK:
        return EffectVerdict.FENCED
    return EffectVerdict.TOO_MANY if row[3] >= MAX_EFFECTS_PER_EXECUTION else None


def decide_completions(
    completions: Sequence[Completion],
    state: Mapping[str, list[Any]],
    policy_of: Callable[[str], RetryPolicy],
    now_ms: int,
    rand01: Sequence[float] | None,
) -> tuple[list[CompletionResult], list[tuple[Any, ...]]]:
    """Decide a batch of completions, fenced.

    ``state`` maps execution id → ``[status, lease_epoch, attempt, max_attempts, job_id,
    worker_id]`` as
    read inside the caller's write transaction (it is updated in place, so that a second
    completion of the same lease in one batch is seen as stale). ``policy_of(job_id)`` gives
    the job's retry policy. Returns the results, in order, and the rows to write:
    ``(execution_id, lease_epoch, status, finished_at, available_at, exit_code, error,
    output, reason, extra_attempts)``, each to be applied only where the execution is still
    RUNNING at that epoch. An attempt ``INTERRUPTED`` by the daemon's stop is not judged: the
    execution waits to run again at once (RETRY_WAIT, available now) with one more attempt
    allowed (``extra_attempts`` 1, added to its max_attempts), so a restart neither dead-letters
    a job nor takes one of its retries.
    """
    updates: list[tuple[Any, ...]] = []
    results: list[CompletionResult] = []
    n_rand = 0 if rand01 is None else len(rand01)
    for i, c in enumerate(completions):
        eid = c.execution_id
        st = state.get(eid)
        verdict = lease_verdict(None if st is None else (st[0], st[1], st[5]), c.lease_epoch, c.worker_id)
        if st is None or verdict is not LeaseVerdict.OK:
            results.append(CompletionResult(eid, verdict))
            continue
        _, epoch, attempt, max_att, job_id, _ = st
        output = c.output if c.output is None or len(c.output) <= MAX_OUTPUT_CHARS else c.output[-MAX_OUTPUT_CHARS:]
        available_at: int | None = None
        extra = 0
        if c.outcome is Outcome.SUCCEEDED:
            # after retries, the reason still says "…; retry at …": say how it ended instead
            reason = None if attempt <= 1 else f"succeeded at attempt {attempt}/{max_att}"
            new_status, finished = "SUCCEEDED", now_ms
        elif c.outcome is Outcome.INTERRUPTED:
            new_status, finished, available_at, extra = "RETRY_WAIT", None, now_ms, 1
            reason = f"attempt {attempt}/{max_att} {INTERRUPTED_REASON}"
        else:
            r = rand01[i] if rand01 is not None and i < n_rand else 0.5
            after = after_failure(attempt, _with_max_attempts(policy_of(job_id), max_att), now_ms, r)
            what = f"attempt {attempt}/{max_att} {c.outcome.value}"
            if c.error:
                what += f": {short(c.error)}"
            if after.status is ExecStatus.DEAD:
                new_status, finished, reason = "DEAD", now_ms, f"dead: {what}"
            else:
                available_at = after.available_at
                assert available_at is not None
                new_status, finished = "RETRY_WAIT", None
                reason = f"{what}; retry at {format_instant(available_at)}"
        st[0] = new_status  # a second completion of the same lease in this batch is stale
        updates.append((eid, epoch, new_status, finished, available_at, c.exit_code, c.error, output, reason, extra))
        results.append(CompletionResult(eid, LeaseVerdict.OK, EXEC_STATUS[new_status], available_at))
    return results, updates


def settlements(updates: Sequence[tuple[Any, ...]], state: Mapping[str, list[Any]]) -> dict[str, str]:
    """job id → the status (``model.settled_status``) that the executions which ended in a
    batch of ``decide_completions`` updates settle their job in, should the job have no
    further tick and nothing else live (the store checks that). The last one in the batch wins."""
    out: dict[str, str] = {}
    for eid, _epoch, new_status, *_ in updates:
        if new_status in ("SUCCEEDED", "DEAD"):
            out[state[eid][4]] = settled_status(EXEC_STATUS[new_status]).value
    return out
