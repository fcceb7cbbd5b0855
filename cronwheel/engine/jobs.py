"""The node's service for jobs: create (one or a batch), change, list, cancel, pause, resume,
trigger, follow their output, and the herd of their coming ticks.

``JobsMixin`` is a part of ``Node`` (engine/parts.py says how the parts fit); it derives from
the beyond-cron part (first ticks, references, calendars), which derives from the tenancy
part (quotas at submission).
"""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

from cronwheel.core import herd
from cronwheel.core import schedule as sched
from cronwheel.core.calendar import bounded
from cronwheel.core.ids import new_job_id
from cronwheel.core.instants import format_instant
from cronwheel.core.model import Execution, Job, JobSpec, JobStatus
from cronwheel.core.records import CreateOutcome, CreateResult, NewJob, UpdateOutcome
from cronwheel.engine.beyondcron import BeyondCronMixin
from cronwheel.engine.liveoutput import Follower, LiveTail
from cronwheel.engine.notify_service import refuse_ping_job
from cronwheel.engine.service import (
    Conflict,
    HerdTooLarge,
    InternalError,
    NameTaken,
    NotFound,
    ServiceError,
    TenantDeleting,
)
from cronwheel.store.base import Store

#: jobs read per page when counting the herd
HERD_PAGE = 1_000


class JobsMixin(BeyondCronMixin):
    # ---- submissions
    async def create_job(
        self, spec: JobSpec, idempotency_key: str | None = None, request_hash: str | None = None
    ) -> CreateResult:
        job_id = new_job_id()
        now = self.clock.now_ms()
        next_run_at = self.first_run(job_id, spec, now)
        await self.check_references([spec])
        max_jobs = self.admit_submission(spec)  # 429 when the tenant's bucket is empty
        (result,) = await self.submitter.submit([NewJob(job_id, spec, next_run_at, idempotency_key, request_hash, max_jobs)])
        if result.outcome is CreateOutcome.QUOTA_EXCEEDED:
            raise self.jobs_quota_exceeded(spec.tenant)
        if result.outcome is CreateOutcome.TENANT_DELETING:
            raise TenantDeleting(f"tenant {spec.tenant!r} is being deleted: it takes no new job")
        if result.outcome is CreateOutcome.FAILED:
            raise InternalError(f"the job could not be stored (errorId {result.error_id}, see the daemon log)", errorId=result.error_id)
        if result.outcome is CreateOutcome.NAME_TAKEN:
            assert spec.name is not None and result.job_id is not None
            raise NameTaken(spec.name, result.job_id)
        return result

    async def create_jobs(self, items: list[tuple[JobSpec, str | None, str | None]]) -> list[CreateResult]:
        """A batch of one tenant's jobs, committed together: ``(spec, idempotency key,
        request hash)`` each. The tenant's submission rate is charged for all of them at
        once (429 for the whole batch); a job over its tenant's ``maxJobs`` comes back
        QUOTA_EXCEEDED while the others are created."""
        if not items:
            return []
        now = self.clock.now_ms()
        firsts: list[tuple[str, int | None]] = []  # (job id, first run): every job checked before any is charged
        for i, (spec, _, _) in enumerate(items):
            job_id = new_job_id()
            try:
                firsts.append((job_id, self.first_run(job_id, spec, now)))
            except ServiceError as exc:
                raise ServiceError(f"jobs[{i}]: {exc}", field=f"jobs[{i}].schedule") from exc
        await self.check_references([spec for spec, _, _ in items])
        max_jobs = self.admit_submission(items[0][0], len(items))
        results = await self.submitter.submit([
            NewJob(job_id, spec, next_run_at, key, digest, max_jobs)
            for (job_id, next_run_at), (spec, key, digest) in zip(firsts, items, strict=True)
        ])
        if any(r.outcome is CreateOutcome.QUOTA_EXCEEDED for r in results):
            self.note_jobs_quota(items[0][0].tenant)
        return results

    async def update_job(self, job_id: str, spec: JobSpec, tenant: str | None = None) -> Job:
        current = await self.get_job(job_id, tenant)
        if current is None:
            raise NotFound(f"no job {job_id!r}")
        old = current.spec
        # a time zone moves a schedule's ticks, never a one-off's instant: changing only the
        # zone of a one-off (maybe one that has run) must not run it again
        zone_moves = spec.schedule is not None and spec.timezone != old.timezone
        when = (spec.schedule, spec.run_at, spec.active_from, spec.active_until)
        reschedule = when != (old.schedule, old.run_at, old.active_from, old.active_until) or zone_moves
        now = self.clock.now_ms()
        next_run_at = self.first_run(job_id, spec, now) if reschedule else None
        await self.check_references([spec], unchanged_from=old)
        result = await self.update_in_store(job_id, spec, next_run_at, reschedule, now, tenant)
        if result.outcome is UpdateOutcome.NOT_FOUND:
            raise NotFound(f"no job {job_id!r}")
        if result.outcome is UpdateOutcome.CANCELLED:
            raise Conflict(f"job {job_id!r} is cancelled: a cancelled job cannot be changed (create a new one)")
        if result.outcome is UpdateOutcome.NAME_TAKEN:
            assert spec.name is not None and result.holder is not None
            raise NameTaken(spec.name, result.holder)
        job = result.job
        assert job is not None
        if reschedule:
            self.scheduler.job_scheduled(job_id, None)  # the wheel may hold the old tick
            if job.status is JobStatus.ACTIVE:
                self.scheduler.job_scheduled(job_id, job.next_run_at)
        self.events.emit(
            "job.updated", jobId=job_id, name=job.spec.name, rescheduled=reschedule,
            nextRunAt=format_instant(job.next_run_at), superseded=len(result.superseded),
        )
        return job

    # ---- reads
    async def list_jobs(
        self, tenant: str | None = None, status: JobStatus | None = None, limit: int = 100, after_id: str | None = None
    ) -> list[Job]:
        return await self._read(lambda s: s.list_jobs(tenant, status, limit, after_id))

    async def last_runs(self, job_ids: list[str], tenant: str | None = None) -> dict[str, Execution]:
        return await self._read(lambda s: s.last_runs(job_ids, tenant))

    def live_output(self, execution_id: str) -> LiveTail | None:
        return self.dispatcher.live.tail(execution_id)

    def follow_output(self, execution_id: str) -> Follower:
        return self.dispatcher.live.follow(execution_id)

    # ---- state changes
    async def cancel_job(self, job_id: str, tenant: str | None = None) -> Job:
        (job,) = await self.cancel_jobs([job_id], tenant)
        if job is None:
            raise NotFound(f"no job {job_id!r}")
        return job

    async def cancel_jobs(self, job_ids: list[str], tenant: str | None = None) -> list[Job | None]:
        """Cancel jobs in one store transaction (None: no such job), each as ``cancel_job``
        does: taken off the wheel, its running executions aborted."""
        now = self.clock.now_ms()
        results = await self._write(lambda s: s.cancel_jobs(job_ids, now, tenant))
        for job_id, res in zip(job_ids, results, strict=True):
            if res is None or not res.changed:  # cancelled before: the answer is the same, nothing happened
                continue
            self.scheduler.job_scheduled(job_id, None)
            self._abort_all(res.running)
            self.events.emit("job.cancelled", jobId=job_id, aborted=len(res.running))
        return [None if res is None else res.job for res in results]

    async def pause_job(self, job_id: str, tenant: str | None = None) -> Job:
        now = self.clock.now_ms()
        job = await self._write(
            lambda s: s.set_job_status(job_id, [JobStatus.ACTIVE, JobStatus.PAUSED], JobStatus.PAUSED, now, tenant=tenant)
        )
        if job is None:
            await self._explain_state(job_id, tenant, "pause")
        self.scheduler.job_scheduled(job_id, None)
        self.events.emit("job.paused", jobId=job_id)
        return job

    async def resume_job(self, job_id: str, tenant: str | None = None) -> Job:
        current = await self.get_job(job_id, tenant)
        if current is None:
            raise NotFound(f"no job {job_id!r}")
        now = self.clock.now_ms()
        spec = current.spec
        if spec.schedule is None:
            nxt = current.next_run_at  # a one-off keeps its instant (overdue: runs at once)
        else:
            nxt = bounded(sched.parse_schedule(spec.schedule, job_id, spec.timezone).next_after,
                          spec.active_from, spec.active_until)(now)  # fmt: skip
        job = await self._write(
            lambda s: s.set_job_status(job_id, [JobStatus.PAUSED, JobStatus.ACTIVE], JobStatus.ACTIVE, now, nxt, tenant)
        )
        if job is None:
            await self._explain_state(job_id, tenant, "resume")
        self.scheduler.job_scheduled(job_id, job.next_run_at)
        self.events.emit("job.resumed", jobId=job_id, nextRunAt=format_instant(job.next_run_at))
        return job

    async def _explain_state(self, job_id: str, tenant: str | None, verb: str) -> NoReturn:
        """Why a state change found nothing to change: no such job, or not in a state for it."""
        job = await self.get_job(job_id, tenant)
        if job is None:
            raise NotFound(f"no job {job_id!r}")
        raise Conflict(f"cannot {verb} a {job.status.value} job")

    async def trigger_job(self, job_id: str, tenant: str | None = None) -> Execution:
        job = await self.get_job(job_id, tenant)
        if job is not None:
            refuse_ping_job(job, "trigger")
            if job.status is not JobStatus.CANCELLED:  # (refused below, taking no token)
                self.admit_submission(job.spec, what="run")  # 429 when the tenant's bucket is empty
        now = self.clock.now_ms()
        ex = await self._write(lambda s: s.trigger_job(job_id, now, tenant))
        if ex is None:
            await self._explain_state(job_id, tenant, "trigger")
        self.events.emit("job.triggered", jobId=job_id, executionId=ex.execution_id)
        self.dispatcher.add([ex])
        return ex

    # ---- the herd
    async def herd(self, tenant: str | None = None, window_s: int = 3600, top: int = 10) -> dict[str, Any]:
        """How many ticks of the ACTIVE jobs (a tenant's, or all) fall in each second of the
        coming ``window_s`` (core/herd.py). Pages through the reader store, yielding between
        pages, and counts in a thread so the loop stays responsive, one count at a time on the
        node. Unprocessable when the count would pass its budget (``limits.MAX_HERD_EVALUATIONS``)."""
        calendars = await self.calendars_by_tenant(tenant)
        jobs: list[herd.HerdJob] = []
        after: str | None = None
        while True:
            page = await self._active_jobs(tenant, after)
            jobs.extend(herd.HerdJob(j.id, j.spec.schedule, j.spec.timezone, j.next_run_at,
                                     self.herd_exclusions(j, calendars), j.spec.active_from, j.spec.active_until)
                        for j in page)  # fmt: skip
            if len(page) < HERD_PAGE:
                break
            after = page[-1].id
            await asyncio.sleep(0)
        try:  # from the clock when its turn comes
            summary = await self.computed(tenant, lambda: herd.herd_summary(jobs, self.clock.now_ms(), window_s, top))
        except herd.HerdTooLarge as exc:
            raise HerdTooLarge(str(exc), field="window") from None
        summary["tenant"] = tenant
        return summary

    async def _active_jobs(self, tenant: str | None, after: str | None) -> list[Job]:
        def page(s: Store) -> list[Job]:
            return s.list_jobs(tenant, JobStatus.ACTIVE, HERD_PAGE, after)

        return await self._read(page)
