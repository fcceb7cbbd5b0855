"""What the HTTP API and the CLI may ask of a node. The API layer knows HTTP, the engine
knows scheduling; this protocol is the seam between them.

All methods are coroutines run on the daemon's event loop. ``tenant=None`` means admin
(every tenant); a tenant name scopes every read and write to that tenant, and another
tenant's objects behave as absent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from cronwheel.core.backfill import BackfillResult, Upcoming
from cronwheel.core.calendar import Calendar, CalendarDocument
from cronwheel.core.limits import MAX_PAGE
from cronwheel.core.model import Execution, Grant, Job, JobSpec, JobStatus
from cronwheel.core.notify import Notification, NotificationStatus, Rule
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    CreateResult,
    EffectVerdict,
    HeartbeatResult,
)
from cronwheel.core.tenants import ApiToken, HostAllow, Role, Tenant
from cronwheel.engine.liveoutput import Follower, LiveTail


class ServiceError(Exception):
    """A request the service refuses, as a domain error: ``code`` is its stable name and
    ``extra`` the facts to show with it. The API maps each class to an HTTP status
    (api/problems.py); nothing here knows HTTP."""

    code = "bad_request"

    def __init__(self, message: str, *, retry_after_sec: float | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.extra = extra
        #: when trying again may succeed (a rate that refills, a store failing over)
        self.retry_after_sec = retry_after_sec


class NotFound(ServiceError):
    code = "not_found"


class Conflict(ServiceError):
    code = "conflict"


class TenantDeleting(Conflict):
    """The tenant is being deleted: it takes no new job, and its name no new tenant yet."""

    code = "tenant_deleting"


class NameTaken(Conflict):
    """Another live job of the tenant holds the name; ``jobId`` (in ``extra``) is that job."""

    code = "name_taken"

    def __init__(self, name: str, holder: str) -> None:
        super().__init__(
            f"a job named {name!r} already exists ({holder}): names are unique per tenant; "
            f"change that job in place with PATCH /v1/jobs/{holder} (cronwheel update), or cancel it first",
            jobId=holder,
        )


class Unprocessable(ServiceError):
    """Well-formed, but naming what cannot be used (an unknown calendar, a range too large)."""

    code = "unprocessable"


class HerdTooLarge(Unprocessable):
    """A herd preview whose count would pass its budget of schedule evaluations."""

    code = "herd_too_large"


class Unauthorized(ServiceError):
    """No credentials (``presented`` False), or credentials nobody issued (or since revoked)."""

    code = "unauthorized"

    def __init__(self, message: str, *, presented: bool = True, **extra: Any) -> None:
        super().__init__(message, **extra)
        self.presented = presented


class Forbidden(ServiceError):
    """Known caller, not allowed to do this."""

    code = "forbidden"


class TooManyRequests(ServiceError):
    """A tenant quota (submissions per second, registered jobs) says not now."""

    code = "quota_exceeded"


class Unavailable(ServiceError):
    """The store cannot be reached (e.g. PostgreSQL failing over): retry after a moment."""

    code = "unavailable"

    def __init__(self, message: str, *, retry_after_sec: float | None = 1.0, **extra: Any) -> None:
        super().__init__(message, retry_after_sec=retry_after_sec, **extra)


class InternalError(ServiceError):
    """Something failed that no input should make fail; ``errorId`` names its log line."""

    code = "internal_error"


class SchedulerService(Protocol):
    node_id: str

    def now_ms(self) -> int: ...

    # ---- jobs
    async def create_job(
        self, spec: JobSpec, idempotency_key: str | None = None, request_hash: str | None = None
    ) -> CreateResult:
        """Commit a job durably (group-committed with concurrent submissions) and schedule it.
        Returns once the row is fsynced. CreateResult.outcome CONFLICT: key reused with another
        body. Raises ServiceError for a schedule that never fires, NameTaken when another live
        job of the tenant has the name."""

    async def create_jobs(self, items: list[tuple[JobSpec, str | None, str | None]]) -> list[CreateResult]:
        """A batch of one tenant's jobs, ``(spec, idempotency key, request hash)`` each,
        committed in one transaction; one CreateResult per job, in order (QUOTA_EXCEEDED for
        a job over its tenant's maxJobs, NAME_TAKEN for a name held already, the others
        created)."""
        raise NotImplementedError

    async def get_job(self, job_id: str, tenant: str | None = None) -> Job | None: ...

    # ---- calendars, backfill, chains (engine/beyondcron.py)
    async def list_calendars(self, tenant: str | None = None) -> list[Calendar]: ...

    async def list_calendar_documents(
        self, tenant: str | None = None, after: tuple[str, str] | None = None, limit: int = MAX_PAGE,
    ) -> list[CalendarDocument]:
        """A page of the calendars as stored, for a listing (``Store.list_calendar_documents``)."""

    async def get_calendar(self, name: str, tenant: str | None = None) -> Calendar:
        """NotFound when the tenant (None: the default tenant) has no such calendar."""

    async def put_calendar(self, calendar: Calendar) -> Calendar:
        """Create or replace; claims from the next one on apply it."""

    async def delete_calendar(self, name: str, tenant: str | None = None) -> None:
        """NotFound; Conflict while an ACTIVE or PAUSED job observes it."""

    async def backfill(
        self, job_ref: str, from_ms: int, to_ms: int, dry_run: bool = False, tenant: str | None = None
    ) -> BackfillResult:
        """One batch-priority execution per tick of the range that has none (calendar
        exclusions left out); BackfillTooLarge beyond ``core.backfill.MAX_BACKFILL_TICKS``."""
        raise NotImplementedError

    async def cancel_backfill(self, job_ref: str, tenant: str | None = None) -> int:
        """Cancel the job's backfill executions not yet started; how many."""
        raise NotImplementedError

    async def upcoming(self, job_ref: str, count: int, after: int, tenant: str | None = None) -> Upcoming:
        """The next ticks that run (calendars and the active window applied) and those excluded."""
        raise NotImplementedError

    async def set_chain(
        self, job_ref: str, on_success: Sequence[str], on_failure: Sequence[str], tenant: str | None = None
    ) -> Job:
        """Replace a job's chain; ChainRefused (409) for a cycle or a child that cannot be."""
    async def update_job(self, job_id: str, spec: JobSpec, tenant: str | None = None) -> Job:
        """Replace a job's definition in place (``Store.update_job``): same id and history;
        next run recomputed from now when the schedule, runAt or timezone changed (ticks
        claimed ahead for the old schedule are cancelled as superseded). NotFound; Conflict
        when CANCELLED; NameTaken; ServiceError for a schedule that never fires."""
        raise NotImplementedError

    async def resolve_job(self, ref: str, tenant: str | None = None) -> Job:
        """A job by id, else by name (the name's live holder, else the newest cancelled job of
        that name). NotFound; Conflict when an admin's name is live in several tenants."""

    async def jobs_named(self, name: str, tenant: str | None = None, limit: int = MAX_PAGE) -> list[Job]:
        """Up to ``limit`` jobs with this name (``Store.find_jobs_by_name``): each tenant's
        live holder first."""
        raise NotImplementedError

    async def list_jobs(
        self,
        tenant: str | None = None,
        status: JobStatus | None = None,
        limit: int = 100,
        after_id: str | None = None,
    ) -> list[Job]: ...

    async def last_runs(self, job_ids: list[str], tenant: str | None = None) -> dict[str, Execution]:
        """Each job's latest execution that started (``Store.last_runs``): its "last result"."""
        raise NotImplementedError

    async def cancel_job(self, job_id: str, tenant: str | None = None) -> Job:
        """Stop future runs and abort running executions at once. NotFound."""

    async def pause_job(self, job_id: str, tenant: str | None = None) -> Job:
        """NotFound; Conflict when the job is not ACTIVE (or PAUSED: pausing twice is fine)."""

    async def resume_job(self, job_id: str, tenant: str | None = None) -> Job:
        """Next run recomputed from now. NotFound; Conflict when CANCELLED, SUCCEEDED or FAILED."""

    async def trigger_job(self, job_id: str, tenant: str | None = None) -> Execution:
        """Run now, outside the schedule. NotFound; Conflict when CANCELLED."""

    # ---- executions
    async def list_executions(
        self, job_id: str, limit: int = 50, before: int | None = None, tenant: str | None = None
    ) -> list[Execution]:
        """Newest first. NotFound when the job does not exist."""

    async def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None: ...

    def live_output(self, execution_id: str) -> LiveTail | None:
        """What an execution running on this node's workers printed so far (a bounded tail,
        with where it starts in the output), or None when it does not run here now."""
        raise NotImplementedError

    def follow_output(self, execution_id: str) -> Follower:
        """A follower of the execution's output on this node, from now on (``LiveOutput``).
        The caller closes it."""
        raise NotImplementedError

    # ---- remote workers (fenced by lease_epoch)
    async def claim_for_worker(
        self, queues: list[str], worker_id: str, max: int, wait_sec: float = 0, tenant: str | None = None,
        alive: Callable[[], bool] | None = None,
    ) -> list[Grant]:
        """Long poll: up to ``max`` executions of ``queues``, waiting up to ``wait_sec`` for one
        while ``alive()`` (the caller's connection is open)."""

    async def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int) -> HeartbeatResult: ...

    async def complete(self, completion: Completion) -> CompletionResult: ...

    async def record_effect(self, execution_id: str, worker_id: str, lease_epoch: int, key: str) -> EffectVerdict: ...

    # ---- dead-letter queue
    async def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]: ...

    async def replay_dead(self, execution_id: str, tenant: str | None = None) -> Execution:
        """NotFound when absent or not DEAD."""

    async def purge_dead(self, execution_id: str, tenant: str | None = None) -> None:
        """NotFound when absent or not DEAD."""

    # ---- notifications, pings (engine/notify_service.py)
    async def ping(
        self, job_ref: str, kind: str, exit_code: int | None = None, output: str | None = None,
        tenant: str | None = None,
    ) -> tuple[Job, Execution | None]:
        """A run elsewhere reports (start, success, fail): success/fail are recorded as a
        finished execution and told to the job's rules. NotFound."""
        raise NotImplementedError

    async def list_notifications(
        self, tenant: str | None = None, job_id: str | None = None, status: NotificationStatus | None = None,
        limit: int = 100, before: str | None = None,
    ) -> list[Notification]:
        """Newest first; ``status`` DEAD is the notifications' dead-letter queue."""
        raise NotImplementedError

    async def replay_notification(self, notification_id: str, tenant: str | None = None) -> Notification:
        """A DEAD or HELD notification goes out again. NotFound."""
        raise NotImplementedError

    async def purge_notification(self, notification_id: str, tenant: str | None = None) -> None:
        """Delete a dead-lettered notification for good. NotFound."""
        raise NotImplementedError

    async def tenant_notify(self, name: str) -> tuple[Rule, ...]:
        """A tenant's default rules. NotFound."""
        raise NotImplementedError

    async def set_tenant_notify(self, name: str, rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
        """Replace a tenant's default rules. NotFound."""
        raise NotImplementedError

    # ---- the node
    async def herd(self, tenant: str | None = None, window_s: int = 3600, top: int = 10) -> dict[str, Any]:
        """The herd preview: ticks per second of the ACTIVE jobs (a tenant's, or all) over the
        coming ``window_s`` seconds, summarised by ``core.herd.herd_summary``."""

    async def status(self) -> dict[str, Any]:
        """Node health: node id, store, uptime, jobs by status, queue depth by tier, running,
        workers, wheel size, next run, dispatch lag percentiles."""

    # ---- tenants and tokens (admin; the API checks who asks)
    def tenant_config(self, name: str) -> Tenant:
        """A tenant's configuration from the node's cache (defaults for an unknown name). Cheap:
        no store access."""

    async def list_tenants(self) -> list[Tenant]: ...

    async def get_tenant(self, name: str) -> tuple[Tenant, int, HostAllow]:
        """A tenant (one being deleted too), its registered (ACTIVE or PAUSED) jobs (for one
        being deleted: those still to cancel) and the HTTP allow-list that applies to it (its
        own, else the daemon's; None: any host). NotFound."""

    async def jobs_left(self, tenants: list[Tenant]) -> dict[str, int]:
        """The live (ACTIVE or PAUSED) jobs of each tenant being deleted among ``tenants``."""

    async def create_tenant(self, tenant: Tenant, *, remote: str | None = None) -> Tenant:
        """Conflict when it exists. ``remote``: as for ``create_token``."""

    async def update_tenant(self, name: str, changes: dict[str, Any], *, remote: str | None = None) -> Tenant:
        """``changes``: ``core.tenants.TENANT_SETTINGS`` fields (None clears a quota). NotFound;
        TenantDeleting while it is being deleted. ``remote``: as for ``create_token``."""

    async def delete_tenant(self, name: str, force: bool = False, *, remote: str | None = None) -> tuple[Tenant, int]:
        """Ask for a tenant's deletion (engine/tenantrm.py) and answer it as it now stands
        (being deleted) with its live jobs left. NotFound; Conflict (``default_tenant``) for
        the default tenant, and (``tenant_not_empty``) while it has live jobs or executions in
        flight, unless ``force``, which cancels them in the background (from before the
        answer). Asking again changes nothing (a forced ask starts a cancellation cut short
        again)."""

    async def create_token(self, role: Role, tenant: str | None, name: str | None = None, *,
                           remote: str | None = None) -> tuple[ApiToken, str]:
        """A new token and its secret (the only time the secret exists outside the caller).
        NotFound when the tenant does not exist. ``remote``: the client address that asked,
        for the audit line (None: the local socket, or the node itself)."""

    async def list_tokens(self, tenant: str | None = None) -> list[ApiToken]: ...

    async def revoke_token(self, token_id: str, *, remote: str | None = None) -> ApiToken:
        """NotFound. ``remote``: as for ``create_token``."""

    async def lookup_token(self, secret: str) -> ApiToken | None:
        """The active token with this secret, or None (unknown or revoked). Cached briefly."""

    def revoked_here(self, token_id: str) -> bool:
        """Whether this node revoked the token (no store read: for a long poll's every turn)."""

    def tenant_stats(self) -> dict[str, dict[str, Any]]:
        """Live, node-local numbers per tenant: running, queued, waiting on its quota."""
