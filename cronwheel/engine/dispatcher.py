"""The ready queue and everything that moves executions between it and the workers.

* Claimed executions enter the fair queue (tiers, then tenants); those with a future
  ``available_at`` (jitter, retry backoff) wait in a timing wheel first.
* The dispatch loop pops as many as there are free worker slots (keeping a reserved share for
  the ``high`` tier), starts them in one store transaction (lease_epoch + 1 each), and sends the
  grants to the chosen workers.
* Results, heartbeats and lost workers come back from the pool; results are group-committed
  (fenced by lease_epoch in the store); a failed attempt comes back as RETRY_WAIT and waits
  for its backoff in the wheel.
* The reaper turns expired leases into retries (or dead letters) and aborts any zombie still
  holding one.
* Tenants: the fair queue's weights are the tenants' weights, and a tenant's running quota is
  applied at pop time (``may_take``). ``running_by_tenant`` counts this node's executions
  from the pop that reserves a slot to the completion, loss or abort that frees it; a tenant
  at its quota keeps its executions queued (PENDING in the store) and gets one
  ``tenant.quota_wait`` event per episode.

The durable PENDING/RETRY_WAIT rows are the truth: the in-memory queue can be thrown away and
rebuilt from the store (``refill``), which is what happens at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence

from cronwheel.core.clock import Clock, StepDetector
from cronwheel.core.fairness import FairQueue
from cronwheel.core.model import ExecStatus, Execution, Priority
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    HeartbeatResult,
    LeaseVerdict,
    Outcome,
    StartRequest,
)
from cronwheel.core.wheel import TimingWheel
from cronwheel.engine.liveoutput import LiveOutput
from cronwheel.engine.outage import LoopHealth
from cronwheel.engine.runner import GroupCommitter, StoreRunner
from cronwheel.obs.events import EventLog
from cronwheel.store.base import StoreUnavailable
from cronwheel.worker.pool import WorkerPool

#: after the wall clock steps forward, leases are not reaped for this long: every execution
#: that heartbeats at least this often (leaseSec / 3 <= 60 s: leaseSec up to 180 s) renews its
#: lease by the new clock first and is not run again
STEP_REAP_PAUSE_SEC = 60.0


class Dispatcher:
    def __init__(
        self,
        clock: Clock,
        writer: StoreRunner,
        reader: StoreRunner,
        events: EventLog,
        *,
        reserved_high_slots: int = 0,
        reaper_interval_ms: int = 1_000,
        refill_interval_ms: int = 5_000,
        rng: random.Random | None = None,
        tenant_weight: Callable[[str], float] | None = None,
        tenant_max_running: Callable[[str], int | None] | None = None,
        completion_retry_ms: tuple[int, int] = (200, 5_000),
        completer: StoreRunner | None = None,
    ) -> None:
        self.clock = clock
        self.writer = writer
        self.reader = reader
        self.events = events
        self.pool: WorkerPool | None = None
        self.queue: FairQueue[str] = FairQueue(tiers=len(Priority), weight=tenant_weight)
        self.tenant_max_running = tenant_max_running or (lambda _tenant: None)
        self.running: dict[str, str] = {}  # execution id -> tenant, from reservation to release
        self.live = LiveOutput()  #: output of the executions running on this node, as it comes
        self.running_by_tenant: Counter[str] = Counter()
        self.quota_waiting: set[str] = set()  # tenants passed over at their running quota
        self.meta: dict[str, tuple[int, str, int]] = {}  # queued/delayed id -> (tier, tenant, scheduled_at)
        self.delayed: TimingWheel[str] = TimingWheel(clock.now_ms(), tick_ms=5, wheel_size=256)
        self._steps = StepDetector()
        self._reap_after = 0.0  #: monotonic: no reaping before this (after a forward clock step)
        self.reserved_high_slots = reserved_high_slots
        self.reaper_interval_ms = reaper_interval_ms
        self.refill_interval_ms = refill_interval_ms
        #: a local worker's result that the store could not take (a restart, a failover) is
        #: kept and tried again, first and longest delay: the job already ran, and dropping
        #: the result would run it again once its lease expired
        self.completion_retry_ms = completion_retry_ms
        self._deferred: set[asyncio.Task] = set()
        self.health = LoopHealth(events, clock, "dispatch")
        self.reaper_health = LoopHealth(events, clock, "reaper")
        self.rng = rng or random.Random()
        self.lags_ms: deque[int] = deque(maxlen=10_000)  # recent dispatch lags, for status
        self._wake = asyncio.Event()
        self._stopping = False
        self._accepting = True
        # results commit on their own connection where the store allows two writers at once
        # (PostgreSQL): a start batch and a result batch then wait for their commits together
        self._completions = GroupCommitter(
            completer or writer, self._apply_completions, max_batch=2000, on_isolated=self._completion_failed,
        )
        self.last_loop_ms = clock.now_ms()
        #: told about queue-target executions that became dispatchable here (claimed, triggered,
        #: retried, replayed), to wake remote workers' long polls; set by the node
        self.on_queued: Callable[[Sequence[Execution]], None] | None = None
        #: told that outcomes were recorded (their notifications are queued in the store)
        self.on_outcomes: Callable[[], None] | None = None

    # ---- input
    def add(self, executions: Sequence[Execution]) -> None:
        now = self.clock.now_ms()
        remote: list[Execution] = []
        for ex in executions:
            if ex.queue is not None:  # a queue target: remote workers claim it, never local ones
                remote.append(ex)
                continue
            if ex.execution_id in self.meta:
                continue
            self.meta[ex.execution_id] = (int(ex.priority), ex.tenant, ex.scheduled_at)
            if ex.available_at > now and self.delayed.add(ex.execution_id, ex.available_at):
                continue
            self.queue.push(int(ex.priority), ex.tenant, ex.execution_id)
        if remote and self.on_queued is not None:
            self.on_queued(remote)
        self._wake.set()

    def _retry_at(self, execution_id: str, tier: int, tenant: str, scheduled_at: int, at: int) -> None:
        self.meta[execution_id] = (tier, tenant, scheduled_at)
        if not self.delayed.add(execution_id, at):
            self.queue.push(tier, tenant, execution_id)
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    async def start_due_before(self, until_ms: int) -> None:
        """Shutting down: keep dispatching until every execution waiting here for a time up
        to ``until_ms`` (the ticks claimed ahead) became due and was offered to the workers.
        Left PENDING, they would run late after a restart, one per claimed-ahead tick, beside
        the catch-up run the misfire policy plans for the downtime."""
        while self._accepting and not self._stopping:
            nxt = self.delayed.next_expiry()
            if nxt is None or nxt > until_ms:
                break
            self._wake.set()
            await asyncio.sleep(max(0.005, (nxt - self.clock.now_ms()) / 1000))
        self._wake.set()
        await asyncio.sleep(0)  # one dispatch turn for what just came due

    def stop_accepting(self) -> None:
        """Shutting down: grant nothing more (queued executions stay PENDING in the store)."""
        self._accepting = False
        self._wake.set()

    async def refill(self) -> int:
        """Load dispatchable executions from the store that are not queued here yet."""
        now = self.clock.now_ms()
        added = 0
        after: tuple[int, str] | None = None
        while True:
            page = await self.reader.run(lambda s, a=after: s.ready_executions(now, 5000, a))
            fresh = [ex for ex in page if ex.queue is None and ex.execution_id not in self.meta
                     and not self._in_flight(ex.execution_id)]  # fmt: skip
            self.add(fresh)
            added += len(fresh)
            if len(page) < 5000:
                return added
            after = (page[-1].available_at, page[-1].execution_id)

    def _in_flight(self, execution_id: str) -> bool:
        return self.pool is not None and execution_id in self.pool.in_flight()

    # ---- loops
    def start(self, pool: WorkerPool) -> list[asyncio.Task]:
        self.pool = pool
        self._completions.start()
        loop = asyncio.get_running_loop()
        return [
            loop.create_task(self._dispatch_loop(), name="dispatch"),
            loop.create_task(self._reaper_loop(), name="reaper"),
        ]

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        for task in list(self._deferred):
            task.cancel()
        await self._completions.close()

    async def _dispatch_loop(self) -> None:
        while not self._stopping:
            try:
                await self._dispatch_turn()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never let dispatch die: log, back off, go on
                self.health.failed(exc)
                await asyncio.sleep(0.5)
            else:
                self.health.ok()

    def check_clock(self, now: int) -> int:
        """A wall-clock step since the last turn (ms, 0 if none). Backoffs and claimed-ahead
        starts wait for instants of the wall clock: after a step back the delay wheel is
        rebuilt at the new time (a wheel cannot move back, and it would take every new entry
        for due), each entry keeping its instant. After a step forward the reaper waits
        ``STEP_REAP_PAUSE_SEC`` before expiring leases, so live executions renew theirs by
        the new clock first."""
        step = self._steps.observe(now, self.clock.monotonic())
        if step < 0:
            entries = self.delayed.entries()
            self.delayed = TimingWheel(now, tick_ms=5, wheel_size=256)
            for execution_id, at in entries:
                if not self.delayed.add(execution_id, at):
                    tier, tenant, _ = self.meta[execution_id]
                    self.queue.push(tier, tenant, execution_id)
        elif step > 0:
            self._reap_after = self.clock.monotonic() + STEP_REAP_PAUSE_SEC
        return step

    async def _dispatch_turn(self) -> None:
        now = self.clock.now_ms()
        self.check_clock(now)
        self.last_loop_ms = now
        for _, execution_id in self.delayed.advance(now):
            tier, tenant, _ = self.meta[execution_id]
            self.queue.push(tier, tenant, execution_id)
        if self._accepting:
            await self._dispatch(now)
        nxt = self.delayed.next_expiry()
        timeout = None if nxt is None else max(0.0, (nxt - self.clock.now_ms()) / 1000)
        if timeout is None or timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=timeout)
        self._wake.clear()

    async def _dispatch(self, now: int) -> None:
        assert self.pool is not None
        while True:
            free = self.pool.free_slots()
            if free <= 0 or not len(self.queue):
                return
            batch: list[str] = []
            while len(batch) < min(free, 1000):
                # keep a share of slots for latency-sensitive work: lower tiers may only take
                # slots beyond the reserve
                may_take_low = free - len(batch) > self.reserved_high_slots
                xid = self.queue.pop(max_tier=None if may_take_low else int(Priority.HIGH), may_take=self._may_take)
                if xid is None:
                    break
                self._reserve(xid, self.meta[xid][1])
                batch.append(xid)
            if not batch:
                return
            assignment: list[tuple[str, str]] = []  # (worker_id, execution_id)
            pending = iter(batch)
            for worker_id, count in self.pool.assign(len(batch)):
                assignment.extend((worker_id, next(pending)) for _ in range(count))
            self._requeue(list(pending))  # anything the pool could not place goes back
            starts = [StartRequest(xid, worker_id) for worker_id, xid in assignment]
            start_at = self.clock.now_ms()
            try:
                grants = await self.writer.run(lambda s, starts=starts, at=start_at: s.start_executions(starts, at))
            except Exception:
                self._requeue([xid for _, xid in assignment])  # still PENDING in the store
                raise
            by_worker: dict[str, list] = {}
            worker_of = {xid: wid for wid, xid in assignment}
            for grant in grants:
                by_worker.setdefault(worker_of[grant.execution_id], []).append(grant)
                lag = start_at - grant.scheduled_at
                if grant.attempt == 1 and grant.origin.scheduled:  # scheduled lateness only (the SLO)
                    self.lags_ms.append(lag)
                self.events.emit(
                    "execution.started",
                    jobId=grant.job_id,
                    executionId=grant.execution_id,
                    leaseEpoch=grant.lease_epoch,
                    attempt=grant.attempt,
                    worker=worker_of[grant.execution_id],
                    tenant=grant.tenant,
                    lagMs=lag,
                    origin=grant.origin.value,
                )
            granted = {g.execution_id for g in grants}
            self.release(xid for _, xid in assignment if xid not in granted)
            for xid, _ in ((x, w) for w, x in assignment):
                self.meta.pop(xid, None)  # started, or no longer dispatchable: either way done here
            for worker_id, worker_grants in by_worker.items():
                self.pool.send_grants(worker_id, worker_grants)
            if len(grants) < len(assignment):
                self.events.emit("dispatch.dropped", count=len(assignment) - len(grants))

    def _requeue(self, execution_ids: list[str]) -> None:
        self.release(execution_ids)
        for xid in execution_ids:
            tier, tenant, _ = self.meta[xid]
            self.queue.push(tier, tenant, xid)

    # ---- per-tenant running counts and quotas
    def _may_take(self, tenant: str) -> bool:
        limit = self.tenant_max_running(tenant)
        if limit is None or self.running_by_tenant[tenant] < limit:
            if tenant in self.quota_waiting:
                self.quota_waiting.discard(tenant)
                self.events.emit("tenant.quota_resumed", tenant=tenant, running=self.running_by_tenant[tenant], maxRunning=limit)
            return True
        if tenant not in self.quota_waiting:  # once per episode, not once per pop
            self.quota_waiting.add(tenant)
            self.events.emit(
                "tenant.quota_wait", tenant=tenant, running=self.running_by_tenant[tenant], maxRunning=limit,
                queued=self.queue.depth_by_tenant().get(tenant, 0),
            )
        return False

    def _reserve(self, execution_id: str, tenant: str) -> None:
        if execution_id not in self.running:
            self.running[execution_id] = tenant
            self.running_by_tenant[tenant] += 1

    def release(self, execution_ids: Iterable[str]) -> None:
        """These executions no longer hold a slot of their tenant here (finished, lost,
        aborted, or never started). Unknown ids are ignored; a tenant waiting on its quota is
        looked at again."""
        freed = False
        for xid in execution_ids:
            self.live.finish(xid)
            tenant = self.running.pop(xid, None)
            if tenant is None:
                continue
            freed = True
            left = self.running_by_tenant[tenant] - 1
            if left > 0:
                self.running_by_tenant[tenant] = left
            else:
                del self.running_by_tenant[tenant]
        if freed and self.quota_waiting:
            self._wake.set()

    async def _reaper_loop(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.reaper_interval_ms / 1000)
            if self.clock.monotonic() < self._reap_after:
                continue  # the wall clock just stepped forward: let live leases renew first
            try:
                now = self.clock.now_ms()
                results = await self.writer.run(lambda s, now=now: s.expire_leases(now, 1000))
            except Exception as exc:  # store hiccup: try again next round
                self.reaper_health.failed(exc)
                continue
            self.reaper_health.ok()
            self.release(res.execution_id for res in results)
            for res in results:
                self.events.emit("lease.expired", executionId=res.execution_id, status=res.status)
                if self.pool is not None:
                    self.pool.abort(res.execution_id, "lease_lost")  # a zombie may still hold it
            await self._after_completions(results)

    # ---- from the worker pool
    async def on_results(self, worker_id: str, results: list[Completion]) -> None:
        try:
            await self._finish_or_defer(results)
        finally:  # the worker is done with them, whatever the store said
            self.release(c.execution_id for c in results)

    async def _finish_or_defer(self, completions: list[Completion]) -> None:
        try:
            await self._finish_each(completions)  # one failing alone is logged, the others applied
        except StoreUnavailable as exc:
            self._defer(completions, exc)

    def _defer(self, completions: list[Completion], exc: StoreUnavailable) -> None:
        self.events.emit("completion.deferred", count=len(completions), error=str(exc))
        task = asyncio.get_running_loop().create_task(self._finish_later(completions), name="completion-retry")
        self._deferred.add(task)
        task.add_done_callback(self._deferred.discard)

    async def _finish_later(self, completions: list[Completion]) -> None:
        """Try deferred results again until the store takes them (fenced as ever: if the
        reaper got there first, they are refused and change nothing). Given up only when the
        node stops; then the leases expire and the executions run again (at least once)."""
        delay, longest = (ms / 1000 for ms in self.completion_retry_ms)
        while not self._stopping:
            await asyncio.sleep(delay)
            try:
                await self._finish_each(completions)
            except StoreUnavailable:
                delay = min(delay * 2, longest)
                continue
            except Exception as exc:  # never lose the loop's error silently
                self.events.emit("completion.error", count=len(completions), error=repr(exc))
                return
            self.events.emit("completion.recovered", count=len(completions))
            return

    async def on_heartbeats(self, worker_id: str, beats: list[tuple[str, int]]) -> list[tuple[str, str]]:
        now = self.clock.now_ms()
        triples = [(xid, worker_id, epoch) for xid, epoch in beats]
        try:
            results = await self.writer.run(lambda s: s.heartbeat_many(triples, now))
        except StoreUnavailable:
            raise
        except Exception:
            # one worker's beats cover several tenants' executions: a failing one must not
            # cost the others their leases, so each is renewed on its own
            results = [await self._heartbeat_alone(t, now) for t in triples]
        lost = []
        for (xid, epoch), res in zip(beats, results, strict=True):
            if res is None:
                continue  # its renewal failed alone (logged); the lease runs on until it expires
            if res.verdict is not LeaseVerdict.OK:
                lost.append((xid, res.verdict.value))
                self.release((xid,))  # the pool forgets it: that worker no longer runs it
                self.events.emit("lease.fenced", executionId=xid, leaseEpoch=epoch, worker=worker_id, via="heartbeat", reason=res.verdict.value)
        return lost

    async def _heartbeat_alone(self, triple: tuple[str, str, int], now: int) -> HeartbeatResult | None:
        try:
            (result,) = await self.writer.run(lambda s: s.heartbeat_many([triple], now))
        except StoreUnavailable:
            raise
        except Exception as exc:
            self.events.emit("heartbeat.error", executionId=triple[0], leaseEpoch=triple[2], error=type(exc).__name__,
                             detail=str(exc)[:300])
            return None
        return result

    async def on_worker_lost(self, worker_id: str, execution_ids: list[tuple[str, int]]) -> None:
        self.events.emit("worker.lost", worker=worker_id, inFlight=len(execution_ids))
        completions = [
            Completion(xid, worker_id, epoch, Outcome.LOST, error=f"worker {worker_id} lost")
            for xid, epoch in execution_ids
        ]
        try:
            await self._finish_or_defer(completions)
        finally:
            self.release(xid for xid, _ in execution_ids)

    def on_output(self, execution_id: str, lease_epoch: int, data: bytes) -> None:
        self.live.append(execution_id, lease_epoch, data)

    def on_capacity(self) -> None:
        self._wake.set()

    # ---- completions (group-committed)
    def _completion_failed(self, exc: BaseException, completion: Completion) -> None:
        self.events.emit(
            "completion.error", executionId=completion.execution_id, leaseEpoch=completion.lease_epoch,
            worker=completion.worker_id, error=type(exc).__name__, detail=str(exc)[:300],
        )

    def _apply_completions(self, store, completions: list[Completion]) -> list[CompletionResult]:
        rands = [self.rng.random() for _ in completions]
        return store.complete_executions(completions, self.clock.now_ms(), rands)

    async def finish(self, completions: Sequence[Completion]) -> list[CompletionResult]:
        """Apply completions (group-committed, fenced in the store), log each outcome, and put
        the ones that will be retried into the delay wheel. A completion whose write failed
        alone raises its error, after the others were applied."""
        outcomes = await self._finish_each(completions)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
        return outcomes  # type: ignore[return-value]

    async def _finish_each(self, completions: Sequence[Completion]) -> list[CompletionResult | Exception]:
        """``finish``, with the error of a completion that failed alone in its place (logged
        once as ``completion.error``; its execution stays RUNNING and its lease expires, so it
        is retried like any lost run). StoreUnavailable for all of them is raised."""
        outcomes = await self._completions.submit_many(list(completions), item_errors=True)
        pairs = [(c, r) for c, r in zip(completions, outcomes, strict=True) if not isinstance(r, Exception)]
        results = [r for _, r in pairs]
        self.release(c.execution_id for c, r in pairs if r.verdict is LeaseVerdict.OK)
        for c, res in pairs:
            if res.verdict is not LeaseVerdict.OK:
                self.events.emit(
                    "lease.fenced", executionId=c.execution_id, leaseEpoch=c.lease_epoch,
                    worker=c.worker_id, via="completion", reason=res.verdict.value,
                )
                continue
            event = {
                ExecStatus.SUCCEEDED: "execution.succeeded",
                ExecStatus.RETRY_WAIT: "execution.retry_scheduled",
                ExecStatus.DEAD: "execution.dead_lettered",
            }.get(res.status, "execution.finished")  # type: ignore[arg-type]
            self.events.emit(
                event, executionId=c.execution_id, leaseEpoch=c.lease_epoch, outcome=c.outcome.value,
                exitCode=c.exit_code, error=c.error, status=res.status, availableAt=res.available_at,
            )
        await self._after_completions(results)
        return outcomes

    def _add_triggered(self, results: Sequence[CompletionResult]) -> None:
        """Chain children a final outcome triggered (committed with it): queue them here."""
        for res in results:
            if res.triggered:
                for ex in res.triggered:
                    self.events.emit("chain.triggered", executionId=ex.execution_id, jobId=ex.job_id,
                                     parentExecutionId=res.execution_id, outcome=res.status)  # fmt: skip
                self.add(res.triggered)

    async def _after_completions(self, results: Sequence[CompletionResult]) -> None:
        if self.on_outcomes is not None and results:
            self.on_outcomes()
        self._add_triggered(results)
        need = [r for r in results if r.verdict is LeaseVerdict.OK and r.status is ExecStatus.RETRY_WAIT]
        if not need:
            return
        rows = await self.reader.run(lambda s: [s.get_execution(r.execution_id) for r in need])
        for ex in rows:
            if ex is not None and ex.status is ExecStatus.RETRY_WAIT and ex.queue is not None:
                self.add([ex])  # remote workers' business: only wakes their long polls
            elif ex is not None and ex.status is ExecStatus.RETRY_WAIT:
                self._retry_at(ex.execution_id, int(ex.priority), ex.tenant, ex.scheduled_at, ex.available_at)
