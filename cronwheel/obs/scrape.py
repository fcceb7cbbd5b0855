"""The gauges of ``GET /metrics`` that are read at scrape time: the node's snapshot (memory
only: queue depths, running executions, worker slots, owned buckets), the store counts that
``NodeMetrics.refresh`` caches, the API's connection budgets and the event counts."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cronwheel import __version__
from cronwheel.core.model import JobStatus, Priority
from cronwheel.core.stats import NodeSnapshot

if TYPE_CHECKING:
    from cronwheel.obs.metrics import NodeMetrics


class StateCollector(Collector):
    """Gauges read from the node at scrape time (memory only, plus the cached store stats)."""

    def __init__(self, metrics: NodeMetrics) -> None:
        self.m = metrics

    def describe(self) -> Iterable[Metric]:
        return []  # collected dynamically; no names to reserve

    def _http(self) -> Iterable[Metric]:
        guard = self.m.http_guard
        if guard is None:
            return
        conns = GaugeMetricFamily("cronwheel_http_connections", "Open API connections, by listener.", labels=["listener"])
        limited = CounterMetricFamily(
            "cronwheel_http_connections_limited", "API connections closed because a budget was spent, by listener and reason (per_caller: a tenant's, answered 429).",
            labels=["listener", "reason"],
        )
        for listener, budget in (("tcp", guard.tcp), ("unix", guard.local)):
            conns.add_metric([listener], budget.open)
            for reason in ("total", "per_client", "per_caller"):
                limited.add_metric([listener, reason], budget.refused[reason])
        yield conns
        yield limited
        timeouts = CounterMetricFamily("cronwheel_http_header_timeouts", "Connections closed for not sending their request headers in time (or to make room for their address's next one).")
        timeouts.add_metric([], guard.header_timeouts)
        yield timeouts
        invalid = CounterMetricFamily("cronwheel_http_forwarded_invalid", "Requests from a trusted proxy whose X-Forwarded-For / Forwarded could not be used (counted as the proxy's own).")
        invalid.add_metric([], guard.forwarded_invalid)
        yield invalid

    def collect(self) -> Iterable[Metric]:
        snap: NodeSnapshot = self.m.source.snapshot()
        stats = self.m.stats
        now_mono = time.monotonic()

        def gauge(name: str, doc: str, value: float, labels: list[str] | None = None) -> GaugeMetricFamily:
            g = GaugeMetricFamily(name, doc, labels=labels)
            if labels is None:
                g.add_metric([], value)
            return g

        yield gauge("cronwheel_executions_running", "Executions running on this node's workers.", len(snap.running))
        depth = GaugeMetricFamily("cronwheel_queue_depth", "Executions waiting in this node's ready queue, by priority tier.", labels=["tier"])
        for i, d in enumerate(snap.queue_depth_by_tier):
            depth.add_metric([Priority(i).label], d)
        yield depth
        yield gauge("cronwheel_delayed_executions", "Executions waiting for their backoff or jitter before they queue.", snap.delayed)
        yield gauge("cronwheel_workers", "Live local worker processes.", snap.workers)
        yield gauge("cronwheel_worker_slots", "Configured execution slots (workers x slots).", snap.slots_total)
        yield gauge("cronwheel_worker_slots_free", "Free slots on ready workers.", snap.slots_free)
        yield gauge("cronwheel_buckets_owned", "Time buckets this node schedules.", snap.buckets_owned)
        yield gauge("cronwheel_wheel_jobs", "Jobs due within the horizon (counted at each horizon load, kept up in between).", snap.wheel_jobs)
        age = max(0.0, (snap.now_ms - snap.last_loop_ms) / 1000)
        yield gauge("cronwheel_scheduler_last_turn_age_seconds", "Seconds since the scheduler loop last turned.", age)
        yield gauge("cronwheel_store_reads_waiting", "Store reads (the API's and the scheduler's) waiting for their turn at the reader thread.",
                    snap.reads_waiting)
        yield gauge("cronwheel_healthy", "1 while the scheduler loop turns (what the systemd watchdog checks).", 1 if snap.healthy else 0)

        if stats.read_at:
            jobs = GaugeMetricFamily("cronwheel_jobs", "Jobs in the store, by status (cached for a few seconds).", labels=["status"])
            for st in JobStatus:
                jobs.add_metric([st.value.lower()], stats.jobs.get(st.value, 0))
            yield jobs
            yield gauge("cronwheel_dlq_size", "Executions in the dead-letter queue (cached for a few seconds).", stats.dead)
            notes = GaugeMetricFamily("cronwheel_notifications", "Notifications in the store, by status (DEAD: their "
                                      "dead-letter queue; HELD: held back by a rate limit; cached).", labels=["status"])  # fmt: skip
            for status in ("PENDING", "RUNNING", "SENT", "DEAD", "HELD"):
                notes.add_metric([status.lower()], stats.notifications.get(status, 0))
            yield notes
            yield gauge("cronwheel_overdue_jobs", "Jobs whose dead-man's window passed without a success (cached).",
                        stats.notifications.get("overdueJobs", 0))  # fmt: skip
            if stats.next_run_at_ms is not None:
                yield gauge("cronwheel_next_run_timestamp_seconds", "When the next due job of the owned buckets runs.", stats.next_run_at_ms / 1000)
            yield gauge("cronwheel_store_stats_age_seconds", "Age of the cached store counts (grows while the store cannot be read).", now_mono - stats.read_at)

        yield from self._http()
        if snap.disk_free_bytes is not None:
            yield gauge("cronwheel_store_disk_free_bytes", "Free space of the data directory's file system (as of the last disk check).", snap.disk_free_bytes)
        if snap.wal_bytes is not None:
            yield gauge("cronwheel_store_wal_bytes", "Size of the SQLite write-ahead log (as of the last disk check).", snap.wal_bytes)

        events = CounterMetricFamily("cronwheel_events", "Events logged by this node, by event name.", labels=["event"])
        for name, count in sorted(self.m.events.counts.items()):
            events.add_metric([name], count)
        yield events
        info = GaugeMetricFamily("cronwheel_build_info", "The running version (always 1).", labels=["version", "node"])
        info.add_metric([__version__, snap.node_id], 1)
        yield info
