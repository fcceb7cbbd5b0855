"""One cronwheel node: the scheduler, the dispatcher, the worker pool and the service that the
HTTP API calls, over one store. ``cronwheel serve`` builds one of these (daemon/serve.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cronwheel.core import herd
from cronwheel.core import schedule as sched
from cronwheel.core.calendar import bounded
from cronwheel.core.clock import Clock, SystemClock
from cronwheel.core.ids import new_error_id, new_job_id
from cronwheel.core.model import ExecStatus, Execution, Grant, Job, JobSpec, JobStatus, Priority
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    CreateOutcome,
    CreateResult,
    EffectVerdict,
    HeartbeatResult,
    NewJob,
    Outcome,
    UpdateOutcome,
)
from cronwheel.core.stats import NodeSnapshot, StoreCounts, lag_percentile
from cronwheel.engine.beyondcron import BeyondCronMixin
from cronwheel.engine.channels import MailConfig
from cronwheel.engine.cluster import DEFAULT_LEASE_TTL_MS, ClusterMember
from cronwheel.engine.disk import DISK_LOW_BYTES, DiskWatch
from cronwheel.engine.dispatcher import Dispatcher
from cronwheel.engine.liveoutput import Follower
from cronwheel.engine.notifications import NotificationDeliverer
from cronwheel.engine.notify_service import NotifyServiceMixin
from cronwheel.engine.runner import GroupCommitter, StoreRunner
from cronwheel.engine.scheduler import Scheduler
from cronwheel.engine.service import (
    Conflict,
    InternalError,
    NameTaken,
    NotFound,
    ServiceError,
    Unavailable,
)
from cronwheel.engine.tenancy import TenancyMixin
from cronwheel.obs.events import EventLog, iso_ms
from cronwheel.store.base import Store, StoreUnavailable
from cronwheel.worker.pool import WorkerPool

#: cluster mode: look for other nodes' dispatchable executions while fewer are queued here
SHARED_REFILL_BELOW = 100
#: a submission that finds the store unreachable (a restart, a failover) is tried again, with
#: backoff from the first delay up to the longest, until this budget is spent; then 503
SUBMIT_RETRY_MS = 3_000
SUBMIT_RETRY_DELAYS = (0.05, 1.0)


@dataclass
class NodeConfig:
    data_dir: Path
    node_id: str
    workers: int = max(1, os.cpu_count() or 1)
    slots: int = 16
    reserved_high_slots: int = 0
    reaper_interval_ms: int = 1_000
    horizon_ms: int = 60_000
    claim_batch: int = 5_000
    #: claim ticks this far ahead of time (they wait in the delay wheel until due), so that the
    #: claim of a top-of-hour herd is paid before 00:00, not after it
    claim_ahead_ms: int = 2_000
    grace_sec: float = 30.0
    #: history retention: finished executions older than this, beyond the newest
    #: ``keep_last`` of each job, are pruned in the background (the DLQ never is)
    retention_ms: int = 30 * 86_400_000
    keep_last: int = 1_000
    retention_interval_ms: int = 300_000
    api_url: str | None = None  #: given to jobs as CRONWHEEL_URL (for `cronwheel effect`)
    worker_env: dict[str, str] = field(default_factory=dict)
    worker_cmd: list[str] | None = None  #: how to start a worker (default: this Python, -m)
    #: cluster mode (engine/cluster.py): bucket lease TTL, and the address other nodes see
    bucket_lease_ms: int = DEFAULT_LEASE_TTL_MS
    address: str = ""
    submit_retry_ms: int = SUBMIT_RETRY_MS
    #: under this much free space in the data directory: ``store.disk_low`` (engine/disk.py)
    disk_low_bytes: int = DISK_LOW_BYTES
    #: the daemon's --http-allow (tenants without a list of their own): webhooks obey it too
    http_allow: tuple[str, ...] = ()
    mail: MailConfig | None = None  #: how email notifications are sent (None: they fail, and say why)


class Node(TenancyMixin, BeyondCronMixin, NotifyServiceMixin):
    def __init__(
        self,
        config: NodeConfig,
        writer_store: Store,
        reader_store: Store,
        events: EventLog,
        clock: Clock | None = None,
        cluster_store: Store | None = None,
        completion_store: Store | None = None,
        claim_store: Store | None = None,
    ) -> None:
        """``cluster_store``: a third handle on a shared store turns cluster mode on (its own
        thread, so heartbeats and lease renewals never queue behind a long claim).
        ``completion_store`` and ``claim_store``: handles for committing results and claims on
        threads of their own, next to the writer's starts (PostgreSQL: its row locks let them
        commit at once, so a 5,000-job claim no longer holds up the starts queued behind it;
        SQLite has one writer, so there all three share it)."""
        self.config = config
        self.node_id = config.node_id
        self.clock = clock or SystemClock()
        self.events = events
        self.writer = StoreRunner(writer_store, "writer")
        self.reader = StoreRunner(reader_store, "reader")
        self.completer = StoreRunner(completion_store, "completer") if completion_store is not None else None
        self.claimer = StoreRunner(claim_store, "claimer") if claim_store is not None else None
        self.started_monotonic = time.monotonic()
        self._init_tenancy()  # tenant weights and running quotas feed the dispatcher's queue
        self.dispatcher = Dispatcher(
            self.clock,
            self.writer,
            self.reader,
            events,
            reserved_high_slots=config.reserved_high_slots,
            reaper_interval_ms=config.reaper_interval_ms,
            tenant_weight=self.tenant_weight,
            tenant_max_running=self.tenant_max_running,
            completer=self.completer,
        )
        self.scheduler = Scheduler(
            self.clock,
            self.claimer or self.writer,
            self.reader,
            events,
            on_claimed=self.dispatcher.add,
            on_replaced=self._abort_all,
            horizon_ms=config.horizon_ms,
            claim_batch=config.claim_batch,
            claim_ahead_ms=config.claim_ahead_ms,
        )
        self.cluster: ClusterMember | None = None
        if cluster_store is not None:
            self.cluster = ClusterMember(
                self.node_id, config.address, StoreRunner(cluster_store, "cluster"), self.clock, events,
                ttl_ms=config.bucket_lease_ms, on_change=self.scheduler.buckets_changed,
                refill=self._shared_refill,
            )
            self.scheduler.ownership = self.cluster.owned
            self.scheduler.buckets = []
        self.notifications = NotificationDeliverer(
            self.clock, self.writer, events, owner=self.node_id,
            buckets=lambda: self.scheduler.owned()[0], http_allow=self.webhook_allow, mail=config.mail,
        )
        self.dispatcher.on_outcomes = self.notifications.wake
        self._submissions = GroupCommitter(self.writer, lambda s, jobs: s.create_jobs(jobs, self.clock.now_ms()))
        self.pool: WorkerPool | None = None
        self._tasks: list[asyncio.Task] = []
        #: remote workers' long polls waiting per queue name (``claim_for_worker``)
        self._queue_waiters: dict[str, set[asyncio.Event]] = {}
        self._claims_open = True
        self.dispatcher.on_queued = self._on_queued
        self.disk = DiskWatch(config.data_dir, self.writer, events, config.disk_low_bytes)
        #: status parts last read from the store, with when: answered (stale) while it is down
        self._status_cache: dict[str, tuple[int, dict[str, Any]]] = {}

    def now_ms(self) -> int:
        return self.clock.now_ms()

    # ---- lifecycle
    async def start(self) -> None:
        env = dict(self.config.worker_env)
        if self.config.api_url:
            env["CRONWHEEL_URL"] = self.config.api_url
        self.pool = WorkerPool(
            self.config.data_dir / "worker.sock",
            self.dispatcher,
            n_workers=self.config.workers,
            slots=self.config.slots,
            env=env,
            log=lambda event, fields: self.events.emit(event, **fields),
            node_id=self.node_id,
            worker_cmd=self.config.worker_cmd,
        )
        self._submissions.start()
        await self.pool.start()
        self._tasks = self.dispatcher.start(self.pool)
        await self.load_tenants()
        await self._fail_previous_incarnation()
        self.notifications.owner = f"{self.node_id}-{self.pool.incarnation}"
        await self.notifications.recover(f"{self.node_id}-")
        recovered = await self.dispatcher.refill()
        if recovered:
            self.events.emit("dispatch.recovered", executions=recovered)
        if self.cluster is not None:
            self._tasks.append(asyncio.get_running_loop().create_task(self.cluster.run(), name="cluster"))
            with contextlib.suppress(TimeoutError):  # the first leases, before the first claim
                await asyncio.wait_for(self.cluster.first_turn.wait(), self.config.bucket_lease_ms / 1000)
        self._tasks.append(asyncio.get_running_loop().create_task(self.scheduler.run(), name="scheduler"))
        self._tasks.append(asyncio.get_running_loop().create_task(self._retention_loop(), name="retention"))
        self._tasks.append(asyncio.get_running_loop().create_task(self.disk.run(), name="disk"))
        self._tasks.extend(self.notifications.start())
        self._tasks.append(asyncio.get_running_loop().create_task(self.tenant_refresh_loop(), name="tenants"))

    async def _shared_refill(self) -> None:
        """Cluster mode: the ready queue is shared. When this node has room, take in the
        dispatchable executions of any bucket (another node's burst, or what a dead node had
        claimed); starting one is a conditional write, so two nodes never start it twice."""
        if self.pool is None or self.pool.free_slots() <= 0 or len(self.dispatcher.queue) >= SHARED_REFILL_BELOW:
            return
        added = await self.dispatcher.refill()
        if added:
            self.events.emit("dispatch.shared", executions=added)

    async def _fail_previous_incarnation(self) -> None:
        """Executions that this node's local workers held when it last stopped (or crashed)
        cannot still be running: those workers died with it. Fail them now (a retry, or the
        DLQ) instead of leaving them until their leases expire. Fenced by epoch as always."""
        assert self.pool is not None
        mine = f"{self.node_id}-{self.pool.incarnation}-"
        orphans = [
            ex for ex in await self.reader.run(lambda s: s.running_with_worker_prefix(f"{self.node_id}-"))
            if ex.worker_id is not None and not ex.worker_id.startswith(mine)
        ]
        if not orphans:
            return
        self.events.emit("node.recovered_leases", executions=len(orphans))
        await self.dispatcher.finish([
            Completion(ex.execution_id, ex.worker_id, ex.lease_epoch, Outcome.LOST,
                       error=f"worker {ex.worker_id} died with its node")
            for ex in orphans
        ])

    async def _retention_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.retention_interval_ms / 1000)
            try:
                await self.prune_history()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # retention must never take the node down
                self.events.emit("retention.error", error=repr(exc))

    async def prune_history(self) -> int:
        """One pass over every job's history, in small transactions that let the hot path
        (claims, starts, completions) in between, then a WAL checkpoint."""
        cutoff = self.clock.now_ms() - self.config.retention_ms
        keep = self.config.keep_last
        total, cursor = 0, None
        while True:
            deleted, cursor = await self.writer.run(
                lambda s, c=cursor: s.prune_executions(cutoff, keep, c, 200, 1000)
            )
            total += deleted
            if cursor is None:
                break
            await asyncio.sleep(0.01)
        while True:  # told notifications age out with the history they tell about
            pruned = await self.writer.run(lambda s: s.prune_notifications(cutoff, 1000))
            total += pruned
            if pruned < 1000:
                break
            await asyncio.sleep(0.01)
        await self.writer.run(lambda s: s.checkpoint())
        if total:
            self.events.emit("retention.pruned", executions=total)
        return total

    async def wait_workers(self, timeout: float = 30) -> None:
        assert self.pool is not None
        await self.pool.wait_ready(timeout_sec=timeout)

    async def stop(self) -> None:
        """Stop taking new work, let running executions finish up to the grace period, then kill
        what is left. Nothing acknowledged is lost: queued executions stay PENDING in the store.
        In a cluster, the buckets are handed off first, so other nodes schedule them at once."""
        self.scheduler.stop()
        if self.cluster is not None:
            await self.cluster.leave()
        # the ticks claimed ahead are this node's promise for the next moments: keep it
        await self.dispatcher.start_due_before(self.clock.now_ms() + self.config.claim_ahead_ms)
        self.dispatcher.stop_accepting()
        self._claims_open = False  # remote workers' long polls answer at once
        for waiters in self._queue_waiters.values():
            for ev in waiters:
                ev.set()
        if self.pool is not None:
            await self.pool.stop(self.config.grace_sec)
        await self.dispatcher.stop()
        await self.notifications.stop()
        await self._submissions.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.writer.close()
        self.reader.close()
        for extra in (self.completer, self.claimer):
            if extra is not None:
                extra.close()
        if self.cluster is not None:
            self.cluster.runner.close()

    def healthy(self) -> bool:
        """The loops have turned recently (for the systemd watchdog)."""
        now = self.clock.now_ms()
        return now - self.scheduler.last_loop_ms < 10_000

    # ---- what metrics and health read (core/stats.py)
    def snapshot(self) -> NodeSnapshot:
        pool = self.pool
        disk = self.disk.state
        return NodeSnapshot(
            node_id=self.node_id, now_ms=self.clock.now_ms(),
            running=dict(pool.in_flight()) if pool else {},
            queue_depth_by_tier=tuple(self.dispatcher.queue.depth_by_tier()),
            delayed=len(self.dispatcher.delayed),
            workers=len(pool.worker_pids()) if pool else 0,
            slots_total=self.config.workers * self.config.slots,
            slots_free=pool.free_slots() if pool else 0,
            buckets_owned=len(self.scheduler.buckets), wheel_jobs=len(self.scheduler.wheel),
            last_loop_ms=self.scheduler.last_loop_ms, healthy=self.healthy(),
            lag_p99_ms=lag_percentile(sorted(self.dispatcher.lags_ms), 0.99),
            disk_free_bytes=disk.free_bytes, wal_bytes=disk.log_bytes,
        )

    async def store_counts(self) -> StoreCounts:
        buckets = list(self.scheduler.buckets)
        now = self.clock.now_ms()

        def read(s: Store) -> StoreCounts:
            return StoreCounts(
                jobs={st.value: s.count_jobs(status=st) for st in JobStatus},
                dead=s.count_executions(status=ExecStatus.DEAD),
                next_run_at_ms=s.next_due_at(buckets),
                notifications=s.notification_counts(now),
            )

        return await self.reader.run(read)

    def _abort_all(self, execution_ids: list[str]) -> None:
        self.dispatcher.release(execution_ids)  # cancelled: no result will come for them
        if self.pool is None:
            return
        for xid in execution_ids:
            if self.pool.abort(xid, "cancelled"):
                self.events.emit("execution.aborted", executionId=xid, reason="cancelled")

    async def _read(self, fn):
        try:
            return await self.reader.run(fn)
        except StoreUnavailable as exc:
            raise Unavailable(str(exc)) from exc

    async def _write(self, fn):
        try:
            return await self.writer.run(fn)
        except StoreUnavailable as exc:
            raise Unavailable(str(exc)) from exc

    # ---- jobs
    async def create_job(
        self, spec: JobSpec, idempotency_key: str | None = None, request_hash: str | None = None
    ) -> CreateResult:
        job_id = new_job_id()
        now = self.clock.now_ms()
        next_run_at = self.first_run(job_id, spec, now)
        await self.check_references([spec])
        max_jobs = self.admit_submission(spec)  # 429 when the tenant's bucket is empty
        (result,) = await self._submit([NewJob(job_id, spec, next_run_at, idempotency_key, request_hash, max_jobs)])
        if result.outcome is CreateOutcome.QUOTA_EXCEEDED:
            raise self.jobs_quota_exceeded(spec.tenant)
        if result.outcome is CreateOutcome.FAILED:
            raise InternalError(f"the job could not be stored (errorId {result.error_id}, see the daemon log)", errorId=result.error_id)
        if result.outcome is CreateOutcome.NAME_TAKEN:
            assert spec.name is not None and result.job_id is not None
            raise NameTaken(spec.name, result.job_id)
        return result

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
            nextRunAt=iso_ms(job.next_run_at), superseded=len(result.superseded),
        )
        return job

    async def create_jobs(self, items: list[tuple[JobSpec, str | None, str | None]]) -> list[CreateResult]:
        """A batch of one tenant's jobs, committed together: ``(spec, idempotency key,
        request hash)`` each. The tenant's submission rate is charged for all of them at
        once (429 for the whole batch); a job over its tenant's ``maxJobs`` comes back
        QUOTA_EXCEEDED while the others are created."""
        if not items:
            return []
        now = self.clock.now_ms()
        firsts: list[tuple[str, int]] = []  # (job id, first run): every job checked before any is charged
        for i, (spec, _, _) in enumerate(items):
            job_id = new_job_id()
            try:
                firsts.append((job_id, self.first_run(job_id, spec, now)))
            except ServiceError as exc:
                raise ServiceError(f"jobs[{i}]: {exc}", field=f"jobs[{i}].schedule") from exc
        await self.check_references([spec for spec, _, _ in items])
        max_jobs = self.admit_submission(items[0][0], len(items))
        results = await self._submit([
            NewJob(job_id, spec, next_run_at, key, digest, max_jobs)
            for (job_id, next_run_at), (spec, key, digest) in zip(firsts, items, strict=True)
        ])
        if any(r.outcome is CreateOutcome.QUOTA_EXCEEDED for r in results):
            self.note_jobs_quota(items[0][0].tenant)
        return results

    async def _submit(self, news: list[NewJob]) -> list[CreateResult]:
        """Group-commit submissions (one transaction for the list). While the store cannot be
        reached, try again with backoff for up to ``submit_retry_ms``, then Unavailable (503 +
        Retry-After): a submission is acknowledged only by a commit. A commit whose answer was
        lost (the connection died during COMMIT) may have happened: before each new try the
        jobs' ids are looked up, so the retry acknowledges those jobs instead of writing them
        twice. Created jobs are logged and scheduled here."""
        deadline = time.monotonic() + self.config.submit_retry_ms / 1000
        delay, longest = SUBMIT_RETRY_DELAYS
        attempt = 0
        done: dict[str, CreateResult] = {}  # job id -> its result, from a commit whose answer was lost
        while True:
            attempt += 1
            try:
                if attempt > 1:
                    ids = [new.job_id for new in news if new.job_id not in done]
                    found = set(await self.reader.run(lambda s, ids=ids: [i for i in ids if s.get_job(i) is not None]))
                    done.update((n.job_id, CreateResult(CreateOutcome.CREATED, n.job_id, n.next_run_at))
                                for n in news if n.job_id in found)
                # the rest go (again): an idempotent replay or a job over its quota answers the
                # same the second time, and nothing else of a committed batch can be missing
                rest = [new for new in news if new.job_id not in done]
                answers = iter(await self._submissions.submit_many(rest, item_errors=True) if rest else [])
                results = [done[n.job_id] if n.job_id in done else self._answer(n, next(answers)) for n in news]
                break
            except StoreUnavailable as exc:
                left = deadline - time.monotonic()
                if left <= 0 or not self._claims_open:  # out of time, or the node is stopping
                    raise Unavailable(str(exc)) from exc
                self.events.emit("job.submit_retry", jobId=news[0].job_id, jobs=len(news), attempt=attempt, error=str(exc))
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, longest)
        for new, result in zip(news, results, strict=True):
            if result.outcome is CreateOutcome.CREATED:
                spec = new.spec
                self.events.emit(
                    "job.created", jobId=new.job_id, tenant=spec.tenant, name=spec.name,
                    schedule=spec.schedule, nextRunAt=iso_ms(new.next_run_at),
                )
                self.scheduler.job_scheduled(new.job_id, new.next_run_at)
        return results

    def _answer(self, new: NewJob, answer: CreateResult | Exception) -> CreateResult:
        """A submission's result; one whose write failed alone (its neighbours committed) is
        logged once, with the id its caller is given."""
        if not isinstance(answer, Exception):
            return answer
        error_id = new_error_id()
        self.events.emit("job.submit_failed", jobId=new.job_id, tenant=new.spec.tenant, errorId=error_id,
                         error=type(answer).__name__, detail=str(answer)[:300])
        return CreateResult(CreateOutcome.FAILED, new.job_id, None, error_id)

    async def get_job(self, job_id: str, tenant: str | None = None) -> Job | None:
        return await self._read(lambda s: s.get_job(job_id, tenant))

    async def resolve_job(self, ref: str, tenant: str | None = None) -> Job:
        job = await self.get_job(ref, tenant)
        if job is not None:
            return job
        named = await self.jobs_named(ref, tenant)
        if not named:
            raise NotFound(f"no job with id or name {ref!r}")
        tenants = {j.tenant for j in named if j.status is not JobStatus.CANCELLED}
        if len(tenants) > 1:  # an admin asking for a name that several tenants use
            raise Conflict(f"name {ref!r} is used by several tenants: " + ", ".join(j.id for j in named if j.tenant in tenants))
        return named[0]  # the name's live holder, else the newest cancelled job of that name

    async def jobs_named(self, name: str, tenant: str | None = None) -> list[Job]:
        return await self._read(lambda s: s.find_jobs_by_name(name, tenant))

    def live_output(self, execution_id: str) -> bytes | None:
        return self.dispatcher.live.tail(execution_id)

    def follow_output(self, execution_id: str) -> Follower:
        return self.dispatcher.live.follow(execution_id)

    async def last_runs(self, job_ids: list[str], tenant: str | None = None) -> dict[str, Execution]:
        return await self._read(lambda s: s.last_runs(job_ids, tenant))

    async def list_jobs(self, tenant=None, status=None, limit=100, after_id=None) -> list[Job]:
        return await self._read(lambda s: s.list_jobs(tenant, status, limit, after_id))

    async def cancel_job(self, job_id: str, tenant: str | None = None) -> Job:
        now = self.clock.now_ms()
        res = await self._write(lambda s: s.cancel_job(job_id, now, tenant))
        if res is None:
            raise NotFound(f"no job {job_id!r}")
        job, running = res
        self.scheduler.job_scheduled(job_id, None)
        self._abort_all(running)
        self.events.emit("job.cancelled", jobId=job_id, aborted=len(running))
        return job

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
        if current.spec.schedule is None:
            nxt = current.next_run_at  # a one-off keeps its instant (overdue: runs at once)
        else:
            spec = current.spec
            nxt = bounded(sched.parse_schedule(spec.schedule, job_id, spec.timezone).next_after,
                          spec.active_from, spec.active_until)(now)  # fmt: skip
        job = await self._write(
            lambda s: s.set_job_status(job_id, [JobStatus.PAUSED, JobStatus.ACTIVE], JobStatus.ACTIVE, now, nxt, tenant)
        )
        if job is None:
            await self._explain_state(job_id, tenant, "resume")
        self.scheduler.job_scheduled(job_id, job.next_run_at)
        self.events.emit("job.resumed", jobId=job_id, nextRunAt=iso_ms(job.next_run_at))
        return job

    async def _explain_state(self, job_id: str, tenant: str | None, verb: str) -> None:
        job = await self.get_job(job_id, tenant)
        if job is None:
            raise NotFound(f"no job {job_id!r}")
        raise Conflict(f"cannot {verb} a {job.status.value} job")

    async def trigger_job(self, job_id: str, tenant: str | None = None) -> Execution:
        job = await self.get_job(job_id, tenant)
        if job is not None:
            self.refuse_ping_job(job, "trigger")
        now = self.clock.now_ms()
        ex = await self._write(lambda s: s.trigger_job(job_id, now, tenant))
        if ex is None:
            await self._explain_state(job_id, tenant, "trigger")
            raise Conflict(f"cannot trigger job {job_id!r}")
        self.events.emit("job.triggered", jobId=job_id, executionId=ex.execution_id)
        self.dispatcher.add([ex])
        return ex

    # ---- executions
    async def list_executions(self, job_id: str, limit: int = 50, before: int | None = None, tenant=None) -> list[Execution]:
        if await self.get_job(job_id, tenant) is None:
            raise NotFound(f"no job {job_id!r}")
        return await self._read(lambda s: s.list_executions(job_id, limit, before, tenant))

    async def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None:
        return await self._read(lambda s: s.get_execution(execution_id, tenant))

    # ---- remote workers
    def _on_queued(self, executions: list[Execution]) -> None:
        """Queue executions became dispatchable on this node: wake the long polls of their queues."""
        for ex in executions:
            for ev in self._queue_waiters.get(ex.queue or "", ()):
                ev.set()

    async def claim_for_worker(
        self, queues: list[str], worker_id: str, max: int, wait_sec: float = 0, tenant: str | None = None,
        alive: Callable[[], bool] | None = None,
    ) -> list[Grant]:
        """Up to ``max`` executions of ``queues`` for a remote worker. With nothing to take, wait
        up to ``wait_sec``: woken at once when this node claims, triggers, retries or replays
        an execution of one of the queues, and re-polling the store every second for what
        other nodes (or time, for retries and jitter) made dispatchable. ``alive``: whether the
        caller still waits (its connection is open): a dead worker's long poll must not go on
        taking leases that nobody will run."""
        deadline = time.monotonic() + wait_sec
        wake = asyncio.Event()
        for name in queues:
            self._queue_waiters.setdefault(name, set()).add(wake)
        try:
            while True:
                wake.clear()  # a wake-up during the claim below makes the next poll immediate
                if alive is not None and not alive():
                    return []
                now = self.clock.now_ms()
                grants = await self._write(lambda s, now=now: s.claim_for_worker(queues, worker_id, max, now, tenant))
                for g in grants:
                    self.events.emit(
                        "execution.started", jobId=g.job_id, executionId=g.execution_id,
                        leaseEpoch=g.lease_epoch, attempt=g.attempt, worker=worker_id,
                        tenant=g.tenant, queue=g.queue, lagMs=now - g.scheduled_at, origin=g.origin.value,
                    )
                left = deadline - time.monotonic()
                if grants or left <= 0 or not self._claims_open:
                    return grants
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=min(1.0, left))
        finally:
            for name in queues:
                waiters = self._queue_waiters.get(name)
                if waiters is not None:
                    waiters.discard(wake)
                    if not waiters:
                        del self._queue_waiters[name]

    async def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int) -> HeartbeatResult:
        now = self.clock.now_ms()
        return await self._write(lambda s: s.heartbeat(execution_id, worker_id, lease_epoch, now))

    async def complete(self, completion: Completion) -> CompletionResult:
        (result,) = await self.dispatcher.finish([completion])
        return result

    async def record_effect(self, execution_id: str, lease_epoch: int, key: str) -> EffectVerdict:
        now = self.clock.now_ms()
        verdict = await self._write(lambda s: s.record_effect(execution_id, lease_epoch, key, now))
        self.events.emit("effect." + verdict.value, executionId=execution_id, leaseEpoch=lease_epoch, key=key)
        return verdict

    # ---- dead-letter queue
    async def list_dead(self, tenant=None, limit=100, after=None) -> list[Execution]:
        return await self._read(lambda s: s.list_dead(tenant, limit, after))

    async def replay_dead(self, execution_id: str, tenant: str | None = None) -> Execution:
        dead = await self.get_execution(execution_id, tenant)
        job = None if dead is None else await self.get_job(dead.job_id, tenant)
        if job is not None:
            self.refuse_ping_job(job, "replay a run of")
        now = self.clock.now_ms()
        ex = await self._write(lambda s: s.replay_dead(execution_id, now, tenant))
        if ex is None:
            raise NotFound(f"no dead-lettered execution {execution_id!r}")
        self.events.emit("dlq.replayed", executionId=execution_id)
        self.dispatcher.add([ex])
        return ex

    async def purge_dead(self, execution_id: str, tenant: str | None = None) -> None:
        if not await self._write(lambda s: s.purge_dead(execution_id, tenant)):
            raise NotFound(f"no dead-lettered execution {execution_id!r}")
        self.events.emit("dlq.purged", executionId=execution_id)

    # ---- the node
    async def herd(self, tenant: str | None = None, window_s: int = 3600, top: int = 10) -> dict[str, Any]:
        """How many ticks of the ACTIVE jobs (a tenant's, or all) fall in each second of the
        coming ``window_s`` (core/herd.py). Pages through the reader store, yielding between
        pages, and counts in a thread so the loop stays responsive."""
        page_size = 1_000
        calendars = await self.calendars_by_tenant(tenant)
        jobs: list[herd.HerdJob] = []
        after: str | None = None
        while True:
            page = await self._read(lambda s, cursor=after: s.list_jobs(tenant, JobStatus.ACTIVE, page_size, cursor))
            jobs.extend(herd.HerdJob(j.id, j.spec.schedule, j.spec.timezone, j.next_run_at,
                                     self.herd_exclusions(j, calendars), j.spec.active_from, j.spec.active_until)
                        for j in page)  # fmt: skip
            if len(page) < page_size:
                break
            after = page[-1].id
            await asyncio.sleep(0)
        start = self.clock.now_ms()
        summary = await asyncio.to_thread(herd.herd_summary, jobs, start, window_s, top)
        summary["tenant"] = tenant
        return summary

    async def status(self) -> dict[str, Any]:
        def counts(s: Store) -> dict[str, Any]:
            return {
                "jobs": {st.value: s.count_jobs(status=st) for st in JobStatus},
                "executions": {st.value: s.count_executions(status=st) for st in (ExecStatus.PENDING, ExecStatus.RUNNING, ExecStatus.RETRY_WAIT, ExecStatus.DEAD)},
                "nextRunAt": iso_ms(s.next_due_at(self.scheduler.buckets)),
                "notifications": s.notification_counts(self.clock.now_ms()),
                "store": s.meta(),
            }

        data, as_of, error = await self._status_part("store", lambda: self.reader.run(counts))
        data = dict(data)
        lags = sorted(self.dispatcher.lags_ms)
        depth = self.dispatcher.queue.depth_by_tier()
        data.update(
            nodeId=self.node_id,
            uptimeSec=round(time.monotonic() - self.started_monotonic, 1),
            queue={Priority(i).label: d for i, d in enumerate(depth)},
            delayed=len(self.dispatcher.delayed),
            wheel=len(self.scheduler.wheel),
            workers={
                "count": len(self.pool.worker_pids()) if self.pool else 0,
                "freeSlots": self.pool.free_slots() if self.pool else 0,
                "running": len(self.pool.in_flight()) if self.pool else 0,
            },
            dispatchLagMs={"p50": lag_percentile(lags, 0.5), "p99": lag_percentile(lags, 0.99), "max": lags[-1] if lags else None, "samples": len(lags)},
            disk=self._disk_status(),
        )
        if self.cluster is not None:
            cluster, cluster_as_of, cluster_error = await self._status_part("cluster", self.cluster.status)
            data["cluster"] = {**cluster, "owned": len(self.cluster.holdings.terms)}  # live, not cached
            as_of, error = min(as_of, cluster_as_of), error or cluster_error
        data.update(stale=error is not None, asOf=iso_ms(as_of))
        if error is not None:
            data.update(staleForMs=self.clock.now_ms() - as_of, storeError=error)
        return data

    def _disk_status(self) -> dict[str, Any]:
        self.disk.read_free()  # live: it is one statvfs
        return self.disk.state.to_json(self.disk.low_bytes)

    async def _status_part(
        self, part: str, read: Callable[[], Awaitable[dict[str, Any]]]
    ) -> tuple[dict[str, Any], int, str | None]:
        """A part of the status read from the store, remembered with the time of the read;
        while the store cannot be reached (a failover), the last one read and the error, so
        that status keeps answering (marked stale). Unavailable if it was never read."""
        now = self.clock.now_ms()
        try:
            value = await read()
        except StoreUnavailable as exc:
            cached = self._status_cache.get(part)
            if cached is None:
                raise Unavailable(str(exc)) from exc
            return cached[1], cached[0], str(exc)
        self._status_cache[part] = (now, value)
        return value, now, None
