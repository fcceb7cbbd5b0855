"""GET /metrics on a real daemon: run jobs that succeed, fail into the DLQ, overlap, lose
their lease and get fenced, then scrape and check that each metric moved."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from cronwheel.core.skips import SkipKind
from cronwheel.obs.metrics import METRIC_NAMES
from tests.support.daemon import Daemon
from tests.support.promtool import promtool as find_promtool
from tests.support.wait import wait_for

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(d: Daemon) -> Samples:
    r = d.get("/metrics")
    assert r.status == 200, r
    assert r.headers["Content-Type"].startswith("text/plain; version=")
    out: Samples = {}
    for family in text_string_to_metric_families(r.body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def test_metrics_move_with_real_work(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    d = make_daemon(workers=2, slots=2, args=("--reaper-interval-ms", "100"))
    before = scrape(d)
    assert value(before, "cronwheel_workers") == 2
    assert value(before, "cronwheel_worker_slots") == 4
    assert value(before, "cronwheel_buckets_owned") == 64
    assert value(before, "cronwheel_healthy") == 1
    assert value(before, "cronwheel_executions_started_total") == 0
    assert {dict(k[1]).get("tier") for k in before if k[0] == "cronwheel_queue_depth"} == {"high", "default", "batch"}
    # every reason from the start, so that an alert's increase() counts a reason's first skips
    assert {dict(k[1])["reason"]: v for k, v in before.items() if k[0] == "cronwheel_skipped_ticks_total"} == {
        kind.value: 0 for kind in SkipKind}

    ok = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true"})
    dead = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "exit 3",
                      "retryPolicy": {"maxAttempts": 2, "initialBackoffSec": 0.1}})
    overlap = d.add_job({"schedule": "* * * * * *", "command": "sleep 2.5", "overlap": "forbid"})
    d.add_job({"schedule": "0 0 1 1 *", "command": "true"})  # stays ACTIVE
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in d.executions(ok["jobId"])), 20, what="the ok job")
    wait_for(lambda: any(e["status"] == "DEAD" for e in d.executions(dead["jobId"])), 20, what="the failing job dead-lettered")
    wait_for(lambda: any(e["status"] == "SKIPPED" for e in d.executions(overlap["jobId"])), 20, what="an overlap skip")
    assert d.request("DELETE", f"/v1/jobs/{overlap['jobId']}").status == 200

    # a stale completion is fenced (409) and counted
    (done,) = d.executions(ok["jobId"])
    r = d.post(f"/v1/executions/{done['executionId']}/complete", {"workerId": "w", "leaseEpoch": 7, "outcome": "succeeded"})
    assert r.status == 409

    # a worker that stops answering loses its lease to the reaper
    gate = tmp_path / "gate"
    stuck = d.add_job({"runAt": "2000-01-01T00:00:00Z", "leaseSec": 0.5,
                       "retryPolicy": {"maxAttempts": 3, "initialBackoffSec": 0.1},
                       "command": f"if [ -e {gate} ]; then exit 0; fi; touch {gate}; sleep 30"})
    first = wait_for(lambda: next((e for e in d.executions(stuck["jobId"]) if e["status"] == "RUNNING"), None), 20, what="stuck job running")
    # RUNNING is the grant, not yet the shell: a worker stopped before it starts the shell
    # never makes the gate, and the retry would make it and sleep out the test in its turn
    wait_for(gate.exists, 20, what="the first attempt's shell to make the gate")
    spawned = d.event("pool.worker_spawned", worker=first["workerId"])
    assert spawned is not None
    os.kill(spawned["pid"], signal.SIGSTOP)
    try:
        wait_for(lambda: d.event("lease.expired", executionId=first["executionId"]), 20, what="the lease to expire")
        wait_for(lambda: d.executions(stuck["jobId"])[0]["status"] == "SUCCEEDED", 20, what="the retry to succeed")
    finally:
        os.kill(spawned["pid"], signal.SIGCONT)

    def moved() -> Samples | None:
        s = scrape(d)
        ready = (
            value(s, "cronwheel_dlq_size") == 1  # cached store count: refreshed within seconds
            and value(s, "cronwheel_jobs", status="cancelled") == 1
            and value(s, "cronwheel_fenced_rejections_total", via="completion") >= 1
        )
        return s if ready else None

    after = wait_for(moved, 20, what="the store-backed gauges to catch up")
    started = value(after, "cronwheel_executions_started_total")
    assert started >= 6  # ok, dead x2, overlap >= 1, stuck x2
    # dispatch lag: the every-second job's ticks only; the one-offs of the year 2000 are
    # catch-up runs, not scheduling lateness
    assert value(after, "cronwheel_dispatch_lag_seconds_count") >= 1
    assert value(after, "cronwheel_dispatch_lag_seconds_bucket", le="+Inf") == value(after, "cronwheel_dispatch_lag_seconds_count")
    assert value(after, "cronwheel_executions_finished_total", outcome="succeeded") >= 2
    assert value(after, "cronwheel_executions_finished_total", outcome="failed") >= 2
    assert value(after, "cronwheel_executions_finished_total", outcome="lost") >= 1
    assert value(after, "cronwheel_execution_duration_seconds_count", outcome="succeeded") >= 2
    assert value(after, "cronwheel_execution_duration_seconds_count", outcome="failed") >= 2
    assert value(after, "cronwheel_retries_total") >= 2  # the failing job once, the stuck one once
    assert value(after, "cronwheel_dead_lettered_total") == 1
    assert value(after, "cronwheel_lease_expirations_total") >= 1
    assert value(after, "cronwheel_skipped_ticks_total", reason="overlap") >= 1
    assert value(after, "cronwheel_skipped_ticks_total", reason="misfire") == 0
    assert value(after, "cronwheel_jobs", status="active") == 1
    # the one-offs' states follow their runs: ok and stuck succeeded, the dead one failed
    assert value(after, "cronwheel_jobs", status="succeeded") == 2
    assert value(after, "cronwheel_jobs", status="failed") == 1
    assert value(after, "cronwheel_events_total", event="execution.started") == started
    assert value(after, "cronwheel_next_run_timestamp_seconds") > 0
    assert total(after, "cronwheel_queue_depth") >= 0

    # every documented name is exposed, and no label carries a job or execution id
    exposed = {name for name, _ in after}
    for name in METRIC_NAMES:
        assert any(n == name or n.startswith(name + "_") for n in exposed), name
    promtool = find_promtool()
    if promtool is not None:  # Prometheus' own lint of names, types and help texts
        lint = subprocess.run([promtool, "check", "metrics"], input=d.get("/metrics").body, capture_output=True, timeout=60)
        assert lint.returncode == 0 and not lint.stdout and not lint.stderr, lint
    ids = {ok["jobId"], dead["jobId"], overlap["jobId"], stuck["jobId"]}
    for _, labels in after:
        for _, label_value in labels:
            assert not any(i in label_value for i in ids), labels

