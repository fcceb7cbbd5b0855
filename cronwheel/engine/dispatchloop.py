"""The way out: the ready queue, and the loop that moves its executions to the workers.

* Claimed executions enter the fair queue (tiers, then tenants); those with a future
  ``available_at`` (jitter, retry backoff) wait in a timing wheel first.
* The dispatch loop pops as many as there are free worker slots (keeping a reserved share for
  the ``high`` tier), starts them in one store transaction (lease_epoch + 1 each), and sends the
  grants to the chosen workers.
* Tenants: the fair queue's weights are the tenants' weights, the high tier is for tenants
  granted it (``tenant_may_high``: the others' high executions wait at the default tier, since
  tiers are strict across tenants), and a tenant's running quota is
  applied at pop time (``may_take``). ``running_by_tenant`` counts this node's executions
  from the pop that reserves a slot to the completion, loss or abort that frees it; a tenant
  at its quota keeps its executions queued (PENDING in the store) and gets one
  ``tenant.quota_wait`` event per episode. On a node shared by tenants the last free slots
  are kept for tenants running nothing here (``core.fairness.neighbour_reserve``).

The durable PENDING/RETRY_WAIT rows are the truth: the in-memory queue can be thrown away and
rebuilt from the store (``refill``), which is what happens at start-up.

``DispatchLoop`` is the base of ``Dispatcher`` (engine/dispatcher.py), which adds the way back
(results, heartbeats, lost workers, the reaper). One object rather than two composed ones:
both sides share the running counts and the queue on every result, in the hot path.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence

from cronwheel.core.clock import Clock, ReapCutoff, StepDetector
from cronwheel.core.fairness import FairQueue, may_take_slot
from cronwheel.core.instantgroups import InstantGroups
from cronwheel.core.model import Execution, Grant, Priority
from cronwheel.core.ratelimit import OncePer, PerSecond
from cronwheel.core.records import StartRequest
from cronwheel.engine.liveoutput import LiveOutput
from cronwheel.engine.outage import LoopHealth
from cronwheel.engine.runner import StoreRunner, bisect_failures
from cronwheel.engine.startedbatch import started_batch
from cronwheel.obs.events import REPEAT_LOG_SEC, EventLog
from cronwheel.worker.pool import WorkerPool
from cronwheel.worker.waiting import wait_event

#: after the node could not hear heartbeats (a stall, a store outage, a forward step of the wall
#: clock), leases that ran out meanwhile are not reaped for this long: every execution that
#: heartbeats at least this often (leaseSec / 3 <= 60 s: leaseSec up to 180 s) renews first
DEAF_REAP_PAUSE_SEC = 60.0
#: dispatchable executions read per page by ``refill``
REFILL_PAGE = 5000
#: an execution whose start failed alone is tried again after this, doubling per failure
START_RETRY_MS = 1_000
START_RETRY_MAX_MS = 60_000
#: executions whose start failures are counted at once (a bound, not an expected number)
MAX_REMEMBERED_FAILURES = 10_000
#: distinct (tier, tenant) tuples shared by waiting executions (a bound, not an expected number)
MAX_KINDS = 10_000
#: above this many ``execution.started`` (or ``execution.succeeded``) a second, those events
#: are logged at debug level and one ``executions.started`` (``executions.succeeded``) line
#: per batch says how many: a herd's log costs O(batches). Below it every line is as ever.
#: The events themselves are all still counted, kept in the ring and streamed to followers
#: (``cronwheel logs -f JOB``), and feed the metrics exactly.
EVENT_LINES_PER_SEC = 1000


class DispatchLoop:
    def __init__(
        self,
        clock: Clock,
        writer: StoreRunner,
        reader: StoreRunner,
        events: EventLog,
        *,
        reserved_high_slots: int = 0,
        tenant_weight: Callable[[str], float] | None = None,
        tenant_max_running: Callable[[str], int | None] | None = None,
        event_lines_per_sec: int = EVENT_LINES_PER_SEC,
    ) -> None:
        self.clock = clock
        self.writer = writer
        self.reader = reader
        self.events = events
        self.pool: WorkerPool | None = None
        self.queue: FairQueue[str] = FairQueue(tiers=len(Priority), weight=tenant_weight)
        self.tenant_max_running = tenant_max_running or (lambda _tenant: None)
        self.tenant_http_allow: Callable[[str], tuple[str, ...] | None] = lambda _tenant: None  #: see Grant.http_allow
        self.neighbour_reserve: Callable[[], int] = lambda: 0  #: slots kept for tenants running nothing here; set by the node
        self.tenant_may_high: Callable[[str], bool] = lambda _tenant: True  #: holds allowHighPriority; set by the node
        self._free_left, self._reserve_now = sys.maxsize, 0  #: of the pop under way (``_may_take``)
        self.running: dict[str, str] = {}  # execution id -> tenant, from reservation to release
        self.live = LiveOutput()  #: output of the executions running on this node, as it comes
        self.running_by_tenant: Counter[str] = Counter()
        self.quota_waiting: set[str] = set()  # tenants passed over at their running quota
        #: queued/delayed id -> (its own tier, tenant; ``_push`` clamps the tier): one tuple shared by every execution of a tier
        #: and tenant (``_kind``), so a herd's 100,000 waiting executions cost a dict slot each
        self.meta: dict[str, tuple[int, str]] = {}
        self._kinds: dict[tuple[int, str], tuple[int, str]] = {}
        #: executions waiting for their instant (claimed ahead, backoff, jitter), grouped by it
        self.delayed: InstantGroups[str] = InstantGroups(clock.now_ms(), tick_ms=5, wheel_size=256)
        self._steps = StepDetector.since(clock)  # a step before the first turn rebuilds the wheel too
        self.reap_cutoff = ReapCutoff(DEAF_REAP_PAUSE_SEC)  #: which leases the reaper may take back
        self.reserved_high_slots = reserved_high_slots
        self.health = LoopHealth(events, clock, "dispatch")
        self._start_failures: dict[str, int] = {}  #: execution id -> starts that failed alone
        self._start_failed_log = OncePer(REPEAT_LOG_SEC)
        self.started_lines = PerSecond(event_lines_per_sec)  #: see EVENT_LINES_PER_SEC
        self.finished_lines = PerSecond(event_lines_per_sec)
        self.lags_ms: deque[int] = deque(maxlen=10_000)  # recent dispatch lags, for status
        #: a tick due before this node started was late because no node ran: its lateness is
        #: downtime, not dispatch lag (ticks claimed ahead by an incarnation that crashed)
        self.counted_from_ms = clock.now_ms()
        self._wake = asyncio.Event()
        self._stopping = False
        self._accepting = True
        self._passing = asyncio.Lock()  #: held by a dispatch pass
        self.last_loop_ms = clock.now_ms()
        #: told about queue-target executions that became dispatchable here (claimed, triggered,
        #: retried, replayed), to wake remote workers' long polls; set by the node
        self.on_queued: Callable[[Sequence[Execution]], None] | None = None

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
            tier, tenant = self.meta[ex.execution_id] = self._kind(int(ex.priority), ex.tenant)
            if ex.available_at > now and self.delayed.add(ex.execution_id, ex.available_at):
                continue
            self._push(ex.execution_id, tier, tenant)
        if remote and self.on_queued is not None:
            self.on_queued(remote)
        self._wake.set()

    def _kind(self, tier: int, tenant: str) -> tuple[int, str]:
        """The one ``(tier, tenant)`` tuple for both, with the tenant's one string (not a copy
        per store row). Forgotten wholesale past a bound: only the sharing is lost."""
        key = (tier, tenant)
        kind = self._kinds.get(key)
        if kind is None:
            if len(self._kinds) >= MAX_KINDS:
                self._kinds.clear()
            kind = self._kinds[key] = (tier, sys.intern(tenant))
        return kind

    def _retry_at(self, execution_id: str, tier: int, tenant: str, at: int) -> None:
        tier, tenant = self.meta[execution_id] = self._kind(tier, tenant)
        if not self.delayed.add(execution_id, at):
            self._push(execution_id, tier, tenant)
        self._wake.set()

    def _push(self, execution_id: str, tier: int, tenant: str) -> None:
        """Into the fair queue; a high one at default unless its tenant holds the grant (every way in)."""
        if tier == Priority.HIGH and not self.tenant_may_high(tenant):
            tier = Priority.DEFAULT
        self.queue.push(tier, tenant, execution_id)

    def retier(self, tenant: str) -> None:
        """The tenant's grant of the high tier changed: its queued executions move to the tier
        it may use now, at once (a revocation stops a flood already queued, too)."""
        for execution_id in self.queue.take_tenant(tenant):
            self._push(execution_id, self.meta[execution_id][0], tenant)
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    async def start_due_before(self, until_ms: int) -> None:
        """Shutting down: make dispatch passes until every execution waiting here for a time up
        to ``until_ms`` (the ticks claimed ahead) came due and was offered to the workers. Left
        PENDING, they would run late after a restart, beside the downtime's catch-up run."""
        while self._accepting and not self._stopping:
            nxt = self.delayed.next_expiry()
            if nxt is None or nxt > until_ms:
                break
            await asyncio.sleep(max(0.005, (nxt - self.clock.now_ms()) / 1000))
            try:
                await self._dispatch_pass()
            except Exception as exc:  # the store is down: the rest stays PENDING for the restart
                self.health.failed(exc)
                return

    async def stop_accepting(self) -> None:
        """Shutting down: grant nothing more (queued executions stay PENDING in the store).
        Returns once a pass under way has sent its grants: a worker told ``bye`` first would
        leave its runs, RUNNING in the store, to be run again or to their leases' expiry."""
        self._accepting = False
        self._wake.set()
        async with self._passing:
            pass

    async def refill(self) -> int:
        """Load dispatchable executions from the store that are not queued here yet."""
        now = self.clock.now_ms()
        added = 0
        after: tuple[int, str] | None = None
        while True:
            page = await self._ready_page(now, after)
            in_flight = self.pool.in_flight() if self.pool is not None else ()
            fresh = [ex for ex in page if ex.queue is None and ex.execution_id not in self.meta and ex.execution_id not in in_flight]
            self.add(fresh)
            added += len(fresh)
            if len(page) < REFILL_PAGE:
                return added
            after = (page[-1].available_at, page[-1].execution_id)

    async def _ready_page(self, now: int, after: tuple[int, str] | None) -> list[Execution]:
        return await self.reader.run(lambda s: s.ready_executions(now, REFILL_PAGE, after))

    # ---- the dispatch loop
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
        for due), each entry keeping its instant. After a step forward the leases that ran out
        in the jump are not reaped for ``DEAF_REAP_PAUSE_SEC``, so live executions renew
        theirs by the new clock first."""
        step = self._steps.observe(now, self.clock.monotonic())
        if step < 0:
            entries = self.delayed.entries()
            self.delayed = InstantGroups(now, tick_ms=5, wheel_size=256)
            for execution_id, at in entries:
                if not self.delayed.add(execution_id, at):
                    self._push(execution_id, *self.meta[execution_id])
        elif step > 0:
            self.reap_cutoff.deaf(now - step, self.clock.monotonic())
        return step

    async def _dispatch_turn(self) -> None:
        await self._dispatch_pass()
        nxt = self.delayed.next_expiry()
        timeout = None if nxt is None else max(0.0, (nxt - self.clock.now_ms()) / 1000)
        if timeout is None or timeout > 0:
            await wait_event(self._wake, timeout)
        self._wake.clear()

    async def _dispatch_pass(self) -> None:
        """Queue what came due, start what the workers can take: one pass at a time (it reads
        the free slots before its grants are sent), and a stop waits for the one under way."""
        async with self._passing:
            now = self.clock.now_ms()
            self.check_clock(now)
            self.last_loop_ms = now
            self._queue_due(now)
            if self._accepting:
                await self._dispatch(now)

    def _queue_due(self, now: int) -> None:
        for execution_id in self.delayed.advance(now):
            self._push(execution_id, *self.meta[execution_id])

    async def _dispatch(self, now: int) -> None:
        assert self.pool is not None
        while self._accepting:
            # what came due while the last batch started joins the queue before the next pop:
            # a neighbour's tick takes its turn in the next batch, not after a backlog that one
            # pass may take hundreds of milliseconds to drain (docs/benchmarks.md)
            self._queue_due(self.clock.now_ms())
            free = self.pool.free_slots()
            if free <= 0 or not len(self.queue):
                return
            batch: list[str] = []
            self._reserve_now = self.neighbour_reserve()
            while len(batch) < min(free, 1000):
                # keep a share of slots for latency-sensitive work: lower tiers may only take
                # slots beyond the reserve
                self._free_left = free - len(batch)
                may_take_low = self._free_left > self.reserved_high_slots
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
                grants, refused = await self._start_isolated(starts, start_at)
            except Exception:
                self._requeue([xid for _, xid in assignment])  # still PENDING in the store
                raise
            if refused:
                assignment = [(wid, xid) for wid, xid in assignment if xid not in refused]
                self._retry_refused(refused, start_at)
            worker_of = {xid: wid for wid, xid in assignment}
            quiet = self.started_lines.over(len(grants), self.clock.monotonic())
            out = started_batch(grants, worker_of, start_at, self.counted_from_ms, self.lags_ms, self.tenant_http_allow)
            self.events.emit_many("execution.started", out.records, level="debug" if quiet else None)
            if quiet and grants:
                self.events.emit("executions.started", count=len(grants), workers=len(out.by_worker),
                                 lagMsMin=out.lag_min, lagMsMax=out.lag_max)  # fmt: skip
            if self._start_failures:  # a start that failed before went through this time
                for g in grants:
                    self._start_failures.pop(g.execution_id, None)
            granted = {g.execution_id for g in grants}
            self.release(xid for _, xid in assignment if xid not in granted)
            for xid, _ in ((x, w) for w, x in assignment):
                self.meta.pop(xid, None)  # started, or no longer dispatchable: either way done here
            for worker_id, worker_grants in out.by_worker.items():
                self.pool.send_grants(worker_id, worker_grants)
            if len(grants) < len(assignment):  # cancelled, paused, superseded or started elsewhere meanwhile
                self.events.emit("dispatch.dropped", count=len(assignment) - len(grants))

    async def _start_isolated(self, starts: list[StartRequest], at: int) -> tuple[list[Grant], dict[str, Exception]]:
        """Start ``starts`` in one transaction. The batch holds many tenants' executions, so a
        failing start is isolated (``bisect_failures``): only an execution whose own start
        fails is left out, returned with its error, and every other one starts."""
        async def attempt(batch: list[StartRequest]) -> tuple[list[Grant], dict[str, Exception]]:
            return await self.writer.run(lambda s: s.start_executions(batch, at)), {}

        return await bisect_failures(starts, attempt, lambda a, b: (a[0] + b[0], {**a[1], **b[1]}),
                                     lambda start, exc: ([], {start.execution_id: exc}))

    def _retry_refused(self, refused: dict[str, Exception], now_ms: int) -> None:
        """Executions whose start failed alone stay PENDING in the store: try each again after
        a backoff that doubles per failure (up to ``START_RETRY_MAX_MS``), logged at most once
        per interval per execution, so one bad row neither stops the others nor floods the log."""
        self.release(refused)
        for xid, exc in refused.items():
            fails = self._start_failures.get(xid, 0) + 1
            self._start_failures[xid] = fails
            delay = min(START_RETRY_MAX_MS, START_RETRY_MS * 2 ** (fails - 1))
            tier, tenant = self.meta[xid]
            if self._start_failed_log.allow(xid, self.clock.monotonic()):
                self.events.emit("dispatch.start_failed", executionId=xid, tenant=tenant, error=repr(exc)[:500],
                                 failures=fails, retryInMs=delay, suppressed=self._start_failed_log.suppressed)  # fmt: skip
            self._retry_at(xid, tier, tenant, now_ms + delay)
        while len(self._start_failures) > MAX_REMEMBERED_FAILURES:
            del self._start_failures[next(iter(self._start_failures))]

    def _requeue(self, execution_ids: list[str]) -> None:
        self.release(execution_ids)
        for xid in execution_ids:
            self._push(xid, *self.meta[xid])

    # ---- per-tenant running counts and quotas
    def _may_take(self, tenant: str) -> bool:
        limit = self.tenant_max_running(tenant)
        running = self.running_by_tenant[tenant]
        if limit is None or running < limit:
            if not may_take_slot(running, self._free_left, self._reserve_now):
                return False  # one of the last slots, kept for a neighbour running nothing here
            if tenant in self.quota_waiting:
                self.quota_waiting.discard(tenant)
                self.events.emit("tenant.quota_resumed", tenant=tenant, running=running, maxRunning=limit)
            return True
        if tenant not in self.quota_waiting:  # once per episode, not once per pop
            self.quota_waiting.add(tenant)
            self.events.emit("tenant.quota_wait", tenant=tenant, running=running, maxRunning=limit,
                             queued=self.queue.depth_by_tenant().get(tenant, 0))
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

