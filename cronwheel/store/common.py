"""Small pieces every store backend shares: the stored forms of enums and JSON, and the
decisions both backends make alike around their SQL (a replayed execution's history, a
tenant's merged settings, a token's scope, the reaper's completions).

Pure (no driver, no clock). The bigger shared decisions have modules of their own:
``completions`` (what a completion does), ``chaining`` (chain children, backfills),
``calendars`` and ``rowreader``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from cronwheel.core.ids import stable_hash
from cronwheel.core.instants import format_instant
from cronwheel.core.model import (
    ExecOrigin,
    ExecStatus,
    Execution,
    JobSpec,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)
from cronwheel.core.records import Completion, DeadLettersPruned, Outcome
from cronwheel.core.tenants import TENANT_SETTINGS, TENANTLESS_ROLES, ApiToken, Tenant
from cronwheel.core.words import counted

#: "no upper bound" for a millisecond column (a BIGINT's largest value)
MAX_MS = 2**63 - 1
#: the reason on a tick claimed ahead that an update of its job's schedule cancelled
SUPERSEDED = "superseded: the job's schedule was updated before this tick was due"
EXEC_STATUS: dict[str, ExecStatus] = {s.value: s for s in ExecStatus}

PRIORITY: dict[int, Priority] = {p.value: p for p in Priority}
JOB_STATUS: dict[str, JobStatus] = {s.value: s for s in JobStatus}
MISFIRE: dict[str, MisfirePolicy] = {m.value: m for m in MisfirePolicy}
ORIGIN: dict[str, ExecOrigin] = {o.value: o for o in ExecOrigin}
OVERLAP: dict[str, OverlapPolicy] = {o.value: o for o in OverlapPolicy}

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(value: Any) -> str:
    """Compact JSON, as every backend stores it."""
    return "null" if value is None else _dumps(value)


_encode_array = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def loads(text: str | bytes) -> Any:
    """A stored JSON column's value. msgspec parses in one C call, about twice as fast as
    ``json.loads`` on a listing's rows; what it refuses and ``json.loads`` reads (a lone
    surrogate escape or a NaN stored before the API refused them, a number beyond a double)
    is read by ``json.loads``, as it always was, so no stored row becomes unreadable."""
    try:
        return _decode(text)
    except msgspec.DecodeError:
        return json.loads(text)


def json_array(values: Sequence[Any]) -> str:
    """A statement's batch parameter, read by SQLite's ``json_each``: a JSON array of ids,
    numbers and arrays of them, never stored. One C call: ~8x faster than ``dumps`` on a
    herd's batches, which pass a few per execution."""
    return _encode_array(values).decode()


def process_text(spec: JobSpec) -> str | None:
    """The stored form of a job's process setup: JSON, or NULL for a job that sets none."""
    process = spec.process_json()
    return None if process is None else _dumps(process)


@functools.lru_cache(maxsize=4096)
def retry_to_json(policy: RetryPolicy) -> str:
    return _dumps(policy.to_json())


@functools.lru_cache(maxsize=4096)
def retry_from_json(text: str | None) -> RetryPolicy:
    return RetryPolicy() if text is None else RetryPolicy.from_json(loads(text))


class JsonMemo:
    """``loads`` for one batch of rows, parsing each distinct text once: in a herd many
    executions share a target or a payload text (a ``null`` payload above all). The values
    are shared between the rows of the batch, so they must be treated as read-only (grants
    are)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, Any] = {}

    def __call__(self, text: str) -> Any:
        try:
            return self._seen[text]
        except KeyError:
            value = self._seen[text] = loads(text)
            return value


def short(value: str | None, limit: int = 200) -> str:
    if not value:
        return ""
    return value if len(value) <= limit else value[: limit - 1] + "…"


@functools.lru_cache(maxsize=256)
def json_list(values: Sequence[str]) -> str | None:
    """A JSON array column; an empty list is stored as NULL (the claim skips NULL cheaply)."""
    return dumps(list(values)) if values else None


def replay_reason(dead: Execution, now_ms: int) -> str:
    """The reason a replayed DEAD execution carries: its old reason, then its history."""
    history = f"replayed at {format_instant(now_ms)} after {counted(dead.attempt, 'attempt')}"
    if dead.finished_at is not None:
        history += f", dead since {format_instant(dead.finished_at)}"
    if dead.exit_code is not None:
        history += f", exit code {dead.exit_code}"
    if dead.error:
        history += f", last error: {short(dead.error)}"
    return history if not dead.reason else f"{dead.reason}; {history}"


def expired_completions(rows: Sequence[tuple[str, int]]) -> tuple[list[Completion], list[float]]:
    """The reaper's completions for expired leases ``(execution_id, lease_epoch)``, with their
    draws: a deterministic draw per lease spreads the retries of a crashed worker's executions."""
    comps = [Completion(eid, None, epoch, Outcome.LOST, error="lease expired") for eid, epoch in rows]
    return comps, [stable_hash(f"{eid}:{epoch}") / 2**64 for eid, epoch in rows]


def check_tenant_changes(changes: Mapping[str, Any]) -> None:
    """ValueError for keys that are not ``TENANT_SETTINGS`` (before anything is written)."""
    unknown = set(changes) - set(TENANT_SETTINGS)
    if unknown:
        raise ValueError(f"not tenant settings: {', '.join(sorted(unknown))}")


def merged_tenant_settings(current: Tenant, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Every ``TENANT_SETTINGS`` field: the changed ones from ``changes``, the others as stored."""
    return {f: changes.get(f, getattr(current, f)) for f in TENANT_SETTINGS}


def check_token_scope(token: ApiToken) -> None:
    """ValueError unless the token names a tenant exactly when its role needs one."""
    if (token.role in TENANTLESS_ROLES) != (token.tenant is None):
        raise ValueError("admin and metrics tokens name no tenant; tenant and worker tokens name one")


def prune_dead_letter_pages(
    page: Sequence[Sequence[Any]], rows: int, keep: int, after_job: str | None, limit: int,
    prune: Callable[[str, int], tuple[int, int]],
) -> tuple[list[DeadLettersPruned], str | None]:
    """``Store.prune_dead_letters`` around a backend's statements. ``page`` is the next ``rows``
    dead letters in job order, counted by job: (job id, tenant, count). When the page is full,
    its last job may have more than it counted, so it is left to the next call (unless it is
    the only one, which then has at least ``rows``, more than ``keep``). ``prune(job_id,
    budget)`` deletes up to ``budget`` of one job's oldest beyond its ``keep`` newest in a
    transaction of its own, and says how many it deleted and how many are left. Stops once
    ``limit`` were deleted, the cursor then on the job before the one cut short."""
    full = sum(count for _job, _tenant, count in page) >= rows
    if full and len(page) > 1:
        page = page[:-1]
    pruned: list[DeadLettersPruned] = []
    deleted = 0
    for index, (job_id, tenant, count) in enumerate(page):
        if count <= keep:
            continue
        gone, left = prune(job_id, limit - deleted)
        if gone:
            pruned.append(DeadLettersPruned(job_id, tenant, gone, left))
        deleted += gone
        if deleted >= limit:
            return pruned, (page[index - 1][0] if index else after_job) or ""
    return pruned, page[-1][0] if full else None
