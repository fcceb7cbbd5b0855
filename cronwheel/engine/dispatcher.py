"""The dispatcher: the ready queue and its dispatch loop (engine/dispatchloop.py), and the
way back from the workers.

* Results, heartbeats and lost workers come back from the pool (``PoolHandler``); results
  are group-committed (fenced by lease_epoch in the store); a failed attempt comes back as
  RETRY_WAIT and waits for its backoff in the delay wheel.
* A local worker's result that the store cannot take (a restart, a failover) is deferred and
  tried again until it can: the job already ran.
* The reaper turns expired leases into retries (or dead letters) and aborts any zombie still
  holding one.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence

from cronwheel.core.clock import Clock
from cronwheel.core.instants import format_instant
from cronwheel.core.model import ExecStatus
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    HeartbeatResult,
    LeaseVerdict,
    Outcome,
)
from cronwheel.core.redirects import granted_allow
from cronwheel.core.tenants import HostAllow
from cronwheel.engine.dispatchloop import DEAF_REAP_PAUSE_SEC, DispatchLoop
from cronwheel.engine.outage import LoopHealth
from cronwheel.engine.runner import GroupCommitter, StoreRunner
from cronwheel.obs.events import REPEAT_LOG_SEC, EventLog
from cronwheel.store.base import Store, StoreUnavailable
from cronwheel.worker.pool import WorkerPool

#: the event that logs a recorded outcome, by the execution's status after it
OUTCOME_EVENTS: dict[ExecStatus | None, str] = {
    ExecStatus.SUCCEEDED: "execution.succeeded",
    ExecStatus.RETRY_WAIT: "execution.retry_scheduled",
    ExecStatus.DEAD: "execution.dead_lettered",
}

#: a reaper that wakes this much later than it asked to (s) did not run meanwhile, nor did the
#: rest of the node (SIGSTOP, swapping, a paused VM, a starved machine): it heard no heartbeats
STALL_SEC = 3.0


class Dispatcher(DispatchLoop):
    def __init__(
        self,
        clock: Clock,
        writer: StoreRunner,
        reader: StoreRunner,
        events: EventLog,
        *,
        reserved_high_slots: int = 0,
        reaper_interval_ms: int = 1_000,
        rng: random.Random | None = None,
        tenant_weight: Callable[[str], float] | None = None,
        tenant_max_running: Callable[[str], int | None] | None = None,
        tenant_http_allow: Callable[[str], HostAllow] | None = None,
        completion_retry_ms: tuple[int, int] = (200, 5_000),
        completer: StoreRunner | None = None,
    ) -> None:
        super().__init__(
            clock, writer, reader, events, reserved_high_slots=reserved_high_slots,
            tenant_weight=tenant_weight, tenant_max_running=tenant_max_running,
        )
        if tenant_http_allow is not None:  # as a grant carries it
            self.tenant_http_allow = lambda tenant: granted_allow(tenant_http_allow(tenant))
        self.reaper_interval_ms = reaper_interval_ms
        #: a local worker's result that the store could not take (a restart, a failover) is
        #: kept and tried again, first and longest delay: the job already ran, and dropping
        #: the result would run it again once its lease expired
        self.completion_retry_ms = completion_retry_ms
        self._deferred: set[asyncio.Task[None]] = set()
        self.reaper_health = LoopHealth(events, clock, "reaper")
        #: the local workers' beats, every quarter lease: an outage is one event, not a line a beat
        self.heartbeat_health = LoopHealth(events, clock, "heartbeat")
        self.rng = rng or random.Random()
        # results commit on their own connection where the store allows two writers at once
        # (PostgreSQL): a start batch and a result batch then wait for their commits together
        self._completions: GroupCommitter[Completion, CompletionResult] = GroupCommitter(
            completer or writer, self._apply_completions, max_batch=2000, on_isolated=self._completion_failed,
        )
        #: told that outcomes were recorded (their notifications are queued in the store)
        self.on_outcomes: Callable[[], None] | None = None
        #: a refused heartbeat or result is a warning once a minute per execution: a remote
        #: worker repeating a stale call in a loop wrote a warning a call
        self._fenced_log = OncePer(REPEAT_LOG_SEC)

    # ---- loops
    def start(self, pool: WorkerPool) -> list[asyncio.Task[None]]:
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

    # ---- the reaper
    async def _reaper_loop(self) -> None:
        interval = self.reaper_interval_ms / 1000
        while not self._stopping:
            asleep_at, due_at = self.clock.monotonic(), self.clock.now_ms() + self.reaper_interval_ms
            await asyncio.sleep(interval)
            late = self.clock.monotonic() - asleep_at - interval
            if late > STALL_SEC:  # the node did not run: it heard no heartbeats either
                self.reap_cutoff.deaf(due_at, self.clock.monotonic())
                self.events.emit("node.stalled", stalledMs=round(late * 1000), reapPausedSec=DEAF_REAP_PAUSE_SEC)
            now = self.clock.now_ms()
            try:
                results = await self._expire_leases(now, self.reap_cutoff.cutoff(now, self.clock.monotonic()))
            except Exception as exc:  # store hiccup: try again next round
                self.reaper_health.failed(exc)
                # every node's renewals failed too (the store is shared): spare their leases
                self.reap_cutoff.deaf(now, self.clock.monotonic())
                continue
            self.reaper_health.ok()
            self.release(res.execution_id for res in results)
            for res in results:
                self.events.emit("lease.expired", executionId=res.execution_id, status=res.status)
                if self.pool is not None:
                    self.pool.abort(res.execution_id, "lease_lost")  # a zombie may still hold it
            await self._after_completions(results)


    async def _expire_leases(self, now: int, ran_out_before: int) -> list[CompletionResult]:
        return await self.writer.run(lambda s: s.expire_leases(now, 1000, ran_out_before))

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
        results: Sequence[HeartbeatResult | None]
        try:
            try:
                results = await self.writer.run(lambda s: s.heartbeat_many(triples, now))
            except StoreUnavailable:
                raise
            except Exception:
                # one worker's beats cover several tenants' executions: a failing one must not
                # cost the others their leases, so each is renewed on its own
                results = [await self._heartbeat_alone(t, now) for t in triples]
        except StoreUnavailable as exc:
            # not renewed: the worker beats again a quarter lease later; the leases that run
            # out meanwhile are spared for a while once the store is back, then the reaper's
            self.heartbeat_health.failed(exc)
            self.reap_cutoff.deaf(now, self.clock.monotonic())
            return []
        self.heartbeat_health.ok()
        lost: list[tuple[str, str]] = []
        for (xid, epoch), res in zip(beats, results, strict=True):
            if res is None:
                continue  # its renewal failed alone (logged); the lease runs on until it expires
            if res.verdict is not LeaseVerdict.OK:
                lost.append((xid, res.verdict.value))
                self.release((xid,))  # the pool forgets it: that worker no longer runs it
                self.fenced(xid, epoch, worker_id, "heartbeat", res.verdict.value)
        return lost

    def fenced(self, execution_id: str, epoch: int, worker_id: str | None, via: str, reason: str) -> None:
        """One ``lease.fenced``: a warning once a minute per execution, at debug level in
        between; every one is counted (the fenced rejections metric). Local workers' refusals
        and remote workers' (``ExecutionsMixin.heartbeat``) alike."""
        self.events.emit_now_and_then(self._fenced_log, execution_id, self.clock.monotonic(), "lease.fenced",
                                      executionId=execution_id, leaseEpoch=epoch, worker=worker_id, via=via,
                                      reason=reason)  # fmt: skip

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
        """Its runs are failed attempts (retried by their policy), unless the node is stopping:
        a run the stop cut short (its grace passed) runs again after the restart, and the stop
        does not count as one of its attempts."""
        self.events.emit("worker.lost", worker=worker_id, inFlight=len(execution_ids))
        if self._accepting:
            outcome, why = Outcome.LOST, f"worker {worker_id} lost"
        else:
            outcome, why = Outcome.INTERRUPTED, f"the daemon stopped, and worker {worker_id} with it"
        completions = [Completion(xid, worker_id, epoch, outcome, error=why) for xid, epoch in execution_ids]
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

    def _apply_completions(self, store: Store, completions: list[Completion]) -> list[CompletionResult]:
        rands = [self.rng.random() for _ in completions]
        return store.complete_executions(completions, self.clock.now_ms(), rands)

    async def finish(self, completions: Sequence[Completion]) -> list[CompletionResult]:
        """Apply completions (group-committed, fenced in the store), log each outcome, and put
        the ones that will be retried into the delay wheel. A completion whose write failed
        alone raises its error, after the others were applied."""
        results: list[CompletionResult] = []
        for outcome in await self._finish_each(completions):
            if isinstance(outcome, Exception):
                raise outcome
            results.append(outcome)
        return results

    async def _finish_each(self, completions: Sequence[Completion]) -> list[CompletionResult | Exception]:
        """``finish``, with the error of a completion that failed alone in its place (logged
        once as ``completion.error``; its execution stays RUNNING and its lease expires, so it
        is retried like any lost run). StoreUnavailable for all of them is raised."""
        outcomes = await self._completions.submit_many(list(completions), item_errors=True)
        pairs = [(c, r) for c, r in zip(completions, outcomes, strict=True) if not isinstance(r, Exception)]
        results = [r for _, r in pairs]
        self.release(c.execution_id for c, r in pairs if r.verdict is LeaseVerdict.OK)
        emit = self.events.emit
        succeeded = sum(1 for _, r in pairs if r.status is ExecStatus.SUCCEEDED and r.verdict is LeaseVerdict.OK)
        quiet = succeeded > 0 and self.finished_lines.over(succeeded, self.clock.monotonic())
        successes: list[dict[str, object]] = []  # one emit per batch: the common case of a herd
        for c, res in pairs:
            if res.verdict is not LeaseVerdict.OK:
                self.fenced(c.execution_id, c.lease_epoch, c.worker_id, "completion", res.verdict.value)
                continue
            fields = {"executionId": c.execution_id, "leaseEpoch": c.lease_epoch, "outcome": c.outcome.value,
                      "status": res.status}
            for key, value in (("exitCode", c.exit_code), ("error", c.error), ("availableAt", format_instant(res.available_at))):
                if value is not None:  # absent rather than null, as emit has it
                    fields[key] = value
            if res.status is ExecStatus.SUCCEEDED:
                successes.append(fields)
            else:  # never summed up: each failure, retry and dead letter keeps its line
                emit(OUTCOME_EVENTS.get(res.status, "execution.finished"), **fields)
        # above the rate (EVENT_LINES_PER_SEC) successes are logged at debug level, one line per batch at info
        self.events.emit_many("execution.succeeded", successes, level="debug" if quiet else None)
        if quiet:
            emit("executions.succeeded", count=succeeded)
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
        if self.on_outcomes is not None and any(r.notified for r in results):
            self.on_outcomes()
        self._add_triggered(results)
        need = [r for r in results if r.verdict is LeaseVerdict.OK and r.status is ExecStatus.RETRY_WAIT]
        if not need:
            return
        rows = await self.reader.run(lambda s: [s.get_execution(r.execution_id) for r in need])
        for ex in rows:
            if ex is not None and ex.execution_id in self.meta:
                continue  # already held here: the shared ready queue's refill took it in meanwhile
            if ex is not None and ex.status is ExecStatus.RETRY_WAIT and ex.queue is not None:
                self.add([ex])  # remote workers' business: only wakes their long polls
            elif ex is not None and ex.status is ExecStatus.RETRY_WAIT:
                self._retry_at(ex.execution_id, int(ex.priority), ex.tenant, ex.available_at)
