"""A hostile tenant ('evil') beside a neighbour ('acme') on one real daemon: what evil sends
costs evil, gets a clear 4xx naming the problem, and never holds up acme's work or the node."""

from __future__ import annotations

import datetime
import json
from concurrent.futures import ThreadPoolExecutor

from tests.support.daemon import Daemon
from tests.support.tenants import tenant_token
from tests.support.wait import wait_for

JOB = {"schedule": "0 0 1 1 *", "http": {"url": "https://example.org/hook"}}


def test_a_body_of_many_unknown_fields_names_a_few_of_them_and_what_is_allowed(daemon: Daemon) -> None:
    """A misspelt field gets the one it is close to ("did you mean"); a 1 MiB body of 78,000
    unknown members had each of them compared with every known one, on the event loop: 9 s
    in which the node answered nobody and started nothing (node.stalled), and the detail
    listing them all was cut before it said which fields are allowed."""
    evil = tenant_token(daemon, "evil")
    body: dict[str, object] = dict(JOB)
    body.update({f"s{i}": 1 for i in range(78_000)})
    assert len(json.dumps(body)) < 1 << 20
    r = daemon.post("/v1/jobs", body, token=evil)
    assert r.status == 422, r
    problem = r.json()
    assert problem["code"] == "unknown_field" and problem["field"] == "s0", problem
    detail = problem["detail"]
    assert detail.startswith("unknown fields: s0, s1, s10, s100, ") and ", and 77,990 more (allowed: " in detail, detail
    assert detail.endswith(")") and "(allowed: " in detail and "timezone" in detail, detail
    assert daemon.get("/v1/jobs", token=evil).json()["jobs"] == []


def long_walk(d: Daemon, token: str) -> str:
    """A job observing 8 calendars of 5,000 days, from 1971 to 2080: its upcoming ticks, or
    a backfill's plan, walk 20,000 excluded days either way from today, a step each."""
    first = datetime.date(1971, 1, 1)
    names = [f"days{c}" for c in range(8)]
    for c, name in enumerate(names):
        dates = [(first + datetime.timedelta(days=c * 5_000 + i)).isoformat() for i in range(5_000)]
        r = d.request("PUT", f"/v1/calendars/{name}", {"dates": dates}, token=token)
        assert r.status == 200, r
    job = d.post("/v1/jobs", {**JOB, "schedule": "0 0 0 * * *", "calendars": names}, token=token)
    assert job.status == 201, job
    return str(job.json()["jobId"])


def test_a_walk_over_many_excluded_days_runs_beside_the_node_not_on_it(daemon: Daemon) -> None:
    """A job's upcoming ticks and a backfill's plan walk its schedule through its calendars,
    an excluded day a step: 1.5-3 s of the event loop a request for ``long_walk``'s job. A
    few such requests at once were a node that answered nobody, started nothing and heard no
    heartbeats for seconds (``node.stalled``, and reaping paused for a minute). They are
    walked in a thread, one at a time per tenant."""
    evil = tenant_token(daemon, "evil")
    job_id = long_walk(daemon, evil)
    backfill = {"from": "1971-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z", "dryRun": True}
    calls = [("GET", f"/v1/jobs/{job_id}/upcoming?count=5", None)] * 3 + [("POST", f"/v1/jobs/{job_id}/backfill", backfill)] * 2
    acme = tenant_token(daemon, "acme")
    answered = 0  # acme's requests answered while evil's walks are under way
    with ThreadPoolExecutor(len(calls)) as pool:
        walks = [pool.submit(daemon.request, *call, token=evil) for call in calls]
        while answered < 50 and not all(w.done() for w in walks):
            assert daemon.get("/v1/jobs", token=acme).status == 200
            answered += 1
        answers = [w.result() for w in walks]
    assert answered == 50, f"acme got {answered} answers in all while evil's walks ran"
    for r in answers[:3]:
        assert r.status == 200 and r.json()["next"][0] == "2080-07-07T00:00:00.000Z", r  # the first day not excluded
    for r in answers[3:]:
        assert r.status == 422 and r.json()["code"] == "backfill_too_large", r
    daemon.wait_event("job.created")  # the log is read to here
    assert daemon.events("node.stalled") == []


def test_a_dead_letter_replayed_is_a_submission_the_tenants_rate_holds(daemon: Daemon) -> None:
    """A replay makes a run as a trigger does. Uncounted, a tenant held to a submission in
    1,000 s replayed a fast-failing run's dead letter in a loop: a run, a store write and a
    ``dlq.replayed`` line each time, as fast as it could ask."""
    evil = tenant_token(daemon, "evil", allowShell=True, submitRate=0.001, submitBurst=1)
    created = daemon.post("/v1/jobs", {"runAt": "2000-01-01T00:00:00Z", "command": "exit 3",
                                       "retryPolicy": {"maxAttempts": 1}}, token=evil)  # its one token
    assert created.status == 201, created

    def dead_letters() -> list[dict[str, object]]:
        return list(daemon.get("/v1/dlq", token=evil).json()["executions"])

    (dead,) = wait_for(dead_letters, 30, what="the run's dead letter")
    r = daemon.post(f"/v1/dlq/{dead['executionId']}/replay", token=evil)
    assert r.status == 429 and r.json()["quota"] == "submitRate", r
    assert "a replayed dead letter" in r.json()["detail"] and "Retry-After" in r.headers, r
    assert [x["executionId"] for x in dead_letters()] == [dead["executionId"]]  # still there, as it was
    assert daemon.post(f"/v1/dlq/{dead['executionId']}/replay").status == 429  # the job's tenant's, whoever asks
    assert daemon.post("/v1/dlq/nosuch:1/replay", token=evil).json()["code"] == "not_found"


def test_a_tenant_asking_for_many_walks_at_once_waits_for_its_own_not_its_neighbour(daemon: Daemon) -> None:
    """Walks take turns per tenant: evil's many at once wait for each other, and acme's
    upcoming ticks are walked beside them, not after them all."""
    evil, acme = tenant_token(daemon, "evil"), tenant_token(daemon, "acme")
    evil_job = long_walk(daemon, evil)
    acme_job = daemon.post("/v1/jobs", {**JOB, "name": "daily"}, token=acme).json()["jobId"]
    with ThreadPoolExecutor(6) as pool:
        walks = [pool.submit(daemon.get, f"/v1/jobs/{evil_job}/upcoming?count=5", token=evil) for _ in range(6)]
        wait_for(lambda: any(w.done() for w in walks), 60, what="evil's first walk")  # the others wait their turn
        r = daemon.get(f"/v1/jobs/{acme_job}/upcoming?count=3", token=acme)
        pending = sum(not w.done() for w in walks)
        assert r.status == 200 and len(r.json()["next"]) == 3, r
        assert pending > 0, "acme's walk waited for all of evil's"
        assert all(w.result().status == 200 for w in walks)


def test_a_ping_with_a_failing_exit_code_and_no_status_is_a_fail(daemon: Daemon) -> None:
    """``curl -d "{\\"exitCode\\": $?}" …/ping`` at the end of a script: a status of 3 was
    recorded as a success (SUCCEEDED, exit code 3), the dead-man's window moved and nobody
    told, where ``cronwheel ping --exit-code 3`` reports a fail."""
    worker = tenant_token(daemon, "acme", role="worker")
    job = daemon.post("/v1/jobs", {"name": "backup", "expectSuccessWithin": "26h"}, token=tenant_token(daemon, "acme"))
    assert job.status == 201, job
    runs = {}
    for body in ({"exitCode": 3}, {"exitCode": 0}, {}, {"status": "success", "exitCode": 1}):
        r = daemon.post(f"/v1/jobs/{job.json()['jobId']}/ping", body, token=worker)
        assert r.status == 200, r
        runs[json.dumps(body)] = (r.json()["status"], r.json()["execution"]["status"], r.json()["execution"]["exitCode"])
    assert runs == {'{"exitCode": 3}': ("fail", "DEAD", 3), '{"exitCode": 0}': ("success", "SUCCEEDED", 0),
                    "{}": ("success", "SUCCEEDED", None), '{"status": "success", "exitCode": 1}': ("success", "SUCCEEDED", 1)}
