"""The API's smaller answers as msgspec structs: tenants and tokens, a created job, the worker
calls' and a ping's answers, calendars, notifications and their pages. The handlers fill
them and encode them with ``msgspec.to_builtins`` (the same JSON, members in declaration
order; an ``UNSET`` member is left out), and the OpenAPI document's components of the same
names are generated from them (``api/openapi.py``). A job's and an execution's answers are in
``api/schema.py``, beside the bodies. Pure: no HTTP, no I/O.

A member that is not always there, or that the document does not list as required, is
``| UnsetType = UNSET``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import UNSET, Meta, UnsetType

from cronwheel.api.schema import (
    HIGH_PRIORITY_DOC,
    PING_STATUSES,
    TOKEN_ROLES,
    Instant,
    ref,
    rule_list,
)
from cronwheel.core import limits as lim
from cronwheel.core.jobfields import ordered
from cronwheel.core.model import ExecStatus
from cronwheel.core.notify import NotificationStatus, NotifyOn
from cronwheel.core.tenants import TOKEN_ID_RE

# ---------------------------------------------------------------- tenants and tokens


class Tenant(msgspec.Struct, rename="camel", kw_only=True):
    name: str
    weight: Annotated[int, Meta(ge=1, le=lim.MAX_WEIGHT, description="Share of the ready queue against other tenants (weighted fair queuing).")]
    max_running: Annotated[int, Meta(ge=0, description="Executions running at once on each node; beyond it they wait, PENDING. Null: unlimited.")] | None
    max_jobs: Annotated[int, Meta(ge=0, description="Registered (ACTIVE or PAUSED) jobs; beyond it submissions get 429. Null: unlimited.")] | None
    submit_rate: Annotated[float, Meta(gt=0, description="Submissions per second per node (token bucket): each new job, triggered run, replayed dead letter, backfilled tick and run reported by a ping is one; beyond it 429 with Retry-After. Null: unlimited.")] | None
    submit_burst: Annotated[int, Meta(ge=1, description="Token bucket capacity. Null: ceil(submitRate).")] | None
    allow_shell: Annotated[bool, Meta(description="May create command and python targets (they run code as the daemon's user).")]
    allow_high_priority: Annotated[bool, Meta(description=HIGH_PRIORITY_DOC)]
    http_allow: Annotated[list[str], Meta(max_length=lim.MAX_HTTP_ALLOW,
                          description="Hosts its HTTP targets, their redirects and its webhooks may call, and its email rules' recipients' domains (`host`, `*.domain`, IP). Empty (`[]`): no host at all. Null: none of its own, the daemon's --http-allow applies (with none set there either, any host).")] | None
    created_at: Instant | UnsetType | None = UNSET
    updated_at: Instant | UnsetType | None = UNSET
    status: Annotated[str, Meta(description="`active`, or `deleting`: its deletion was asked (DELETE /v1/tenants/{name}); its tokens are revoked, it takes no new job, and its name stays taken until retention has removed its rows, then the tenant itself.",
                                extra_json_schema={"enum": ["active", "deleting"]})] = "active"
    deleting_since: Instant | UnsetType | None = UNSET
    jobs: Annotated[int, Meta(ge=0, description="Registered (ACTIVE or PAUSED) jobs, what maxJobs counts (GET /v1/tenants/{name}). For a tenant being deleted (in every answer): its live jobs still to cancel; a forced deletion cancels them in the background, and 0 says it is done.")] | UnsetType = UNSET
    effective_http_allow: Annotated[list[str], Meta(description="The hosts that apply (GET /v1/tenants/{name} only): its own httpAllow, else the daemon's --http-allow. Null: any host.")] | UnsetType | None = UNSET
    running: Annotated[int, Meta(description="Live, this node: executions running now (not in the answers of POST and PATCH).")] | UnsetType = UNSET
    queued: Annotated[int, Meta(description="Live, this node: executions in the ready queue.")] | UnsetType = UNSET
    quota_waiting: Annotated[bool, Meta(description="Live, this node: executions wait for its maxRunning quota.")] | UnsetType = UNSET


class TenantList(msgspec.Struct):
    tenants: list[Tenant]


class Whoami(msgspec.Struct, rename="camel", kw_only=True):
    role: Annotated[str, ordered(TOKEN_ROLES)]
    tenant: Annotated[str | None, Meta(description="The tenant the caller acts for; null for admin and metrics (no tenant).")]
    token_id: Annotated[str | None, Meta(description="The bearer token's id (what `DELETE /v1/tokens/{tokenId}` revokes); null over the local Unix socket without one.")]
    via: Annotated[str, Meta(description="`token`: a bearer token; `socket`: the local Unix socket, admin by file permission.",
                             extra_json_schema={"enum": ["token", "socket"]})]


class Token(msgspec.Struct, rename="camel", kw_only=True):
    token_id: Annotated[str, Meta(pattern=TOKEN_ID_RE.pattern)]
    role: Annotated[str, ordered(TOKEN_ROLES)]
    tenant: str | None
    name: str | UnsetType | None = UNSET
    created_at: Instant | UnsetType | None = UNSET
    revoked_at: Instant | UnsetType | None = UNSET


class TokenCreated(Token, kw_only=True):
    token: Annotated[str, Meta(description="The bearer token. Shown this once: only its hash is stored.")]


class TokenList(msgspec.Struct):
    tokens: list[Token]


# ---------------------------------------------------------------- jobs and worker calls

_MAIL_WARNINGS_DOC = (
    "Present when something accepted will not work as it stands, each naming its field: an email rule on a daemon with no mail transport "
    "(start it with --smtp-url or --sendmail; its notifications are retried, then dead-lettered, until then)."
)


class JobCreated(msgspec.Struct, rename="camel", kw_only=True):
    job_id: str
    next_run_at: Instant | None
    warnings: Annotated[list[str], Meta(description=_MAIL_WARNINGS_DOC)] | UnsetType = UNSET


_BATCH_DOC = (
    "One per job, in order, with the status a single `POST /v1/jobs` would have answered: 201 created, 200 replayed, 409 `name_taken` "
    "(with the holder's `jobId`; an earlier job of the same batch may hold it), 422 idempotency key reused, 429 over the tenant's maxJobs."
)


class JobBatchItem(msgspec.Struct, rename="camel", kw_only=True):
    json_schema_extra: ClassVar[dict[str, Any]] = {"x-inline": True, "description": _BATCH_DOC}  # written in place, not a component

    index: Annotated[int, Meta(ge=0)]
    status: Annotated[int, Meta(extra_json_schema={"type": "integer", "enum": [200, 201, 409, 422, 429, 500]})]
    code: str | UnsetType = UNSET
    error_id: Annotated[str, Meta(description="status 500: the id of the daemon's log line about this job")] | UnsetType = UNSET
    job_id: str | UnsetType = UNSET
    next_run_at: Instant | UnsetType | None = UNSET
    replayed: bool | UnsetType = UNSET
    detail: str | UnsetType = UNSET


class JobBatchResponse(msgspec.Struct):
    results: list[JobBatchItem]
    warnings: Annotated[list[str], Meta(description="As in a single create's answer, each field prefixed with `jobs[i].`.")] | UnsetType = UNSET


class HeartbeatResponse(msgspec.Struct, rename="camel", kw_only=True):
    extend_until: Instant
    lease_epoch: int | UnsetType = UNSET


#: what a completion may leave the execution as
COMPLETE_STATUSES = (ExecStatus.SUCCEEDED.value, ExecStatus.RETRY_WAIT.value, ExecStatus.DEAD.value)


class CompleteResponse(msgspec.Struct, rename="camel", kw_only=True):
    execution_id: str | UnsetType = UNSET
    status: Annotated[str, ordered(COMPLETE_STATUSES)]
    available_at: Annotated[Instant, Meta(description="RETRY_WAIT: when the retry may start.")] | None


class EffectResponse(msgspec.Struct, kw_only=True):
    recorded: bool
    duplicate: bool
    key: str | UnsetType = UNSET


_TRUE = Meta(extra_json_schema={"x-schema": {"const": True}})


class Purged(msgspec.Struct, rename="camel", kw_only=True):
    execution_id: str
    purged: Annotated[bool, _TRUE]


class NotificationPurged(msgspec.Struct, rename="camel", kw_only=True):
    notification_id: str
    purged: Annotated[bool, _TRUE]


class PingResponse(msgspec.Struct, rename="camel", kw_only=True):
    job_id: str
    status: Annotated[str, ordered(PING_STATUSES)]
    execution: Annotated[Any, ref("Execution", nullable=True, description="success/fail: the run as recorded (SUCCEEDED, or DEAD for a fail).")]


class BackfillCancelled(msgspec.Struct, rename="camel", kw_only=True):
    job_id: str
    cancelled: int


class Health(msgspec.Struct):
    status: Annotated[str, Meta(extra_json_schema={"x-schema": {"const": "ok"}})]


# ---------------------------------------------------------------- calendars


class CalendarWindowAnswer(msgspec.Struct, kw_only=True):
    json_schema_extra: ClassVar[dict[str, Any]] = {"x-inline": True}  # written in place, not a component

    start: str | UnsetType = UNSET
    end: str | UnsetType = UNSET


class Calendar(msgspec.Struct, rename="camel", kw_only=True):
    name: str
    tenant: str
    description: str | UnsetType = UNSET
    dates: list[str]
    windows: list[CalendarWindowAnswer]
    created_at: Instant | UnsetType | None = UNSET
    updated_at: Instant | UnsetType | None = UNSET


class CalendarList(msgspec.Struct):
    calendars: list[Calendar]


# ---------------------------------------------------------------- notifications

#: what a notification tells: a rule's events, and ``held`` (what a rate limit held back)
NOTIFICATION_EVENTS = (*(e.value for e in NotifyOn), "held")
_NOTIFICATION_ID_DOC = (
    "`{subject}@{ruleId}`: the subject is the execution id, or `{jobId}:missed:{deadlineMs}`; unique, so each (execution, rule) is told once. "
    "Also sent as the `Cronwheel-Notification-Id` header, which the signature does not cover: receivers deduplicate on this field of the signed body."
)


class Notification(msgspec.Struct, rename="camel", kw_only=True):
    notification_id: Annotated[str, Meta(description=_NOTIFICATION_ID_DOC)]
    job_id: str
    tenant: str | UnsetType = UNSET
    event: Annotated[str, ordered(NOTIFICATION_EVENTS), Meta(description="`held`: a summary of what a rule's rate limit held back.")]
    subject: str | UnsetType = UNSET
    rule_id: str | UnsetType = UNSET
    rule: Annotated[Any, ref("NotifyRuleAnswer")]
    status: Annotated[str, ordered(tuple(s.value for s in NotificationStatus))]
    attempt: int | UnsetType = UNSET
    lease_epoch: int | UnsetType = UNSET
    available_at: Instant | UnsetType | None = UNSET
    created_at: Instant | UnsetType | None = UNSET
    sent_at: Instant | UnsetType | None = UNSET
    error: str | UnsetType | None = UNSET
    body: Annotated[Any, Meta(extra_json_schema={"x-schema": {"type": "object", "description": "What is told (the webhook's JSON body)."}})]


class TenantNotifyAnswer(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    tenant: Annotated[str, Meta(extra_json_schema={"readOnly": True})] | UnsetType = UNSET
    notify: Annotated[list[Any], Meta(extra_json_schema={"x-schema": rule_list("NotifyRuleAnswer")})]
    warnings: Annotated[list[str], Meta(description=_MAIL_WARNINGS_DOC)] | UnsetType = UNSET


class NotificationPage(msgspec.Struct):
    notifications: list[Notification]
    next: Annotated[str, Meta(description="Pass as `before` for the next page.")] | None


STRUCTS: tuple[type[msgspec.Struct], ...] = (
    Tenant, TenantList, Whoami, Token, TokenCreated, TokenList, JobCreated, JobBatchItem, JobBatchResponse, HeartbeatResponse, CompleteResponse, EffectResponse,
    Purged, NotificationPurged, PingResponse, BackfillCancelled, Health, TenantNotifyAnswer, CalendarWindowAnswer, Calendar, CalendarList, Notification, NotificationPage,
)  # fmt: skip
