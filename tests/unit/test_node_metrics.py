"""NodeMetrics as an EventLog subscriber: which event moves which series (no daemon)."""

from __future__ import annotations

import io

from cronwheel.core.skips import SkipKind
from cronwheel.core.stats import NodeSnapshot, StoreCounts
from cronwheel.obs.events import EventLog
from cronwheel.obs.metrics import NodeMetrics


class FakeNode:
    """A StatsSource: what the scrape-time collector reads from a Node."""

    def __init__(self) -> None:
        self.running: dict[str, tuple[str, int]] = {}

    def now_ms(self) -> int:
        return 1_500

    def snapshot(self) -> NodeSnapshot:
        return NodeSnapshot(
            node_id="n1", now_ms=1_500, running=self.running, queue_depth_by_tier=(1, 2, 3), delayed=0,
            workers=0, slots_total=8, slots_free=0, buckets_owned=64, wheel_jobs=0, last_loop_ms=1_000,
            healthy=True, lag_p99_ms=None,
        )

    async def store_counts(self) -> StoreCounts:
        return StoreCounts()


def setup() -> tuple[EventLog, NodeMetrics]:
    log = EventLog("n1", stream=io.StringIO(), fmt="json")
    return log, NodeMetrics(FakeNode(), log)


def sample(m: NodeMetrics, name: str, **labels: str) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


def test_an_attempt_is_timed_from_grant_to_result_of_the_same_epoch() -> None:
    log, m = setup()
    log.emit("execution.started", executionId="j:1", leaseEpoch=1, attempt=1, lagMs=250)
    log.emit("execution.retry_scheduled", executionId="j:1", leaseEpoch=1, outcome="failed", status="RETRY_WAIT")
    log.emit("execution.started", executionId="j:1", leaseEpoch=2, attempt=2, lagMs=90_000)  # backoff: no lag sample
    log.emit("execution.succeeded", executionId="j:1", leaseEpoch=1, outcome="succeeded", status="SUCCEEDED")  # stale
    log.emit("lease.fenced", executionId="j:1", leaseEpoch=1, via="completion")  # a zombie: the timer stays
    log.emit("execution.dead_lettered", executionId="j:1", leaseEpoch=2, outcome="timed_out", status="DEAD")
    assert sample(m, "cronwheel_executions_started_total") == 2
    assert sample(m, "cronwheel_dispatch_lag_seconds_count") == 1
    assert sample(m, "cronwheel_dispatch_lag_seconds_sum") == 0.25
    assert sample(m, "cronwheel_dispatch_lag_seconds_bucket", le="0.25") == 1
    assert sample(m, "cronwheel_execution_duration_seconds_count", outcome="failed") == 1
    assert sample(m, "cronwheel_execution_duration_seconds_count", outcome="timed_out") == 1
    assert sample(m, "cronwheel_execution_duration_seconds_count", outcome="succeeded") == 0
    assert sample(m, "cronwheel_retries_total") == 1
    assert sample(m, "cronwheel_dead_lettered_total") == 1
    assert sample(m, "cronwheel_fenced_rejections_total", via="completion") == 1
    assert m._started == {}


def test_reaped_leases_skips_fencing_and_lost_workers() -> None:
    log, m = setup()
    log.emit("execution.started", executionId="j:2", leaseEpoch=1, attempt=1, lagMs=3)
    log.emit("lease.expired", executionId="j:2", status="RETRY_WAIT")
    log.emit("lease.expired", executionId="j:3", status="DEAD")
    log.emit("execution.skipped", jobId="j", executionId="j:4", reason="overlap: j:2 still running")
    log.emit("execution.skipped", jobId="j", executionId="j:5", reason="misfire: 12 ticks skipped from a to b")
    log.emit("lease.fenced", executionId="j:6", leaseEpoch=1, via="heartbeat", reason="lease_lost")
    log.emit("effect.fenced", executionId="j:6", leaseEpoch=1, key="k")
    log.emit("worker.lost", worker="w", inFlight=3)
    assert sample(m, "cronwheel_lease_expirations_total") == 2
    assert sample(m, "cronwheel_executions_finished_total", outcome="lost") == 2
    assert sample(m, "cronwheel_retries_total") == 1 and sample(m, "cronwheel_dead_lettered_total") == 1
    assert sample(m, "cronwheel_skipped_ticks_total", reason="overlap") == 1
    assert sample(m, "cronwheel_skipped_ticks_total", reason="misfire") == 12
    assert sample(m, "cronwheel_fenced_rejections_total", via="heartbeat") == 1
    assert sample(m, "cronwheel_fenced_rejections_total", via="effect") == 1
    assert sample(m, "cronwheel_workers_lost_total") == 1
    assert m._started == {}


def test_a_malformed_event_never_breaks_the_emitter() -> None:
    log, m = setup()
    log.emit("execution.started", executionId="j:1", leaseEpoch="not-a-number")
    log.emit("execution.succeeded", executionId="j:1", leaseEpoch=object())
    assert m.dropped_events == 1  # the second found no timer to stop: nothing to misread
    before = sample(m, "cronwheel_executions_started_total")
    m.close()
    log.emit("execution.started", executionId="j:9", leaseEpoch=1, attempt=1, lagMs=1)
    assert sample(m, "cronwheel_executions_started_total") == before  # unsubscribed


def test_registries_are_per_node() -> None:
    log_a, a = setup()
    _, b = setup()
    log_a.emit("execution.started", executionId="j:1", leaseEpoch=1, attempt=1, lagMs=1)
    assert sample(a, "cronwheel_executions_started_total") == 1
    assert sample(b, "cronwheel_executions_started_total") == 0


def test_scrape_time_gauges_read_the_node() -> None:
    _, m = setup()
    assert sample(m, "cronwheel_queue_depth", tier="high") == 1
    assert sample(m, "cronwheel_queue_depth", tier="batch") == 3
    assert sample(m, "cronwheel_worker_slots") == 8
    assert sample(m, "cronwheel_buckets_owned") == 64
    assert sample(m, "cronwheel_scheduler_last_turn_age_seconds") == 0.5
    assert sample(m, "cronwheel_healthy") == 1
    assert m.registry.get_sample_value("cronwheel_dlq_size") is None  # store counts: not read yet


def test_first_attempts_feed_the_per_minute_lag_history() -> None:
    log, m = setup()  # the fake node's clock says 1,500 ms: minute 0
    log.emit("execution.started", executionId="j:1", leaseEpoch=1, attempt=1, lagMs=40)
    log.emit("execution.started", executionId="j:2", leaseEpoch=1, attempt=1, lagMs=900)
    log.emit("execution.started", executionId="j:1", leaseEpoch=2, attempt=2, lagMs=90_000)  # a retry: not lag
    minutes = m.lag_history.snapshot(1_500)
    assert len(minutes) == 60 and minutes[-1].start_ms == 0
    assert (minutes[-1].count, minutes[-1].max) == (2, 900)
    assert sum(x.count for x in minutes) == 2


def test_running_lists_the_local_workers_executions_longest_first() -> None:
    log, m = setup()
    assert m.running() == (0, [])  # no pool yet (starting up)
    log.emit("execution.started", executionId="ja:100", leaseEpoch=1, attempt=1, lagMs=1)
    log.emit("execution.started", executionId="jb:200", leaseEpoch=3, attempt=3, lagMs=1)
    inflight = {"jb:200": ("w1", 3), "ja:100": ("w0", 1), "jc:300": ("w0", 1)}  # jc: started before us
    m.source.running = inflight  # type: ignore[attr-defined]
    m._started["ja:100"] = (1, m._started["ja:100"][1] - 10)  # ja has run 10 s longer
    total, rows = m.running(limit=2)
    assert total == 3 and [r["executionId"] for r in rows] == ["ja:100", "jb:200"]
    assert rows[0] == {"executionId": "ja:100", "jobId": "ja", "workerId": "w0", "leaseEpoch": 1, "runningSec": rows[0]["runningSec"]}
    assert rows[0]["runningSec"] >= 10 and rows[1]["runningSec"] is not None
    _, everything = m.running()
    assert everything[-1]["executionId"] == "jc:300" and everything[-1]["runningSec"] is None


def test_batches_of_events_count_exactly_as_one_by_one() -> None:
    """The dispatcher emits a herd's starts and successes a batch at a time (emit_many); every
    series ends where the same events one by one leave it."""
    started = [{"executionId": f"j:{i}", "leaseEpoch": 1, "attempt": 1 + i % 2, "lagMs": 100 * i, "origin": "schedule"}
               for i in range(6)]  # fmt: skip
    done = [{"executionId": f"j:{i}", "leaseEpoch": 1 if i != 4 else 9, "outcome": "succeeded", "status": "SUCCEEDED"}
            for i in range(6)]  # fmt: skip
    one, m1 = setup()
    for rec in started:
        one.emit("execution.started", **rec)
    for rec in done:
        one.emit("execution.succeeded", **rec)
    many, m2 = setup()
    many.emit_many("execution.started", started)
    many.emit_many("execution.succeeded", done)
    names = ["cronwheel_executions_started_total", "cronwheel_dispatch_lag_seconds_count", "cronwheel_dispatch_lag_seconds_sum"]
    for name in names:
        assert sample(m1, name) == sample(m2, name) and sample(m2, name) > 0, name
    for name in ("cronwheel_executions_finished_total", "cronwheel_execution_duration_seconds_count"):
        assert sample(m1, name, outcome="succeeded") == sample(m2, name, outcome="succeeded") > 0, name
    assert sample(m2, "cronwheel_execution_duration_seconds_count", outcome="succeeded") == 5  # j:4's epoch is stale
    assert m1._started.keys() == m2._started.keys() == {"j:4"}
    assert m2.dropped_events == 0
    buckets = [(s.labels, s.value) for m in m1.registry.collect() if m.name == "cronwheel_dispatch_lag_seconds"
               for s in m.samples if s.name.endswith("_bucket")]  # fmt: skip
    assert buckets == [(s.labels, s.value) for m in m2.registry.collect() if m.name == "cronwheel_dispatch_lag_seconds"
                       for s in m.samples if s.name.endswith("_bucket")]  # fmt: skip
    assert len({v for _, v in buckets}) > 2  # the lags fall in several buckets
    assert m1.lag_history.snapshot(1_500) == m2.lag_history.snapshot(1_500)


def test_every_skip_reason_is_exported_and_named_from_the_start() -> None:
    """backlog and other were missing until their first skip (and from the help text): an
    alert's increase() over the new series saw no increase."""
    _, m = setup()
    for kind in SkipKind:
        assert m.registry.get_sample_value("cronwheel_skipped_ticks_total", {"reason": kind.value}) == 0, kind
    (family,) = (f for f in m.registry.collect() if f.name == "cronwheel_skipped_ticks")
    assert all(kind.value in family.documentation for kind in SkipKind), family.documentation
