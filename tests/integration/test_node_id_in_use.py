"""Two processes with one node id on one PostgreSQL store (a cloned VM: the default node id is
the host name). The second must not take the first's running executions over as if they were
its own crashed incarnation's: it refuses to start while that id heartbeats, and a node
restarted after a crash (whose heartbeat stopped) starts once the heartbeat has expired."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

pytestmark = pytest.mark.postgres

LEASE_MS = 3000


def node_args(dsn: str, node_id: str) -> tuple[str, ...]:
    return ("--store", dsn, "--node-id", node_id, "--bucket-lease-ms", str(LEASE_MS))


def running(d: Daemon, job_id: str) -> list[dict]:
    return [e for e in d.executions(job_id) if e["status"] == "RUNNING"]


def start_long_run(d: Daemon, seconds: int) -> str:
    job = d.add_job({"schedule": "0 0 1 1 *", "command": f"sleep {seconds}"})
    assert d.post(f"/v1/jobs/{job['jobId']}/trigger").status in (200, 201, 202)
    wait_for(lambda: running(d, job["jobId"]), 15, what="the execution to run")
    return str(job["jobId"])


def test_a_second_node_with_a_live_node_s_id_is_refused(
    make_daemon: Callable[..., Daemon], postgres_dsn: str, tmp_path: Path
) -> None:
    n1 = make_daemon("n1", args=node_args(postgres_dsn, "n1"))
    job_id = start_long_run(n1, 6)
    twin = Daemon(tmp_path / "twin", args=node_args(postgres_dsn, "n1"))
    try:
        twin.launch()
        assert twin.proc is not None
        code = wait_for(lambda: twin.proc.poll() is not None and (twin.proc.returncode,), 20,  # type: ignore[union-attr]
                        what="the twin to refuse to start")[0]
        out = twin.log_path.read_text()
        assert code == 75, out  # EX_TEMPFAIL: the unit restarts it, and it starts once the twin is gone
        assert "node id 'n1'" in out and "--node-id" in out and n1.url.rsplit(":", 1)[1] in out, out
        assert "node.recovered_leases" not in out and "node.started" not in out, out
    finally:
        twin.kill()
    wait_for(lambda: [e for e in n1.executions(job_id) if e["status"] == "SUCCEEDED"], 20,
             what="the running execution to finish on n1")
    (ex,) = n1.executions(job_id)
    assert ex["attempt"] == 1 and ex["leaseEpoch"] == 1, ex
    assert n1.events("execution.retry_scheduled") == [] and n1.events("lease.fenced") == []


def test_a_node_restarted_after_kill_9_starts_and_fails_what_its_workers_ran(
    make_daemon: Callable[..., Daemon], postgres_dsn: str
) -> None:
    n1 = make_daemon("n1", args=node_args(postgres_dsn, "n1"))
    job_id = start_long_run(n1, 60)
    n1.kill()
    n1.start()  # the same data dir and node id: its heartbeat stops, and it may start again
    recovered = n1.wait_event("node.recovered_leases", 10)
    assert recovered["executions"] == 1
    wait_for(lambda: n1.executions(job_id)[-1]["attempt"] >= 2 or n1.executions(job_id)[0]["status"] != "RUNNING",
             15, what="the lost execution to be failed or retried")


def test_a_restarted_node_leaves_alone_the_runs_of_a_node_whose_id_starts_like_its_own(
    make_daemon: Callable[..., Daemon], postgres_dsn: str
) -> None:
    """Nodes ``n`` and ``n-2`` on one store and one machine: ``n-2``'s workers' ids begin with
    ``n-`` too. ``n``, restarted, fails (and, after a crash, kills) its own previous workers'
    runs only; it used to take ``n-2``'s for its own, killing them and running them again."""
    neighbour = make_daemon("n-2", args=(*node_args(postgres_dsn, "n-2"), "--grace-sec", "1"))
    job_id = start_long_run(neighbour, 60)
    n = make_daemon("n", args=node_args(postgres_dsn, "n"))
    n.stop()
    n.start()
    (ex,) = running(neighbour, job_id)
    assert ex["attempt"] == 1 and ex["workerId"].startswith("n-2-"), ex
    assert n.events("node.recovered_leases") == [] and n.events("pool.worker_orphans_killed") == []


def test_of_two_nodes_started_at_once_with_one_id_one_starts(postgres_dsn: str, tmp_path: Path) -> None:
    """Cloned machines booted together: each finds the id free when it looks. Taking it is one
    statement on the store, so one of them starts and the other, seeing its heartbeat move
    on, refuses; before, both started, and each took the other's runs for its own."""
    twins = [Daemon(tmp_path / f"twin-{i}", args=node_args(postgres_dsn, "clone")) for i in range(2)]
    try:
        for twin in twins:
            twin.launch()

        def refused() -> list[Daemon]:
            return [t for t in twins if t.proc is not None and t.proc.poll() is not None]

        (loser,) = wait_for(refused, 40, what="one twin to refuse")
        (winner,) = [t for t in twins if t is not loser]
        assert loser.proc is not None and loser.proc.returncode == 75, loser.log_tail()
        assert "node id 'clone' is in use" in loser.log_path.read_text()
        wait_for(lambda: winner.event("node.started"), 30, what="the other twin to start")
        winner.wait_event("buckets.acquired")
        assert winner.proc is not None and winner.proc.poll() is None
        assert winner.events("node.id_taken") == [] and refused() == [loser]
    finally:
        for twin in twins:
            twin.kill()


def test_a_frozen_node_whose_id_was_taken_gives_up_its_buckets(
    make_daemon: Callable[..., Daemon], postgres_dsn: str, tmp_path: Path
) -> None:
    """n1 frozen past its lease TTL; a second process with its id starts meanwhile (the id was
    free: nobody heartbeat it). n1, thawed, must not go on scheduling beside it."""
    n1 = make_daemon("n1", args=node_args(postgres_dsn, "n1"))
    n1.wait_event("buckets.acquired")
    twin = Daemon(tmp_path / "twin", args=node_args(postgres_dsn, "n1"))
    os.kill(n1.pid, signal.SIGSTOP)
    try:
        twin.start()
        twin.wait_event("buckets.acquired")
    finally:
        os.kill(n1.pid, signal.SIGCONT)
    try:
        taken = n1.wait_event("node.id_taken", 20)
        assert taken["level"] == "error" and "node id 'n1' is in use" in taken["error"], taken
        wait_for(lambda: len(n1.events("bucket.lost")) >= 64 or None, 20, what="n1 to give up every bucket")
        assert twin.events("node.id_taken") == []
        # the twin keeps the id and schedules: every bucket is its own
        wait_for(lambda: len(twin.status()["cluster"]["buckets"]) == 1 or None, 20, what="one owner of the buckets")
        assert twin.status()["cluster"]["owned"] == 64
    finally:
        twin.stop()
