"""The node's side of scheduling beyond cron: calendars, backfill and chains.

``BeyondCronMixin`` is a part of ``Node`` (engine/parts.py says how the parts fit). The decisions are pure core code (``core.calendar``, ``core.backfill``,
``core.chains``); the stores apply them in their transactions (the claim records excluded
ticks SKIPPED, a final outcome inserts its chain children); this module checks what a
request names (calendars, children) and turns store answers into service errors.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace

from cronwheel.core import schedule as sched
from cronwheel.core.backfill import (
    BackfillResult,
    Upcoming,
    excluded_stretch,
    job_ticks,
    plan_backfill,
)
from cronwheel.core.calendar import Calendar, CalendarDocument, Exclusions, bounded, upcoming
from cronwheel.core.chains import ChainError
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_BACKFILL_TICKS, MAX_PAGE, MAX_TENANT_CALENDARS
from cronwheel.core.model import DEFAULT_TENANT, Execution, Job, JobSpec, JobStatus
from cronwheel.core.records import UpdateResult
from cronwheel.engine.service import Conflict, NotFound, ServiceError, Unprocessable
from cronwheel.engine.tenancy import TenancyMixin
from cronwheel.store.base import Store


class UnknownReference(Unprocessable):
    """A job names a calendar or a chain child that its tenant does not have."""

    code = "unknown_reference"


class BackfillTooLarge(Unprocessable):
    code = "backfill_too_large"


class TooManyCalendars(Unprocessable):
    code = "too_many_calendars"


class ChainRefused(Conflict):
    """A chain that would form a cycle, or names a job that cannot be chained to."""

    code = "chain_refused"


class BeyondCronMixin(TenancyMixin):
    # ---- first tick of a job
    @staticmethod
    def first_run(job_id: str, spec: JobSpec, now: int) -> int | None:
        """The job's first tick after ``now``: its one-off instant, None for ``@triggered``, else
        the first tick of its schedule inside its active window."""
        if spec.schedule is None:
            return spec.run_at  # None: a watched job (pings), never scheduled here
        try:
            parsed = sched.parse_schedule(spec.schedule, job_id, spec.timezone)
        except sched.ScheduleError as exc:
            raise ServiceError(str(exc), field="schedule") from exc
        if parsed.kind == "never":
            return None
        nxt = bounded(parsed.next_after, spec.active_from, spec.active_until)(now)
        if nxt is None:
            within = " within activeFrom..activeUntil" if spec.active_from or spec.active_until else ""
            raise ServiceError(f"schedule never fires{within}: {spec.schedule!r}", field="schedule")
        return nxt

    async def check_references(self, specs: Sequence[JobSpec], unchanged_from: JobSpec | None = None) -> None:
        """Every calendar a new job observes, and every job it chains to, must exist in its
        tenant (chains to CANCELLED jobs are refused too). ``unchanged_from``: an update's old
        definition, whose references are not checked again (a child cancelled since must not
        block changing the parent's priority)."""
        if unchanged_from is not None:
            old = unchanged_from
            specs = [replace(spec, calendars=tuple(c for c in spec.calendars if c not in old.calendars),
                             on_success=tuple(c for c in spec.on_success if c not in old.on_success),
                             on_failure=tuple(c for c in spec.on_failure if c not in old.on_failure))
                     for spec in specs]  # fmt: skip
        known: dict[tuple[str, str], bool] = {}  # a batch names the same calendar many times

        async def calendar_exists(tenant: str, name: str) -> bool:
            if (tenant, name) not in known:
                known[(tenant, name)] = await self._calendar(tenant, name) is not None
            return known[(tenant, name)]

        for i, spec in enumerate(specs):
            where = f"jobs[{i}]." if len(specs) > 1 else ""
            for name in spec.calendars:
                if not await calendar_exists(spec.tenant, name):
                    raise UnknownReference(f"{where}calendars: no calendar {name!r} in tenant {spec.tenant!r}",
                                       field=f"{where}calendars")  # fmt: skip
            for field, children in (("onSuccess", spec.on_success), ("onFailure", spec.on_failure)):
                for child in children:
                    job = await self.get_job(child, spec.tenant)
                    if job is None or job.status is JobStatus.CANCELLED:
                        state = "is CANCELLED" if job is not None else "does not exist in this tenant"
                        raise UnknownReference(f"{where}{field}: job {child!r} {state}", field=f"{where}{field}")

    async def update_in_store(
        self, job_id: str, spec: JobSpec, next_run_at: int | None, reschedule: bool, now: int, tenant: str | None
    ) -> UpdateResult:
        """``Store.update_job``, a refused chain change (a cycle) turned into ChainRefused."""
        try:
            return await self._write(lambda s: s.update_job(job_id, spec, next_run_at, reschedule, now, tenant))
        except ChainError as exc:
            raise ChainRefused(str(exc)) from exc

    # ---- calendars
    async def list_calendars(self, tenant: str | None = None) -> list[Calendar]:
        return await self._read(lambda s: s.list_calendars(tenant))

    async def list_calendar_documents(
        self, tenant: str | None = None, after: tuple[str, str] | None = None, limit: int = MAX_PAGE,
    ) -> list[CalendarDocument]:
        return await self._read(lambda s: s.list_calendar_documents(tenant, after, limit))

    async def get_calendar(self, name: str, tenant: str | None = None) -> Calendar:
        cal = await self._calendar(tenant or DEFAULT_TENANT, name)
        if cal is None:
            raise NotFound(f"no calendar {name!r}")
        return cal

    async def _calendar(self, tenant: str, name: str) -> Calendar | None:
        return await self._read(lambda s: s.get_calendar(tenant, name))

    async def put_calendar(self, calendar: Calendar) -> Calendar:
        now = self.clock.now_ms()
        stored = await self._write(lambda s: s.put_calendar(calendar, now, MAX_TENANT_CALENDARS))
        if stored is None:  # a bound on what one tenant stores: each calendar is up to 5,000 entries
            raise TooManyCalendars(
                f"tenant {calendar.tenant!r} has {MAX_TENANT_CALENDARS} calendars, the most one tenant may keep: "
                "delete one it no longer needs (cronwheel calendar rm), or replace one",
                field="name", limit=MAX_TENANT_CALENDARS,
            )
        # the readers' and the claims' caches let go of the old one (the writer's holds this one)
        self.forget_held_calendars(stored.tenant, stored.name, below=stored.revision)
        self.events.emit("calendar.saved", tenant=stored.tenant, calendar=stored.name,
                         dates=len(stored.dates), windows=len(stored.windows))  # fmt: skip
        return stored

    async def delete_calendar(self, name: str, tenant: str | None = None) -> None:
        owner = tenant or DEFAULT_TENANT
        deleted, users = await self._write(lambda s: s.delete_calendar(owner, name))
        if users:
            one = len(users) == 1
            raise Conflict(f"calendar {name!r} is observed by {'job' if one else 'jobs'} " + ", ".join(users)
                           + f"; take it out of {'its' if one else 'their'} calendars, or cancel "
                           + f"{'it' if one else 'them'}, first",
                           jobs=users)  # fmt: skip
        if not deleted:
            raise NotFound(f"no calendar {name!r}")
        self.forget_held_calendars(owner, name)  # or it stays in the caches until their bound
        self.events.emit("calendar.deleted", tenant=owner, calendar=name)

    async def exclusions_of(self, job: Job) -> Exclusions | None:
        """What excludes the job's ticks now (calendars deleted since are ignored)."""
        if not job.spec.calendars:
            return None
        found: list[Calendar] = []
        for name in job.spec.calendars:
            cal = await self._calendar(job.tenant, name)
            if cal is not None:
                found.append(cal)
        return Exclusions(job.spec.timezone, tuple(found)) if found else None

    async def calendars_by_tenant(self, tenant: str | None) -> dict[tuple[str, str], Calendar]:
        return {(c.tenant, c.name): c for c in await self.list_calendars(tenant)}

    @staticmethod
    def herd_exclusions(job: Job, calendars: dict[tuple[str, str], Calendar]) -> Exclusions | None:
        found = tuple(calendars[(job.tenant, n)] for n in job.spec.calendars if (job.tenant, n) in calendars)
        return Exclusions(job.spec.timezone, found) if found else None

    # ---- backfill
    async def backfill(
        self, job_ref: str, from_ms: int, to_ms: int, dry_run: bool = False, tenant: str | None = None
    ) -> BackfillResult:
        """One execution for every tick of ``[from_ms, to_ms]`` that has none yet (calendar
        exclusions left out), at batch priority. ``dry_run``: plan only."""
        job = await self.resolve_job(job_ref, tenant)
        now = self.clock.now_ms()
        if to_ms < from_ms:
            raise ServiceError("to must not be before from", field="to")
        if to_ms > now:
            raise ServiceError(f"to ({format_instant(to_ms)}) is in the future: a backfill fills the past", field="to")
        if job.status is JobStatus.CANCELLED:
            raise Conflict(f"cannot backfill a {job.status.value} job")
        if job.spec.schedule is None or sched.parse_schedule(job.spec.schedule, job.id, job.spec.timezone).kind == "never":
            raise ServiceError("a backfill needs a recurring schedule; this job has none", field="jobId")
        ticks = job_ticks(job.spec.schedule, job.id, job.spec.timezone, job.spec.active_from, job.spec.active_until)
        plan = await self.computed(tenant, plan_backfill, ticks, from_ms, to_ms, await self.exclusions_of(job))
        if plan.truncated:
            raise BackfillTooLarge(
                f"the range holds more than {MAX_BACKFILL_TICKS} ticks of {job.spec.schedule!r}; "
                "backfill it in smaller ranges (the CLI splits a range for you)",
                field="to", limit=MAX_BACKFILL_TICKS,
            )
        created: list[Execution] = []
        had = await self._ticks_with_executions(job.id, plan.ticks, tenant) if dry_run else set()
        if not dry_run and plan.ticks:
            self.admit_submission(job.spec, len(plan.ticks), what="tick")  # 429: each tick may make a run
            made = await self._write(lambda s: s.backfill(job.id, plan.ticks, now, tenant))
            if made is None:
                raise Conflict(f"cannot backfill job {job.id!r} (cancelled meanwhile?)")
            created = made
            self.events.emit("job.backfilled", jobId=job.id, fromAt=format_instant(from_ms), toAt=format_instant(to_ms),
                             ticks=len(plan.ticks), created=len(created))  # fmt: skip
            self.dispatcher.add(created)
        return BackfillResult(
            job_id=job.id,
            from_=format_instant(from_ms),
            to=format_instant(to_ms),
            dry_run=dry_run,
            ticks=len(plan.ticks),
            created=len(created),
            existing=len(had) if dry_run else len(plan.ticks) - len(created),
            excluded=[excluded_stretch(x) for x in plan.excluded],
            execution_ids=[e.execution_id for e in created],
            planned_ticks=[format_instant(t) for t in plan.ticks if t not in had] if dry_run else [],
        )

    async def _ticks_with_executions(self, job_id: str, ticks: Sequence[int], tenant: str | None) -> set[int]:
        """Which of ``ticks`` already have an execution: what a real backfill would leave alone
        (a dry run that listed them promised executions it would not create)."""
        if not ticks:
            return set()
        wanted, lo = set(ticks), min(ticks)
        had: set[int] = set()
        before = max(ticks) + 1
        while True:  # newest first, a page at a time, down to the range's first tick
            page = await self._read(functools.partial(_executions_before, job_id, before, tenant))
            had.update(e.scheduled_at for e in page if e.scheduled_at in wanted)
            if len(page) < _PAGE or page[-1].scheduled_at <= lo:
                return had
            before = page[-1].scheduled_at

    async def cancel_backfill(self, job_ref: str, tenant: str | None = None) -> int:
        job = await self.resolve_job(job_ref, tenant)
        now = self.clock.now_ms()
        n = await self._write(lambda s: s.cancel_backfill(job.id, now, tenant))
        if n is None:
            raise NotFound(f"no job {job_ref!r}")
        self.events.emit("backfill.cancelled", jobId=job.id, cancelled=n)
        return n

    async def upcoming(self, job_ref: str, count: int, after: int, tenant: str | None = None) -> Upcoming:
        """The job's next ``count`` ticks after ``after`` that will run, and the ticks its
        calendars exclude on the way (what ``cronwheel next JOB`` shows)."""
        job = await self.resolve_job(job_ref, tenant)
        if job.spec.schedule is None:
            at = job.next_run_at
            return Upcoming(job_id=job.id, next=[format_instant(at)] if at is not None and at > after else [], excluded=[])
        ticks = job_ticks(job.spec.schedule, job.id, job.spec.timezone, job.spec.active_from, job.spec.active_until)
        run, excluded = await self.computed(tenant, upcoming, ticks, after, count, await self.exclusions_of(job))
        return Upcoming(
            job_id=job.id, timezone=job.spec.timezone,
            next=[format_instant(t) for t in run],
            excluded=[excluded_stretch(x) for x in excluded],
        )

    # ---- chains
    async def set_chain(
        self, job_ref: str, on_success: Sequence[str], on_failure: Sequence[str], tenant: str | None = None
    ) -> Job:
        job = await self.resolve_job(job_ref, tenant)
        now = self.clock.now_ms()
        try:
            updated = await self._write(lambda s: s.set_job_chain(job.id, on_success, on_failure, now, tenant))
        except ChainError as exc:
            raise ChainRefused(str(exc)) from exc
        if updated is None:
            raise NotFound(f"no job {job_ref!r}")
        self.events.emit("job.chained", jobId=job.id, onSuccess=list(on_success), onFailure=list(on_failure))
        return updated


_PAGE = 1000


def _executions_before(job_id: str, before: int, tenant: str | None, store: Store) -> list[Execution]:
    return store.list_executions(job_id, _PAGE, before, tenant)
