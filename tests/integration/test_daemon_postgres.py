"""A real ``cronwheel serve --store postgresql://…``: the product on the cluster store, one
node (several nodes sharing buckets are cluster mode, tested with it)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cronwheel.core.schedule import parse_instant
from tests.support.daemon import Daemon, assert_ran_once_unreaped, gated_run
from tests.support.wait import wait_for

pytestmark = pytest.mark.postgres


def succeeded(daemon: Daemon, job_id: str) -> list[dict]:
    return [e for e in daemon.executions(job_id) if e["status"] == "SUCCEEDED"]


@pytest.fixture
def pg_daemon(make_daemon: Callable[..., Daemon], postgres_dsn: str) -> Daemon:
    return make_daemon(args=("--store", postgres_dsn))


def test_serve_on_postgres_runs_cron_and_one_off_jobs(pg_daemon: Daemon, tmp_path: Path) -> None:
    d = pg_daemon
    assert d.event("node.started")["store"] == "postgresql"  # type: ignore[index]
    store = d.status()["store"]
    assert store["kind"] == "postgresql" and store["synchronousCommit"] == "on"

    out = tmp_path / "ticks.txt"
    job = d.add_job({"schedule": "* * * * * *", "command": f'echo "$CRONWHEEL_SCHEDULED_AT $CRONWHEEL_LEASE_EPOCH" >> {out}'})
    once = tmp_path / "once.txt"
    res = d.cli("add", "--json", "+2s", "--", "sh", "-c", f"echo once >> {once}")
    assert res.returncode == 0, res.stderr
    one_off = json.loads(res.stdout)["jobId"]

    wait_for(lambda: len(succeeded(d, job["jobId"])) >= 3, timeout=30, what="3 successful ticks")
    wait_for(lambda: succeeded(d, one_off), timeout=20, what="the one-off to run")
    wait_for(lambda: d.get(f"/v1/jobs/{one_off}").json()["status"] == "SUCCEEDED", timeout=10)
    assert d.request("DELETE", f"/v1/jobs/{job['jobId']}").status == 200

    executions = d.executions(job["jobId"])
    ok = [e for e in executions if e["status"] == "SUCCEEDED"]
    ids = [e["executionId"] for e in executions]
    assert len(ids) == len(set(ids)), "one execution per tick"
    assert all(e["leaseEpoch"] == 1 and e["attempt"] == 1 for e in ok)
    ms = sorted(int(e["executionId"].rsplit(":", 1)[1]) for e in ok)
    assert all(b - a == 1000 for a, b in itertools.pairwise(ms)), "no tick skipped"
    file_ticks = [line.split()[0] for line in out.read_text().splitlines()]
    assert len(file_ticks) == len(set(file_ticks)) >= len(ok)

    assert once.read_text() == "once\n"
    assert len(d.executions(one_off)) == 1


@pytest.mark.runs_no_jobs
def test_idempotent_submission_on_postgres(pg_daemon: Daemon) -> None:
    body = {"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"}
    first = pg_daemon.post("/v1/jobs", body, headers={"Idempotency-Key": "k-1"})
    again = pg_daemon.post("/v1/jobs", body, headers={"Idempotency-Key": "k-1"})
    assert first.status == again.status == 201 and first.json() == again.json()
    other = pg_daemon.post("/v1/jobs", {**body, "command": "false"}, headers={"Idempotency-Key": "k-1"})
    assert other.status == 422


def test_a_stopped_server_is_a_503_with_retry_after_then_service_resumes(
    make_daemon: Callable[..., Daemon],
) -> None:
    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        d = make_daemon(args=("--store", cluster.dsn()))
        before = d.add_job({"schedule": "0 0 1 1 *", "command": "true"})
        cluster.stop("fast")
        r = d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "command": "true"})
        assert r.status == 503, r
        retry_after = r.headers.get("Retry-After")
        assert d.get(f"/v1/jobs/{before['jobId']}").status == 503
        cluster.start()
        # the stores reconnect on their next call: no restart of the daemon
        after = wait_for(lambda: (r := d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "command": "true"})).status == 201 and r,
                         timeout=20, what="the API to accept jobs again")
        assert after.json()["jobId"] != before["jobId"]
        assert d.get(f"/v1/jobs/{before['jobId']}").status == 200
        d.stop()
    assert retry_after == "1"


def test_status_answers_from_its_last_read_marked_stale_while_the_store_is_down(
    make_daemon: Callable[..., Daemon],
) -> None:
    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        d = make_daemon(args=("--store", cluster.dsn()))
        d.add_job({"schedule": "0 0 1 1 *", "command": "true"})
        fresh = d.get("/v1/status").json()
        assert fresh["stale"] is False and fresh["jobs"]["ACTIVE"] == 1
        assert "storeError" not in fresh and "staleForMs" not in fresh
        cluster.stop("immediate")  # as a crash (or a failover) would

        r = d.get("/v1/status")
        assert r.status == 200, r
        stale = r.json()
        assert stale["stale"] is True and "unavailable" in stale["storeError"]
        # the store-read parts are the last read's, and say when that was; the rest is live
        assert stale["jobs"] == fresh["jobs"] and stale["store"]["kind"] == "postgresql"
        assert stale["asOf"] >= fresh["asOf"] and stale["staleForMs"] >= 0
        assert stale["workers"]["count"] == 2 and stale["nodeId"] == fresh["nodeId"]
        out = d.cli("status")
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("STALE: the store is unreachable"), out.stdout
        assert "stale:" in out.stdout and "storeError:" in out.stdout
        out = d.cli("status", "--json")
        assert out.returncode == 0 and json.loads(out.stdout)["stale"] is True

        # the outage is one event per loop, not a traceback every half second
        wait_for(lambda: any(e["loop"] == "scheduler" for e in d.events("store.unavailable")), timeout=20,
                 what="the scheduler to report the store unavailable")

        cluster.start()
        wait_for(lambda: d.status().get("stale") is False, timeout=20, what="a fresh status once the store is back")
        assert not d.cli("status").stdout.startswith("STALE")
        wait_for(lambda: any(e["loop"] == "scheduler" for e in d.events("store.available")), timeout=20,
                 what="the scheduler to report the store back")
        down = [e for e in d.events("store.unavailable") if e["loop"] == "scheduler"]
        assert len(down) == 1, down
        (back,) = [e for e in d.events("store.available") if e["loop"] == "scheduler"]
        assert back["downMs"] > 0
        assert not [e for e in d.events("scheduler.error") if "navailable" in e["error"]]
        d.stop()


def test_a_running_jobs_heartbeats_report_an_outage_once(make_daemon: Callable[..., Daemon]) -> None:
    """A worker beats every quarter lease; while the store is down each beat fails. That is one
    ``store.unavailable`` for the heartbeats and one ``store.available`` after, not an error
    line per beat."""
    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        d = make_daemon(args=("--store", cluster.dsn(), "--grace-sec", "1"))
        d.add_job({"runAt": "+0s", "command": "sleep 60", "leaseSec": 2})  # a beat every 0.5 s
        d.wait_event("execution.started")
        cluster.stop("immediate")
        d.wait_event("store.unavailable", loop="heartbeat")
        # a few beats' time, measured by the node itself: its status goes stale with the store
        wait_for(lambda: d.status().get("staleForMs", 0) >= 2_000, timeout=20, what="two seconds of outage")
        cluster.start()
        back = d.wait_event("store.available", loop="heartbeat", timeout=30)
        assert back["downMs"] > 0
        assert len([e for e in d.events("store.unavailable") if e["loop"] == "heartbeat"]) == 1
        assert not [e for e in d.events("pool.handler_error") if e.get("call") == "on_heartbeats"]
        d.stop()


def test_status_is_answered_stale_in_an_outage_though_nobody_asked_for_it_before(tmp_path: Path) -> None:
    """The node reads its status once it has started: a monitor's first status request, in an
    outage, gets that read marked stale. It got 503, as from a node that never read its store."""
    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        d = Daemon(tmp_path / "node", args=("--store", cluster.dsn()))
        d.launch()  # not start(): it asks for the status itself
        try:
            wait_for(lambda: d.event("node.started"), 30, what="the node to start")
            d.url = (d.data_dir / "http.addr").read_text().strip()
            cluster.stop("immediate")
            r = d.get("/v1/status")
            assert r.status == 200 and r.json()["stale"] is True, r
            cluster.start()
        finally:
            d.stop()


def test_a_store_outage_longer_than_a_lease_does_not_cost_a_live_run_its_lease(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    """Every renewal fails while the store is down, so a running execution's lease runs out in
    the outage though its worker is alive. Once the store is back the reaper spares such leases
    until their workers have renewed them: the run goes on and ends once, at epoch 1. It used
    to be reaped at once (killed, run again, or dead-lettered)."""
    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        d = make_daemon(args=("--store", cluster.dsn()))
        job_id, release = gated_run(d, tmp_path, leaseSec=6)  # a beat every 1.5 s: the reaper comes first
        cluster.stop("immediate")
        wait_for(lambda: d.status().get("staleForMs", 0) >= 8_000, timeout=30, what="more than a lease of outage")
        cluster.start()
        d.wait_event("store.available", loop="reaper", timeout=30)
        release.touch()
        assert_ran_once_unreaped(d, job_id)
        d.stop()


def test_a_node_that_lost_its_buckets_says_the_store_is_back_only_once_it_is(
    make_daemon: Callable[..., Daemon],
) -> None:
    """Cluster mode: once the bucket leases' trust windows close in an outage, the scheduler
    and the dead-man's watcher own no bucket and ask the store nothing. That is no sign that
    it is back: their ``store.available`` comes once it is, not while it is still down."""
    from tests.support.postgres import dedicated_cluster

    loops = {"scheduler", "deadman"}
    with dedicated_cluster() as cluster:
        d = make_daemon(args=("--store", cluster.dsn(), "--node-id", "n1", "--bucket-lease-ms", "2000"))
        d.add_job({"schedule": "* * * * * *", "command": "true"})  # a claim every second
        wait_for(lambda: d.event("buckets.acquired", held=64), 10, what="64 buckets")
        cluster.stop("immediate")
        wait_for(lambda: {e["loop"] for e in d.events("store.unavailable")} >= loops, 15,
                 what="the scheduler and the dead-man's watcher to lose the store")
        wait_for(lambda: len(d.events("bucket.lost")) >= 64, 15, what="the buckets' trust windows to close")
        # the wrong store.available came a turn after the buckets were lost: wait well past it
        wait_for(lambda: d.status().get("staleForMs", 0) >= 5_000, timeout=20, what="five seconds of outage")
        assert [e for e in d.events("store.available") if e["loop"] in loops] == []
        restarted = time.time()
        cluster.start()
        for loop in sorted(loops):
            # it measured the whole outage: from its own first failure to past the restart
            back = d.wait_event("store.available", loop=loop, timeout=30)
            [lost] = [e for e in d.events("store.unavailable") if e["loop"] == loop]
            assert back["downMs"] >= restarted * 1000 - parse_instant(lost["ts"]) - 5, (lost, back)
        for loop in loops:
            assert len([e for e in d.events("store.unavailable") if e["loop"] == loop]) == 1
            assert len([e for e in d.events("store.available") if e["loop"] == loop]) == 1
        d.stop()


def test_a_submission_rides_out_a_short_outage(make_daemon: Callable[..., Daemon]) -> None:
    """The node retries a submission while the store is unreachable (for a few seconds,
    with backoff), so a restart or a failover shorter than that costs the client nothing;
    the answer is 201 only once the job is committed."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        d = make_daemon(args=("--store", cluster.dsn()))
        cluster.stop("immediate")
        body = {"schedule": "0 0 1 1 *", "command": "true", "name": "ride-out"}
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.post, "/v1/jobs", body, headers={"Idempotency-Key": "ride-out"})
            wait_for(lambda: d.event("job.submit_retry"), timeout=10, what="the node retrying the submission")
            cluster.start()
            r = pending.result(timeout=30)
        assert r.status == 201, r
        assert d.get(f"/v1/jobs/{r.json()['jobId']}").status == 200
        again = d.post("/v1/jobs", body, headers={"Idempotency-Key": "ride-out"})
        assert again.status == 201 and again.json()["jobId"] == r.json()["jobId"]

        # a batch rides out an outage the same way, each job answered as it would have been
        cluster.stop("immediate")
        batch = {"jobs": [{**body, "idempotencyKey": "ride-out"}, {**body, "name": "b1", "idempotencyKey": "b1"},
                          {**body, "name": "b2"}]}
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.post, "/v1/jobs/batch", batch)
            wait_for(lambda: any(e.get("jobs") == 3 for e in d.events("job.submit_retry")), timeout=10,
                     what="the node retrying the batch")
            cluster.start()
            rb = pending.result(timeout=30)
        assert rb.status == 200, rb
        results = rb.json()["results"]
        assert [x["status"] for x in results] == [200, 201, 201]
        assert results[0]["jobId"] == r.json()["jobId"]
        assert all(d.get(f"/v1/jobs/{x['jobId']}").status == 200 for x in results)
        d.stop()


@pytest.mark.runs_no_jobs
def test_an_outage_under_a_stream_of_submissions_is_a_few_lines(make_daemon: Callable[..., Daemon]) -> None:
    """Each submission is tried again for 3 s, a few times a second, and the tenants are read
    every 2 s: during an outage that was a warning per try and per read (about 180 lines a
    second for 30 submissions a second). It is a line when the outage begins and one when it
    ends, for submissions as for every loop."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.postgres import dedicated_cluster

    with dedicated_cluster() as cluster:
        d = make_daemon(args=("--store", cluster.dsn()))
        before = len(d.events())
        cluster.stop("immediate")
        stop, answers = threading.Event(), []

        def submit_until_stopped() -> None:
            while not stop.is_set():
                answers.append(d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "command": "true"}).status)

        with ThreadPoolExecutor(8) as pool:
            for _ in range(8):
                pool.submit(submit_until_stopped)
            try:
                wait_for(lambda: answers.count(503) >= 16 and d.status().get("staleForMs", 0) >= 7_000, timeout=30,
                         what="a stream of submissions answered 503 for 7 s")
            finally:
                stop.set()
        during = d.events()[before:]
        retries = [e for e in during if e["event"] == "job.submit_retry"]
        assert len(retries) == 1 and retries[0]["level"] == "warning", retries
        assert retries[0]["error"].startswith("postgresql store"), retries[0]  # str(exc), not its repr
        assert not [e for e in during if e["event"] == "tenants.refresh_failed"]
        (tenants,) = [e for e in during if e["event"] == "store.unavailable" and e["loop"] == "tenants"]
        assert tenants["error"].startswith("postgresql store"), tenants
        # one store.unavailable per loop, a bucket.lost per bucket (64, once): not a line per try
        others = [e for e in during if e["event"] != "bucket.lost"]
        assert len(others) < 20, "\n".join(json.dumps(e) for e in others)

        cluster.start()
        wait_for(lambda: d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "command": "true"}).status == 201, timeout=30,
                 what="a submission accepted again")
        recovered = d.wait_event("job.submit_recovered")
        assert recovered["retries"] > 8 and recovered["downMs"] >= 7_000
        d.wait_event("store.available", loop="tenants", timeout=10)
        assert len(d.events("job.submit_retry")) == 1
        d.stop()
