"""The data cronwheel is made of: jobs, executions and the policies on them.

Pure data, no I/O. Times are integers: milliseconds since the Unix epoch, UTC.
An execution is identified by ``(job_id, scheduled_at)`` (see ``ids.execution_id``).

Execution state machine (docs/state-machine.md has the diagram)::

    PENDING ──start──▶ RUNNING ──ok──▶ SUCCEEDED
       ▲                 │  ├──fail, attempts left──▶ RETRY_WAIT ──start──▶ RUNNING
       │                 │  ├──fail, attempts spent──▶ DEAD ──replay──▶ PENDING
       │                 │  └──lease expired / worker lost: counts as a failure
       └── claim         └──cancel──▶ CANCELLED
    SKIPPED: a tick recorded but deliberately not run (overlap=forbid, misfire=skip, calendar)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, Any

import msgspec

from cronwheel.core.deadman import Window
from cronwheel.core.wire import Count, HostEntry, Id, Seconds

if TYPE_CHECKING:
    from cronwheel.core.notify import Rule

class JobStatus(StrEnum):
    """A job's state follows its schedule and, once it has no further tick, its executions
    (docs/state-machine.md has the diagram)::

        ACTIVE ──pause──▶ PAUSED ──resume──▶ ACTIVE        any ──cancel──▶ CANCELLED
        ACTIVE, no further tick (a one-off claimed): waiting for its executions
          └─ the last live execution ends ─▶ SUCCEEDED (it succeeded) | FAILED (DEAD, SKIPPED)
        SUCCEEDED | FAILED ──DLQ replay, trigger, update with a new instant──▶ ACTIVE
    """

    ACTIVE = "ACTIVE"  #: scheduled at next_run_at; with none, waiting for its executions to end
    PAUSED = "PAUSED"  #: kept, not scheduled; resume recomputes next_run_at from now
    CANCELLED = "CANCELLED"  #: terminal; running executions were aborted
    SUCCEEDED = "SUCCEEDED"  #: no further tick, and the last execution to end succeeded
    FAILED = "FAILED"  #: no further tick, and the last execution to end did not (DEAD, SKIPPED)


class ExecStatus(StrEnum):
    PENDING = "PENDING"  #: durable, waiting in the ready queue for a worker
    RUNNING = "RUNNING"  #: leased to a worker until lease_until, fenced by lease_epoch
    RETRY_WAIT = "RETRY_WAIT"  #: failed, runs again at available_at
    SUCCEEDED = "SUCCEEDED"
    DEAD = "DEAD"  #: attempts spent: in the dead-letter queue
    CANCELLED = "CANCELLED"
    SKIPPED = "SKIPPED"  #: recorded, not run; ``reason`` says why

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({ExecStatus.SUCCEEDED, ExecStatus.DEAD, ExecStatus.CANCELLED, ExecStatus.SKIPPED})
#: statuses that the ready queue may hand to a worker (RETRY_WAIT once available_at has come)
DISPATCHABLE = (ExecStatus.PENDING, ExecStatus.RETRY_WAIT)


def settled_status(last: ExecStatus) -> JobStatus:
    """The state of a job with no further tick once ``last``, the last of its live executions,
    has ended: SUCCEEDED if it succeeded, else FAILED (dead-lettered, or never run)."""
    return JobStatus.SUCCEEDED if last is ExecStatus.SUCCEEDED else JobStatus.FAILED



class Priority(IntEnum):
    """Priority tiers of the ready queue: lower value is served first."""

    HIGH = 0  #: latency-sensitive; a share of worker slots is reserved for it
    DEFAULT = 1
    BATCH = 2  #: bulk work that may wait behind everything else

    @classmethod
    def parse(cls, text: str | int) -> Priority:
        if isinstance(text, int) and not isinstance(text, bool):
            return cls(text)
        try:
            return cls[str(text).upper()]
        except KeyError:
            raise ValueError(f"priority must be one of high, default, batch, not {text!r}") from None

    @property
    def label(self) -> str:
        return self.name.lower()


class OverlapPolicy(StrEnum):
    """What a recurring job does when its next tick comes while a run is still going."""

    ALLOW = "allow"  #: run both
    FORBID = "forbid"  #: record the new tick SKIPPED (reason ``overlap``)
    REPLACE = "replace"  #: cancel the running one, run the new tick


class MisfirePolicy(StrEnum):
    """What a recurring job does with ticks missed while no scheduler could claim them (every
    node down, or the store unreachable)."""

    RUN_ONCE = "run_once"  #: the missed ticks collapse into one catch-up run; the others are skipped
    SKIP = "skip"  #: run none of them, record them as skipped
    RUN_ALL = "run_all"  #: run every missed tick as a catch-up run, up to ``MISFIRE_RUN_ALL_CAP``


MISFIRE_RUN_ALL_CAP = 100
#: the longest default misfire grace: a tick is "missed", not merely late, once the job's
#: next tick came due or this much time passed (core.planning); a job's ``misfire_grace_sec``
#: replaces both.
MISFIRE_GRACE_MS = 60_000


class ExecOrigin(StrEnum):
    """Why an execution exists: the dispatch-lag SLO counts only scheduled lateness."""

    SCHEDULE = "schedule"  #: its tick came due
    CATCH_UP = "catch_up"  #: it stands for ticks missed while no scheduler could claim them (misfire policy)
    MANUAL = "manual"  #: started by hand (``cronwheel trigger``, ``POST /v1/jobs/{id}/trigger``)
    REPLAY = "replay"  #: replayed from the dead-letter queue
    BACKFILL = "backfill"  #: a past tick run on request (``context`` ``{"backfill": true}``)
    CHAIN = "chain"  #: started by the end of a parent job's execution (``context`` ``{"parent": …}``)
    PING = "ping"  #: a run reported by a job that runs elsewhere (``POST /v1/jobs/{id}/ping``)

    @property
    def scheduled(self) -> bool:
        """Whether its start time is measured against its tick as scheduling lateness."""
        return self is ExecOrigin.SCHEDULE


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 3
    initial_backoff_sec: float = 1.0
    max_backoff_sec: float = 300.0
    multiplier: float = 2.0
    jitter: float = 0.2  #: ± fraction of the delay, drawn uniformly

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= 1000:
            raise ValueError("retryPolicy.maxAttempts must be between 1 and 1000")
        if not 0 <= self.initial_backoff_sec <= 86_400:
            raise ValueError("retryPolicy.initialBackoffSec must be between 0 and 86400")
        if not self.initial_backoff_sec <= self.max_backoff_sec <= 86_400 * 7:
            raise ValueError("retryPolicy.maxBackoffSec must be >= initialBackoffSec and <= 604800")
        if not 1.0 <= self.multiplier <= 100:
            raise ValueError("retryPolicy.multiplier must be between 1 and 100")
        if not 0 <= self.jitter <= 1:
            raise ValueError("retryPolicy.jitter must be between 0 and 1")

    def to_json(self) -> dict[str, Any]:
        return {
            "maxAttempts": self.max_attempts,
            "initialBackoffSec": self.initial_backoff_sec,
            "maxBackoffSec": self.max_backoff_sec,
            "multiplier": self.multiplier,
            "jitter": self.jitter,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RetryPolicy:
        return cls(
            max_attempts=int(data.get("maxAttempts", 3)),
            initial_backoff_sec=float(data.get("initialBackoffSec", 1.0)),
            max_backoff_sec=float(data.get("maxBackoffSec", 300.0)),
            multiplier=float(data.get("multiplier", 2.0)),
            jitter=float(data.get("jitter", 0.2)),
        )


@dataclass(frozen=True, slots=True)
class RunAs:
    """The account a command runs as (a system crontab line's user field). ``group`` None:
    the user's primary group. Honoured by local workers of a daemon running as root."""

    user: str
    group: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"user": self.user} if self.group is None else {"user": self.user, "group": self.group}

    def __str__(self) -> str:
        return self.user if self.group is None else f"{self.user}:{self.group}"


DEFAULT_TENANT = "default"
DEFAULT_LEASE_SEC = 60.0
DEFAULT_TIMEOUT_SEC = 3600.0


@dataclass(slots=True)
class JobSpec:
    """Everything a submission defines. Exactly one of ``schedule`` / ``run_at`` is set.

    ``target`` is one of ``{"command": str}``, ``{"http": {"url", "method", "headers"}}``,
    ``{"python": "module:function"}`` or ``{"queue": name}``; ``payload`` is any JSON value.
    """

    target: dict[str, Any]
    schedule: str | None = None  #: cron, ``@every 5m``, macros; None for a one-off
    run_at: int | None = None  #: one-off instant (ms)
    timezone: str = "UTC"
    name: str | None = None
    tenant: str = DEFAULT_TENANT
    payload: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_sec: float = DEFAULT_TIMEOUT_SEC
    lease_sec: float = DEFAULT_LEASE_SEC
    priority: Priority = Priority.DEFAULT
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE
    jitter_sec: int = 0  #: deterministic per (job, tick) delay in [0, jitter_sec)
    #: how late a tick may be and still just run; None: until the next tick, at most 60 s
    misfire_grace_sec: int | None = None
    #: notification rules (core.notify); empty: the tenant's default rules apply
    notify: tuple[Rule, ...] = ()
    #: the dead-man's switch: ``missed`` fires when this long passes without a success
    expect_success_within_ms: int | None = None
    calendars: tuple[str, ...] = ()  #: names of the tenant's calendars whose exclusions apply
    active_from: int | None = None  #: no tick before this instant (ms)
    active_until: int | None = None  #: no tick after this instant (ms); the job then completes
    #: jobs (ids, same tenant) triggered when an execution of this one ends so, after its retries
    on_success: tuple[str, ...] = ()
    on_failure: tuple[str, ...] = ()
    #: how a command's process is set up (crontab's environment lines, user field and ``%``):
    #: variables added to its environment, ...
    env: dict[str, str] = field(default_factory=dict)
    run_as: RunAs | None = None  #: ... the account it runs as (None: the daemon's) ...
    shell: str | None = None  #: ... the shell that runs it (None: /bin/sh) ...
    stdin: str | None = None  #: ... and its standard input (None: the payload as JSON)
    #: who manages the definition: ``apply`` for jobs `cronwheel apply` created; None by hand
    managed_by: str | None = None

    def process_json(self) -> dict[str, Any] | None:
        """The process setup as stored and granted (``{env, runAs, shell, stdin}``, only
        the members set), None when there is none: most jobs."""
        out: dict[str, Any] = {}
        if self.env:
            out["env"] = self.env
        if self.run_as is not None:
            out["runAs"] = self.run_as.to_json()
        if self.shell is not None:
            out["shell"] = self.shell
        if self.stdin is not None:
            out["stdin"] = self.stdin
        return out or None

    def set_process(self, data: dict[str, Any] | None) -> None:
        """The inverse of ``process_json`` (for rows read back from a store)."""
        if not data:
            return
        self.env = dict(data.get("env") or {})
        run_as = data.get("runAs")
        self.run_as = None if run_as is None else RunAs(run_as["user"], run_as.get("group"))
        self.shell = data.get("shell")
        self.stdin = data.get("stdin")


@dataclass(slots=True)
class Job:
    id: str
    bucket_id: int
    status: JobStatus
    next_run_at: int | None
    created_at: int
    updated_at: int
    spec: JobSpec
    window: Window | None = None  #: the dead-man's window as stored (None: no window)

    @property
    def tenant(self) -> str:
        return self.spec.tenant


@dataclass(slots=True)
class Execution:
    execution_id: str
    job_id: str
    tenant: str
    priority: Priority
    scheduled_at: int
    status: ExecStatus
    attempt: int = 0  #: attempts started so far
    lease_epoch: int = 0  #: fencing token; +1 on every hand-out to a worker
    worker_id: str | None = None
    lease_until: int | None = None
    available_at: int = 0  #: earliest dispatch time (retry backoff, jitter)
    created_at: int = 0
    started_at: int | None = None  #: first start; dispatch lag = started_at - scheduled_at
    finished_at: int | None = None
    exit_code: int | None = None
    error: str | None = None
    output: str | None = None  #: bounded tail of stdout/stderr
    reason: str | None = None  #: why SKIPPED / CANCELLED / DEAD / retried
    max_attempts: int = 3
    #: a queue target's name: the execution waits for a remote worker (``claim_for_worker``),
    #: local dispatch never takes it
    queue: str | None = None
    origin: ExecOrigin = ExecOrigin.SCHEDULE
    #: what made this execution, when not the job's own schedule: ``{"backfill": true}`` or
    #: the chain parent ``{"parent": {"executionId", "jobId", "scheduledAt", "outcome"}}``
    context: dict[str, Any] | None = None


class Grant(msgspec.Struct, array_like=True):
    """An execution handed to a worker: what the worker needs to run and fence it.

    Also its wire form: a ``grant`` frame carries these as arrays in this field order
    (worker/protocol.py), decoded and checked against the bounds of ``core.wire`` in one
    compiled call. Add a field at the end, with a default, or bump the protocol version."""

    execution_id: Id
    job_id: Id
    tenant: Id
    priority: Priority
    scheduled_at: int
    attempt: Count
    lease_epoch: Count
    lease_until: int
    lease_sec: Seconds
    timeout_sec: Seconds
    target: dict[str, Any]
    payload: Any
    queue: str | None = None  #: set for executions claimed by remote workers
    origin: ExecOrigin = ExecOrigin.SCHEDULE  #: the dispatch-lag SLO counts only scheduled starts
    #: the job's process setup (``JobSpec.process_json``): env, runAs, shell, stdin; None: defaults
    process: dict[str, Any] | None = None
    context: dict[str, Any] | None = None  #: see ``Execution.context``
    #: an HTTP target's: its tenant's allow-list as the dispatcher found it, which its redirects
    #: obey (``core.redirects.granted_allow``: ``("*",)`` any host, empty none but the job's own;
    #: None, not given: the job's own host only)
    http_allow: tuple[HostEntry, ...] | None = None
