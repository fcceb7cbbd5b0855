"""Scheduling: due jobs, the atomic claim, triggers, calendars, backfill and chains.

Part of the store contract (``store.base.Store`` is the union of the roles); the
conventions in ``store.base`` hold for every method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cronwheel.core.calendar import Calendar, CalendarDocument
from cronwheel.core.limits import MAX_PAGE
from cronwheel.core.model import Execution, Job
from cronwheel.core.records import ClaimResult, Fence


class SchedulingStore(ABC):
    """What makes executions out of jobs: the claim of due ticks (one execution per tick),
    manual triggers, backfills and chains, and the calendars that exclude ticks."""

    # ---- scheduling
    @abstractmethod
    def due_jobs(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[str, int]]:
        """``(job_id, next_run_at)`` of ACTIVE jobs in ``buckets`` with next_run_at <= until_ms,
        earliest first. Reads only the ``(bucket_id, status, next_run_at)`` index."""

    @abstractmethod
    def due_ticks(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[int, int]]:
        """``(next_run_at, jobs)``: the distinct next runs <= until_ms of ACTIVE jobs in
        ``buckets``, earliest first (up to ``limit`` of them), each with how many jobs are due
        then. What the scheduler keeps of its horizon: a herd second is one row, not 100,000.
        Reads only the ``(bucket_id, status, next_run_at)`` index."""

    @abstractmethod
    def next_due_at(self, buckets: Sequence[int]) -> int | None:
        """The earliest next_run_at of ACTIVE jobs in ``buckets`` (None when there is none)."""

    @abstractmethod
    def claim_due(
        self, buckets: Sequence[int], now_ms: int, limit: int, ahead_ms: int = 0, fence: Fence | None = None,
        only: Sequence[str] | None = None,
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
        lease rows it checked (``FOR SHARE``) so that a takeover waits for the claim to commit.

        ``only``: claim from these job ids alone (those of them due, as above). The engine uses
        it to isolate a job whose claim fails the batch's transaction: every other job of the
        batch is claimed in smaller batches, and the failing one is set aside (invariant 8)."""

    @abstractmethod
    def trigger_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        """Run a job now, outside its schedule: a PENDING execution at scheduled_at=now_ms
        (the next free millisecond if that tick exists). next_run_at is not touched; a
        settled job (SUCCEEDED/FAILED) becomes ACTIVE again until it settles anew.
        None when the job is absent or CANCELLED."""

    # ---- calendars, backfill, chains (core/calendar.py, core/chains.py)
    @abstractmethod
    def put_calendar(self, calendar: Calendar, now_ms: int, max_per_tenant: int | None = None) -> Calendar | None:
        """Create or replace the calendar ``(calendar.tenant, calendar.name)``; a replacement
        keeps its created_at. Returns what is stored. Claims from the next one on see it.
        None, writing nothing, when the name is new and the tenant already has
        ``max_per_tenant`` calendars: counted and inserted as one step, so that concurrent
        writers (two nodes) cannot pass the limit together."""

    @abstractmethod
    def get_calendar(self, tenant: str, name: str) -> Calendar | None: ...

    @abstractmethod
    def list_calendars(self, tenant: str | None = None) -> list[Calendar]:
        """Calendars ordered by (tenant, name); all tenants' when ``tenant`` is None."""

    @abstractmethod
    def list_calendar_documents(
        self, tenant: str | None = None, after: tuple[str, str] | None = None, limit: int = MAX_PAGE,
    ) -> list[CalendarDocument]:
        """The same calendars as stored (their spec as JSON text), for a listing: a tenant's
        thousand calendars of 5,000 dates are 1.5 million dates to build into objects, and a
        listing only sends them on. A page of at most ``limit``, in (tenant, name) order,
        after ``after`` (a ``(tenant, name)``; None: from the first)."""

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
