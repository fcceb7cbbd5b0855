"""Prometheus metrics for one node (``GET /metrics``), with a registry of its own (no global
registry: two nodes in one process, or a test, never share counters).

Two sources:

* **Events.** ``NodeMetrics`` subscribes to the node's EventLog, so every counter and
  histogram moves exactly when the event that operators grep for is logged.
  Labels are bounded sets (outcome, reason, via, tier, status, event name): never a job,
  execution or worker id.
* **State at scrape time.** A collector reads queue depths, running executions, worker slots
  and owned buckets straight from the node's memory (cheap). Store-wide counts (jobs by
  status, DLQ size, next run) come from a cache that ``refresh()`` renews at most every
  ``store_ttl_sec``: a scrape never costs more than a few COUNT queries every few seconds.

Every metric name is listed in ``METRIC_NAMES`` and used by docs/operations.md's alert rules.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from cronwheel.core import skips
from cronwheel.core.instants import format_instant
from cronwheel.core.lagstats import LagHistory
from cronwheel.core.model import ExecStatus
from cronwheel.core.stats import StatsSource
from cronwheel.core.words import counted
from cronwheel.obs.histograms import observe_many
from cronwheel.obs.scrape import StateCollector

if TYPE_CHECKING:
    from cronwheel.obs.events import EventLog

CONTENT_TYPE = CONTENT_TYPE_LATEST

#: dispatch lag is milliseconds when healthy, minutes when the fleet is saturated
LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
#: jobs run from a fraction of a second to hours
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)
SKIP_REASONS = tuple(kind.value for kind in skips.SkipKind)
FENCED_VIA = ("heartbeat", "completion", "effect")
#: at most this many executions are timed at once (a bound, not an expected load)
MAX_TIMED = 100_000

METRIC_NAMES = (
    "cronwheel_dispatch_lag_seconds",
    "cronwheel_execution_duration_seconds",
    "cronwheel_executions_started_total",
    "cronwheel_executions_finished_total",
    "cronwheel_executions_running",
    "cronwheel_queue_depth",
    "cronwheel_delayed_executions",
    "cronwheel_dlq_size",
    "cronwheel_dead_lettered_total",
    "cronwheel_lease_expirations_total",
    "cronwheel_fenced_rejections_total",
    "cronwheel_retries_total",
    "cronwheel_skipped_ticks_total",
    "cronwheel_jobs",
    "cronwheel_workers",
    "cronwheel_worker_slots",
    "cronwheel_worker_slots_free",
    "cronwheel_workers_lost_total",
    "cronwheel_buckets_owned",
    "cronwheel_wheel_jobs",
    "cronwheel_next_run_timestamp_seconds",
    "cronwheel_scheduler_last_turn_age_seconds",
    "cronwheel_healthy",
    "cronwheel_events_total",
    "cronwheel_store_stats_age_seconds",
    "cronwheel_build_info",
    "cronwheel_http_connections",
    "cronwheel_http_connections_limited_total",
    "cronwheel_http_header_timeouts_total",
    "cronwheel_http_forwarded_invalid_total",
    "cronwheel_store_disk_free_bytes",
    "cronwheel_store_wal_bytes",
    "cronwheel_store_reads_waiting",
    "cronwheel_notifications_delivered_total",
    "cronwheel_notifications",
    "cronwheel_overdue_jobs",
    "cronwheel_windows_missed_total",
)
NOTIFY_OUTCOMES = ("sent", "retried", "dead")
#: how an attempt ends (core.records.Outcome): the label values of executions finished
FINISHED_OUTCOMES = ("succeeded", "failed", "timed_out", "lost", "interrupted")
NOTIFY_VIAS = ("webhook", "email", "command")

def skip_reason(text: str | None) -> str:
    """A SKIPPED execution's reason (as the event carries it) as a bounded label: its
    ``core.skips`` kind."""
    return skips.kind_of(text).value


def skipped_ticks(text: str | None) -> int:
    """How many ticks one SKIPPED record stands for (a misfire record may cover several)."""
    return skips.ticks_of(text)


@dataclass
class StoreStats:
    """Store-wide numbers, read at most every ``store_ttl_sec``."""

    jobs: dict[str, int] = field(default_factory=dict)  #: by JobStatus value
    dead: int = 0
    next_run_at_ms: int | None = None
    notifications: dict[str, int] = field(default_factory=dict)  #: by status, and ``overdueJobs``
    read_at: float = 0.0  #: time.monotonic() of the read; 0 = never


class NodeMetrics:
    def __init__(self, source: StatsSource, events: EventLog, *, store_ttl_sec: float = 5.0) -> None:
        self.source = source
        self.registry = CollectorRegistry(auto_describe=True)
        self.store_ttl_sec = store_ttl_sec
        self.stats = StoreStats()
        self._refreshing: asyncio.Lock | None = None
        self._retry_at = 0.0  #: after a failed read, not before this
        self.dropped_events = 0  #: events whose fields could not be counted (a bug, never fatal)
        #: the API's connection budgets (``tcp``, ``local``: core.connections.Budget, and
        #: ``header_timeouts``), set by the daemon; None in tests without a server
        self.http_guard: Any = None
        self._started: OrderedDict[str, tuple[int, float]] = OrderedDict()  #: id -> (epoch, t0)
        #: scheduled first attempts' dispatch lag per minute over the last hour (the dashboard's chart)
        self.lag_history = LagHistory(minutes=60)
        r = self.registry
        self.lag = Histogram(
            "cronwheel_dispatch_lag_seconds",
            "Start of a scheduled execution's first attempt minus its tick (startedAt - scheduledAt);"
            " catch-up runs, manual triggers, DLQ replays and retries are not counted.",
            buckets=LAG_BUCKETS, registry=r,
        )

        self.duration = Histogram(
            "cronwheel_execution_duration_seconds",
            "Wall time of one attempt, from its grant to its result, as the daemon saw it.",
            ["outcome"], buckets=DURATION_BUCKETS, registry=r,
        )
        self.started = Counter("cronwheel_executions_started", "Attempts handed to a worker (first runs and retries).", registry=r)
        self.finished = Counter(
            "cronwheel_executions_finished",
            "Attempts that ended, by outcome (succeeded, failed, timed_out, lost, interrupted; reaped leases count as lost).",
            ["outcome"], registry=r,
        )
        self.dead_lettered = Counter("cronwheel_dead_lettered", "Executions moved to the dead-letter queue.", registry=r)
        self.lease_expirations = Counter("cronwheel_lease_expirations", "Running executions whose lease expired and were reaped.", registry=r)
        self.fenced = Counter(
            "cronwheel_fenced_rejections",
            "Calls refused because their leaseEpoch was stale (409), by the call that carried it.",
            ["via"], registry=r,
        )
        self.retries = Counter("cronwheel_retries", "Failed attempts scheduled to run again (RETRY_WAIT).", registry=r)
        self.skipped = Counter("cronwheel_skipped_ticks", f"Ticks recorded SKIPPED instead of run, by reason ({', '.join(SKIP_REASONS)}).",
                               ["reason"], registry=r)  # fmt: skip
        self.workers_lost = Counter("cronwheel_workers_lost", "Worker processes lost with executions in flight.", registry=r)
        self.notified = Counter(
            "cronwheel_notifications_delivered",
            "Notification delivery attempts, by outcome (sent; retried: failed, tried again later; dead: "
            "failed for the last time, in the notifications' dead-letter queue) and channel.",
            ["outcome", "via"], registry=r,
        )
        self.windows_missed = Counter(
            "cronwheel_windows_missed", "Dead-man's windows that passed without a success (`missed` fired).", registry=r
        )
        # every known label value at 0 from the start: an alert's increase() misses a series' first value
        for outcome in NOTIFY_OUTCOMES:
            for via in NOTIFY_VIAS:
                self.notified.labels(outcome, via)
        for via in FENCED_VIA:
            self.fenced.labels(via)
        for reason in SKIP_REASONS:
            self.skipped.labels(reason)
        # labelled children looked up once: .labels() takes a lock and builds a key per call,
        # and these are counted twice per execution
        self._finished_by = {o: self.finished.labels(o) for o in FINISHED_OUTCOMES}
        self._duration_by = {o: self.duration.labels(o) for o in self._finished_by}
        r.register(StateCollector(self))
        self._unsubscribe = events.subscribe_many(self._on_events)
        self.events = events

    def close(self) -> None:
        self._unsubscribe()

    # ---- events
    def _on_events(self, records: list[dict[str, Any]]) -> None:
        """A batch of records of one event (``EventLog.emit_many``) is counted at once where
        that is the same as one by one; anything else one by one."""
        name = records[0]["event"] if records else None
        if len(records) > 1 and name == "execution.started":
            try:
                self._started_many(records)
            except Exception:
                self.dropped_events += len(records)
            return
        if len(records) > 1 and name == "execution.succeeded":
            try:
                self._finished_many(records)
            except Exception:
                self.dropped_events += len(records)
            return
        for record in records:
            self._on_event(record)

    def _on_event(self, record: dict[str, Any]) -> None:
        # called inside EventLog.emit, i.e. inside the dispatcher and the scheduler: counting
        # must never be able to break what it counts
        try:
            name = record["event"]
            handler = _HANDLERS.get(name)
            if handler is not None:
                handler(self, record)
            elif name in ("effect.fenced", "effect.wrong_worker"):
                self.fenced.labels("effect").inc()
        except Exception:
            self.dropped_events += 1

    def _started_event(self, rec: dict[str, Any]) -> None:
        self._started_many([rec])

    def _started_many(self, records: list[dict[str, Any]]) -> None:
        """Count ``records`` (starts), each histogram and counter updated once per batch (the
        same counts and buckets as one by one: see ``observe_many``), and time each attempt."""
        self.started.inc(len(records))
        lags: list[int] = []
        timers, now = self._started, time.monotonic()
        for rec in records:
            lag = rec.get("lagMs")
            # the SLO is scheduling lateness: retries (attempt > 1), catch-up runs, manual
            # triggers and DLQ replays start late on purpose or by design, and a tick due before
            # the node started was late because no node ran, so they are not counted
            if (rec.get("attempt") == 1 and rec.get("origin", "schedule") == "schedule" and isinstance(lag, int)
                    and not rec.get("dueBeforeStart")):
                lags.append(max(0, lag))
            xid = str(rec.get("executionId"))
            timers.pop(xid, None)
            timers[xid] = (int(rec.get("leaseEpoch") or 0), now)
        while len(timers) > MAX_TIMED:
            timers.popitem(last=False)
        if lags:
            observe_many(self.lag, [lag / 1000 for lag in lags])
            self.lag_history.record_many(lags, self.source.now_ms())

    def _finished_event(self, rec: dict[str, Any]) -> None:
        outcome = str(rec.get("outcome") or "failed")
        if outcome not in FINISHED_OUTCOMES:
            outcome = "failed"
        self._finished_by[outcome].inc()
        t0 = self._stop_timer(rec)
        if t0 is not None:
            self._duration_by[outcome].observe(time.monotonic() - t0)
        status = rec.get("status")
        if status == ExecStatus.RETRY_WAIT:
            self.retries.inc()
        elif status == ExecStatus.DEAD:
            self.dead_lettered.inc()

    def _finished_many(self, records: list[dict[str, Any]]) -> None:
        """``_finished_event`` for each of ``records`` (successes), each counter incremented
        once per batch."""
        by: dict[tuple[str, Any], int] = {}
        durations: dict[str, list[float]] = {}
        now = time.monotonic()
        for rec in records:
            outcome = str(rec.get("outcome") or "failed")
            if outcome not in self._finished_by:
                outcome = "failed"
            key = (outcome, rec.get("status"))
            by[key] = by.get(key, 0) + 1
            t0 = self._stop_timer(rec)
            if t0 is not None:
                durations.setdefault(outcome, []).append(now - t0)
        for outcome, seconds in durations.items():
            observe_many(self._duration_by[outcome], seconds)
        for (outcome, status), n in by.items():
            self._finished_by[outcome].inc(n)
            if status == ExecStatus.RETRY_WAIT:
                self.retries.inc(n)
            elif status == ExecStatus.DEAD:
                self.dead_lettered.inc(n)

    def _lease_expired(self, rec: dict[str, Any]) -> None:
        self.lease_expirations.inc()
        self._finished_by["lost"].inc()
        self._started.pop(str(rec.get("executionId")), None)
        status = rec.get("status")
        if status == ExecStatus.RETRY_WAIT:
            self.retries.inc()
        elif status == ExecStatus.DEAD:
            self.dead_lettered.inc()

    def _fenced_event(self, rec: dict[str, Any]) -> None:
        via = rec.get("via")
        self.fenced.labels(via if via in FENCED_VIA else "completion").inc()
        self._stop_timer(rec)

    def _stop_timer(self, rec: dict[str, Any]) -> float | None:
        """The start time of this attempt (same execution, same leaseEpoch), forgotten now."""
        xid = str(rec.get("executionId"))
        timer = self._started.get(xid)
        if timer is None or timer[0] != int(rec.get("leaseEpoch") or 0):
            return None  # a stale epoch (zombie) does not stop the current attempt's timer
        del self._started[xid]
        return timer[1]

    def _skipped_event(self, rec: dict[str, Any]) -> None:
        reason = rec.get("reason")
        self.skipped.labels(skip_reason(reason)).inc(skipped_ticks(reason))

    def _worker_lost(self, rec: dict[str, Any]) -> None:
        self.workers_lost.inc()

    def _notified(self, rec: dict[str, Any]) -> None:
        outcome = str(rec["event"]).rpartition(".")[2]
        via = rec.get("via")
        self.notified.labels(outcome, via if via in NOTIFY_VIAS else "webhook").inc()

    def _window_missed(self, rec: dict[str, Any]) -> None:
        self.windows_missed.inc()

    # ---- store-wide numbers (cached)
    async def refresh(self, max_age_sec: float | None = None) -> StoreStats:
        """Renew the store counts if they are older than ``max_age_sec`` (default the TTL).
        Concurrent callers share one read. A store error keeps the old numbers."""
        ttl = self.store_ttl_sec if max_age_sec is None else max_age_sec
        if self._refreshing is None:
            self._refreshing = asyncio.Lock()
        if not self._due(ttl):
            return self.stats
        async with self._refreshing:
            if not self._due(ttl):
                return self.stats
            try:
                counts = await self.source.store_counts()
                self.stats = StoreStats(jobs=dict(counts.jobs), dead=counts.dead, next_run_at_ms=counts.next_run_at_ms,
                                        notifications=dict(counts.notifications), read_at=time.monotonic())
            except Exception:  # the store is failing over: serve the last numbers a while longer
                self._retry_at = time.monotonic() + ttl / 2
        return self.stats

    def _due(self, ttl: float) -> bool:
        now = time.monotonic()
        return now - self.stats.read_at >= ttl and now >= self._retry_at

    async def render(self) -> bytes:
        """The Prometheus text exposition of this node."""
        await self.refresh()
        return generate_latest(self.registry)

    def running(self, limit: int = 100) -> tuple[int, list[dict[str, Any]]]:
        """The executions in this node's local workers, longest-running first (at most
        ``limit``), and how many there are. Remote workers' leases are counted by the store
        (``GET /v1/status``), not here. ``runningSec`` is None for an attempt whose start this
        object did not see (started before a restart of the metrics)."""
        now = time.monotonic()
        rows: list[dict[str, Any]] = []
        for xid, (worker, epoch) in self.source.snapshot().running.items():
            timer = self._started.get(xid)
            age = round(now - timer[1], 1) if timer is not None and timer[0] == epoch else None
            rows.append({"executionId": xid, "jobId": xid.rpartition(":")[0] or xid, "workerId": worker,
                         "leaseEpoch": epoch, "runningSec": age})
        rows.sort(key=lambda r: -1.0 if r["runningSec"] is None else r["runningSec"], reverse=True)
        return len(rows), rows[:limit]

    async def status_line(self) -> str:
        """One line for systemd's STATUS=: jobs, next run, lag, running."""
        stats = await self.refresh()
        snap = self.source.snapshot()
        running = len(snap.running)
        queued = sum(snap.queue_depth_by_tier)
        p99 = snap.lag_p99_ms
        nxt = format_instant(stats.next_run_at_ms) or "none"
        return (
            f"{counted(stats.jobs.get('ACTIVE', 0), 'active job')}, next run {nxt}, "
            f"dispatch lag p99 {'-' if p99 is None else f'{p99} ms'}, {running} running, {queued} queued"
            + (f", {stats.dead} dead-lettered" if stats.dead else "")
        )


_HANDLERS = {
    "execution.started": NodeMetrics._started_event,
    "execution.succeeded": NodeMetrics._finished_event,
    "execution.retry_scheduled": NodeMetrics._finished_event,
    "execution.dead_lettered": NodeMetrics._finished_event,
    "execution.finished": NodeMetrics._finished_event,
    "execution.skipped": NodeMetrics._skipped_event,
    "lease.expired": NodeMetrics._lease_expired,
    "lease.fenced": NodeMetrics._fenced_event,
    "worker.lost": NodeMetrics._worker_lost,
    "notification.sent": NodeMetrics._notified,
    "notification.retried": NodeMetrics._notified,
    "notification.dead": NodeMetrics._notified,
    "window.missed": NodeMetrics._window_missed,
}
