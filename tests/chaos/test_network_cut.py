"""One node of a cluster cut off its database by the network (a partition, a dead switch
port), longer than its bucket leases, then reconnected; with real daemons on the test
PostgreSQL and iptables dropping the node's packets (tests/support/netcut.py).

Unlike a stopped server (connection refused at once), a cut answers nothing: a store call
waits on bytes that are never acknowledged. The node used to wait with it for as long as
the kernel retransmits (minutes): its status request hung past 30 s instead of answering
stale, no ``store.unavailable`` nor ``bucket.lost`` was said. The store's connections give up
on unacknowledged bytes after ``tcp_user_timeout``, and after a connection attempt that timed
out the next calls fail at once for a while instead of each timing out in turn
(store/postgres/connection.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.chaos.test_cluster import LEASE_MS, SEC, Cluster, db_now_ms
from tests.support.daemon import Daemon
from tests.support.netcut import Forwarder, cut, require_iptables
from tests.support.wait import wait_for

pytestmark = pytest.mark.postgres


@pytest.fixture
def cluster(postgres_dsn: str, make_daemon: Callable[..., Daemon], tmp_path: Path) -> Cluster:
    return Cluster(make_daemon, postgres_dsn, tmp_path / "ledger.txt")


@pytest.fixture
def forwarder(postgres_dsn: str) -> Iterator[Forwarder]:
    require_iptables()
    port = int(postgres_dsn.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    f = Forwarder(port)
    yield f
    f.close()


def test_a_node_cut_off_its_database_steps_down_answers_and_comes_back(cluster: Cluster, forwarder: Forwarder) -> None:
    cluster.start("n1")
    host_port = cluster.dsn.split("@", 1)[1].split("/", 1)[0]
    via_forwarder = cluster.dsn.replace(host_port, f"127.0.0.1:{forwarder.port}", 1)
    n2 = cluster.nodes["n2"] = cluster.make_daemon(
        "n2", args=("--store", via_forwarder, "--node-id", "n2", "--bucket-lease-ms", str(LEASE_MS)))
    cluster.wait_balanced({"n1", "n2"})
    cluster.add_jobs(cluster.nodes["n1"], one_offs_in=[4000, 8000])
    wait_for(lambda: cluster.ticks_until(db_now_ms(cluster.dsn) - 1500), 15, interval=0.1, what="every job ticking")

    with cut(forwarder.port):
        cluster.wait_balanced({"n1"}, timeout=20)  # n2's leases ran out: n1 took them over
        # n2 answers from its last read, marked stale (the HTTP client gives up after 30 s)
        r = n2.get("/v1/status")
        assert r.status == 200 and r.json()["stale"] is True, r
        n2.wait_event("store.unavailable", timeout=30)
        n2.wait_event("bucket.lost", timeout=30)  # it stepped down, and said so
        # a submission is retried for 3 s, then answered 503: a client that waits 20 s (the
        # retries, and the call in flight: a send timeout and a connect timeout) hears it.
        # Each call queued before it used to wait out a connect timeout of its own: 25-30 s
        # with three nodes' load, more than 20 s here
        for i in range(3):
            r = n2.post("/v1/jobs", {"runAt": "+1s", "command": "true"}, headers={"Idempotency-Key": f"cut-{i}"},
                        timeout=20)
            assert r.status == 503 and r.headers.get("Retry-After"), r

    cluster.wait_balanced({"n1", "n2"}, timeout=60)
    wait_for(lambda: n2.status().get("stale") is False, 30, what="n2's status fresh again")
    end = db_now_ms(cluster.dsn) + 3 * SEC
    cluster.wait_all_ran(end)
    assert cluster.check(end) == {}
