"""Horizon → wheel → claim.

A loader keeps every instant at which ACTIVE jobs of the owned buckets are due within the
horizon (60 s) in the timing wheel: one entry per instant, however many jobs share it, so a
herd of 100,000 jobs due in one second costs the wheel a single entry. When the wheel fires,
the due slice is claimed in batches by the store's atomic claim (insert executions + advance
next_run_at, one transaction per batch) and the new executions are handed to the dispatcher.

The wheel is only a cache of *when to wake up*; the store is the truth. That is why the claim
asks the store for every due job of the buckets (the wheel does not even know which jobs are
due), and why a safety sweep claims whatever is due every ``sweep_ms`` even if the wheel said
nothing: a job added by another process, a clock jump, or a crash between claim and wheel
update is picked up within one sweep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cronwheel.core.claimlead import ClaimLead
from cronwheel.core.clock import Clock, StepDetector
from cronwheel.core.ids import N_BUCKETS
from cronwheel.core.instants import format_instant
from cronwheel.core.model import ExecOrigin, Execution
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.records import ClaimResult
from cronwheel.core.wheel import TimingWheel
from cronwheel.engine.outage import LoopHealth
from cronwheel.engine.runner import StoreRunner, bisect_failures
from cronwheel.obs.events import REPEAT_LOG_SEC, EventLog
from cronwheel.store.base import StoreUnavailable
from cronwheel.worker.waiting import wait_event

if TYPE_CHECKING:
    from cronwheel.core.model import Execution
    from cronwheel.core.records import Fence

#: a job whose own claim fails is left out of claims for this long, then tried again
SET_ASIDE_SEC = 30.0
MAX_SET_ASIDE = 1_000

#: in cluster mode: the buckets this node may schedule right now, and the claim's fence
Ownership = Callable[[], "tuple[list[int], Fence | None]"]


class Scheduler:
    def __init__(
        self,
        clock: Clock,
        writer: StoreRunner,
        reader: StoreRunner,
        events: EventLog,
        on_claimed: Callable[[list[Execution]], None],
        on_replaced: Callable[[list[str]], None],
        *,
        buckets: Sequence[int] = tuple(range(N_BUCKETS)),
        horizon_ms: int = 60_000,
        reload_ms: int = 5_000,
        sweep_ms: int = 1_000,
        claim_batch: int = 5_000,
        claim_ahead_ms: int = 0,
        ownership: Ownership | None = None,
    ) -> None:
        self.clock = clock
        self.writer = writer
        self.reader = reader
        self.events = events
        self.on_claimed = on_claimed
        self.on_replaced = on_replaced
        self.buckets = list(buckets)
        #: cluster mode (engine/cluster.py): asked before every read and claim, so a bucket is
        #: scheduled only inside its lease's trust window, and every claim is fenced
        self.ownership = ownership
        self.horizon_ms = horizon_ms
        self.reload_ms = reload_ms
        self.sweep_ms = sweep_ms
        self.claim_batch = claim_batch
        #: claim a little before the tick so that the claim's own latency does not become
        #: dispatch lag; executions still wait for their scheduled time before starting
        self.claim_ahead_ms = claim_ahead_ms
        #: herds (a second with more ticks than one lead's worth of claiming) are claimed
        #: earlier still, so that the whole herd is claimed before it is due
        self.lead = ClaimLead(claim_ahead_ms, cap_ms=horizon_ms // 2)
        #: due instant (ms) -> wake up to claim it (its lead before it, or the instant itself)
        self.wheel: TimingWheel[int] = TimingWheel(clock.now_ms(), tick_ms=5, wheel_size=256)
        #: jobs due within the horizon: as of the last horizon load, then kept up by claims
        #: and schedule changes until the next (for the status page and a gauge)
        self.horizon_jobs = 0
        self._poke = asyncio.Event()
        self._claim_needed = True
        self._next_reload = 0
        self._next_sweep = 0
        self._stopping = False
        self.last_loop_ms = clock.now_ms()  #: for the watchdog: the loop's last turn
        self.loaded = asyncio.Event()  #: set once the first load of the horizon is in the wheel
        self.health = LoopHealth(events, clock, "scheduler")
        #: this turn read or claimed buckets in the store: only such a turn says it is back
        self._reached_store = False
        self._set_aside: dict[str, float] = {}  #: job id -> monotonic time its claim is tried again
        self._set_aside_log = OncePer(REPEAT_LOG_SEC)
        self._steps = StepDetector.since(clock)  # a step before the first turn rebuilds the wheel too

    # ---- notifications from the rest of the node
    def job_scheduled(self, job_id: str, next_run_at: int | None) -> None:
        """A job was created/resumed with this next run (or paused/cancelled: None).

        A paused or cancelled job's instant stays in the wheel: other jobs may share it, and
        waking up to a claim that finds nothing is cheaper than knowing. The next horizon
        load forgets instants that no job is due at any more (and corrects ``horizon_jobs``)."""
        if next_run_at is None:
            return
        if next_run_at - self.clock.now_ms() <= self.horizon_ms:
            self._job_coming(next_run_at)
            self._poke.set()

    def stop(self) -> None:
        self._stopping = True
        self._poke.set()

    def owned(self) -> tuple[list[int], Fence | None]:
        if self.ownership is None:
            return self.buckets, None
        buckets, fence = self.ownership()
        self.buckets = buckets
        return buckets, fence

    def buckets_changed(self) -> None:
        """Cluster mode: buckets were acquired or lost: reload the horizon and claim now."""
        self._next_reload = 0
        self._claim_needed = True
        self._poke.set()

    def _job_coming(self, tick: int) -> None:
        """One more job is due at ``tick``, within the horizon (between horizon loads)."""
        self.horizon_jobs += 1
        self.lead.add(tick)
        if not self._arm(tick):
            self._claim_needed = True  # its lead has begun: claim on this turn

    def _arm(self, tick: int) -> bool:
        """Wake up the tick's lead before it to claim it. False when that time has passed:
        the caller claims now if it must. Such a tick is armed at the tick itself instead,
        because overlap-guarded jobs are claimed only then (``claim_due``)."""
        wheel = self.wheel
        deadline = tick - self.lead.lead_for(tick)
        if wheel.deadline_of(tick) == deadline or wheel.add(tick, deadline):
            return True
        wheel.add(tick, tick)  # (refused too if the tick itself has passed: nothing to wait for)
        return False

    # ---- the loop
    async def run(self) -> None:
        while not self._stopping:
            self._reached_store = False
            try:
                await self._turn()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never let the scheduler die: log, back off, go on
                self.health.failed(exc)
                self._claim_needed = True
                await asyncio.sleep(0.5)
            else:
                if self._reached_store:  # a turn with no bucket owned (lost in an outage)
                    self.health.ok()  # asked the store nothing: its outage is not over

    async def work(self, now: int) -> bool:
        """One turn's work at ``now``, without the wait that follows it: reload the horizon
        when due, advance the wheel, claim what fired (and everything due, every sweep).
        True if it claimed."""
        self.check_clock(now)
        self.last_loop_ms = now
        if now >= self._next_reload:
            await self._reload(now)
        fired = self.wheel.advance(now)
        if fired:
            self._claim_needed = True
        if now >= self._next_sweep:
            self._claim_needed = True
            self._next_sweep = now + self.sweep_ms
        if self._claim_needed:
            self._claim_needed = False
            await self._claim(now, fired)
            return True
        return False

    def check_clock(self, now: int) -> int:
        """A wall-clock step since the last turn (ms, 0 if none). The wheel is a cache of when
        to wake up, keyed on the wall clock: after a step it is thrown away and rebuilt from
        the store at once. Forward, the ticks now in the past are claimed under their
        misfire policy; back, nothing runs twice (a tick is an execution id the store holds
        once, and every job's next run is still where the last claim put it), and what is
        scheduled from now on fires by the new clock."""
        step = self._steps.observe(now, self.clock.monotonic())
        if step:
            self.events.emit("clock.stepped", stepMs=step, at=format_instant(now))
            self.wheel = TimingWheel(now, tick_ms=5, wheel_size=256)
            self._next_reload = 0
            self._next_sweep = 0
            self._claim_needed = True
        return step

    async def _turn(self) -> None:
        if await self.work(self.clock.now_ms()):
            return  # claiming takes time: look at the wheel again before sleeping
        wake_at = min(x for x in (self.wheel.next_expiry(), self._next_reload, self._next_sweep) if x is not None)
        delay = max(0.0, (wake_at - self.clock.now_ms()) / 1000)
        if delay > 0:
            await wait_event(self._poke, delay)
        self._poke.clear()

    async def _reload(self, now: int) -> None:
        buckets, _ = self.owned()
        due = await self.reader.run(
            lambda s: s.due_ticks(buckets, now + self.horizon_ms, limit=1_000_000)
        )
        self._reached_store = self._reached_store or bool(buckets)  # (none: the store is not asked)
        self.lead.reset(due)
        self.horizon_jobs = sum(jobs for _, jobs in due)
        # Instants no job is due at any more (paused, cancelled, claimed elsewhere) are
        # forgotten; the others are armed again only where their lead moved (a herd sits in
        # the horizon for up to a minute, reloaded every few seconds).
        wheel = self.wheel
        for tick in {tick for tick, _ in wheel.entries()}.difference(tick for tick, _ in due):
            wheel.cancel(tick)
        for tick, _ in due:
            known = tick in wheel
            if not self._arm(tick) and not known:
                self._claim_needed = True  # due already, and news to this node
        self._next_reload = now + self.reload_ms
        self.loaded.set()

    async def _claim_page(self, buckets: list[int], now: int, ahead: int, fence: Fence | None) -> ClaimResult:
        """One claim transaction for up to ``claim_batch`` due jobs of many tenants. A bad
        neighbour costs a retry, never a tick (invariant 8): when the claim fails for anything
        but an unreachable store, the due jobs are claimed by id in halves, down to the job
        whose own claim fails; that one is set aside for ``SET_ASIDE_SEC`` (logged, then tried
        again) and every other job is claimed. StoreUnavailable is raised."""
        if self._set_aside:
            return await self._claim_around_set_aside(buckets, now, ahead, fence)
        try:
            return await self.writer.run(lambda s: s.claim_due(buckets, now, self.claim_batch, ahead, fence=fence))
        except StoreUnavailable:
            raise
        except Exception:
            return await self._claim_around_set_aside(buckets, now, ahead, fence)

    async def _claim_around_set_aside(self, buckets: list[int], now: int, ahead: int, fence: Fence | None) -> ClaimResult:
        wall = self.clock.monotonic()
        self._set_aside = {job: until for job, until in self._set_aside.items() if until > wall}
        limit = self.claim_batch + len(self._set_aside)
        due = await self.reader.run(lambda s: s.due_jobs(buckets, now + ahead, limit))
        ids = [job_id for job_id, _ in due if job_id not in self._set_aside][: self.claim_batch]
        return await self._claim_ids(buckets, now, ahead, fence, ids) if ids else ClaimResult()

    async def _claim_ids(self, buckets: list[int], now: int, ahead: int, fence: Fence | None, ids: list[str]) -> ClaimResult:
        async def attempt(some: list[str]) -> ClaimResult:
            return await self.writer.run(lambda s: s.claim_due(buckets, now, len(some), ahead, fence=fence, only=some))

        def alone(job_id: str, exc: Exception) -> ClaimResult:
            self._set_job_aside(job_id, exc)
            return ClaimResult()

        return await bisect_failures(ids, attempt, ClaimResult.merged, alone)

    def _set_job_aside(self, job_id: str, exc: Exception) -> None:
        wall = self.clock.monotonic()
        self._set_aside[job_id] = wall + SET_ASIDE_SEC
        while len(self._set_aside) > MAX_SET_ASIDE:  # a bound, not an expected number
            del self._set_aside[next(iter(self._set_aside))]
        if self._set_aside_log.allow(job_id, wall):
            self.events.emit("scheduler.claim_failed", jobId=job_id, error=repr(exc)[:500], retryInSec=SET_ASIDE_SEC,
                             suppressed=self._set_aside_log.suppressed)  # fmt: skip

    async def _claim(self, now: int, fired: list[tuple[int, int]]) -> None:
        while not self._stopping:
            buckets, fence = self.owned()
            if not buckets:
                break
            ahead = self.lead.ahead_at(now)
            started = self.clock.monotonic()
            result = await self._claim_page(buckets, now, ahead, fence)
            self._reached_store = True
            self.lead.measured(result.jobs_claimed, self.clock.monotonic() - started)
            if result.executions:
                self.on_claimed(result.executions)
                for ex in result.executions:
                    if ex.origin is ExecOrigin.CATCH_UP:
                        self.events.emit(
                            "execution.catch_up", jobId=ex.job_id, executionId=ex.execution_id, reason=ex.reason
                        )
            if result.replaced:
                self.on_replaced(result.replaced)
            for ex in result.skipped:
                self._skipped(ex)
            self.horizon_jobs = max(0, self.horizon_jobs - result.jobs_claimed)
            horizon_end = self.clock.now_ms() + self.horizon_ms
            for next_run_at in result.next_runs:
                if next_run_at <= horizon_end:
                    self._job_coming(next_run_at)
            if result.jobs_claimed:
                self.events.emit("scheduler.claimed", jobs=result.jobs_claimed, executions=len(result.executions))
            if result.jobs_claimed == 0:
                break  # (a batch can be short of the limit and still leave more behind it)
        self._rearm_at_tick(fired)

    def _skipped(self, ex: Execution) -> None:
        """One ``execution.skipped``. (A job held at its backlog bound makes one a minute: its
        record stands for all the ticks held back, ``core.planning``.)"""
        self.events.emit("execution.skipped", jobId=ex.job_id, executionId=ex.execution_id, reason=ex.reason)

    def _rearm_at_tick(self, fired: list[tuple[int, int]]) -> None:
        """The wheel fires a tick its lead early, but overlap-guarded jobs are only claimed
        at their tick: wake up once more at the tick itself. (Which jobs those are is the
        store's to know; a claim at the tick that finds none costs one indexed read. A tick
        fired at itself is done: the sweep and the reload cover anything else.)"""
        wheel = self.wheel
        for deadline, tick in fired:
            if deadline < tick and tick not in wheel and not wheel.add(tick, tick):
                self._claim_needed = True  # the claim ran past the tick: claim again now
