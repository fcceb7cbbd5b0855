"""The store contract. Every backend (SQLite, PostgreSQL) implements ``Store`` and passes
``tests/contract``; no behaviour may exist in one backend only (clustering aside).

Conventions that hold for every method:

* Times are integer milliseconds since the epoch (UTC). ``now_ms`` is passed in by the caller
  (the engine's injectable clock) so the contract is testable with a fake clock. The PostgreSQL
  backend may use the database's clock for lease *arbitration between nodes* (bucket leases),
  never for anything the contract suite pins with ``now_ms``.
* Methods are synchronous and may block; the engine calls them from one dedicated thread.
  A ``Store`` object is used by one thread at a time.
* Every method that writes commits before it returns, and that commit is durable
  (SQLite ``synchronous=FULL``): whatever a method reported as done survives ``kill -9``
  and power loss. The exceptions are the hot, self-healing writes: ``heartbeat``,
  ``heartbeat_many``, ``complete_executions`` and ``expire_leases`` survive any crash of the
  process, but a power cut may forget the last of them; the execution then looks RUNNING
  with its old epoch, its lease expires, and it runs again (at-least-once). Submissions and
  hand-outs (``start_executions``: the epoch) are always fsynced, so an epoch is never
  handed out twice.
* Fencing lives in conditional writes: every write that concerns a running execution names
  the ``lease_epoch`` it believes current, and changes nothing unless it is.
* ``tenant=None`` in a read means "any tenant" (admin); a tenant name restricts the read
  to that tenant's rows, and another tenant's row reads as absent.
* Tenants and API tokens (``core.tenants``) live in the store too, so every node of a cluster
  sees the same ones. Tokens are stored as hashes only: the store never sees a secret.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from cronwheel.core.calendar import Calendar
from cronwheel.core.model import ExecStatus, Execution, Grant, Job, JobSpec, JobStatus
from cronwheel.core.notify import DeliveryResult, Notification, NotificationStatus, Rule
from cronwheel.core.records import (
    BucketGrants,
    BucketLease,
    ClaimResult,
    Completion,
    CompletionResult,
    CreateResult,
    EffectVerdict,
    Fence,
    HeartbeatResult,
    NewJob,
    NodeInfo,
    StartRequest,
    UpdateResult,
)
from cronwheel.core.tenants import ApiToken, Tenant


class StoreError(Exception):
    """The store cannot do what was asked (not a caller mistake)."""


class StoreUnavailable(StoreError):
    """The store cannot be reached right now; the caller may retry later (503)."""


# ---------------------------------------------------------------- the interface


class Store(ABC):
    # ---- lifecycle
    @abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    @abstractmethod
    def schema_version(self) -> int:
        """The migration version the store is at (all migrations are applied on open)."""

    # ---- jobs
    @abstractmethod
    def create_jobs(self, jobs: Sequence[NewJob], now_ms: int) -> list[CreateResult]:
        """Insert a batch of jobs in ONE durable transaction (group commit), results in order.

        Idempotency keys are scoped per tenant. A key seen before with the same
        ``request_hash`` → REPLAYED with the original job id and next_run_at (nothing written);
        with a different hash → CONFLICT. Two submissions in the same batch with the same key
        behave as if sequential. When this returns, every CREATED row is committed and fsynced.

        A job whose ``max_jobs`` is set is created only while its tenant has fewer than
        ``max_jobs`` ACTIVE or PAUSED jobs, counting those created earlier in the same batch;
        otherwise → QUOTA_EXCEEDED (job_id None, nothing written). A replay is answered before
        the quota is looked at: resubmitting an acknowledged job is never refused.
        Creating a job for a tenant that has no row yet creates the row with the defaults.

        A job's ``name`` is unique per tenant among live jobs (every status but CANCELLED):
        a name held by another job, or by an earlier job of the same batch, → NAME_TAKEN with
        the holder's id (nothing written). The store enforces it with a unique constraint, so
        no race between nodes can slip a second holder through.
        """

    @abstractmethod
    def get_job(self, job_id: str, tenant: str | None = None) -> Job | None: ...

    @abstractmethod
    def find_jobs_by_name(self, name: str, tenant: str | None = None) -> list[Job]:
        """Jobs (any status) whose name equals ``name``: the live holder of the name (one per
        tenant) first, then cancelled ones (and, from before names were unique, jobs that
        share a holder's name), newest first."""

    @abstractmethod
    def update_job(
        self,
        job_id: str,
        spec: JobSpec,
        next_run_at: int | None,
        reschedule: bool,
        now_ms: int,
        tenant: str | None = None,
    ) -> UpdateResult:
        """Replace a job's definition in place, in ONE transaction: same id, same history.

        ``spec`` is the whole new definition (its ``tenant`` is ignored: a job never changes
        tenant). ``reschedule`` (the schedule, run_at or timezone changed): ``next_run_at``
        becomes the given value (computed by the engine), a job that had no further tick and
        gets one (a finished one-off given a new runAt) becomes ACTIVE again, and the job's
        PENDING executions claimed ahead for the old schedule (never started, scheduled after
        ``now_ms``) become CANCELLED (reason ``superseded``), listed in ``superseded``.
        Without ``reschedule``, next_run_at and the status are left as they are. Executions
        already due keep their tick and run the definition current when they start. Renaming
        follows the ``create_jobs`` rule (NAME_TAKEN with the holder). NOT_FOUND: absent or
        another tenant's; CANCELLED: nothing changes. A changed chain (on_success /
        on_failure) passes the checks of ``set_job_chain`` in the same transaction: a cycle
        or a child that cannot be raises ``ChainError`` and nothing changes. The notification
        rules and window are replaced too: a job that gets either gets its watch row, a
        changed window is armed afresh from ``now_ms``, a removed one is disarmed."""

    @abstractmethod
    def list_jobs(
        self,
        tenant: str | None = None,
        status: JobStatus | None = None,
        limit: int = 100,
        after_id: str | None = None,
    ) -> list[Job]:
        """Jobs ordered by id, keyset-paginated with ``after_id``."""

    @abstractmethod
    def count_jobs(self, tenant: str | None = None, status: JobStatus | None = None) -> int: ...

    @abstractmethod
    def set_job_status(
        self,
        job_id: str,
        expect: Sequence[JobStatus],
        status: JobStatus,
        now_ms: int,
        next_run_at: int | None = None,
        tenant: str | None = None,
    ) -> Job | None:
        """Compare-and-set a job's status (pause/resume). Sets ``next_run_at`` too when given
        (resume passes the first tick after now). Returns the updated job, or None when the
        job is absent or not in one of ``expect`` (nothing changed)."""

    @abstractmethod
    def cancel_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> tuple[Job, list[str]] | None:
        """Cancel a job: status CANCELLED, no further ticks; its PENDING and RETRY_WAIT
        executions become CANCELLED at once; its RUNNING ones become CANCELLED too, so their
        next heartbeat or completion gets ``LeaseVerdict.CANCELLED``. Returns the job and the
        ids of the executions that were RUNNING (the engine sends them abort frames), or None
        when the job does not exist. Cancelling a cancelled job changes nothing."""

    # ---- scheduling
    @abstractmethod
    def due_jobs(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[str, int]]:
        """``(job_id, next_run_at)`` of ACTIVE jobs in ``buckets`` with next_run_at <= until_ms,
        earliest first. Reads only the ``(bucket_id, status, next_run_at)`` index."""

    @abstractmethod
    def next_due_at(self, buckets: Sequence[int]) -> int | None:
        """The earliest next_run_at of ACTIVE jobs in ``buckets`` (None when there is none)."""

    @abstractmethod
    def claim_due(
        self, buckets: Sequence[int], now_ms: int, limit: int, ahead_ms: int = 0, fence: Fence | None = None
    ) -> ClaimResult:
        """The atomic claim (docs/guarantees.md: one execution per tick), batched: in ONE transaction, for up to
        ``limit`` ACTIVE jobs of ``buckets`` with next_run_at <= now_ms, insert the execution
        of the due tick (id ``ids.execution_id(job_id, tick)``, unique) and advance next_run_at
        to the following tick by compare-and-set on the old value. A job with no further tick
        (a one-off) keeps its status, next_run_at None, until its executions settle it
        (SUCCEEDED/FAILED, see ``complete_executions``); one whose last tick was only
        recorded SKIPPED becomes FAILED at once. Misfire (ticks more than MISFIRE_GRACE_MS old)
        and overlap policies are applied here (core.planning decides, the store records), and
        so are the job's calendars (a tick they exclude is recorded SKIPPED, reason
        ``calendar: NAME``; see core.calendar) and its ``active_until`` (no tick after it: the
        job then has no further tick, and its executions settle it). Two claimers racing on the
        same rows produce each execution exactly once. An execution's ``available_at`` is
        its tick plus the job's deterministic jitter.

        ``ahead_ms`` claims early: jobs with overlap ``allow`` are claimed when next_run_at <=
        now_ms + ahead_ms (their executions are not dispatchable before their available_at,
        so nothing runs early). Jobs with overlap ``forbid``/``replace`` are claimed only
        once due (next_run_at <= now_ms), because their overlap check must see what is
        running at the tick, not before it.

        ``fence`` ``(node_id, {bucket_id: epoch})`` (invariant 7): inside the SAME transaction,
        only the buckets that ``node_id`` still holds at exactly that epoch with an unexpired
        lease (the store's clock, as in ``acquire_buckets``) are claimed from; the others are
        left alone. A bucket missing from the dict is not claimed. PostgreSQL also locks the
        lease rows it checked (``FOR SHARE``) so that a takeover waits for the claim to commit."""

    @abstractmethod
    def trigger_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        """Run a job now, outside its schedule: a PENDING execution at scheduled_at=now_ms
        (the next free millisecond if that tick exists). next_run_at is not touched; a
        settled job (SUCCEEDED/FAILED) becomes ACTIVE again until it settles anew.
        None when the job is absent or CANCELLED."""

    # ---- calendars, backfill, chains (core/calendar.py, core/chains.py)
    @abstractmethod
    def put_calendar(self, calendar: Calendar, now_ms: int) -> Calendar:
        """Create or replace the calendar ``(calendar.tenant, calendar.name)``; a replacement
        keeps its created_at. Returns what is stored. Claims from the next one on see it."""

    @abstractmethod
    def get_calendar(self, tenant: str, name: str) -> Calendar | None: ...

    @abstractmethod
    def list_calendars(self, tenant: str | None = None) -> list[Calendar]:
        """Calendars ordered by (tenant, name); all tenants' when ``tenant`` is None."""

    @abstractmethod
    def delete_calendar(self, tenant: str, name: str) -> tuple[bool, list[str]]:
        """Delete a calendar unless an ACTIVE or PAUSED job observes it: ``(deleted, ids of
        the jobs that observe it)``; nothing is deleted when that list is not empty.
        ``(False, [])``: no such calendar."""

    @abstractmethod
    def backfill(
        self, job_id: str, ticks: Sequence[int], now_ms: int, tenant: str | None = None
    ) -> list[Execution] | None:
        """One PENDING execution per tick of ``ticks`` that has none yet, in ONE durable
        transaction: id ``ids.execution_id(job_id, tick)`` (so a repeated backfill inserts
        nothing), priority BATCH whatever the job's, available at once, context
        ``{"backfill": true}``. Returns the executions created. None when the job is absent
        (or another tenant's) or CANCELLED. next_run_at is not touched."""

    @abstractmethod
    def cancel_backfill(self, job_id: str, now_ms: int, tenant: str | None = None) -> int | None:
        """Cancel the job's backfill executions that have not started (PENDING, RETRY_WAIT):
        how many. None when the job is absent."""

    @abstractmethod
    def set_job_chain(
        self, job_id: str, on_success: Sequence[str], on_failure: Sequence[str], now_ms: int,
        tenant: str | None = None,
    ) -> Job | None:
        """Replace a job's chain. In ONE transaction that serialises chain changes of the
        tenant: every child must be a job of the same tenant that is not CANCELLED, and the
        tenant's chains with this change must have no cycle, else ``ChainError`` and nothing
        changes. None when the job is absent. (A job created with a chain cannot close a
        cycle, its id being new; the engine checks its children exist before creating it.)"""

    # ---- the ready queue
    @abstractmethod
    def ready_executions(self, now_ms: int, limit: int, after: tuple[int, str] | None = None) -> list[Execution]:
        """Dispatchable executions for LOCAL workers: PENDING, or RETRY_WAIT, with
        available_at <= now_ms, and no ``queue`` (queue targets' executions are left to
        ``claim_for_worker``), ordered by (available_at, execution_id), keyset-paginated by
        ``after``."""

    @abstractmethod
    def next_available_at(self) -> int | None:
        """Earliest available_at among PENDING/RETRY_WAIT executions (to wake up for retries)."""

    @abstractmethod
    def start_executions(self, starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
        """Hand executions to workers in ONE transaction. For each request whose execution is
        PENDING or RETRY_WAIT with available_at <= now_ms: status RUNNING, attempt += 1,
        lease_epoch += 1 (invariant 4), worker_id set, lease_until = now + job.lease_sec,
        started_at set on the first start. Requests whose execution is not dispatchable
        (cancelled, already running, gone) are left out of the result."""

    @abstractmethod
    def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int, now_ms: int) -> HeartbeatResult:
        """Extend a lease to now + lease_sec if the execution is RUNNING at exactly
        ``lease_epoch``: OK with extend_until. Otherwise nothing changes: CANCELLED if the
        execution was cancelled, LEASE_LOST for any other epoch or status, NOT_FOUND."""

    @abstractmethod
    def heartbeat_many(
        self, beats: Sequence[tuple[str, str, int]], now_ms: int
    ) -> list[HeartbeatResult]:
        """``heartbeat`` for many ``(execution_id, worker_id, lease_epoch)`` in one transaction."""

    @abstractmethod
    def complete_executions(
        self, completions: Sequence[Completion], now_ms: int, rand01: Sequence[float] | None = None
    ) -> list[CompletionResult]:
        """Apply results in ONE transaction, each fenced: applied only if the execution is
        RUNNING at exactly ``lease_epoch`` (else LEASE_LOST / CANCELLED / NOT_FOUND and
        nothing changes). SUCCEEDED ends it; any other outcome is a failed attempt that
        becomes RETRY_WAIT (available_at from core.retry with the job's retry policy and
        ``rand01[i]``, default 0.5) or DEAD when attempt >= max_attempts. exit_code, error
        and output are stored. A final outcome (SUCCEEDED, DEAD) inserts, in the same
        transaction, the execution of each ACTIVE chain child of that outcome
        (``core.chains.children_to_run``; ON CONFLICT DO NOTHING), listed in ``triggered``.

        A job with no further tick (ACTIVE or PAUSED, next_run_at None; not an ``@triggered``
        job, which waits for triggers) whose last live execution ended here is settled in the
        same transaction: SUCCEEDED if that execution succeeded, FAILED if it went DEAD
        (``model.settled_status``)."""

    @abstractmethod
    def expire_leases(self, now_ms: int, limit: int) -> list[CompletionResult]:
        """The reaper: every RUNNING execution with lease_until < now_ms becomes a failed
        attempt (outcome LOST, error ``lease expired``), exactly as complete_executions would."""

    @abstractmethod
    def running_for_worker(self, worker_id: str) -> list[Execution]:
        """RUNNING executions leased to ``worker_id`` (to fail them when the worker dies)."""

    @abstractmethod
    def running_with_worker_prefix(self, prefix: str) -> list[Execution]:
        """RUNNING executions whose worker_id starts with ``prefix``. A restarted node uses it
        to find the leases its previous incarnation's local workers held (they died with it)."""

    @abstractmethod
    def running_count(self) -> int: ...

    @abstractmethod
    def claim_for_worker(
        self, queues: Sequence[str], worker_id: str, max: int, now_ms: int, tenant: str | None = None
    ) -> list[Grant]:
        """A remote worker's pull, in ONE transaction: up to ``max`` dispatchable executions
        (PENDING, or RETRY_WAIT with available_at <= now_ms) whose ``queue`` is one of
        ``queues`` (and of ``tenant``, when given), the most urgent tier first (``priority``:
        high, default, batch) and the oldest available first within a tier, started exactly as
        ``start_executions`` starts them (RUNNING, attempt + 1, lease_epoch + 1, lease_until,
        worker_id). Two concurrent claimers never get the same execution (PostgreSQL:
        ``FOR UPDATE SKIP LOCKED``). Grants carry their ``queue``."""

    # ---- executions: reads
    @abstractmethod
    def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None: ...

    @abstractmethod
    def list_executions(
        self, job_id: str, limit: int = 50, before: int | None = None, tenant: str | None = None
    ) -> list[Execution]:
        """A job's executions, newest scheduled_at first; ``before`` paginates on scheduled_at."""

    @abstractmethod
    def last_runs(self, job_ids: Sequence[str], tenant: str | None = None) -> dict[str, Execution]:
        """Each job's "last result": its execution with the latest tick among those that
        started (RUNNING, RETRY_WAIT, or ended after a start). Ticks claimed ahead (PENDING),
        executions cancelled or skipped before a start never count. Jobs with none (or of
        another tenant) are absent from the answer. One query for the whole list."""

    @abstractmethod
    def count_executions(self, status: ExecStatus | None = None, tenant: str | None = None) -> int: ...

    # ---- side effects (execution idempotency)
    @abstractmethod
    def record_effect(self, execution_id: str, lease_epoch: int, key: str, now_ms: int) -> EffectVerdict:
        """Record ``(execution_id, key)`` once, only while the execution is RUNNING at exactly
        ``lease_epoch``: RECORDED the first time, DUPLICATE after (for any epoch), FENCED for a
        stale epoch (checked before duplicates only when the key is new)."""

    @abstractmethod
    def list_effects(self, execution_id: str) -> list[tuple[str, int, int]]:
        """``(key, lease_epoch, recorded_at)`` of an execution's recorded effects."""

    # ---- dead-letter queue
    @abstractmethod
    def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]:
        """DEAD executions ordered by execution_id."""

    @abstractmethod
    def replay_dead(self, execution_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        """A DEAD execution becomes PENDING with attempt = 0 (a fresh series; lease_epoch keeps
        growing, history fields are kept in ``reason``); a settled job (SUCCEEDED/FAILED)
        becomes ACTIVE again until it settles anew. None if absent or not DEAD."""

    @abstractmethod
    def purge_dead(self, execution_id: str, tenant: str | None = None) -> bool:
        """Delete a DEAD execution (its job keeps its status: a FAILED job stays FAILED).
        False if absent or not DEAD."""

    # ---- tenants
    @abstractmethod
    def list_tenants(self) -> list[Tenant]:
        """Every tenant, ordered by name (there is always ``default``)."""

    @abstractmethod
    def get_tenant(self, name: str) -> Tenant | None: ...

    @abstractmethod
    def create_tenant(self, tenant: Tenant, now_ms: int) -> Tenant | None:
        """Insert a tenant with the given settings (created_at = updated_at = now_ms, whatever
        the argument says). None when a tenant of that name exists (nothing changes)."""

    @abstractmethod
    def update_tenant(self, name: str, changes: dict[str, Any], now_ms: int) -> Tenant | None:
        """Set the ``core.tenants.TENANT_SETTINGS`` fields named in ``changes`` (a value of
        None clears a quota), updated_at = now_ms; other fields keep their values. Returns the
        tenant as stored, or None when it does not exist. Unknown keys raise ValueError and
        change nothing."""

    # ---- API tokens (hashes only)
    @abstractmethod
    def create_token(self, token: ApiToken, now_ms: int) -> bool:
        """Store a token (created_at = now_ms, revoked_at None). False, and nothing stored,
        when its tenant does not exist. A tenant or worker token must name a tenant; an admin
        token may not (ValueError). Token ids and hashes are unique (StoreError on reuse)."""

    @abstractmethod
    def get_token_by_hash(self, token_hash: str) -> ApiToken | None:
        """The token with this hash, revoked or not (the caller checks ``revoked_at``)."""

    @abstractmethod
    def list_tokens(self, tenant: str | None = None) -> list[ApiToken]:
        """Tokens (revoked ones too) ordered by created_at, then token_id; ``tenant`` restricts
        the list to that tenant's tokens."""

    @abstractmethod
    def revoke_token(self, token_id: str, now_ms: int) -> ApiToken | None:
        """Set revoked_at = now_ms (revoking twice keeps the first time). Returns the token as
        stored, or None when there is no such token. The last active admin token is never
        revoked: it comes back still active (``revoked_at`` None), decided atomically with
        any concurrent revocation, so two racing calls cannot leave no admin token."""

    # ---- cluster membership (docs/scaling.md: buckets leased on the store's clock)
    # Whose clock: PostgreSQL uses the DATABASE clock for ``last_seen``, ``lease_until`` and
    # every comparison with them, and ignores ``now_ms``; SQLite (one node) uses ``now_ms``.
    @abstractmethod
    def register_node(self, node_id: str, address: str, now_ms: int) -> int:
        """Insert or refresh (heartbeat) the node's row: address and last_seen = the store's
        now. Returns the store's now (ms)."""

    @abstractmethod
    def deregister_node(self, node_id: str) -> None:
        """Remove a node's row (graceful leave). Its bucket leases are not touched."""

    @abstractmethod
    def live_nodes(self, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
        """Nodes whose last_seen > the store's now − ttl_ms, ordered by node_id."""

    @abstractmethod
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        """Compare-and-set per bucket, in ONE transaction: the lease is granted (lease_until =
        the store's now + ttl_ms) only when it is free (never leased, or released), expired
        (lease_until <= now), or ours and live. Renewing our live lease keeps its epoch;
        anything else starts a new term: epoch + 1 (the first lease of a bucket has epoch 1).
        Buckets held live by another node are left out of the result."""

    @abstractmethod
    def release_buckets(self, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
        """Free the named leases that ``node_id`` owns (owner None, expired; the epoch stays,
        so the next term gets a higher one). Returns the bucket ids released."""

    @abstractmethod
    def bucket_leases(self) -> list[BucketLease]:
        """Every bucket lease row, ordered by bucket_id (buckets never leased have none)."""

    # ---- retention
    @abstractmethod
    def prune_executions(
        self, older_than_ms: int, keep_last: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        """Delete finished history, a few jobs at a time: for up to ``jobs_per_call`` jobs
        (ordered by id, starting after ``after_job``), delete up to ``limit`` executions in
        all that are SUCCEEDED, CANCELLED or SKIPPED, finished before ``older_than_ms``, and
        not among the job's ``keep_last`` newest executions (with their effects). DEAD
        executions are the dead-letter queue and are never pruned; live ones never are.
        Returns ``(deleted, cursor)``: pass the cursor back as ``after_job``; None when the
        pass over all jobs is complete."""

    # ---- notifications (core.notify, core.deadman); implemented once in store/notifying.py
    # ``complete_executions`` and ``expire_leases`` also queue, in their own transaction, one
    # notification per (execution, rule) that the outcome matches (the job's rules, else its
    # tenant's defaults), so an outcome is never acknowledged without its notifications.
    # ``create_jobs`` gives a job with rules or a window of its own a ``job_watch`` row (and
    # arms the window); the completion hook reads the wide job rows only of jobs that have
    # one (or of every job while some tenant has default rules). Whatever changes a job's
    # rules or window later must keep that row (store/outbox.py ``after_create``).
    @abstractmethod
    def record_ping(
        self, job_id: str, kind: str, now_ms: int, exit_code: int | None = None, output: str | None = None,
        tenant: str | None = None,
    ) -> tuple[bool, Execution | None]:
        """A ping from a run elsewhere: ``start`` is remembered (the run's start time);
        ``success``/``fail`` insert a finished execution (SUCCEEDED / DEAD, at the first free
        millisecond from now) and queue its notifications and move its window like any
        completion. Returns ``(job found, the execution recorded or None)``."""

    @abstractmethod
    def claim_notifications(self, owner: str, now_ms: int, limit: int, lease_ms: int) -> list[Notification]:
        """Up to ``limit`` PENDING notifications with available_at <= now_ms become RUNNING:
        attempt + 1, lease_epoch + 1, owner, lease_until = now + lease_ms. One that would put
        its (job, rule) over the rule's ``max_per_hour`` (SENT in the last hour plus RUNNING)
        becomes HELD instead and is not returned. Concurrent claimers never share one."""

    @abstractmethod
    def finish_notifications(self, results: Sequence[DeliveryResult], now_ms: int) -> list[bool]:
        """Apply each result only while the notification is RUNNING at exactly its
        ``lease_epoch`` (SENT sets sent_at = now_ms; PENDING waits until available_at)."""

    @abstractmethod
    def expire_notification_leases(self, now_ms: int, limit: int) -> int:
        """RUNNING notifications with lease_until < now_ms: PENDING again at once, or DEAD
        when their attempts are spent. Returns how many."""

    @abstractmethod
    def release_notifications(self, prefix: str, current: str, now_ms: int) -> int:
        """As ``expire_notification_leases``, for RUNNING ones whose owner starts with
        ``prefix`` but is not ``current`` (a restarted node's previous incarnation)."""

    @abstractmethod
    def summarize_held_notifications(self, now_ms: int) -> int:
        """For each (job, rule) with uncounted HELD notifications and room under the rule's
        ``max_per_hour`` again (SENT in the last hour plus RUNNING): one PENDING ``held``
        notification with their count; they are counted (sent_at = now_ms, still HELD).
        Returns the summaries queued."""

    @abstractmethod
    def check_windows(self, buckets: Sequence[int], now_ms: int, limit: int) -> list[tuple[str, int, int]]:
        """Dead-man's windows of ``buckets`` whose deadline <= now_ms: re-armed by
        compare-and-set (core.deadman.check) and one ``missed`` notification per rule, keyed
        ``<jobId>:missed:<deadline>``. Returns ``(job_id, deadline, notifications queued)``."""

    @abstractmethod
    def list_notifications(
        self, tenant: str | None = None, job_id: str | None = None, status: NotificationStatus | None = None,
        limit: int = 100, before: str | None = None,
    ) -> list[Notification]:
        """Newest first; ``before`` is ``"<created_at>|<notification_id>"`` of the last one seen."""

    @abstractmethod
    def replay_notification(self, notification_id: str, now_ms: int, tenant: str | None = None) -> Notification | None:
        """A DEAD or HELD notification becomes PENDING (attempt 0). None if absent or neither."""

    @abstractmethod
    def purge_notification(self, notification_id: str, tenant: str | None = None) -> bool:
        """Delete a DEAD notification (of ``tenant``, when given). False if absent or not DEAD."""

    @abstractmethod
    def prune_notifications(self, older_than_ms: int, limit: int) -> int:
        """Delete up to ``limit`` SENT notifications (and HELD ones already counted in a
        summary) created before ``older_than_ms``. DEAD ones are never pruned."""

    @abstractmethod
    def notification_counts(self, now_ms: int) -> dict[str, int]:
        """Notifications per status, and ``overdueJobs``: windows past their deadline."""

    @abstractmethod
    def set_tenant_notify(self, name: str, rules: Sequence[Rule], now_ms: int) -> bool:
        """Replace a tenant's default rules. False when the tenant does not exist."""

    @abstractmethod
    def tenant_notify(self, name: str) -> tuple[Rule, ...] | None:
        """A tenant's default rules (None: no such tenant)."""

    def checkpoint(self) -> None:
        """Give the backend a chance to bound its log (SQLite: checkpoint the WAL).
        A no-op unless a backend has such a log."""
        return None

    def maintain_log(self, disk_low: bool) -> int | None:
        """Keep the store's own log small, from the daemon's disk watch (every few seconds):
        SQLite checkpoints its WAL once it is over 16 MiB (``WAL_TARGET_BYTES``), and while
        the disk is low checkpoints at 4 MiB and truncates the file. Returns the log's size
        in bytes, or None for a backend whose log is not ours (PostgreSQL bounds its own)."""
        return None

    # ---- extra, for the engine
    def meta(self) -> dict[str, Any]:
        """Backend description for `status` (kind, path, version)."""
        return {}
