"""Cluster mode's switch: SQLite stays a single node that schedules all 64 buckets with no
membership loop (no behaviour change); ``--cluster`` on SQLite leases them all to itself;
``cronwheel status`` shows the nodes and buckets per node."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.wait import wait_for


def test_sqlite_is_a_single_node_without_membership(daemon: Daemon, tmp_path: Path) -> None:
    assert "cluster" not in daemon.status()
    assert daemon.events("bucket.acquired") == daemon.events("buckets.acquired") == []
    out = tmp_path / "ran.txt"
    job = daemon.add_job({"schedule": "* * * * * *", "command": f"echo x >> {out}"})
    wait_for(lambda: len(daemon.executions(job["jobId"])) >= 2, 15, what="ticks on all buckets")


def test_cluster_flag_on_sqlite_leases_every_bucket_to_the_one_node(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(args=("--cluster", "--node-id", "solo", "--bucket-lease-ms", "1500"))
    wait_for(lambda: d.event("buckets.acquired", held=64), 10, what="64 buckets acquired")
    wait_for(lambda: d.status()["cluster"]["buckets"] == {"solo": 64}, 5, what="status: solo holds 64 buckets")
    assert [n["nodeId"] for n in d.status()["cluster"]["nodes"]] == ["solo"]
    job = d.add_job({"schedule": "* * * * * *", "command": "true"})
    wait_for(lambda: len([e for e in d.executions(job["jobId"]) if e["status"] == "SUCCEEDED"]) >= 2, 15,
             what="ticks scheduled under the leases")
    res = d.cli("status")
    assert res.returncode == 0, res.stderr
    assert "cluster.buckets.solo:" in res.stdout and " 64" in res.stdout
    data = json.loads(d.cli("status", "--json").stdout)
    assert data["cluster"]["buckets"] == {"solo": 64}


@pytest.mark.runs_no_jobs
def test_a_cluster_node_says_its_buckets_in_one_line_at_start_and_stop(make_daemon: Callable[..., Daemon]) -> None:
    """Taking all 64 buckets at the start, and handing them all off at the stop, was 64 info
    lines each: it is one line each, naming the buckets; each bucket's own event is at debug
    level, printed with --log-level debug."""
    d = make_daemon(args=("--cluster", "--node-id", "solo"))
    (acquired,) = wait_for(lambda: d.events("buckets.acquired"), 10, what="the buckets acquired")
    assert (acquired["count"], acquired["held"], acquired["buckets"]) == (64, 64, list(range(64))), acquired
    assert acquired["level"] == "info" and d.events("bucket.acquired") == []
    assert d.stop() == 0
    (released,) = d.events("buckets.released")
    assert (released["count"], released["held"], released["buckets"]) == (64, 0, list(range(64))), released
    assert d.events("bucket.released") == []

    noisy = make_daemon("debug", args=("--cluster", "--node-id", "loud", "--log-level", "debug"))
    wait_for(lambda: noisy.event("buckets.acquired", held=64), 10, what="the buckets acquired")
    per_bucket = noisy.events("bucket.acquired")
    assert sorted(e["bucket"] for e in per_bucket) == list(range(64)) and {e["level"] for e in per_bucket} == {"debug"}
    assert all(e["epoch"] >= 1 for e in per_bucket)


@pytest.mark.runs_no_jobs
def test_the_rows_of_nodes_gone_for_long_are_pruned_and_live_ones_kept(make_daemon: Callable[..., Daemon]) -> None:
    """A cluster whose node ids are pods' names adds a row at every deploy: the retention
    deletes the rows nobody heartbeated for the retention period (at least a day), and counts
    them; the live node's row stays, and status shows live nodes only, as before."""
    d = make_daemon(args=("--cluster", "--node-id", "solo", "--retention", "1s", "--retention-interval-ms", "300"))
    wait_for(lambda: d.event("buckets.acquired", held=64), 10, what="64 buckets acquired")
    now = int(time.time() * 1000)
    with sqlite3.connect(d.data_dir / "cronwheel.db", timeout=10) as db:
        db.executemany(
            "INSERT INTO cluster_nodes (node_id, address, started_at, last_seen, incarnation) VALUES (?, ?, ?, ?, ?)",
            [("pod-gone", "10.0.0.9:8080", now - 3 * 86_400_000, now - 2 * 86_400_000, "x"),
             ("pod-recent", "10.0.0.8:8080", now - 3_600_000, now - 3_600_000, "y")],  # dead an hour: kept for now
        )
    assert d.wait_event("retention.pruned", timeout=30, nodes=1)
    with sqlite3.connect(d.data_dir / "cronwheel.db", timeout=10) as db:
        left = sorted(r[0] for r in db.execute("SELECT node_id FROM cluster_nodes"))
    assert left == ["pod-recent", "solo"]
    assert [n["nodeId"] for n in d.status()["cluster"]["nodes"]] == ["solo"]
