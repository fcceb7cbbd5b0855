"""Remote workers against a real daemon: queue targets, `cronwheel worker --url`, fencing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.support.daemon import REPO, Daemon, free_port
from tests.support.tenants import tenant_token
from tests.support.threadserver import app_in_a_thread
from tests.support.wait import wait_for

HANDLER = "tests.support.callables:remote_echo"


@pytest.fixture
def remote_worker(daemon: Daemon, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(worker_id: str, *queues: str, extra: tuple[str, ...] = (), via_env: bool = False) -> subprocess.Popen[bytes]:
        """``via_env``: the daemon and the token given as for every command, by CRONWHEEL_URL
        and CRONWHEEL_TOKEN, rather than by the worker's own --url and --token."""
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        where = ["--url", daemon.url, "--token", daemon.admin_token]
        if via_env:
            env.update(CRONWHEEL_URL=daemon.url, CRONWHEEL_TOKEN=daemon.admin_token)
            where = []
        args = [arg for q in queues for arg in ("--queue", q)]
        log = open(tmp_path / f"{worker_id}.log", "ab")  # noqa: SIM115 - the child keeps it
        p = subprocess.Popen(
            [sys.executable, "-m", "cronwheel", "worker", *where, *args, "--handler", HANDLER,
             "--worker-id", worker_id, "--concurrency", "2", "--wait", "2", *extra],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
        )  # fmt: skip
        log.close()
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


def only_execution(d: Daemon, job_id: str) -> dict[str, Any] | None:
    execs = d.executions(job_id)
    return execs[0] if len(execs) == 1 else None


def test_queue_target_is_left_to_remote_workers(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    queued = daemon.add_job({"schedule": "+0s", "queue": "q1", "payload": {"n": 1}})
    local = daemon.add_job({"schedule": "+0s", "command": "true"})
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in daemon.executions(local["jobId"])), 20, what="local job ran")
    ex = wait_for(lambda: only_execution(daemon, queued["jobId"]), 20, what="queued execution claimed")
    assert ex["status"] == "PENDING" and ex["queue"] == "q1" and ex["leaseEpoch"] == 0

    worker = remote_worker("rw-1", "q1")
    done = wait_for(lambda: (e := only_execution(daemon, queued["jobId"])) and e["status"] == "SUCCEEDED" and e,
                    30, what="remote worker ran the queued job")  # fmt: skip
    assert done["workerId"] == "rw-1" and done["leaseEpoch"] == 1
    full = daemon.get(f"/v1/executions/{done['executionId']}").json()
    assert '"payload": {"n": 1}' in full["output"] and '"leaseEpoch": 1' in full["output"]
    assert '"workerId": "rw-1"' in full["output"]  # the handler is told the lease's holder

    # SIGTERM: the worker stops claiming and exits
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_a_token_read_with_its_newline_still_works(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    """``--token "$(cat file)"`` drops the newline, but a variable set from a file's line keeps
    it: the worker sends the token without it (it claimed with a header aiohttp refused, once
    a second, for ever)."""
    job = daemon.add_job({"schedule": "+0s", "queue": "qn"})["jobId"]
    remote_worker("rw-nl", "qn", extra=("--token", daemon.admin_token + "\n"))
    wait_for(lambda: (e := only_execution(daemon, job)) and e["status"] == "SUCCEEDED", 30, what="the job ran")


@pytest.mark.runs_no_jobs
def test_a_worker_whose_token_may_not_claim_stops_saying_why(daemon: Daemon, remote_worker: Callable[..., Any],
                                                          tmp_path: Path) -> None:
    """A token the daemon refuses (401: none, unknown, revoked) or that may not claim (403: a
    metrics token) never gets a claim granted: the worker claimed once a second for ever,
    looking alive, with one warning. It stops at once, exit status 1, with an error line."""
    metrics = daemon.cli("token", "create", "--role", "metrics").stdout.strip()
    for worker_id, token, status in (("rw-401", "cw_not-a-token", 401), ("rw-403", metrics, 403)):
        p = remote_worker(worker_id, "qr", extra=("--token", token))
        assert p.wait(30) == 1
        lines = [json.loads(line) for line in (tmp_path / f"{worker_id}.log").read_text().splitlines()]
        [refused] = [r for r in lines if r["event"] == "remote_worker.refused"]
        assert refused["level"] == "error" and refused["status"] == status, refused
        assert "--role worker" in refused["hint"], refused
        assert [r["event"] for r in lines] == ["remote_worker.started", "remote_worker.refused", "remote_worker.stopped"], lines


def test_a_remote_worker_finds_its_daemon_by_the_environment_as_every_command_does(
    daemon: Daemon, remote_worker: Callable[..., Any]
) -> None:
    job = daemon.add_job({"schedule": "+0s", "queue": "qe"})["jobId"]
    remote_worker("rw-env", "qe", via_env=True)
    done = wait_for(lambda: (e := only_execution(daemon, job)) and e["status"] == "SUCCEEDED" and e, 30, what="the job ran")
    assert done["workerId"] == "rw-env"


def test_seed_shaped_body_lands_in_the_default_queue(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    body = {"schedule": "+0s", "payload": {"seed": True}, "retryPolicy": {"maxAttempts": 2}, "timeoutSec": 30}
    r = daemon.post("/v1/jobs", body, headers={"Idempotency-Key": "seed-1"})
    assert r.status == 201, r
    job_id = r.json()["jobId"]
    assert daemon.get(f"/v1/jobs/{job_id}").json()["target"] == {"queue": "default"}
    remote_worker("rw-default", "default")
    done = wait_for(lambda: (e := only_execution(daemon, job_id)) and e["status"] == "SUCCEEDED" and e,
                    30, what="the default queue's job ran")  # fmt: skip
    assert done["queue"] == "default" and done["workerId"] == "rw-default"


def test_a_claim_that_finds_nothing_does_not_wait_for_the_writer(daemon: Daemon) -> None:
    """A claim that found nothing still took the store's write transaction, so a tenant's idle
    workers polling in a loop cost every neighbour's claims and results their place at the
    writer. An empty claim is a read: it is answered while another process holds the store's
    write lock (a claim with work waits for the lock, and takes it then)."""
    job = daemon.add_job({"schedule": "+0s", "queue": "busy"})
    wait_for(lambda: (e := only_execution(daemon, job["jobId"])) and e["status"] == "PENDING", 30,
             what="the queued execution")  # fmt: skip
    db = sqlite3.connect(daemon.data_dir / "cronwheel.db", timeout=10, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")  # the write lock, held by another process
        for _ in range(100):
            r = daemon.post("/v1/workers/claim", {"workerId": "w", "queues": ["idle"], "max": 5, "waitSec": 0})
            assert r.status == 200 and r.json() == {"executions": []}, r
        assert db.in_transaction  # all answered under the held lock
    finally:
        db.execute("ROLLBACK")
        db.close()
    r = daemon.post("/v1/workers/claim", {"workerId": "w", "queues": ["busy", "idle"], "max": 5, "waitSec": 10})
    assert r.status == 200 and [g["jobId"] for g in r.json()["executions"]] == [job["jobId"]], r


def test_claim_long_poll_answers_empty_then_wakes_on_a_new_execution(daemon: Daemon) -> None:
    r = daemon.post("/v1/workers/claim", {"workerId": "w", "queues": ["idle"], "max": 5, "waitSec": 0})
    assert r.status == 200 and r.json() == {"executions": []}
    r = daemon.post("/v1/workers/claim", {"workerId": "w", "queues": ["idle"], "max": 101})
    assert r.status == 422
    # an id is written into logs, `cronwheel history` and terminals: no control characters
    r = daemon.post("/v1/workers/claim", {"workerId": "w\x1b[2J", "queues": ["idle"]})
    assert r.status == 422 and r.json()["detail"].startswith("workerId must be text without control characters"), r
    job = daemon.add_job({"schedule": "+0s", "queue": "poll", "payload": [1], "leaseSec": 5})
    r = daemon.post("/v1/workers/claim", {"workerId": "w", "queues": ["poll"], "max": 5, "waitSec": 10})
    assert r.status == 200
    [g] = r.json()["executions"]
    assert g["jobId"] == job["jobId"] and g["leaseEpoch"] == 1 and g["attempt"] == 1
    assert g["queue"] == "poll" and g["payload"] == [1] and g["leaseSec"] == 5
    assert g["env"] == {}
    done = daemon.post(f"/v1/executions/{g['executionId']}/complete",
                       {"workerId": "w", "leaseEpoch": 1, "outcome": "succeeded"})  # fmt: skip
    assert done.status == 200 and done.json()["status"] == "SUCCEEDED"


def test_a_queue_jobs_env_goes_to_its_remote_worker(daemon: Daemon) -> None:
    job = daemon.add_job({"schedule": "+0s", "queue": "envq", "env": {"REGION": "eu-west", "EMPTY": ""}})
    r = daemon.post("/v1/workers/claim", {"workerId": "w", "queues": ["envq"], "max": 1, "waitSec": 10})
    [g] = r.json()["executions"]
    assert g["jobId"] == job["jobId"] and g["env"] == {"REGION": "eu-west", "EMPTY": ""}


def test_killed_remote_worker_loses_its_lease_to_another(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    job = daemon.add_job({"schedule": "+0s", "queue": "q1", "payload": {"hangOnEpoch": 1}, "leaseSec": 1,
                          "retryPolicy": {"maxAttempts": 3, "initialBackoffSec": 0}})  # fmt: skip
    first = remote_worker("rw-a", "q1")
    running = wait_for(lambda: (e := only_execution(daemon, job["jobId"])) and e["status"] == "RUNNING" and e,
                       30, what="worker A running the job")  # fmt: skip
    assert running["workerId"] == "rw-a" and running["leaseEpoch"] == 1
    first.send_signal(signal.SIGKILL)
    first.wait(10)

    # the lease (1 s) expires: the reaper retries it, and another worker takes it at epoch 2
    remote_worker("rw-b", "q1")
    done = wait_for(lambda: (e := only_execution(daemon, job["jobId"])) and e["status"] == "SUCCEEDED" and e,
                    30, what="worker B finished the job")  # fmt: skip
    assert done["workerId"] == "rw-b" and done["leaseEpoch"] >= 2  # > 2 only if a 1 s lease lapsed under load
    second = wait_for(lambda: daemon.event("execution.started", executionId=done["executionId"], leaseEpoch=2),
                      10, what="the epoch-2 start event")  # fmt: skip
    assert second["worker"] == "rw-b" and second["attempt"] == 2

    # the zombie's stale epoch is fenced
    stale = daemon.post(f"/v1/executions/{done['executionId']}/complete",
                        {"workerId": "rw-a", "leaseEpoch": 1, "outcome": "succeeded"})  # fmt: skip
    assert stale.status == 409
    beat = daemon.post(f"/v1/executions/{done['executionId']}/heartbeat", {"workerId": "rw-a", "leaseEpoch": 1})
    assert beat.status == 409


def test_worker_tokens_claim_their_tenants_executions_only(daemon: Daemon) -> None:
    tokens = {}
    for tenant in ("acme", "globex"):
        assert daemon.post("/v1/tenants", {"name": tenant}).status == 201
        r = daemon.post("/v1/tokens", {"tenant": tenant, "role": "worker"})
        assert r.status == 201, r
        tokens[tenant] = r.json()["token"]
    refused = daemon.post("/v1/jobs", {"schedule": "+0s", "queue": "shared"}, token=tokens["acme"])
    assert refused.status == 403  # a worker token may not submit jobs
    submitter = daemon.post("/v1/tokens", {"tenant": "acme", "role": "tenant"}).json()["token"]
    r = daemon.post("/v1/jobs", {"schedule": "+0s", "queue": "shared"}, token=submitter)
    assert r.status == 201, r
    job = r.json()
    wait_for(lambda: only_execution(daemon, job["jobId"]), 20, what="the execution claimed by the scheduler")
    body = {"workerId": "w", "queues": ["shared"], "max": 5, "waitSec": 0}
    assert daemon.post("/v1/workers/claim", body, token=tokens["globex"]).json() == {"executions": []}
    [g] = daemon.post("/v1/workers/claim", body, token=tokens["acme"]).json()["executions"]
    assert g["jobId"] == job["jobId"] and g["tenant"] == "acme"


def test_a_shared_worker_takes_tenants_in_turns_not_the_oldest_flood_first(daemon: Daemon) -> None:
    """A worker of no tenant (the admin's token) claiming one run at a time: evil's 30 runs,
    queued before acme's 3, take turns with them (oldest first and then by name, acme's waited
    for all 30 or went first)."""
    evil, acme = tenant_token(daemon, "evil"), tenant_token(daemon, "acme")
    past = "2000-01-01T00:00:00Z"
    flood = daemon.post("/v1/jobs/batch", {"jobs": [{"runAt": past, "queue": "shared"}] * 30}, token=evil)
    assert flood.status == 200, flood
    jobs = [r["jobId"] for r in flood.json()["results"]]
    wait_for(lambda: all(only_execution(daemon, j) for j in jobs), 30, what="evil's runs to queue")
    later = [daemon.post("/v1/jobs", {"runAt": past, "queue": "shared"}, token=acme).json()["jobId"] for _ in range(3)]
    wait_for(lambda: all(only_execution(daemon, j) for j in later), 30, what="acme's runs to queue")
    body = {"workerId": "pool-1", "queues": ["shared"], "max": 1, "waitSec": 0}
    served = [g["tenant"] for _ in range(7) for g in daemon.post("/v1/workers/claim", body).json()["executions"]]
    # all were due at the same past instant: which tenant goes first is a tie
    assert served in (["evil", "acme"] * 3 + ["evil"], ["acme", "evil"] * 3 + ["evil"]), served


def test_sigterm_lets_runs_finish_up_to_the_grace_then_fails_the_rest(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    job = daemon.add_job({"schedule": "+0s", "queue": "q1", "payload": {"hangOnEpoch": 1}, "leaseSec": 30,
                          "retryPolicy": {"maxAttempts": 1}})  # fmt: skip
    worker = remote_worker("rw-term", "q1", extra=("--grace", "0.5"))
    wait_for(lambda: (e := only_execution(daemon, job["jobId"])) and e["status"] == "RUNNING", 30, what="running")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(20) == 0
    ex = wait_for(lambda: (e := only_execution(daemon, job["jobId"])) and e["status"] == "DEAD" and e, 10,
                  what="the unfinished run reported failed")  # fmt: skip
    assert ex["workerId"] == "rw-term" and "worker stopped" in ex["error"]


def test_a_result_with_unfit_text_is_reported_scrubbed(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    """The API refuses lone surrogates and NUL; a handler's result holding them is still
    reported (they become U+FFFD), by a remote worker and by a local one, so the run is not
    lost and retried."""
    queued = daemon.add_job({"runAt": "+0s", "queue": "q1"})["jobId"]
    local = daemon.add_job({"runAt": "+0s", "python": "tests.support.callables:unfit_text"})["jobId"]
    remote_worker("rw-1", "q1", extra=("--handler", "tests.support.callables:unfit_text"))
    for job in (queued, local):
        done = wait_for(lambda job=job: (e := only_execution(daemon, job)) and e["status"] == "SUCCEEDED" and e,
                        30, what="the run to be reported")  # fmt: skip
        assert done["attempt"] == 1
        # the return value as JSON text: the surrogate replaced, the NUL written as JSON writes it
        assert daemon.get(f"/v1/executions/{done['executionId']}").json()["output"] == '"out\ufffd\\u0000end"'


def test_a_result_neither_json_nor_repr_can_write_is_reported(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    """A return value nested past the interpreter's stack (its repr fails as its JSON does) or
    whose repr raises: the remote worker's run task died with the RecursionError ("Task
    exception was never retrieved") and the run stayed RUNNING until its lease ran out; the
    local worker failed a run that had succeeded. Now the run succeeds, its output saying why
    the value is not shown, on both."""
    for payload in ("deep", "repr"):
        body = {"runAt": "+0s", "payload": payload, "retryPolicy": {"maxAttempts": 1}, "leaseSec": 600}
        queued = daemon.add_job({**body, "queue": f"q-{payload}"})["jobId"]
        local = daemon.add_job({**body, "python": "tests.support.callables:unshowable"})["jobId"]
        remote_worker(f"rw-{payload}", f"q-{payload}", extra=("--handler", "tests.support.callables:unshowable"))
        for job in (local, queued):
            done = wait_for(lambda job=job: (e := only_execution(daemon, job)) and e["status"] not in ("PENDING", "RUNNING") and e,
                            30, what="the run to be reported")  # fmt: skip
            assert done["status"] == "SUCCEEDED" and done["attempt"] == 1, done
            output = daemon.get(f"/v1/executions/{done['executionId']}").json()["output"]
            kind, why = ("list", "RecursionError") if payload == "deep" else ("_ReprRaises", "RuntimeError: no repr")
            assert output.startswith(f"<a {kind} that cannot be shown: {why}"), output


def test_a_handler_that_raises_is_reported_as_a_local_worker_reports_it(
    daemon: Daemon, remote_worker: Callable[..., Any]
) -> None:
    """The exception is the error (``ValueError: bad input``), the handler's own frames are the
    output, on a remote worker as on a local one (tests/integration/test_python_target_raises.py)."""
    body = {"runAt": "+0s", "payload": "bad", "retryPolicy": {"maxAttempts": 1}}
    queued = daemon.add_job({**body, "queue": "q1"})["jobId"]
    local = daemon.add_job({**body, "python": "tests.support.callables:bad_input"})["jobId"]
    remote_worker("rw-1", "q1", extra=("--handler", "tests.support.callables:bad_input"))
    reported = []
    for job in (queued, local):
        done = wait_for(lambda job=job: (e := only_execution(daemon, job)) and e["status"] == "DEAD" and e,
                        30, what="the run to be reported")  # fmt: skip
        full = daemon.get(f"/v1/executions/{done['executionId']}").json()
        reported.append((full["error"], full["output"]))
    assert reported[0] == reported[1], reported
    error, output = reported[0]
    assert error == "ValueError: bad input"
    assert output.startswith("Traceback (most recent call last):\n") and output.endswith("\nValueError: bad input"), output
    assert os.path.join("cronwheel", "worker") not in output, output


def test_run_wait_on_a_queue_job_says_a_remote_worker_must_claim_it(daemon: Daemon, remote_worker: Callable[..., Any]) -> None:
    """`cronwheel run JOB --wait` on a queue job waits for a remote worker: with none running
    it waited in silence, for ever."""
    daemon.add_job({"name": "thumbs", "schedule": "@triggered", "queue": "qw"})
    env = {**os.environ, "CRONWHEEL_URL": daemon.url, "CRONWHEEL_TOKEN": daemon.admin_token}

    def run_wait(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cronwheel", "run", "thumbs", "--wait", *extra],
                              capture_output=True, text=True, timeout=60, env=env)  # fmt: skip

    alone = run_wait("--timeout", "0.5s")
    assert alone.returncode == 124, alone.stderr
    # the command as it runs: a remote worker needs the daemon's HTTP address and a token
    hint = f"(queue 'qw': it starts when a remote worker claims it, e.g. `cronwheel worker --url {daemon.url} --token TOKEN --queue qw"
    assert hint in alone.stderr, alone.stderr
    remote_worker("rw-wait", "qw")
    served = run_wait("--timeout", "30s")
    assert served.returncode == 0 and "SUCCEEDED" in served.stderr, served.stderr


def test_a_result_sent_while_the_daemon_restarts_is_sent_again_not_run_twice(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    """The run ends while its daemon restarts: the completion finds nothing listening, and is
    sent again once the daemon is back, well within the lease (the old worker dropped it, and
    the job ran a second time once the lease expired)."""
    port = free_port()  # the same address after the restart, as a real deployment has
    d = make_daemon(args=("--http", f"127.0.0.1:{port}"))
    gate = tmp_path / "gate"
    job = d.add_job({"schedule": "+0s", "queue": "q1", "payload": {"waitFor": str(gate)}, "leaseSec": 60})
    log = tmp_path / "rw.log"
    with open(log, "ab") as sink:
        worker = subprocess.Popen(
            [sys.executable, "-m", "cronwheel", "worker", "--url", d.url, "--token", d.admin_token, "--queue", "q1",
             "--handler", HANDLER, "--worker-id", "rw-restart", "--wait", "2"],
            stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path,
        )  # fmt: skip
    try:
        wait_for(lambda: (e := only_execution(d, job["jobId"])) and e["status"] == "RUNNING", 30, what="the run")
        assert d.stop() == 0
        gate.touch()  # the handler returns while no daemon listens
        # the worker tried to report (complete_retrying; the old worker gave up: complete_failed)
        wait_for(lambda: "remote_worker.complete_" in log.read_text(), 20, what="the result to find no daemon")
        d.start()
        done = wait_for(lambda: (e := only_execution(d, job["jobId"])) and e["status"] == "SUCCEEDED" and e, 20,
                        what="the result applied after the restart")  # fmt: skip
        assert done["leaseEpoch"] == 1 and done["workerId"] == "rw-restart"
        recovered = wait_for(lambda: [json.loads(line) for line in log.read_text().splitlines() if "claim_recovered" in line],
                             20, what="the worker's claims to succeed again")  # fmt: skip
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(15)
    # the claims the worker made while its daemon stopped heard 503s or found nothing listening,
    # never a 500; one warning for the outage, however many claims failed, and one line when it ended
    text = log.read_text()
    assert "HTTP 500" not in text and "complete_failed" not in text, text
    assert text.count("remote_worker.claim_failed") == 1 and recovered[0]["failedClaims"] >= 1, text


def test_a_stopping_node_refuses_new_claims_rather_than_answering_them_empty_at_once(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    """While a node drains, its long polls answer at once (so that its API can close). A claim
    answered empty at once would be asked again at once, a worker spinning against the node
    (2,000 claims in 3 s were seen) for the whole drain: new claims get 503 with Retry-After."""
    d = make_daemon(args=("--grace-sec", "60"))
    started, release = tmp_path / "started", tmp_path / "release"
    d.add_job({"runAt": "+0s", "command": f"touch {started}; while [ ! -e {release} ]; do sleep 0.05; done"})
    wait_for(started.exists, what="the local run that holds the stop")
    claim = {"workerId": "rw-drain", "queues": ["q1"], "max": 1, "waitSec": 20}
    assert d.proc is not None
    d.proc.send_signal(signal.SIGTERM)
    try:
        wait_for(lambda: d.status().get("stopping"), what="the node to be stopping")
        refused = d.post("/v1/workers/claim", claim)
        assert refused.status == 503 and refused.headers.get("Retry-After") == "1", refused
        assert "stopping" in refused.json()["detail"]
    finally:
        release.touch()
    assert d.proc.wait(30) == 0


def test_an_outage_is_one_warning_and_one_line_when_it_ends(tmp_path: Path) -> None:
    """A daemon that refuses claims for a while (a failover's 503s) costs the worker's log one
    warning, not one a second, and a line with the count when claims succeed again. The daemon
    is played by a small HTTP server: a real one cannot be held in a 503 streak on cue."""
    calls: list[int] = []

    async def claim(request: web.Request) -> web.Response:
        calls.append(1)
        if len(calls) <= 3:
            return web.json_response({"status": 503, "detail": "the store is failing over"}, status=503,
                                     headers={"Retry-After": "1"})  # fmt: skip
        return web.json_response({"executions": []})

    def make() -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/workers/claim", claim)
        return app

    log = tmp_path / "rw.log"
    with app_in_a_thread(make) as url, open(log, "ab") as sink:
        worker = subprocess.Popen(
            [sys.executable, "-m", "cronwheel", "worker", "--url", url, "--token", "t", "--queue", "q1",
             "--handler", HANDLER, "--worker-id", "rw-outage", "--wait", "1"],
            stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path,
        )  # fmt: skip
        try:
            wait_for(lambda: "claim_recovered" in log.read_text(), 30, what="the claims to succeed again")
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(15)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert [e["event"] for e in lines if e["event"].startswith("remote_worker.claim_")] == [
        "remote_worker.claim_failed", "remote_worker.claim_recovered"], lines
    assert next(e for e in lines if e["event"] == "remote_worker.claim_recovered")["failedClaims"] == 3
