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

from cronwheel.core import chains as chains_core
from cronwheel.core import notify, schedule
from cronwheel.core.calendar import Calendar, Exclusions, calendar_from_json
from cronwheel.core.deadman import Window
from cronwheel.core.ids import execution_id, parse_execution_id
from cronwheel.core.model import (
    ExecOrigin,
    ExecStatus,
    Execution,
    Job,
    JobSpec,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
    settled_status,
)
from cronwheel.core.records import Completion, CompletionResult, LeaseVerdict, Outcome
from cronwheel.core.retry import after_failure
from cronwheel.core.tenants import ApiToken, Role, Tenant

#: stored output is cut to its last this many characters (the worker bounds it already)
MAX_OUTPUT_CHARS = 65_536
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


def settlements(updates: Sequence[tuple[Any, ...]], state: Mapping[str, list[Any]]) -> dict[str, str]:
    """job id → the status (``model.settled_status``) that the executions which ended in a
    batch of ``decide_completions`` updates settle their job in, should the job have no
    further tick and nothing else live (the store checks that). The last one in the batch wins."""
    out: dict[str, str] = {}
    for eid, _epoch, new_status, *_ in updates:
        if new_status in ("SUCCEEDED", "DEAD"):
            out[state[eid][4]] = settled_status(EXEC_STATUS[new_status]).value
    return out


class CalendarBook:
    """The calendars one claim batch needs, read once: ``load(needs, fetch, decode)`` with
    ``needs`` the ``(tenant, calendars column)`` of the due jobs that observe calendars and
    ``fetch(pairs)`` the rows ``(tenant, name, spec, created_at, updated_at)`` of those names."""

    __slots__ = ("_by_key", "_decode")

    def __init__(self, by_key: dict[tuple[str, str], Calendar], decode: Callable[[Any], Any]) -> None:
        self._by_key = by_key
        self._decode = decode

    @classmethod
    def load(
        cls,
        needs: Sequence[tuple[str, Any]],
        fetch: Callable[[list[list[str]]], Sequence[Any]],
        decode: Callable[[Any], Any],
    ) -> CalendarBook:
        if not needs:
            return cls({}, decode)
        pairs = sorted({(tenant, name) for tenant, names in needs for name in decode(names)})
        by_key = {(r[0], r[1]): calendar_row(r, decode) for r in fetch([list(p) for p in pairs])}
        return cls(by_key, decode)

    def exclusions(self, tenant: str, timezone: str, names: Any) -> Exclusions | None:
        """What excludes a job's ticks (None: nothing). A calendar deleted since is ignored."""
        if names is None:
            return None
        found = [self._by_key[(tenant, n)] for n in self._decode(names) if (tenant, n) in self._by_key]
        return Exclusions(timezone, tuple(found)) if found else None


def calendar_row(r: Any, decode: Callable[[Any], Any]) -> Calendar:
    """A ``(tenant, name, spec, created_at, updated_at)`` row as a Calendar."""
    spec = dict(decode(r[2]))
    spec["name"] = r[1]
    return calendar_from_json(spec, r[0], r[3], r[4])


def calendar_spec_json(cal: Calendar) -> str:
    """What the ``spec`` column holds (the name and tenant are columns of their own)."""
    data = cal.to_json()
    del data["name"], data["tenant"]
    return dumps(data)


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
        found = chains_core.children_to_run(eid, status, lists[0], lists[1], schedule.format_instant)
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
            calendars=tuple(self.decode(r[22])) if r[22] is not None else (),
            active_from=r[24],
            active_until=r[23],
            on_success=tuple(self.decode(r[25])) if r[25] is not None else (),
            on_failure=tuple(self.decode(r[26])) if r[26] is not None else (),
            misfire_grace_sec=r[27],
            managed_by=r[28],
            notify=notify.stored_rules(self.decode(r[29])),
            expect_success_within_ms=r[30],
        )
        spec.set_process(self.decode(r[21]) if r[21] is not None else None)
        window = None if r[32] is None else Window(r[31], r[32], r[33])
        return Job(id=r[0], bucket_id=r[1], status=JOB_STATUS[r[2]], next_run_at=r[3],
                   created_at=r[19], updated_at=r[20], spec=spec, window=window)  # fmt: skip

    def execution(self, r: Any) -> Execution:
        """The field order of ``Execution``."""
        context = None if r[20] is None else self.decode(r[20])
        return Execution(r[0], r[1], r[2], PRIORITY[r[3]], r[4], EXEC_STATUS[r[5]], *r[6:20],
                         origin=ORIGIN[r[21]], context=context)

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
