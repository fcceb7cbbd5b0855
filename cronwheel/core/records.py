"""The records that cross the store boundary: what a submission, a claim, a start, a heartbeat,
a completion and a cluster lease ask and answer. Plain values, no I/O: the store fills them, the
engine, the workers and the API read them, so they live in the core that every layer may import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import msgspec

from cronwheel.core.model import ExecStatus, Execution, Job, JobSpec
from cronwheel.core.wire import Count, Id, Text

# ---------------------------------------------------------------- submissions


@dataclass(slots=True)
class NewJob:
    """One submission. ``job_id`` and ``next_run_at`` are computed by the caller (the engine),
    so the store never evaluates schedules for creation."""

    job_id: str
    spec: JobSpec
    next_run_at: int | None
    idempotency_key: str | None = None
    request_hash: str | None = None  #: hash of the canonical request body, for key reuse checks
    #: the tenant's registered-jobs quota (None: unlimited), checked inside the insert's
    #: transaction so that concurrent submissions cannot overshoot it
    max_jobs: int | None = None


class CreateOutcome(StrEnum):
    CREATED = "created"  #: a new job row was committed
    REPLAYED = "replayed"  #: the key was seen with the same request: the original job is returned
    CONFLICT = "conflict"  #: the key was seen with a different request: nothing was created
    QUOTA_EXCEEDED = "quota_exceeded"  #: the tenant has ``max_jobs`` registered jobs: nothing was created
    #: another live job of the tenant holds the name: nothing was created, ``job_id`` is the holder
    NAME_TAKEN = "name_taken"
    #: the tenant is being deleted (``cronwheel tenant rm``): nothing was created
    TENANT_DELETING = "tenant_deleting"
    #: the write failed for this job alone (its neighbours in the group commit committed):
    #: nothing was created; ``error_id`` names the log line that says why
    FAILED = "failed"


@dataclass(slots=True)
class CreateResult:
    outcome: CreateOutcome
    job_id: str | None
    next_run_at: int | None
    error_id: str | None = None


class UpdateOutcome(StrEnum):
    UPDATED = "updated"
    NOT_FOUND = "not_found"
    CANCELLED = "cancelled"  #: a cancelled job is never changed again
    NAME_TAKEN = "name_taken"  #: another live job of the tenant holds the new name


@dataclass(slots=True)
class UpdateResult:
    outcome: UpdateOutcome
    job: Job | None = None  #: the job as stored afterwards (UPDATED), or as found (CANCELLED)
    holder: str | None = None  #: NAME_TAKEN: the id of the job that holds the name
    #: ticks claimed ahead for the old schedule that the update cancelled (never started)
    superseded: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CancelResult:
    job: Job  #: the job as stored afterwards: CANCELLED
    #: the ids of its executions that were RUNNING (the engine sends them abort frames)
    running: list[str] = field(default_factory=list)
    #: False when the job was cancelled already: this cancel changed nothing
    changed: bool = True


# ---------------------------------------------------------------- scheduling


@dataclass(slots=True)
class ClaimResult:
    """What one batched claim did."""

    executions: list[Execution] = field(default_factory=list)  #: new PENDING executions to dispatch
    skipped: list[Execution] = field(default_factory=list)  #: ticks recorded SKIPPED (overlap/misfire)
    replaced: list[str] = field(default_factory=list)  #: running execution ids cancelled by overlap=replace
    jobs_claimed: int = 0
    #: the new next_run_at of every claimed job still ACTIVE, so the scheduler can put the
    #: following tick straight into its wheel without re-reading the index (the wheel is keyed
    #: by instant: which job is due then is the store's to know)
    next_runs: list[int] = field(default_factory=list)

    def merged(self, other: ClaimResult) -> ClaimResult:
        """Both claims' results as one (the halves of a claim split to isolate a failing job)."""
        return ClaimResult(self.executions + other.executions, self.skipped + other.skipped, self.replaced + other.replaced,
                           self.jobs_claimed + other.jobs_claimed, self.next_runs + other.next_runs)  # fmt: skip


# ---------------------------------------------------------------- workers


@dataclass(slots=True)
class StartRequest:
    execution_id: str
    worker_id: str


class LeaseVerdict(StrEnum):
    OK = "ok"
    LEASE_LOST = "lease_lost"  #: epoch is not current, or the execution is no longer RUNNING
    CANCELLED = "cancelled"  #: the execution (or its job) was cancelled: abort now
    NOT_FOUND = "not_found"
    #: the epoch is current, but the lease was granted to another worker: the holder is the
    #: worker the claim (or the pool's start) named, and only it may renew or end the lease
    WRONG_WORKER = "wrong_worker"


@dataclass(slots=True)
class HeartbeatResult:
    verdict: LeaseVerdict
    extend_until: int | None = None


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"  #: non-zero exit, non-2xx, exception
    TIMED_OUT = "timed_out"
    LOST = "lost"  #: the worker died or its lease expired
    #: the daemon stopped before the run ended (its grace had passed): the daemon's own verdict,
    #: never a worker's; the execution runs again after the restart, not counted as an attempt
    INTERRUPTED = "interrupted"


#: the words of an INTERRUPTED attempt in its execution's ``reason`` ("attempt 1/3 interrupted:
#: …"), by which a follower knows the run is not over (``cronwheel logs -f`` follows it on)
INTERRUPTED_REASON = "interrupted: the daemon stopped before it ended; it runs again, not counted against maxAttempts"


class Completion(msgspec.Struct, array_like=True):
    """What a worker reports of one attempt. Also its wire form: a ``result`` frame carries
    these as arrays in this field order (worker/protocol.py); the daemon sets ``worker_id``
    to the connection's worker, whatever the worker sent."""

    execution_id: Id
    worker_id: Id | None  #: None: a verdict by the daemon itself (reaper, lost worker)
    lease_epoch: Count
    outcome: Outcome
    exit_code: int | None = None
    error: Text | None = None
    output: Text | None = None


@dataclass(slots=True)
class CompletionResult:
    execution_id: str
    verdict: LeaseVerdict  #: OK when the completion was applied
    status: ExecStatus | None = None  #: the execution's status afterwards (when applied)
    available_at: int | None = None  #: RETRY_WAIT: when the retry may start
    #: chain children this final outcome triggered (core/chains.py), written in the same
    #: transaction; empty when none (or when each already existed: a repeat outcome)
    triggered: list[Execution] = field(default_factory=list)
    #: this outcome queued a notification (written in the same transaction): the node's
    #: deliverer is woken for it, and only then, rather than after every completion batch
    notified: bool = False


class EffectVerdict(StrEnum):
    RECORDED = "recorded"
    DUPLICATE = "duplicate"
    FENCED = "fenced"  #: stale epoch or execution not RUNNING: nothing recorded
    WRONG_WORKER = "wrong_worker"  #: the current epoch, but another worker holds the lease: nothing recorded
    TOO_MANY = "too_many"  #: the execution recorded MAX_EFFECTS_PER_EXECUTION already: nothing recorded
    NOT_FOUND = "not_found"


# ---------------------------------------------------------------- cluster membership


#: ``(node_id, {bucket_id: epoch})``: the bucket leases a claim is fenced by (invariant 7)
Fence = tuple[str, dict[int, int]]


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_id: str
    address: str
    started_at: int  #: when the process that holds the row registered it
    last_seen: int  #: the last heartbeat (the store's clock, see ``register_node``)
    incarnation: str = ""  #: the process that holds the row (random; see ``register_node``)


@dataclass(frozen=True, slots=True)
class BucketLease:
    """A bucket lease row: ``(bucket_id, epoch)`` is the term's identity. ``owner`` None:
    released (free); a lease is live while ``lease_until`` > the store's now."""

    bucket_id: int
    owner: str | None
    epoch: int
    lease_until: int


@dataclass(slots=True)
class BucketGrants:
    """What ``acquire_buckets`` granted: ``(bucket_id, epoch, lease_until)`` per bucket held
    now, and the store's clock (ms) when it decided, so a node can relate ``lease_until`` to
    its own monotonic clock (its trust window) without trusting its wall clock."""

    granted: list[tuple[int, int, int]] = field(default_factory=list)
    store_now: int = 0


@dataclass(frozen=True, slots=True)
class Migrated:
    """What opening a store handle applied to its schema: from which version to which, and how
    long it took (the daemon logs it as ``store.migrated``)."""

    from_version: int
    to_version: int
    duration_ms: int


@dataclass(frozen=True, slots=True)
class DeadLettersPruned:
    """A job's oldest dead letters that the retention deleted (``Store.prune_dead_letters``):
    how many, and how many of the job's are left."""

    job_id: str
    tenant: str
    pruned: int
    kept: int
