"""Jobs: their definitions, names, statuses and listing.

Part of the store contract (``store.base.Store`` is the union of the roles); the
conventions in ``store.base`` hold for every method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cronwheel.core.limits import MAX_PAGE
from cronwheel.core.model import Job, JobSpec, JobStatus
from cronwheel.core.records import CancelResult, CreateResult, NewJob, UpdateResult


class JobStore(ABC):
    """A job's definition and status: create (idempotent, quota- and name-checked), read, list,
    replace, pause/resume and cancel."""

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
    def find_jobs_by_name(self, name: str, tenant: str | None = None, limit: int = MAX_PAGE) -> list[Job]:
        """Up to ``limit`` jobs (any status) whose name equals ``name``: the live holder of the
        name (one per tenant) first, then cancelled ones (and, from before names were unique,
        jobs that share a holder's name), newest first. Bounded: a name made and cancelled
        every day for years is a row per namesake, each built into a job, in the reader every
        tenant's reads take turns at."""

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
        job is absent or not in one of ``expect`` (nothing changed).

        Pausing (``status`` PAUSED) also withdraws the job's ticks claimed ahead of time (its
        scheduled executions not due at ``now_ms`` and never started): they are deleted, as if
        never claimed, and the job's ``next_run_at`` is put back to the earliest of them, so
        that a paused job starts nothing new and a one-off resumed keeps its instant. Ticks
        already due go on, as on a reschedule (``update_job``)."""

    @abstractmethod
    def cancel_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> CancelResult | None:
        """Cancel a job: status CANCELLED, no further ticks; its PENDING and RETRY_WAIT
        executions become CANCELLED at once; its RUNNING ones become CANCELLED too, so their
        next heartbeat or completion gets ``LeaseVerdict.CANCELLED``. Returns the job and the
        ids of the executions that were RUNNING (the engine sends them abort frames), or None
        when the job does not exist. Cancelling a cancelled job changes nothing (``changed``
        False, its ``updated_at`` kept)."""

    @abstractmethod
    def cancel_jobs(self, job_ids: Sequence[str], now_ms: int, tenant: str | None = None) -> list[CancelResult | None]:
        """``cancel_job`` for each of ``job_ids``, in ONE transaction (a tenant's forced deletion
        cancels its jobs a page at a time: one durable write each took a second per 800). The
        answers are in the order asked; an id given twice is answered twice alike."""
