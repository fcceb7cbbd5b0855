"""Cluster failures with real daemons on the test PostgreSQL (fenced scheduling, docs/scaling.md):
a node killed with SIGKILL, a zombie scheduler (SIGSTOP past its bucket leases, then
SIGCONT), a node joining and one leaving gracefully (SIGTERM).

The history is read from the database itself (a killed node answers nothing), and checked:

* missed: an every-second job with a second between its first tick and the end of the
  checked window that has no execution;
* double: a tick with two executions (the unique key forbids it: checked anyway), or a tick
  whose command ran twice on its first attempt (the ledger file): a retry after a lost
  worker is at-least-once by design, not a double fire of the scheduler.

Leases are short here (``--bucket-lease-ms 1500``) so that a dead node's buckets move on
in about two seconds; every wait is a condition with a deadline.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cronwheel.core.ids import bucket_of
from tests.support.daemon import Daemon
from tests.support.wait import Timeout, wait_for

pytestmark = pytest.mark.postgres

LEASE_MS = 1500
N_EVERY_SECOND = 8
SEC = 1000


def sql(dsn: str, query: str, args: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query, args).fetchall()


def owners(dsn: str) -> Counter[str]:
    """Live bucket leases per node, by the database's clock."""
    rows = sql(dsn, """SELECT owner, count(*) FROM bucket_leases
                       WHERE owner IS NOT NULL
                         AND lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
                       GROUP BY owner""")
    return Counter({str(o): int(n) for o, n in rows})


def db_now_ms(dsn: str) -> int:
    return int(sql(dsn, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")[0][0])


class Cluster:
    def __init__(self, make_daemon: Callable[..., Daemon], dsn: str, ledger: Path) -> None:
        self.make_daemon = make_daemon
        self.dsn = dsn
        self.ledger = ledger
        self.nodes: dict[str, Daemon] = {}
        self.every_second: list[str] = []
        self.one_offs: list[str] = []

    def start(self, *names: str) -> None:
        for name in names:
            self.nodes[name] = self.make_daemon(
                name, args=("--store", self.dsn, "--node-id", name, "--bucket-lease-ms", str(LEASE_MS))
            )

    def balanced(self, names: set[str]) -> bool:
        held = owners(self.dsn)
        return set(held) == names and sum(held.values()) == 64 and min(held.values()) >= 64 // len(names) - 1

    def wait_balanced(self, names: set[str], timeout: float = 15) -> float:
        t0 = time.monotonic()
        wait_for(lambda: self.balanced(names), timeout, interval=0.05, what=f"the 64 buckets balanced over {sorted(names)}")
        return time.monotonic() - t0

    def add_jobs(self, via: Daemon, one_offs_in: list[int]) -> None:
        cmd = f'echo "$CRONWHEEL_EXECUTION_ID $CRONWHEEL_LEASE_EPOCH $CRONWHEEL_ATTEMPT" >> {self.ledger}'
        for i in range(N_EVERY_SECOND):
            # a 60 s misfire grace: a tick late by a failover is merely late and runs (the
            # default grace of an every-second job is 1 s, and the ticks of an outage collapse)
            job = via.add_job({"schedule": "* * * * * *", "command": cmd, "name": f"every-{i}", "misfireGraceSec": 60})
            self.every_second.append(job["jobId"])
        now = db_now_ms(self.dsn)
        for i, delay in enumerate(one_offs_in):
            at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((now + delay) / 1000)) + "Z"
            job = via.add_job({"runAt": at, "command": cmd, "name": f"once-{i}"})
            self.one_offs.append(job["jobId"])

    def owner_of(self, job_id: str) -> str | None:
        rows = sql(self.dsn, "SELECT owner FROM bucket_leases WHERE bucket_id = %s", (bucket_of(job_id),))
        return rows[0][0] if rows else None

    def victim(self, spare: str) -> str:
        """The node (not ``spare``) that owns the most every-second jobs' buckets."""
        count = Counter(self.owner_of(j) for j in self.every_second)
        candidates = [n for n in self.nodes if n != spare]
        return max(candidates, key=lambda n: (count.get(n, 0), n))

    def ticks_until(self, end_ms: int) -> bool:
        """Every every-second job has an execution for every second up to ``end_ms``."""
        rows = sql(self.dsn, "SELECT job_id, max(scheduled_at) FROM executions WHERE job_id = ANY(%s) GROUP BY job_id",
                   (self.every_second,))
        return len(rows) == len(self.every_second) and all(int(m) >= end_ms for _, m in rows)

    def one_offs_done(self) -> bool:
        rows = sql(self.dsn, "SELECT count(*) FROM executions WHERE job_id = ANY(%s) AND status = 'SUCCEEDED'",
                   (self.one_offs,))
        return int(rows[0][0]) == len(self.one_offs)

    def wait_all_ran(self, end_ms: int, timeout: float = 20) -> None:
        """Every tick up to ``end_ms`` and every one-off executed; failing, say what is missing."""
        try:
            wait_for(lambda: self.ticks_until(end_ms) and self.one_offs_done(), timeout, interval=0.1,
                     what="every tick up to the end, and every one-off, executed")
        except Timeout as exc:
            raise AssertionError(f"{exc}\n{self.progress(end_ms)}") from None

    def progress(self, end_ms: int) -> str:
        """What the history holds short of the end: each job's last tick, every run that has
        not succeeded, and what each node logged above info."""
        lines = [f"end {end_ms}"]
        for job_id, last in sql(self.dsn, "SELECT job_id, max(scheduled_at) FROM executions WHERE job_id = ANY(%s) "
                                          "GROUP BY job_id", (self.every_second,)):
            if int(last) < end_ms:
                lines.append(f"{job_id}: last tick {last}")
        unfinished = sql(self.dsn, "SELECT execution_id, status, worker_id, lease_epoch, available_at, reason "
                                   "FROM executions WHERE job_id = ANY(%s) AND status <> 'SUCCEEDED'",
                         (self.every_second + self.one_offs,))
        lines += [f"not succeeded: {row}" for row in unfinished]
        for name, node in self.nodes.items():
            lines += [f"{name}: {e}" for e in node.events() if e.get("level") in ("warning", "error", "critical")]
        return "\n".join(lines)

    def check(self, end_ms: int) -> dict[str, list[Any]]:
        rows = sql(self.dsn, "SELECT job_id, scheduled_at, execution_id, status FROM executions WHERE job_id = ANY(%s)",
                   (self.every_second + self.one_offs,))
        violations: dict[str, list[Any]] = {"missed": [], "double": []}
        ticks = Counter((j, int(t)) for j, t, _, _ in rows)
        violations["double"] += [t for t, n in ticks.items() if n > 1]
        for job_id in self.every_second:
            mine = sorted(t for j, t in ticks if j == job_id)
            assert mine, f"{job_id} never ran"
            expected = range(mine[0], end_ms + 1, SEC)
            violations["missed"] += [(job_id, t) for t in expected if (job_id, t) not in ticks]
        for job_id in self.one_offs:
            if sum(1 for j, _ in ticks if j == job_id) != 1:
                violations["missed" if not any(j == job_id for j, _ in ticks) else "double"].append(job_id)
        # the commands themselves: a first attempt runs once
        runs = Counter()
        for line in self.ledger.read_text().splitlines() if self.ledger.exists() else []:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "1":
                runs[parts[0]] += 1
        violations["double"] += [x for x, n in runs.items() if n > 1]
        return {k: v for k, v in violations.items() if v}


@pytest.fixture
def cluster(postgres_dsn: str, make_daemon: Callable[..., Daemon], tmp_path: Path) -> Cluster:
    # the database first: it is dropped after the daemons stopped, not under them
    return Cluster(make_daemon, postgres_dsn, tmp_path / "ledger.txt")


def test_a_killed_node_s_buckets_are_taken_over_with_no_missed_and_no_double_tick(cluster: Cluster) -> None:
    cluster.start("n1", "n2", "n3")
    cluster.wait_balanced({"n1", "n2", "n3"})
    cluster.add_jobs(cluster.nodes["n1"], one_offs_in=[3000, 4500, 6000, 7500, 9000])
    wait_for(lambda: cluster.ticks_until(db_now_ms(cluster.dsn) - 1500), 15, interval=0.1, what="every job ticking")

    victim = cluster.victim(spare="n1")
    survivors = set(cluster.nodes) - {victim}
    cluster.nodes[victim].kill()
    took = cluster.wait_balanced(survivors, timeout=10)
    # a dead node's leases run out after one TTL; its row is dead after one TTL too, and the
    # survivors look every TTL/3: a lease period and a third, plus the test's polling
    assert took < (LEASE_MS * 4 / 3 + 1500) / 1000, f"takeover took {took:.2f}s"
    wait_for(lambda: (b := cluster.nodes["n1"].status()["cluster"]["buckets"]) and victim not in b
             and sum(b.values()) == 64, 5, what="status to show the survivors holding every bucket")

    end = db_now_ms(cluster.dsn) + 4 * SEC
    cluster.wait_all_ran(end)
    assert cluster.check(end) == {}


def test_a_zombie_scheduler_is_fenced_and_steps_down(cluster: Cluster) -> None:
    cluster.start("n1", "n2")
    cluster.wait_balanced({"n1", "n2"})
    cluster.add_jobs(cluster.nodes["n1"], one_offs_in=[3000, 5000, 7000])
    wait_for(lambda: cluster.ticks_until(db_now_ms(cluster.dsn) - 1500), 15, interval=0.1, what="every job ticking")
    zombie = cluster.nodes["n2"]
    epochs_before = dict(sql(cluster.dsn, "SELECT bucket_id, epoch FROM bucket_leases WHERE owner = 'n2'"))
    assert epochs_before

    seen_acquired = len(zombie.events("buckets.acquired"))
    seen_lost = len(zombie.events("bucket.lost"))
    os.kill(zombie.pid, signal.SIGSTOP)
    try:
        cluster.wait_balanced({"n1"}, timeout=10)  # n1 took every bucket over: new terms
        moved = dict(sql(cluster.dsn, "SELECT bucket_id, epoch FROM bucket_leases WHERE bucket_id = ANY(%s)",
                         (list(epochs_before),)))
        assert all(moved[b] > e for b, e in epochs_before.items())
        wait_for(lambda: cluster.ticks_until(db_now_ms(cluster.dsn) - 1500), 10, interval=0.1, what="n1 ticking alone")
    finally:
        os.kill(zombie.pid, signal.SIGCONT)

    # on waking up its trust windows are closed: it steps down before any claim (and any
    # claim already in flight is fenced by the store), rejoins, and takes buckets back only
    # as new terms
    wait_for(lambda: len(zombie.events("bucket.lost")) > seen_lost, 10, what="the zombie to step down")
    cluster.wait_balanced({"n1", "n2"}, timeout=15)
    later = zombie.events("buckets.acquired")[seen_acquired:]
    assert later, "the zombie rejoined"
    epochs_now = dict(sql(cluster.dsn, "SELECT bucket_id, epoch FROM bucket_leases WHERE owner = 'n2'"))
    assert {b for e in later for b in e["buckets"]} >= set(epochs_now)
    assert all(epoch > epochs_before[b] for b, epoch in epochs_now.items() if b in epochs_before)
    end = db_now_ms(cluster.dsn) + 4 * SEC
    cluster.wait_all_ran(end)
    assert cluster.check(end) == {}


def test_buckets_rebalance_when_a_node_joins_and_one_leaves(cluster: Cluster) -> None:
    cluster.start("n1", "n2")
    cluster.wait_balanced({"n1", "n2"})
    cluster.add_jobs(cluster.nodes["n1"], one_offs_in=[4000, 8000, 12000])
    wait_for(lambda: cluster.ticks_until(db_now_ms(cluster.dsn) - 1500), 15, interval=0.1, what="every job ticking")

    cluster.start("n3")
    cluster.wait_balanced({"n1", "n2", "n3"}, timeout=10)
    assert cluster.nodes["n1"].event("buckets.released") or cluster.nodes["n2"].event("buckets.released")

    leaving = cluster.nodes["n2"]
    assert leaving.stop(timeout=20) == 0
    released = leaving.events("buckets.released")
    assert released, "a graceful leave hands its buckets off"
    # and ends the runs it started: none handed to a worker already told bye, none cut short
    # as "interrupted" for another node to run again
    cut_short = [e for e in leaving.events() if e["event"] in ("pool.grant_to_gone_worker", "execution.retry_scheduled")]
    assert cut_short == [], cut_short
    # No timing assertion tells a hand-off from an expiry here: the stop returns after its
    # claimed-ahead window (2 s), by which time even unreleased leases would have expired.
    # `buckets.released` above pins the hand-off; that a released bucket is free at once is the
    # store contract's (tests/contract/test_cluster.py).
    cluster.wait_balanced({"n1", "n3"}, timeout=10)

    def status_shows_two() -> bool:
        status = cluster.nodes["n1"].status()["cluster"]
        return ({n["nodeId"] for n in status["nodes"]} == {"n1", "n3"} and set(status["buckets"]) == {"n1", "n3"}
                and sum(status["buckets"].values()) == 64)

    wait_for(status_shows_two, 5, what="status to show n1 and n3 holding every bucket")
    end = db_now_ms(cluster.dsn) + 4 * SEC
    cluster.wait_all_ran(end)
    assert cluster.check(end) == {}
