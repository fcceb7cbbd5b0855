"""Logic every store backend shares: what a completion does to an execution.

Pure (no driver, no clock): each backend reads the rows it needs, calls this, and writes
the result with its own SQL. Keeping the decision in one place keeps the backends' fencing
and retry semantics identical (the contract suite checks both; this keeps them from
drifting apart in the first place).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from cronwheel.core import notify, schedule
from cronwheel.core.deadman import Window
from cronwheel.core.model import (
    ExecStatus,
    Execution,
    Job,
    JobSpec,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)
from cronwheel.core.retry import after_failure
from cronwheel.core.tenants import ApiToken, Role, Tenant
from cronwheel.store.base import Completion, CompletionResult, LeaseVerdict, Outcome

#: stored output is cut to its last this many characters (the worker bounds it already)
MAX_OUTPUT_CHARS = 65_536
#: the reason on a tick claimed ahead that an update of its job's schedule cancelled
SUPERSEDED = "superseded: the job's schedule was updated before this tick was due"
EXEC_STATUS: dict[str, ExecStatus] = {s.value: s for s in ExecStatus}

PRIORITY: dict[int, Priority] = {p.value: p for p in Priority}
JOB_STATUS: dict[str, JobStatus] = {s.value: s for s in JobStatus}
MISFIRE: dict[str, MisfirePolicy] = {m.value: m for m in MisfirePolicy}
OVERLAP: dict[str, OverlapPolicy] = {o.value: o for o in OverlapPolicy}

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(value: Any) -> str:
    """Compact JSON, as every backend stores it."""
    return "null" if value is None else _dumps(value)


def process_text(spec: JobSpec) -> str | None:
    """The stored form of a job's process setup: JSON, or NULL for a job that sets none."""
    process = spec.process_json()
    return None if process is None else _dumps(process)


@functools.lru_cache(maxsize=4096)
def retry_to_json(policy: RetryPolicy) -> str:
    return _dumps(policy.to_json())


@functools.lru_cache(maxsize=4096)
def retry_from_json(text: str | None) -> RetryPolicy:
    return RetryPolicy() if text is None else RetryPolicy.from_json(json.loads(text))


class JsonMemo:
    """``json.loads`` for one batch of rows, parsing each distinct text once: in a herd many
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
            value = self._seen[text] = json.loads(text)
            return value


def short(value: str | None, limit: int = 200) -> str:
    if not value:
        return ""
    return value if len(value) <= limit else value[: limit - 1] + "…"


@functools.lru_cache(maxsize=4096)
def _with_max_attempts(policy: RetryPolicy, max_attempts: int) -> RetryPolicy:
    return policy if policy.max_attempts == max_attempts else replace(policy, max_attempts=max_attempts)


def decide_completions(
    completions: Sequence[Completion],
    state: Mapping[str, list[Any]],
    policy_of: Callable[[str], RetryPolicy],
    now_ms: int,
    rand01: Sequence[float] | None,
) -> tuple[list[CompletionResult], list[tuple[Any, ...]]]:
    """Decide a batch of completions, fenced.

    ``state`` maps execution id → ``[status, lease_epoch, attempt, max_attempts, job_id]`` as
    read inside the caller's write transaction (it is updated in place, so that a second
    completion of the same lease in one batch is seen as stale). ``policy_of(job_id)`` gives
    the job's retry policy. Returns the results, in order, and the rows to write:
    ``(execution_id, lease_epoch, status, finished_at, available_at, exit_code, error,
    output, reason)``, each to be applied only where the execution is still RUNNING at that
    epoch.
    """
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
                reason = f"{what}; retry at {schedule.format_instant(available_at)}"
        st[0] = new_status  # a second completion of the same lease in this batch is stale
        updates.append((eid, epoch, new_status, finished, available_at, c.exit_code, c.error, output, reason))
        results.append(CompletionResult(eid, LeaseVerdict.OK, EXEC_STATUS[new_status], available_at))
    return results, updates


class RowReader:
    """Rows of the stores' shared column lists (``queries.JOB_COLUMNS``, ``EXEC_COLUMNS``,
    ``TENANT_COLUMNS``, ``TOKEN_COLUMNS``, the same order in every backend) to model objects.

    ``decode`` turns a stored JSON column into its value: SQLite hands back the text
    (``json.loads``), psycopg hands back ``json`` columns already parsed (identity).
    """

    def __init__(self, decode: Callable[[Any], Any]) -> None:
        self.decode = decode

    def job(self, r: Any) -> Job:
        spec = JobSpec(
            target=self.decode(r[14]),
            schedule=r[4],
            run_at=r[13],
            timezone=r[5],
            name=r[12],
            tenant=r[9],
            payload=self.decode(r[15]),
            retry=retry_from_json(r[16]),
            timeout_sec=r[17],
            lease_sec=r[18],
            priority=PRIORITY[r[10]],
            overlap=OVERLAP[r[7]],
            misfire=MISFIRE[r[6]],
            jitter_sec=r[8],
            notify=notify.stored_rules(self.decode(r[22])),
            expect_success_within_ms=r[23],
        )
        spec.set_process(self.decode(r[21]) if r[21] is not None else None)
        window = None if r[25] is None else Window(r[24], r[25], r[26])
        return Job(id=r[0], bucket_id=r[1], status=JOB_STATUS[r[2]], next_run_at=r[3],
                   created_at=r[19], updated_at=r[20], spec=spec, window=window)  # fmt: skip

    @staticmethod
    def execution(r: Any) -> Execution:
        """The field order of ``Execution``."""
        return Execution(r[0], r[1], r[2], PRIORITY[r[3]], r[4], EXEC_STATUS[r[5]], *r[6:20])

    def tenant(self, r: Any) -> Tenant:
        return Tenant(
            name=r[0],
            weight=r[1],
            max_running=r[2],
            max_jobs=r[3],
            submit_rate=r[4],
            submit_burst=r[5],
            allow_shell=bool(r[6]),
            http_allow=tuple(self.decode(r[7])) if r[7] else (),
            created_at=r[8],
            updated_at=r[9],
        )

    @staticmethod
    def token(r: Any) -> ApiToken:
        return ApiToken(token_id=r[0], token_hash=r[1], role=Role(r[2]), tenant=r[3], name=r[4],
                        created_at=r[5], revoked_at=r[6])  # fmt: skip
