"""Executions made outside a job's schedule, shared by the backends: chain children and backfills.

Pure: a backend passes the rows it read and inserts what comes back (ON CONFLICT DO NOTHING).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cronwheel.core import chains as chains_core
from cronwheel.core.ids import execution_id, parse_execution_id
from cronwheel.core.instants import format_instant
from cronwheel.core.model import ExecStatus, Execution, JobStatus, OverlapPolicy, Priority
from cronwheel.core.records import CompletionResult, LeaseVerdict
from cronwheel.store.common import PRIORITY

#: the columns a store reads to make a job's execution outside its schedule (backfill, chain):
#: ``(tenant, priority, max_attempts, overlap, queue)``
ChildJob = tuple[str, int, int, str, "str | None"]


def new_execution(
    job_id: str, job: ChildJob, tick: int, now_ms: int, reason: str, context: dict[str, Any],
    priority: Priority | None = None,
) -> tuple[Execution, bool]:
    """A PENDING execution of ``job`` at ``tick`` made by something other than its schedule,
    available at once, and whether the job's overlap policy guards it."""
    tenant, prio, max_att, overlap, queue = job
    ex = Execution(
        execution_id(job_id, tick), job_id, tenant, priority if priority is not None else PRIORITY[prio], tick,
        ExecStatus.PENDING, available_at=now_ms, created_at=now_ms, reason=reason, max_attempts=max_att,
        queue=queue, context=context,
    )
    return ex, overlap != OverlapPolicy.ALLOW.value


def chain_children(
    finals: Sequence[tuple[str, str]],
    chains: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    load_children: Callable[[list[str]], Mapping[str, ChildJob]],
    now_ms: int,
) -> list[tuple[Execution, bool]]:
    """The chain children's executions for ``finals`` ``(execution_id, final status)``, given
    the parents' ``chains`` (job id → (on_success, on_failure)) and ``load_children(ids)``
    (the ACTIVE ones among those ids). Each backend inserts them ON CONFLICT DO NOTHING."""
    runs: list[chains_core.ChildRun] = []
    parents: list[str] = []
    for eid, status in finals:
        parent_job, _ = parse_execution_id(eid)
        lists = chains.get(parent_job)
        if lists is None:
            continue
        found = chains_core.children_to_run(eid, status, lists[0], lists[1], format_instant)
        runs.extend(found)
        parents.extend([eid] * len(found))
    if not runs:
        return []
    children = load_children(sorted({r.job_id for r in runs}))
    out: list[tuple[Execution, bool]] = []
    for run, parent in zip(runs, parents, strict=True):
        job = children.get(run.job_id)
        if job is not None:
            out.append(new_execution(run.job_id, job, run.scheduled_at, now_ms, f"triggered by {parent}", run.context))
    return out


#: the context of a backfilled execution
BACKFILL_CONTEXT = {"backfill": True}


def backfill_executions(job_id: str, row: Any, ticks: Sequence[int], now_ms: int) -> list[tuple[Execution, bool]] | None:
    """A backfill's executions, given the job's ``(status, tenant, priority, max_attempts,
    overlap, queue)`` row (None: no such job), at batch priority. None: nothing to backfill."""
    if row is None or row[0] == JobStatus.CANCELLED.value:
        return None
    job: ChildJob = (row[1], row[2], row[3], row[4], row[5])
    return [new_execution(job_id, job, t, now_ms, "backfill", BACKFILL_CONTEXT, Priority.BATCH) for t in ticks]


def trigger_children(
    results: Sequence[CompletionResult],
    chains_of: Callable[[list[str]], Mapping[str, tuple[Sequence[str], Sequence[str]]]],
    load_children: Callable[[list[str]], Mapping[str, ChildJob]],
    insert: Callable[[list[tuple[Execution, bool]]], list[Execution]],
    now_ms: int,
) -> None:
    """Inside a backend's completion transaction: insert the chain children of the final
    outcomes among ``results`` (``chains_of(parent job ids)``, ``load_children(ids)``,
    ``insert(rows)`` → those inserted) and list them in each result's ``triggered``."""
    finals = [(r.execution_id, r.status.value) for r in results
              if r.verdict is LeaseVerdict.OK and r.status is not None and r.status.terminal]  # fmt: skip
    if not finals:
        return
    chains = chains_of(sorted({eid.rpartition(":")[0] for eid, _ in finals}))
    if not chains:
        return
    made = chain_children(finals, chains, load_children, now_ms)
    inserted = {ex.execution_id for ex in insert(made)}
    by_parent = {r.execution_id: r for r in results}
    for ex, _ in made:
        if ex.execution_id in inserted and ex.context is not None:
            by_parent[ex.context["parent"]["executionId"]].triggered.append(ex)
