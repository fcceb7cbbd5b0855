"""Chains: a job's final outcome triggers other jobs (Dkron's parent/child). Pure.

A job lists ``on_success`` / ``on_failure`` children. When one of its executions reaches a
*final* outcome (SUCCEEDED, or DEAD once its retries are spent: a retry is not an outcome),
each child of that outcome gets one execution, written in the same transaction as the
parent's outcome. The child's identity is derived from the parent's: the child execution is
``(child_job_id, parent.scheduled_at)``, so the store's unique execution id makes a second
final outcome of the same parent tick (an at-least-once redelivery, a DLQ replay that then
succeeds) insert nothing. Consequence, documented: a child runs at most once per tick of its
parents, whichever parent (or its own schedule) got there first.

The child sees its parent: ``context = {"parent": {...}}`` travels with the execution, the
worker exports it as ``CRONWHEEL_PARENT_*`` variables, and :func:`payload_with_context`
adds it to the payload the child receives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cronwheel.core.ids import parse_execution_id

#: the final statuses that trigger children, and the list each one reads
FINAL_OUTCOMES = {"SUCCEEDED": "on_success", "DEAD": "on_failure"}


class ChainError(ValueError):
    """A chain that cannot be: a cycle, an unknown child, a child of another tenant."""


@dataclass(frozen=True, slots=True)
class ChildRun:
    job_id: str
    scheduled_at: int
    context: dict[str, Any]


def parent_context(parent_execution_id: str, status: str, scheduled_iso: str) -> dict[str, Any]:
    job_id, _ = parse_execution_id(parent_execution_id)
    return {
        "parent": {
            "executionId": parent_execution_id,
            "jobId": job_id,
            "scheduledAt": scheduled_iso,
            "outcome": status,
        }
    }


def children_to_run(
    parent_execution_id: str,
    status: str,
    on_success: Sequence[str],
    on_failure: Sequence[str],
    format_instant: Any,
) -> list[ChildRun]:
    """The child executions a parent execution that reached ``status`` triggers (none for a
    status that is not final). ``format_instant(ms)`` writes the parent's tick for people."""
    which = FINAL_OUTCOMES.get(status)
    if which is None:
        return []
    children = on_success if which == "on_success" else on_failure
    if not children:
        return []
    _, tick = parse_execution_id(parent_execution_id)
    context = parent_context(parent_execution_id, status, format_instant(tick))
    return [ChildRun(child, tick, context) for child in dict.fromkeys(children)]


def find_cycle(edges: Mapping[str, Iterable[str]], start: str) -> list[str] | None:
    """A path ``start → … → start`` through ``edges`` (job → children), or None.

    Iterative depth-first search; each job is expanded once, so the cost is the size of the
    part of the graph reachable from ``start``."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for child in edges.get(node, ()):
            if child == start:
                return [*path, start]
            if child not in seen:
                seen.add(child)
                stack.append((child, [*path, child]))
    return None


def check_chain(
    job_id: str,
    on_success: Sequence[str],
    on_failure: Sequence[str],
    edges: Mapping[str, Iterable[str]],
) -> None:
    """Refuse a chain for ``job_id`` that would close a cycle, given the tenant's other
    ``edges``; :class:`ChainError` names the cycle."""
    graph = {k: list(v) for k, v in edges.items()}
    graph[job_id] = [*on_success, *on_failure]
    cycle = find_cycle(graph, job_id)
    if cycle is not None:
        raise ChainError("chain would form a cycle: " + " -> ".join(cycle))


def new_children(job_id: str, children: Sequence[str], edges: Mapping[str, Iterable[str]]) -> list[str]:
    """The children a chain change adds to ``job_id``'s current ones (in ``edges``): only those
    are checked, so a child cancelled since does not block changing the rest of the chain."""
    current = set(edges.get(job_id, ()))
    return [c for c in dict.fromkeys(children) if c not in current]


def check_children(tenant: str, children: Sequence[str], found: Mapping[str, tuple[str, str]]) -> None:
    """Every child must be a job of ``tenant`` that is not CANCELLED; ``found`` maps the
    children that exist to their ``(tenant, status)``."""
    for child in children:
        got = found.get(child)
        if got is None or got[0] != tenant:
            raise ChainError(f"no job {child!r} to chain to (a child must be a job of the same tenant)")
        if got[1] == "CANCELLED":
            raise ChainError(f"job {child!r} is CANCELLED and cannot be chained to")


def payload_with_context(payload: Any, context: Mapping[str, Any] | None) -> Any:
    """The payload a triggered run receives: the job's payload with the context's keys added
    (an object payload gets them as members; any other payload is wrapped as
    ``{"payload": value, ...}``). Without a context the payload is unchanged."""
    if not context or "parent" not in context:
        return payload
    if payload is None:
        return dict(context)
    if isinstance(payload, dict):
        return {**payload, **context}
    return {"payload": payload, **context}
