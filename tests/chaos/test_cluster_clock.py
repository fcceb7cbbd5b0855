"""A cluster node whose clock is wrong, with real daemons on the test PostgreSQL: one node
runs 30 s ahead under libfaketime (``LD_PRELOAD``; the ``faketime`` package).

Nodes compare each other's instants: an execution's lease (``lease_until``, written by the
node that started it) is reaped by any node's reaper, and the shared ready queue's
``available_at`` is read by whichever node drains it. A node 30 s ahead used to reap the live
runs of every other node (``lease.expired``; the runs were killed and ran again) and to claim
and start its buckets' ticks 30 s early. In a cluster the wall clock is the database's
(``core.clock.StoreAlignedClock``): the skewed node says ``clock.skewed`` and runs on time.
"""

from __future__ import annotations

import glob
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.chaos.test_cluster import LEASE_MS, SEC, Cluster, db_now_ms, sql
from tests.support.daemon import Daemon, gated_run
from tests.support.wait import wait_for

pytestmark = pytest.mark.postgres

SKEW = "+30s"


def libfaketime() -> str:
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") + glob.glob("/usr/lib/faketime/libfaketimeMT.so.1"))
    if not found:
        pytest.skip("!!! CLOCK SKEW NOT TESTED: libfaketime is not installed (apt-get install faketime) !!!")
    return found[0]


@pytest.fixture
def cluster(postgres_dsn: str, make_daemon: Callable[..., Daemon], tmp_path: Path) -> Cluster:
    return Cluster(make_daemon, postgres_dsn, tmp_path / "ledger.txt")


def test_a_node_whose_clock_runs_ahead_runs_on_the_database_s_clock(cluster: Cluster, tmp_path: Path) -> None:
    preload = libfaketime()
    cluster.start("n1", "n2")
    cluster.wait_balanced({"n1", "n2"})
    cluster.add_jobs(cluster.nodes["n1"], one_offs_in=[])
    wait_for(lambda: cluster.ticks_until(db_now_ms(cluster.dsn) - 1500), 15, interval=0.1, what="every job ticking")
    # a run of one of the nodes on time, beating every 0.75 s
    job_id, release = gated_run(cluster.nodes["n1"], tmp_path, leaseSec=3)

    skewed = cluster.nodes["n3"] = cluster.make_daemon(
        "n3", args=("--store", cluster.dsn, "--node-id", "n3", "--bucket-lease-ms", str(LEASE_MS)),
        env={"LD_PRELOAD": preload, "FAKETIME": SKEW, "DONT_FAKE_MONOTONIC": "1"},
    )
    cluster.wait_balanced({"n1", "n2", "n3"})
    # n3 schedules its buckets and reaps (every second) for a while: a few dispatch batches
    wait_for(lambda: len(skewed.events("execution.started")) + len(skewed.events("executions.started")) >= 5, 20, what="n3 to run ticks of its buckets")

    # nothing claimed by a clock 30 s ahead: no tick further ahead than claim-ahead (2 s)
    early = sql(cluster.dsn, "SELECT count(*) FROM executions WHERE scheduled_at > %s", (db_now_ms(cluster.dsn) + 5 * SEC,))
    assert early[0][0] == 0, f"{early[0][0]} executions claimed more than 5 s ahead of the database's clock"
    assert [e for n in cluster.nodes.values() for e in n.events("lease.expired")] == []
    release.touch()
    done = wait_for(lambda: sql(cluster.dsn, "SELECT status, lease_epoch, attempt FROM executions WHERE job_id = %s "
                                             "AND status <> 'RUNNING'", (job_id,)), 20, what="the gated run to end")
    assert done == [("SUCCEEDED", 1, 1)], done  # not reaped, killed and run again by n3

    said = skewed.wait_event("clock.skewed")
    assert -31_000 < said["offsetMs"] < -29_000, said
    # and its status says so, live; a node on time adds nothing
    assert -31_000 < skewed.get("/v1/status").json()["cluster"]["clockOffsetMs"] < -29_000
    assert cluster.nodes["n1"].get("/v1/status").json()["cluster"]["clockOffsetMs"] == 0
    end = db_now_ms(cluster.dsn) + 3 * SEC
    cluster.wait_all_ran(end)
    assert cluster.check(end) == {}
