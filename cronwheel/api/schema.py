"""The HTTP-only bodies as msgspec structs: a remote worker's calls (claim, heartbeat, complete,
effects), which the API decodes with these (``api/decode.py``), and the answers it builds from
them: a job, an execution, their pages, the dead-man's window, a problem. The OpenAPI
document's components of the same names are generated from them (``api/openapi.py``). A
job's body is ``core/jobfields.py``: the CLI and the job files need it too. Pure: no HTTP, no
I/O.

An answer's member that is not always there, or that the document does not list as required,
is ``| UnsetType = UNSET``: msgspec leaves it out of ``required`` (and of the JSON when unset).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from cronwheel.core import limits as lim
from cronwheel.core.jobfields import (
    JOB_ID_PATTERN,
    NOT_BLANK,
    PRIORITIES,
    QUEUE_PATTERN,
    WORKER_ID_PATTERN,
    ordered,
)
from cronwheel.core.model import ExecOrigin, ExecStatus, JobStatus, MisfirePolicy, OverlapPolicy
from cronwheel.core.records import Outcome
from cronwheel.core.tenants import TENANT_NAME_RE

#: said of every integer of a remote worker's calls: JSON Schema counts ``1.0`` as an integer,
#: these calls do not (``strict_integers``), so the document says it in words
_AS_WRITTEN = "Written as an integer: `1.0` or `1e3` is refused (422), though JSON Schema counts it as one."
_WORKER_ID = Annotated[str, Meta(min_length=1, max_length=lim.MAX_WORKER_ID_CHARS, pattern=WORKER_ID_PATTERN)]
#: the outcomes a worker may report; ``lost`` is the daemon's own verdict
WORKER_OUTCOMES = (Outcome.SUCCEEDED.value, Outcome.FAILED.value, Outcome.TIMED_OUT.value)


class ClaimRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    #: a fencing token, an attempt or a count is an integer as sent: ``1.0`` is refused, not
    #: read as 1 (api/decode.py), so that a worker's broken encoder is found at its first call
    #: rather than by the epoch it rounded
    strict_integers: ClassVar[bool] = True
    worker_id: Annotated[_WORKER_ID, Meta(description="The remote worker's stable id; heartbeats and completions name it too.")]
    queues: Annotated[list[Annotated[str, Meta(pattern=QUEUE_PATTERN)]],
                      Meta(min_length=1, max_length=lim.MAX_CLAIM_QUEUES, description="Duplicates are taken once.")]
    max: Annotated[int, Meta(ge=1, le=lim.MAX_CLAIM, extra_json_schema={"default": 1}, description=f"At most this many executions. Null: absent (1). {_AS_WRITTEN}")] | None = None
    wait_sec: Annotated[float, Meta(ge=0, le=lim.MAX_CLAIM_WAIT_SEC, extra_json_schema={"default": 0},
                                    description="Long poll: with nothing to take, wait up to this long for an execution of these queues. Null: absent (0).")] | None = None


class LeaseRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    strict_integers: ClassVar[bool] = True  #: as ClaimRequest's: ``leaseEpoch: 1.0`` is refused
    worker_id: Annotated[_WORKER_ID, Meta(description="The worker the lease was granted to (the claim's `workerId`): another gets 409 `wrong_worker`.")]
    lease_epoch: Annotated[int, Meta(ge=0, le=2**63 - 1, description=f"The lease's epoch, as granted. {_AS_WRITTEN}")]


class CompleteRequest(LeaseRequest):
    outcome: Annotated[Literal["succeeded", "failed", "timed_out"], ordered(WORKER_OUTCOMES)]
    exit_code: Annotated[int, Meta(ge=-(2**31), le=2**31 - 1, description=_AS_WRITTEN)] | None = None
    error: Annotated[str, Meta(description="Kept up to its last 8 KiB. `null`: none.")] | None = None
    output: Annotated[str, Meta(description="Kept up to its last 64 KiB. `null`: none.")] | None = None


class EffectRequest(LeaseRequest):
    key: Annotated[str, Meta(min_length=1, max_length=lim.MAX_EFFECT_KEY_CHARS, description="Idempotency key of the side effect, unique per execution.")]


# ---------------------------------------------------------------- tenants and tokens

_TENANT_NAME = Annotated[str, Meta(pattern=TENANT_NAME_RE.pattern, description="1 to 64 letters, digits and `_ . -`, starting with a letter or digit.")]
_HOST = Annotated[str, Meta(min_length=1, max_length=255, extra_json_schema={"format": "host-pattern"},
                            description="A host name (`api.example.com`), a wildcard for its subdomains (`*.example.com`) or an IP address (format `host-pattern`).")]


#: what allowHighPriority grants, and why (the same words in a body and in a tenant answer)
HIGH_PRIORITY_DOC = ("May give its jobs priority high (false for a new tenant): the ready queue serves that tier before every "
             "tenant's default work, so without the grant a tenant's flood could delay its neighbours. Withdrawn, its "
             "jobs keep priority high but their runs are queued at default (a job shows `effectivePriority`). "
             "Granted on the upgrade to schema 24 to every tenant that had a high job.")


def _quota(lo: int, description: str) -> Meta:
    return Meta(ge=lo, le=lim.MAX_QUOTA, description=description)


class TenantPatch(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """The settings to change; null clears a quota."""

    json_schema_extra: ClassVar[dict[str, Any]] = {"minProperties": 1}

    weight: Annotated[int, Meta(ge=1, le=lim.MAX_WEIGHT, description="Share of the ready queue against other tenants (weighted fair queuing).")] | UnsetType = UNSET
    max_running: Annotated[int, _quota(0, "Executions running at once on each node; beyond it they wait, PENDING. Null: unlimited.")] | UnsetType | None = UNSET
    max_jobs: Annotated[int, _quota(0, "Registered (ACTIVE or PAUSED) jobs; beyond it submissions get 429. Null: unlimited.")] | UnsetType | None = UNSET
    submit_rate: Annotated[float, Meta(ge=lim.MIN_RATE, le=lim.MAX_RATE, description="Submissions per second per node (token bucket): each new job, triggered run, replayed dead letter, backfilled tick and run reported by a ping is one; beyond it 429 with Retry-After. Null: unlimited.")] | UnsetType | None = UNSET
    submit_burst: Annotated[int, _quota(1, "Token bucket capacity. Null: ceil(submitRate).")] | UnsetType | None = UNSET
    allow_shell: Annotated[bool, Meta(description="May create command and python targets (they run code as the daemon's user).")] | UnsetType = UNSET
    allow_high_priority: Annotated[bool, Meta(description=HIGH_PRIORITY_DOC)] | UnsetType = UNSET
    http_allow: Annotated[list[_HOST], Meta(max_length=lim.MAX_HTTP_ALLOW,
                          description="Hosts its HTTP targets (their redirects too, at each run) and webhooks may call, and the domains its email rules may write to (`host`, `*.domain`, IP). Empty (`[]`): no host at all. Null (or absent from a new tenant): none of its own, the daemon's --http-allow applies (with none set there either, any host).")] | UnsetType | None = UNSET


class TenantRequest(TenantPatch, kw_only=True):
    json_schema_extra: ClassVar[dict[str, Any]] = {}

    name: _TENANT_NAME


TOKEN_ROLES = ("tenant", "worker", "admin", "metrics")


class TokenRequest(msgspec.Struct, forbid_unknown_fields=True):
    """`role` defaults to tenant; tenant and worker tokens need `tenant`, admin and metrics tokens must not have one."""

    json_schema_extra: ClassVar[dict[str, Any]] = {
        "if": {"required": ["role"], "properties": {"role": {"enum": ["admin", "metrics"]}}},
        "then": {"properties": {"tenant": {"type": "null"}}},
        "else": {"required": ["tenant"], "properties": {"tenant": {"type": "string"}}},
    }

    tenant: Annotated[str, Meta(pattern=TENANT_NAME_RE.pattern,
                                description="The tenant a tenant or worker token acts for (required for them; must exist, else 404). Admin and metrics tokens have none: absent or null.")] | None = None
    role: Annotated[Literal["tenant", "worker", "admin", "metrics"], ordered(TOKEN_ROLES, "tenant"),
                    Meta(description="tenant: its jobs; worker: claim, heartbeat, complete and record effects of its tenant's executions, and ping its jobs; admin: everything; metrics: GET /metrics only.")] = "tenant"
    name: Annotated[str, Meta(min_length=1, max_length=lim.MAX_TOKEN_NAME_CHARS, pattern=NOT_BLANK, extra_json_schema={"format": "printable"},
                              description="A label, e.g. where the token is used: 1 to 200 printable characters, not blank. `null`: none.")] | None = None


# ---------------------------------------------------------------- scheduling beyond cron

_RANGE_END = "An RFC 3339 instant with a UTC offset, in 1970..9899 (format `instant`; else 422)."


class BackfillRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    from_: Annotated[str, Meta(extra_json_schema={"format": "instant"}, description=f"First instant of the range (included). {_RANGE_END}")] = msgspec.field(name="from")
    to: Annotated[str, Meta(extra_json_schema={"format": "instant"}, description=f"Last instant of the range (included); not after now, not before `from`. {_RANGE_END}")]
    dry_run: Annotated[bool, Meta(extra_json_schema={"default": False}, description="Plan only: list the ticks, create nothing.")] | None = None


_CHILDREN = Annotated[list[Annotated[str, Meta(pattern=JOB_ID_PATTERN)]], Meta(max_length=lim.MAX_CHAIN_CHILDREN)]


class ChainRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """The whole chain of a job (absent lists: none). A chain that would form a cycle among the tenant's jobs is refused (409 `chain_refused`). A `null` member counts as absent (no children)."""

    on_success: Annotated[_CHILDREN, Meta(description="Jobs to run when an execution ends SUCCEEDED.")] | None = None
    on_failure: Annotated[_CHILDREN, Meta(description="Jobs to run when an execution ends DEAD.")] | None = None


# ---------------------------------------------------------------- calendars

# a date's and a window's form are the calendar's to check (core/calendar.py says which entry is
# wrong and why): the document states them, msgspec only takes text
_CALENDAR_TIME = Annotated[str, Meta(extra_json_schema={"format": "calendar-time", "minLength": 16})]


class CalendarWindow(msgspec.Struct, forbid_unknown_fields=True):
    json_schema_extra: ClassVar[dict[str, Any]] = {"x-inline": True}  # written in place, not a component

    start: Annotated[_CALENDAR_TIME, Meta(description="`2026-12-24T22:00` (local, the job's zone) or an instant with an offset.")]
    end: Annotated[_CALENDAR_TIME, Meta(description="Exclusive; the same form as `start`.")]


class CalendarRequest(msgspec.Struct, forbid_unknown_fields=True):
    """The whole content of a calendar (a PUT replaces it). Rules JSON Schema cannot state: a window's `end` is after its `start`, both local times or both instants, dates and bounds in 1970-01-01..9899-12-31 (422); dates and windows together at most 5000. Format `calendar-time`: `YYYY-MM-DDTHH:MM[:SS]` (local, the job's zone) or with `Z`/`±HH:MM` (an instant). A `null` member counts as absent."""

    description: Annotated[str, Meta(max_length=lim.MAX_CALENDAR_DESCRIPTION_CHARS)] | None = None
    dates: Annotated[list[Annotated[str, Meta(extra_json_schema={"pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}" + lim.PATTERN_END, "format": "date"})]],
                     Meta(max_length=lim.MAX_CALENDAR_ENTRIES, description="Excluded days (`YYYY-MM-DD`), each a whole local day in the observing job's zone.")] | None = None
    windows: Annotated[list[CalendarWindow], Meta(max_length=lim.MAX_CALENDAR_ENTRIES)] | None = None


# ---------------------------------------------------------------- pings

PING_STATUSES = ("start", "success", "fail")


class PingRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """A `null` member counts as absent; a `start` ping carries no exitCode or output."""

    json_schema_extra: ClassVar[dict[str, Any]] = {
        "type": ["object", "null"],  # no body at all is a success (curl -X POST …/ping)
        "allOf": [{"if": {"properties": {"status": {"const": "start"}}, "required": ["status"]},
                   "then": {"properties": {"exitCode": {"type": "null"}, "output": {"type": "null"}}}}],
    }  # fmt: skip

    status: Annotated[Literal["start", "success", "fail"], ordered(PING_STATUSES), Meta(
        description="Absent: `success`, or `fail` when `exitCode` is given and not 0 (as `cronwheel ping --exit-code` "
                    "reports it).")] | None = None
    exit_code: Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)] | None = None
    output: Annotated[str, Meta(description="The tail of the run's output (the last 64 KiB are kept).")] | None = None


# ---------------------------------------------------------------- a tenant's default notification rules


def rule_list(component: str) -> dict[str, Any]:
    """A list of notification rules: each is ``core/notify.py``'s to check (``rules_from_json``)."""
    return {"type": "array", "maxItems": lim.MAX_NOTIFY_RULES, "items": {"$ref": f"#/components/schemas/{component}"}}


class TenantNotify(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    tenant: Annotated[str, Meta(extra_json_schema={"readOnly": True})] | UnsetType = UNSET
    notify: Annotated[list[Any], Meta(extra_json_schema={"x-schema": rule_list("NotifyRule")})]


# ---------------------------------------------------------------- answers


def ref(name: str, *, nullable: bool = False, description: str | None = None) -> Meta:
    """A member whose schema is a reference to a component (``oneOf`` it or null)."""
    target: dict[str, Any] = {"$ref": f"#/components/schemas/{name}"}
    schema: dict[str, Any] = {"oneOf": [target, {"type": "null"}]} if nullable else target
    if description is not None:
        schema["description"] = description
    return Meta(extra_json_schema={"x-schema": schema})


Instant = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]
_NOT_SHOWN: Any = UNSET


class Window(msgspec.Struct, rename="camel"):
    json_schema_extra: ClassVar[dict[str, Any]] = {"type": ["object", "null"]}

    deadline: Instant | None
    overdue: Annotated[bool, Meta(description="A deadline passed with no success since.")]
    overdue_since: Instant | None


_ORIGIN_DOC = (
    "Why the execution exists: schedule (its tick came due), catch_up (it stands for ticks missed while no scheduler could claim them, per the job's misfire policy), "
    "manual (a trigger), replay (replayed from the dead-letter queue), backfill (a past tick run on request), chain (started by a parent job's execution), "
    "ping (a run reported by a job that runs elsewhere). The dispatch-lag SLO counts only first attempts of schedule executions."
)


_EXEC_EFFECTIVE_DOC = (
    "Present only while the run waits to be queued at another tier than its `priority`: a high run of a tenant that "
    "does not hold allowHighPriority (withdrawn since, or never granted) waits at default."
)


class Execution(msgspec.Struct, rename="camel", kw_only=True):
    execution_id: str
    job_id: str | UnsetType = UNSET
    tenant: str | UnsetType = UNSET
    status: Annotated[str, ordered(tuple(s.value for s in ExecStatus))]
    priority: Annotated[str, ordered(PRIORITIES)] | UnsetType = UNSET
    effective_priority: Annotated[str, ordered(PRIORITIES), Meta(description=_EXEC_EFFECTIVE_DOC)] | UnsetType = UNSET
    scheduled_at: Instant | UnsetType = UNSET
    attempt: int | UnsetType = UNSET
    max_attempts: int | UnsetType = UNSET
    lease_epoch: Annotated[int, Meta(description="The fencing token: +1 on every hand-out to a worker.")]
    worker_id: str | UnsetType | None = UNSET
    lease_until: Instant | UnsetType | None = UNSET
    available_at: Instant | UnsetType | None = UNSET
    created_at: Instant | UnsetType | None = UNSET
    started_at: Instant | None
    finished_at: Instant | None
    lag_ms: Annotated[int, Meta(description="startedAt - scheduledAt; null before a start and for a ping (its run was timed elsewhere). Only first attempts of executions whose origin is schedule count as dispatch lag in the SLO (metrics, status, the dashboard's chart).")] | UnsetType | None = UNSET
    exit_code: Annotated[int, Meta(description="A command's exit status (negative: the signal that killed it), or an HTTP target's response status; null for a Python callable and for a run that reported none.")] | UnsetType | None = UNSET
    error: str | UnsetType | None = UNSET
    reason: str | UnsetType | None = UNSET
    queue: Annotated[str, Meta(description="The queue of a queue target (claimed by remote workers), else null.")] | UnsetType | None = UNSET
    origin: Annotated[str, ordered(tuple(o.value for o in ExecOrigin)), Meta(description=_ORIGIN_DOC)] | UnsetType = UNSET
    context: Annotated[Any, ref("ExecutionContext")] = _NOT_SHOWN
    output: Annotated[str, Meta(description="Tail of stdout/stderr; only on GET /v1/executions/{executionId}.")] | UnsetType | None = UNSET


_PING_TARGET = {
    "type": "object", "additionalProperties": False, "required": ["ping"], "properties": {"ping": {"type": "object", "maxProperties": 0}},
    "description": "A watched job, run elsewhere, that reports its runs by pings.",
}  # fmt: skip
_STATUS_DOC = (
    "ACTIVE: scheduled at `nextRunAt`; with no `nextRunAt` (a one-off once claimed), waiting for its executions to end. PAUSED: not scheduled. "
    "CANCELLED: for good. SUCCEEDED / FAILED: no further run, and the last execution to end succeeded / did not (went DEAD, or its tick was skipped); "
    "a DLQ replay, a trigger or an update with a new instant makes it ACTIVE again. docs/state-machine.md has the diagram."
)
_LAST_RUN_DOC = (
    "The job's \"last result\": its execution with the latest tick among those that started (RUNNING, RETRY_WAIT, or ended after a start), "
    "without its output. Ticks claimed ahead (PENDING) and executions cancelled or skipped before a start never count; null when there is none "
    "(never ran, or its history was pruned or purged)."
)
_WARNINGS_DOC = (
    "In the answer of a PATCH that sets `notify` only: Present when something accepted will not work as it stands, each naming its field: "
    "an email rule on a daemon with no mail transport (start it with --smtp-url or --sendmail; its notifications are retried, then dead-lettered, until then)."
)
_EFFECTIVE_DOC = (
    "Present only when the job's runs are queued at another tier than its `priority`: a high job of a tenant that does not "
    "hold allowHighPriority (withdrawn since, or never granted) is queued at default."
)
_GRACE_DOC = (
    "How late (seconds) a tick may start and still just run; a tick later than this is missed and follows `misfire`. "
    "null or absent: the default that fits the schedule: until the job's next tick comes due, at most 60 s."
)


# A job as the API answers it (``api/jobjson.py`` fills it): the members of its create body
# (``core.jobfields``) as they stand, its target under ``target``, and what the scheduler keeps
# (status, next run, bucket, window, last run). No docstring: it would be the document's text.
class Job(msgspec.Struct, rename="camel", kw_only=True):
    job_id: str
    name: str | UnsetType | None = UNSET
    tenant: str | UnsetType = UNSET
    status: Annotated[str, ordered(tuple(s.value for s in JobStatus)), Meta(description=_STATUS_DOC)]
    schedule: str | None
    run_at: Instant | None
    timezone: str
    next_run_at: Instant | None
    target: Annotated[Any, Meta(extra_json_schema={"x-schema": {"oneOf": [{"$ref": "#/components/schemas/Target"}, _PING_TARGET]}})]
    payload: Any = _NOT_SHOWN
    retry_policy: Annotated[Any, ref("RetryPolicy")] = _NOT_SHOWN
    timeout_sec: float | UnsetType = UNSET
    lease_sec: float | UnsetType = UNSET
    priority: Annotated[str, ordered(PRIORITIES)] | UnsetType = UNSET
    effective_priority: Annotated[str, ordered(PRIORITIES), Meta(description=_EFFECTIVE_DOC)] | UnsetType = UNSET
    overlap: Annotated[str, ordered(tuple(p.value for p in OverlapPolicy))] | UnsetType = UNSET
    misfire: Annotated[str, ordered(tuple(p.value for p in MisfirePolicy))] | UnsetType = UNSET
    jitter_sec: int | UnsetType = UNSET
    misfire_grace_sec: Annotated[int, Meta(description=_GRACE_DOC)] | UnsetType | None = UNSET
    notify: Annotated[Any, Meta(extra_json_schema={"x-schema": {"type": "array", "items": {"$ref": "#/components/schemas/NotifyRuleAnswer"}}})] = _NOT_SHOWN
    expect_success_within: str | UnsetType | None = UNSET
    window: Annotated[Any, ref("Window")] = _NOT_SHOWN
    env: Annotated[Any, ref("Env")] = _NOT_SHOWN
    run_as: Annotated[Any, ref("RunAs", nullable=True)] = _NOT_SHOWN
    shell: str | UnsetType | None = UNSET
    stdin: str | UnsetType | None = UNSET
    calendars: list[str] | UnsetType = UNSET
    active_from: Instant | UnsetType | None = UNSET
    active_until: Instant | UnsetType | None = UNSET
    on_success: list[str] | UnsetType = UNSET
    on_failure: list[str] | UnsetType = UNSET
    managed_by: str | UnsetType | None = UNSET
    bucket_id: int | UnsetType = UNSET
    created_at: Instant | UnsetType | None = UNSET
    updated_at: Instant | UnsetType | None = UNSET
    last_run: Annotated[Any, ref("Execution", nullable=True, description=_LAST_RUN_DOC)] = _NOT_SHOWN
    warnings: Annotated[list[str], Meta(description=_WARNINGS_DOC)] | UnsetType = UNSET


class Grant(msgspec.Struct, rename="camel", kw_only=True):
    """An execution leased to the caller: run it, heartbeat every leaseSec/4 with its leaseEpoch, complete it; a 409 means abort at once."""

    execution_id: str
    job_id: str
    tenant: str | UnsetType = UNSET
    queue: str | None
    lease_epoch: Annotated[int, Meta(ge=1, description="The fencing token.")]
    attempt: Annotated[int, Meta(ge=1)]
    scheduled_at: str
    lease_until: str
    lease_sec: float
    timeout_sec: float
    payload: Annotated[Any, Meta(description="The job's payload, any JSON value.")]
    env: Annotated[Any, Meta(extra_json_schema={"x-schema": {"$ref": "#/components/schemas/Env",
                                                               "description": "The job's env: set it in the environment of whatever runs the execution."}})] = _NOT_SHOWN
    context: Annotated[Any, ref("ExecutionContext")] = _NOT_SHOWN


class ClaimResponse(msgspec.Struct):
    executions: list[Grant]


class JobPage(msgspec.Struct):
    jobs: list[Job]
    next: Annotated[str, Meta(description="Pass as `after` for the next page.")] | None


class ExecutionPage(msgspec.Struct):
    executions: list[Execution]
    next: str | None


_REASONS = ("lease_lost", "cancelled", "fenced", "last_admin_token")


class Problem(msgspec.Struct, rename="camel", kw_only=True):
    """RFC 9457 problem details."""

    type: Annotated[str, Meta(description="`urn:cronwheel:problem:{code}`")]
    title: str
    status: int
    detail: str
    code: Annotated[str, Meta(description="Machine-readable problem code, e.g. `invalid_schedule`, `idempotency_key_reused`, `lease_conflict`.")] | UnsetType = UNSET
    field: Annotated[str, Meta(description="The offending body member (JSON path), header or query parameter.")] | UnsetType = UNSET
    reason: Annotated[str, ordered(_REASONS), Meta(description="Why a call was refused (409): a worker's lost lease or fence, or the last active admin token.")] | UnsetType = UNSET
    job_id: str | UnsetType = UNSET
    error_id: Annotated[str, Meta(description="500 only: the id to look up in the daemon log.")] | UnsetType = UNSET
    tenant: Annotated[str, Meta(description="403 `forbidden` to a tenant or worker token: its tenant (so a client learns whose grants apply).")] | UnsetType = UNSET


STRUCTS: tuple[type[msgspec.Struct], ...] = (
    ClaimRequest, LeaseRequest, CompleteRequest, EffectRequest, TenantRequest, TenantPatch, TokenRequest, BackfillRequest, ChainRequest, PingRequest, CalendarRequest, CalendarWindow, TenantNotify, Grant, ClaimResponse, Window, Execution, Job, JobPage, ExecutionPage, Problem,
)
