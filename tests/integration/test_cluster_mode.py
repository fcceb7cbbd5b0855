"""Cluster mode's switch: SQLite stays a single node that schedules all 64 buckets with no
membership loop (no behaviour change); ``--cluster`` on SQLite leases them all to itself;
``cronwheel status`` shows the nodes and buckets per node."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import Daemon
from tests.support.wait import wait_for


def test_sqlite_is_a_single_node_without_membership(daemon: Daemon, tmp_path: Path) -> None:
    assert "cluster" not in daemon.status()
    assert daemon.events("bucket.acquired") == []
    out = tmp_path / "ran.txt"
    job = daemon.add_job({"schedule": "* * * * * *", "command": f"echo x >> {out}"})
    wait_for(lambda: len(daemon.executions(job["jobId"])) >= 2, 15, what="ticks on all buckets")


def test_cluster_flag_on_sqlite_leases_every_bucket_to_the_one_node(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(args=("--cluster", "--node-id", "solo", "--bucket-lease-ms", "1500"))
    wait_for(lambda: len({e["bucket"] for e in d.events("bucket.acquired")}) == 64, 10, what="64 buckets acquired")
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
