"""A bad neighbour costs a retry, never an error: while one tenant (or its worker token)
sends work that makes the shared transaction fail, the other tenant's requests all succeed
and its executions run exactly once, with no dead letters. On SQLite and on PostgreSQL.

The input boundary refuses every value known to break a write, so the poison here is made
by the store itself: a trigger installed in the daemon's real database that fails the
statement for one tenant's rows (SQLite: an integer overflow, as a huge ``@every`` once
caused; PostgreSQL: a raised exception). Everything else is the real daemon.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import apsw
import pytest

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

# (table, timing, WHEN condition): the statement fails for the rows the condition matches
Poison = tuple[str, str, str]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def node(store_kind: str, make_daemon: Callable[..., Daemon], request: pytest.FixtureRequest) -> Iterator[tuple[Daemon, Callable[[Poison], None]]]:
    if store_kind == "sqlite":
        d = make_daemon(workers=1, slots=16)

        def poison(p: Poison) -> None:
            table, timing, when = p
            conn = apsw.Connection(str(d.data_dir / "cronwheel.db"))
            conn.setbusytimeout(10_000)
            # abs() of the smallest 64-bit integer overflows: a real write error, as a
            # too-large number once caused
            conn.execute(f"CREATE TRIGGER poison_{table} {timing} ON {table} FOR EACH ROW WHEN {when} "
                         "BEGIN SELECT abs(-9223372036854775807 - 1); END")
            conn.close()

        yield d, poison
        return
    import psycopg

    dsn = request.getfixturevalue("postgres_dsn")
    d = make_daemon(workers=1, slots=16, args=("--store", dsn))

    def poison_pg(p: Poison) -> None:
        table, timing, when = p
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE OR REPLACE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS "
                         "$$ BEGIN RAISE EXCEPTION 'poisoned row'; END $$")
            conn.execute(f"CREATE TRIGGER poison_{table} {timing} ON {table} FOR EACH ROW WHEN ({when}) "
                         "EXECUTE FUNCTION poison()")

    yield d, poison_pg


def tenant_token(d: Daemon, tenant: str, role: str = "tenant", allow_shell: bool = False) -> str:
    """A token of ``tenant`` (created on first use)."""
    if d.get(f"/v1/tokens?tenant={tenant}").json()["tokens"] == []:
        assert d.post("/v1/tenants", {"name": tenant, "allowShell": allow_shell}).status == 201
    r = d.post("/v1/tokens", {"tenant": tenant, "role": role})
    assert r.status == 201, r
    return str(r.json()["token"])


def hammer(rounds: int, *calls: Callable[[int], Any]) -> list[list[Any]]:
    """Run each call ``rounds`` times, all of them at once on threads; their answers."""
    with ThreadPoolExecutor(max_workers=4 * len(calls)) as pool:
        futures = [[pool.submit(call, i) for i in range(rounds)] for call in calls for _ in range(4)]
        return [[f.result() for f in fs] for fs in futures]


def internal_error(r: Any) -> None:
    assert r.status == 500, r
    body = r.json()
    assert body["code"] == "internal_error" and body["errorId"] in body["detail"], body


@pytest.mark.runs_no_jobs
def test_poisoned_submissions_fail_alone(node: tuple[Daemon, Callable[[Poison], None]]) -> None:
    d, poison = node
    a, b = tenant_token(d, "acme"), tenant_token(d, "globex")
    poison(("job_definitions", "BEFORE INSERT", "NEW.name = 'poison'"))
    bad = {"schedule": "0 0 1 1 *", "queue": "q", "name": "poison"}
    numbers = itertools.count()

    def good() -> dict[str, Any]:  # names are unique per tenant
        return {"schedule": "0 0 1 1 *", "queue": "q", "name": f"fine-{next(numbers)}"}

    answers = hammer(
        25,
        lambda i: d.post("/v1/jobs", bad, token=a),
        lambda i: d.post("/v1/jobs", good(), token=b),
        lambda i: d.post("/v1/jobs/batch", {"jobs": [good(), bad, good()]}, token=a),
        lambda i: d.post("/v1/jobs/batch", {"jobs": [good(), good(), good()]}, token=b),
    )
    singles_a, singles_b, batches_a, batches_b = answers[0:4], answers[4:8], answers[8:12], answers[12:16]
    for r in itertools.chain.from_iterable(singles_a):
        internal_error(r)
    assert all(r.status == 201 for r in itertools.chain.from_iterable(singles_b)), "the other tenant never hears an error"
    for r in itertools.chain.from_iterable(batches_b):
        assert r.status == 200 and [x["status"] for x in r.json()["results"]] == [201, 201, 201], r
    for r in itertools.chain.from_iterable(batches_a):
        results = r.json()["results"]
        assert [x["status"] for x in results] == [201, 500, 201], r
        assert results[1]["errorId"]
    # everything acknowledged is there: B's 100 singles + 300 batched, A's 200 good batched
    total = {t: len(d.get(f"/v1/jobs?tenant={t}&limit=1000").json()["jobs"]) for t in ("acme", "globex")}
    assert total == {"acme": 200, "globex": 400}, total
    failed = d.events("job.submit_failed")
    assert failed and all(e["tenant"] == "acme" and e["errorId"] for e in failed)
    log = d.log_path.read_text()
    assert "Traceback" not in log


def test_poisoned_completions_cost_the_others_nothing(node: tuple[Daemon, Callable[[Poison], None]]) -> None:
    """Tenant B's worker token completes its own execution with an output the store fails on,
    over and over, heartbeating to keep its lease; the admin's command jobs on the local
    workers all run once and succeed."""
    d, poison = node
    worker = tenant_token(d, "globex", role="worker")
    submitter = tenant_token(d, "globex")
    poison(("executions", "BEFORE UPDATE", "NEW.output LIKE '%poison%'"))
    job = d.post("/v1/jobs", {"runAt": "+0s", "queue": "q", "leaseSec": 60}, token=submitter).json()["jobId"]
    grants = wait_for(lambda: d.post("/v1/workers/claim", {"workerId": "w1", "queues": ["q"]}, token=worker).json()["executions"],
                      what="the remote claim")
    xid, epoch = grants[0]["executionId"], grants[0]["leaseEpoch"]

    stop = threading.Event()
    answers: list[Any] = []

    def poisoner() -> None:
        while not stop.is_set():
            answers.append(d.post(f"/v1/executions/{xid}/complete",
                                  {"workerId": "w1", "leaseEpoch": epoch, "outcome": "succeeded", "output": "o poison"},
                                  token=worker))
            d.post(f"/v1/executions/{xid}/heartbeat", {"workerId": "w1", "leaseEpoch": epoch}, token=worker)

    threads = [threading.Thread(target=poisoner) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        jobs = [d.add_job({"runAt": "+1s", "command": "true", "leaseSec": 2, "retryPolicy": {"maxAttempts": 1}})["jobId"]
                for _ in range(60)]
        wait_for(lambda: all(e["status"] == "SUCCEEDED" for j in jobs for e in d.executions(j) or [{"status": "-"}]),
                 timeout=60, interval=0.5, what="every command job to succeed")
    finally:
        stop.set()
        for t in threads:
            t.join()
    for j in jobs:
        executions = d.executions(j)
        assert len(executions) == 1 and executions[0]["attempt"] == 1 and executions[0]["leaseEpoch"] == 1, executions
    assert d.get("/v1/dlq").json()["executions"] == []
    assert answers and all(r.status == 500 for r in answers), answers[:3]
    internal_error(answers[0])
    assert d.get(f"/v1/executions/{xid}").json()["status"] == "RUNNING", "the poisoned completion changed nothing"
    assert d.events("completion.error"), "the failing completion is logged"
    assert job


def test_a_poisoned_heartbeat_costs_its_neighbours_no_lease(node: tuple[Daemon, Callable[[Poison], None]]) -> None:
    """One local worker heartbeats two tenants' executions in one write; the renewal of one
    fails. The other keeps its lease: it runs once and succeeds."""
    d, poison = node
    acme = tenant_token(d, "acme", allow_shell=True)
    victim = d.add_job({"runAt": "+1s", "command": "sleep 4", "leaseSec": 1, "name": "victim"})["jobId"]
    r = d.post("/v1/jobs", {"runAt": "+1s", "command": "sleep 4", "leaseSec": 1, "retryPolicy": {"maxAttempts": 1}}, token=acme)
    assert r.status == 201, r
    poisoned = r.json()["jobId"]
    poison(("executions", "BEFORE UPDATE",
            f"OLD.status = 'RUNNING' AND NEW.status = 'RUNNING' AND NEW.job_id = '{poisoned}'"))
    wait_for(lambda: [e["status"] for e in d.executions(victim)] == ["SUCCEEDED"], timeout=30, what="the victim to succeed")
    (ex,) = d.executions(victim)
    assert ex["attempt"] == 1 and ex["leaseEpoch"] == 1, ex
    assert d.events("heartbeat.error"), "the failing renewal is logged"


def test_a_poisoned_start_costs_its_neighbours_nothing(node: tuple[Daemon, Callable[[Poison], None]]) -> None:
    """The dispatcher starts many tenants' executions in one write; one tenant's starts fail.
    Every other execution starts, runs once and succeeds; the poisoned ones wait, PENDING,
    and are tried again later (logged, not looped on)."""
    d, poison = node
    acme = tenant_token(d, "acme", allow_shell=True)
    poison(("executions", "BEFORE UPDATE", "OLD.status = 'PENDING' AND NEW.status = 'RUNNING' AND NEW.tenant = 'acme'"))
    poisoned = [d.post("/v1/jobs", {"runAt": "+1s", "command": "true"}, token=acme).json()["jobId"] for _ in range(3)]
    jobs = [d.add_job({"runAt": "+1s", "command": "true", "retryPolicy": {"maxAttempts": 1}})["jobId"] for _ in range(40)]
    wait_for(lambda: all(e["status"] == "SUCCEEDED" for j in jobs for e in d.executions(j) or [{"status": "-"}]),
             timeout=60, interval=0.5, what="every admin job to succeed")
    for j in jobs:
        (ex,) = d.executions(j)
        assert ex["attempt"] == 1 and ex["leaseEpoch"] == 1, ex
    assert [e["status"] for j in poisoned for e in d.executions(j)] == ["PENDING"] * 3
    failed = wait_for(lambda: d.events("dispatch.start_failed"), what="the failed starts to be logged")
    assert {e["tenant"] for e in failed} == {"acme"} and all(e["retryInMs"] >= 1000 for e in failed)
    assert not d.events("dispatch.error"), "the loop itself never failed"
    assert d.get("/v1/dlq").json()["executions"] == []


def test_a_poisoned_claim_costs_its_neighbours_no_tick(node: tuple[Daemon, Callable[[Poison], None]]) -> None:
    """The scheduler claims many tenants' due jobs in one write; the claim of one tenant's job
    fails. Every other job keeps its ticks; the failing job is set aside (logged, tried again
    later), and the scheduler loop itself never fails."""
    d, poison = node
    acme = tenant_token(d, "acme", allow_shell=True)
    poison(("executions", "BEFORE INSERT", "NEW.tenant = 'acme'"))
    poisoned = d.post("/v1/jobs", {"schedule": "* * * * * *", "command": "true"}, token=acme).json()["jobId"]
    jobs = [d.add_job({"schedule": "* * * * * *", "command": "true"})["jobId"] for _ in range(5)]
    wait_for(lambda: all(len([e for e in d.executions(j) if e["status"] == "SUCCEEDED"]) >= 4 for j in jobs),
             timeout=60, interval=0.5, what="four ticks of every admin job")
    for j in jobs:
        ticks = sorted(e["scheduledAt"] for e in d.executions(j) if e["status"] == "SUCCEEDED")
        assert len(ticks) == len(set(ticks)), ticks  # one execution per tick
    assert d.executions(poisoned) == []
    failed = wait_for(lambda: d.events("scheduler.claim_failed"), what="the set-aside job to be logged")
    assert {e["jobId"] for e in failed} == {poisoned}
    assert not d.events("scheduler.error"), "the loop itself never failed"
