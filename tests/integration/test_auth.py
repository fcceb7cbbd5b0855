"""The trust boundary against a real daemon: bearer tokens over TCP, the admin token file, the
local socket, roles, tenant isolation (404, not 403), and who may run what."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

WEB = {"schedule": "0 0 1 1 *", "http": {"url": "https://hooks.example.com/tick"}}


def tenant_token(d: Daemon, tenant: str, role: str = "tenant", **settings: Any) -> str:
    """Create the tenant (if needed) and a token for it, as the admin CLI would."""
    if tenant not in [t["name"] for t in d.get("/v1/tenants").json()["tenants"]]:
        r = d.post("/v1/tenants", {"name": tenant, **settings})
        assert r.status == 201, r
    r = d.post("/v1/tokens", {"tenant": tenant, "role": role})
    assert r.status == 201, r
    return str(r.json()["token"])


def problem(r: Any, status: int) -> dict[str, Any]:
    assert r.status == status, r
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    body = r.json()
    assert body["status"] == status and "Traceback" not in json.dumps(body)
    return dict(body)


# ---------------------------------------------------------------- tokens and the admin token file


@pytest.mark.runs_no_jobs
def test_tcp_needs_a_bearer_token_and_healthz_stays_open(daemon: Daemon) -> None:
    assert daemon.get("/healthz", token=None).status == 200
    for path in ("/v1/jobs", "/v1/status", "/v1/tenants", "/v1/openapi.json", "/metrics", "/v1/nope"):
        r = daemon.get(path, token=None)
        body = problem(r, 401)
        assert r.headers["WWW-Authenticate"].startswith("Bearer"), path
        assert "Bearer" in body["detail"]
    r = daemon.post("/v1/jobs", WEB, token=None)
    problem(r, 401)
    r = daemon.get("/v1/jobs", token="cw_" + "x" * 43)
    assert "invalid_token" in r.headers["WWW-Authenticate"]
    problem(r, 401)
    for header in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer a b", "Bearer " + "x" * 5000):
        problem(daemon.request("GET", "/v1/jobs", token=None, headers={"Authorization": header}), 401)
    assert daemon.get("/v1/jobs").status == 200  # the admin token
    assert daemon.get("/v1/jobs").json()["jobs"] == []


def test_first_start_writes_an_admin_token_file_that_survives_restarts(make_daemon: Any) -> None:
    d: Daemon = make_daemon(workers=1)
    path = d.data_dir / "admin-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(d.data_dir.stat().st_mode) == 0o700
    token = path.read_text().strip()
    assert token.startswith("cw_") and len(token) >= 40
    created = d.event("auth.admin_token_created")
    assert created is not None and created["path"] == str(path.resolve())
    assert not list(d.data_dir.glob(".admin-token*")), "no temporary file left behind"
    d.stop()
    d.start()
    assert path.read_text().strip() == token, "a valid token is kept across restarts"
    assert d.get("/v1/status").status == 200
    # a file that no longer holds a valid token is replaced (e.g. the store was reset)
    d.stop()
    path.write_text("cw_garbage\n")
    d.start()
    assert path.read_text().strip() not in (token, "cw_garbage")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert d.get("/v1/status").status == 200
    # no secret ever reaches the log
    log = d.log_path.read_text()
    assert token not in log and path.read_text().strip() not in log


@pytest.mark.runs_no_jobs
def test_tenants_and_tokens_through_the_cli(daemon: Daemon) -> None:
    res = daemon.cli("tenant", "add", "acme", "--weight", "3", "--max-running", "2", "--rate", "5", "--http-allow", "api.acme.test,*.hooks.test", "--json")
    assert res.returncode == 0, res.stderr
    acme = json.loads(res.stdout)
    assert (acme["weight"], acme["maxRunning"], acme["submitRate"], acme["httpAllow"]) == (3, 2, 5.0, ["api.acme.test", "*.hooks.test"])
    res = daemon.cli("tenant", "add", "acme")
    assert res.returncode == 1 and "exists" in res.stderr
    res = daemon.cli("tenant", "set", "acme", "--max-running", "none", "--allow-shell", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["maxRunning"] is None and json.loads(res.stdout)["allowShell"] is True
    res = daemon.cli("tenant", "set", "ghost", "--weight", "2")  # docs/security.md's first steps, without the add
    assert res.returncode == 1 and "no tenant 'ghost' (create it first: cronwheel tenant add ghost)" in res.stderr
    res = daemon.cli("tenant", "ls")
    assert res.returncode == 0 and "acme" in res.stdout and "default" in res.stdout

    res = daemon.cli("token", "create", "--tenant", "acme", "--name", "ci")
    assert res.returncode == 0, res.stderr
    secret = res.stdout.strip()
    assert secret.startswith("cw_") and "only time" in res.stderr
    assert daemon.get("/v1/jobs", token=secret).status == 200
    res = daemon.cli("token", "create", "--tenant", "ghost")
    assert res.returncode == 1 and "no tenant" in res.stderr
    res = daemon.cli("token", "ls", "--json")
    listed = json.loads(res.stdout)
    assert secret not in res.stdout and all("token" not in t for t in listed)
    (mine,) = [t for t in listed if t["name"] == "ci"]
    assert (mine["role"], mine["tenant"], mine["revokedAt"]) == ("tenant", "acme", None)
    res = daemon.cli("token", "revoke", mine["tokenId"])
    assert res.returncode == 0, res.stderr
    problem(daemon.get("/v1/jobs", token=secret), 401)  # at once
    assert secret not in daemon.log_path.read_text()


@pytest.mark.runs_no_jobs
def test_the_cli_over_tcp_without_the_admin_token_is_refused_clearly(daemon: Daemon, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_URL": daemon.url, "CRONWHEEL_DATA_DIR": str(tmp_path / "elsewhere")}
    env.pop("CRONWHEEL_TOKEN", None)
    res = subprocess.run([sys.executable, "-m", "cronwheel", "ls"], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 1 and "bearer token" in res.stderr and "Traceback" not in res.stderr
    res = subprocess.run([sys.executable, "-m", "cronwheel", "--token", daemon.admin_token, "ls"], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------- the local socket


@pytest.mark.runs_no_jobs
def test_the_local_socket_is_admin_without_a_token(daemon: Daemon) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_DATA_DIR": str(daemon.data_dir)}
    for var in ("CRONWHEEL_URL", "CRONWHEEL_TOKEN"):
        env.pop(var, None)
    res = subprocess.run([sys.executable, "-m", "cronwheel", "tenant", "add", "local-made", "--json"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE((daemon.data_dir / "api.sock").stat().st_mode) == 0o600


_OTHER_UID_CLIENT = textwrap.dedent("""
    import ctypes, os, socket, sys
    sock_path = sys.argv[1]
    # keep root's file-system uid (to reach the 0700 dir and 0600 socket) but connect with
    # another effective uid: SO_PEERCRED reports the effective uid, the daemon must refuse it
    os.setresuid(0, 65534, 0)
    ctypes.CDLL(None, use_errno=True).setfsuid(0)
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(b"GET /v1/status HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    print(data.split(b"\\r\\n", 1)[0].decode(), data.rsplit(b"\\r\\n\\r\\n", 1)[-1].decode())
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
@pytest.mark.runs_no_jobs
def test_the_local_socket_refuses_another_uid(daemon: Daemon) -> None:
    res = subprocess.run([sys.executable, "-c", _OTHER_UID_CLIENT, str(daemon.data_dir / "api.sock")],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    status, _, body = res.stdout.partition(" {")
    assert " 403 " in status, res.stdout
    assert "uid 65534" in body


# ---------------------------------------------------------------- roles and isolation


def test_a_tenant_sees_and_touches_only_its_own_jobs(daemon: Daemon) -> None:
    a = tenant_token(daemon, "alpha", allowShell=True)
    b = tenant_token(daemon, "beta")
    job = daemon.post("/v1/jobs", {"runAt": "2000-01-01T00:00:00Z", "command": "exit 3",
                                   "retryPolicy": {"maxAttempts": 1}}, token=a).json()["jobId"]
    later = daemon.post("/v1/jobs", WEB, token=a).json()["jobId"]
    wait_for(lambda: daemon.get("/v1/dlq", token=a).json()["executions"], 20, what="alpha's dead letter")
    (dead,) = daemon.get("/v1/dlq", token=a).json()["executions"]
    xid = dead["executionId"]
    assert dead["tenant"] == "alpha"

    # beta: every one of alpha's ids reads as absent (404, not 403: ids do not leak)
    for method, path in [
        ("GET", f"/v1/jobs/{job}"), ("GET", f"/v1/jobs/{job}/executions"), ("DELETE", f"/v1/jobs/{later}"),
        ("POST", f"/v1/jobs/{later}/pause"), ("POST", f"/v1/jobs/{later}/resume"), ("POST", f"/v1/jobs/{later}/trigger"),
        ("GET", f"/v1/executions/{xid}"), ("POST", f"/v1/dlq/{xid}/replay"), ("DELETE", f"/v1/dlq/{xid}"),
    ]:
        problem(daemon.request(method, path, token=b), 404)
    for path in ("heartbeat", "complete", "effects"):
        body = {"workerId": "w", "leaseEpoch": 1, "outcome": "succeeded", "key": "k"}
        body = {k: v for k, v in body.items() if path == "complete" or k not in ("outcome",)}
        body = {k: v for k, v in body.items() if path == "effects" or k != "key"}
        problem(daemon.post(f"/v1/executions/{xid}/{path}", body, token=b), 404)
    assert daemon.get("/v1/jobs", token=b).json()["jobs"] == []
    assert daemon.get("/v1/dlq", token=b).json()["executions"] == []
    assert {j["jobId"] for j in daemon.get("/v1/jobs", token=a).json()["jobs"]} == {job, later}
    assert daemon.get(f"/v1/jobs/{later}", token=a).json()["status"] == "ACTIVE", "beta changed nothing"
    assert daemon.get(f"/v1/executions/{xid}").status == 200  # admin sees everything
    assert {j["tenant"] for j in daemon.get("/v1/jobs").json()["jobs"]} == {"alpha"}
    # ?tenant= narrows an admin's list; for a tenant token another tenant's list is empty
    assert daemon.post("/v1/jobs", WEB, token=b).status == 201
    assert {j["tenant"] for j in daemon.get("/v1/jobs?tenant=beta").json()["jobs"]} == {"beta"}
    assert {j["jobId"] for j in daemon.get("/v1/jobs?tenant=alpha&limit=1000").json()["jobs"]} == {job, later}
    assert daemon.get("/v1/jobs?tenant=alpha", token=b).json()["jobs"] == []
    assert len(daemon.get("/v1/jobs?tenant=alpha", token=a).json()["jobs"]) == 2
    assert problem(daemon.get("/v1/jobs?tenant=%3Cscript%3E"), 400)["field"] == "tenant"
    out = daemon.cli("ls", "--tenant", "beta", "--json")
    assert out.returncode == 0 and {j["tenant"] for j in json.loads(out.stdout)} == {"beta"}, out.stderr
    # alpha can manage its own
    assert daemon.post(f"/v1/dlq/{xid}/replay", token=a).status == 200
    assert daemon.request("DELETE", f"/v1/jobs/{later}", token=a).status == 200


@pytest.mark.runs_no_jobs
def test_idempotency_keys_are_per_tenant(daemon: Daemon) -> None:
    a = tenant_token(daemon, "alpha")
    b = tenant_token(daemon, "beta")
    ra = daemon.post("/v1/jobs", WEB, token=a, headers={"Idempotency-Key": "same"})
    rb = daemon.post("/v1/jobs", {**WEB, "schedule": "0 0 2 1 *"}, token=b, headers={"Idempotency-Key": "same"})
    assert ra.status == rb.status == 201 and ra.json()["jobId"] != rb.json()["jobId"]
    again = daemon.post("/v1/jobs", WEB, token=a, headers={"Idempotency-Key": "same"})
    assert again.status == 201 and again.json() == ra.json() and again.headers.get("Idempotent-Replayed") == "true"


def test_roles_worker_tokens_only_work_and_only_admins_administer(daemon: Daemon) -> None:
    t = tenant_token(daemon, "alpha", allowShell=True)
    w = tenant_token(daemon, "alpha", role="worker")
    r = problem(daemon.post("/v1/jobs", WEB, token=w), 403)
    assert "worker token" in r["detail"]
    for path in ("/v1/jobs", "/v1/dlq", "/v1/tenants", "/v1/status"):
        problem(daemon.get(path, token=w), 403)
    for path in ("/v1/tenants", "/v1/tokens", "/v1/status", "/metrics", "/v1/events"):
        problem(daemon.get(path, token=t), 403)
    problem(daemon.post("/v1/tokens", {"role": "admin"}, token=t), 403)
    problem(daemon.request("PATCH", "/v1/tenants/alpha", {"allowShell": True}, token=t), 403)
    assert daemon.get("/v1/openapi.json", token=w).status == 200

    # a worker token of alpha drives alpha's executions (fenced as always)
    job = daemon.post("/v1/jobs", {"runAt": "2000-01-01T00:00:00Z", "queue": "remote"}, token=t).json()["jobId"]
    xid = wait_for(lambda: daemon.get(f"/v1/jobs/{job}/executions", token=t).json()["executions"], 20)[0]["executionId"]
    r = daemon.post(f"/v1/executions/{xid}/heartbeat", {"workerId": "w", "leaseEpoch": 99}, token=w)
    assert r.status == 409, r
    # and pings its tenant's jobs (a crontab line elsewhere needs no more), never another's
    assert daemon.post(f"/v1/jobs/{job}/ping", {}, token=w).status == 200
    beta = tenant_token(daemon, "beta")
    other = daemon.post("/v1/jobs", {"runAt": "+1h", "queue": "remote"}, token=beta).json()["jobId"]
    problem(daemon.post(f"/v1/jobs/{other}/ping", {}, token=w), 404)


@pytest.mark.runs_no_jobs
def test_a_metrics_token_reads_metrics_and_nothing_else(daemon: Daemon) -> None:
    """What a Prometheus scraper should hold: /metrics, and no jobs, status or events."""
    problem(daemon.post("/v1/tokens", {"role": "metrics", "tenant": "default"}), 422)
    created = daemon.post("/v1/tokens", {"role": "metrics", "name": "prometheus"})
    assert created.status == 201, created
    assert created.json()["role"] == "metrics" and created.json().get("tenant") is None
    m = str(created.json()["token"])
    r = daemon.get("/metrics", token=m)
    assert r.status == 200 and b"cronwheel_executions_started" in r.body
    for path in ("/v1/jobs", "/v1/dlq", "/v1/status", "/v1/events", "/v1/tenants", "/v1/tokens", "/v1/herd"):
        assert "a metrics or admin token" not in problem(daemon.get(path, token=m), 403)["detail"]
    problem(daemon.post("/v1/jobs", WEB, token=m), 403)
    problem(daemon.post("/v1/tokens", {"role": "admin"}, token=m), 403)
    assert daemon.get("/healthz").status == 200
    t = tenant_token(daemon, "beta")
    assert "a metrics or admin token" in problem(daemon.get("/metrics", token=t), 403)["detail"]
    out = daemon.cli("token", "create", "--role", "metrics", "--name", "scraper")
    assert out.returncode == 0, out.stderr


def test_code_targets_need_admin_or_allow_shell(daemon: Daemon, tmp_path: Path) -> None:
    plain = tenant_token(daemon, "plain")
    for target in ({"command": "id"}, {"python": "os:getcwd"}):
        body = problem(daemon.post("/v1/jobs", {"runAt": "2000-01-01T00:00:00Z", **target}, token=plain), 403)
        assert body["field"] == next(iter(target)) and "allowShell" in body["detail"]
    for target in ({"queue": "q1"}, {"http": {"url": "https://example.org/x"}}):
        assert daemon.post("/v1/jobs", {"schedule": "0 0 1 1 *", **target}, token=plain).status == 201
    assert len(daemon.get("/v1/jobs", token=plain).json()["jobs"]) == 2

    shell = tenant_token(daemon, "shell", allowShell=True)
    out = tmp_path / "ran"
    r = daemon.post("/v1/jobs", {"runAt": "2000-01-01T00:00:00Z", "command": f"touch {out}"}, token=shell)
    assert r.status == 201, r
    wait_for(out.exists, 20, what="the granted tenant's command to run")
    # revoking the grant refuses new ones at once
    assert daemon.request("PATCH", "/v1/tenants/shell", {"allowShell": False}).status == 200
    problem(daemon.post("/v1/jobs", {"runAt": "2000-01-01T00:00:00Z", "command": "true"}, token=shell), 403)


def test_http_targets_follow_the_allow_lists(make_daemon: Any) -> None:
    d: Daemon = make_daemon(workers=1, args=("--http-allow", "hooks.example.com,10.0.0.1"))
    free = tenant_token(d, "free")  # no list of its own: the daemon's
    own = tenant_token(d, "own", httpAllow=["*.acme.test"])

    def submit(token: str, url: str) -> int:
        return d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "http": {"url": url}}, token=token).status

    assert submit(free, "https://hooks.example.com/a") == 201
    assert submit(free, "http://10.0.0.1:8080/a") == 201
    body = problem(d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "http": {"url": "http://169.254.169.254/latest"}}, token=free), 403)
    assert body["field"] == "http.url" and "169.254.169.254" in body["detail"]
    assert submit(own, "https://api.acme.test/x") == 201
    assert submit(own, "https://hooks.example.com/a") == 403  # its own list wins
    assert submit(own, "https://acme.test.evil.com/") == 403
    # admins are not bound by the lists (they may run commands anyway)
    assert d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "http": {"url": "http://169.254.169.254/"}}).status == 201
    bad = d.post("/v1/tenants", {"name": "bad", "httpAllow": ["not a host!"]})
    assert problem(bad, 422)["field"] == "httpAllow[0]"


@pytest.mark.runs_no_jobs
def test_tenant_and_token_bodies_are_validated(daemon: Daemon) -> None:
    for body, field in [
        ({"name": "a b"}, "name"), ({"name": "x", "weight": 0}, "weight"), ({"name": "x", "weight": "2"}, "weight"),
        ({"name": "x", "maxRunning": -1}, "maxRunning"), ({"name": "x", "submitRate": 0}, "submitRate"),
        ({"name": "x", "submitRate": 1e-300}, "submitRate"),
        ({"name": "x", "allowShell": "yes"}, "allowShell"), ({"name": "x", "color": "red"}, "color"),
    ]:
        assert problem(daemon.post("/v1/tenants", body), 422)["field"] == field, body
    problem(daemon.post("/v1/tenants", [1]), 400)
    problem(daemon.request("PATCH", "/v1/tenants/default", {}), 422)
    problem(daemon.request("PATCH", "/v1/tenants/ghost", {"weight": 2}), 404)
    assert problem(daemon.post("/v1/tokens", {"role": "root", "tenant": "default"}), 422)["field"] == "role"
    assert problem(daemon.post("/v1/tokens", {"role": "tenant"}), 422)["field"] == "tenant"
    assert problem(daemon.post("/v1/tokens", {"role": "admin", "tenant": "default"}), 422)["field"] == "tenant"
    problem(daemon.post("/v1/tokens", {"tenant": "ghost"}), 404)
    problem(daemon.request("DELETE", "/v1/tokens/../../etc"), 404)
    problem(daemon.request("DELETE", "/v1/tokens/tk_0123456789abcdef"), 404)
    created = daemon.post("/v1/tokens", {"role": "admin", "name": "ops"})
    assert created.status == 201 and created.headers["Cache-Control"] == "no-store"
    assert daemon.get("/v1/status", token=created.json()["token"]).status == 200


def test_a_revoked_token_ends_the_streams_and_long_polls_it_opened(make_daemon: Callable[..., Daemon]) -> None:
    """A revoked token stops at once (docs/security.md), also on a connection opened before:
    an events follow, an output follow and a claim's long poll end within seconds, and the
    long poll hands out no lease."""
    import http.client
    import threading
    from urllib.parse import urlsplit

    d = make_daemon(args=("--grace-sec", "1"))  # the sleeper is not waited for at teardown
    tenant = tenant_token(d, "acme", allowShell=True)
    worker = tenant_token(d, "acme", role="worker")
    admin2 = d.post("/v1/tokens", {"role": "admin", "name": "second"}).json()
    parts = urlsplit(d.url)
    ended: dict[str, threading.Event] = {}
    claimed: list[Any] = []

    def stream(name: str, method: str, path: str, token: str, body: Any = None) -> None:
        done = ended[name] = threading.Event()

        def run() -> None:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            resp = conn.getresponse()
            data = resp.read()  # until the server ends it
            if name == "claim":
                claimed.append(json.loads(data))
            conn.close()
            done.set()

        threading.Thread(target=run, daemon=True).start()

    job = d.post("/v1/jobs", {"runAt": "+0s", "command": "sleep 60"}, token=tenant).json()
    assert "jobId" in job, job
    [running] = wait_for(lambda: [e for e in d.executions(job["jobId"]) if e["status"] == "RUNNING"], what="a run")
    stream("output", "GET", f"/v1/executions/{running['executionId']}/output?follow=1", tenant)
    stream("events", "GET", "/v1/events?follow=1&n=0", admin2["token"])
    stream("claim", "POST", "/v1/workers/claim", worker, {"workerId": "w1", "queues": ["q"], "waitSec": 25})
    wait_for(lambda: d.event("token.created"), what="the tokens")  # the streams are open by now
    for token_id in [t["tokenId"] for t in d.get("/v1/tokens").json()["tokens"] if t.get("tenant") == "acme"] + [admin2["tokenId"]]:
        assert d.request("DELETE", f"/v1/tokens/{token_id}").status == 200
    fresh = tenant_token(d, "acme")  # the tenant goes on with a new token: a queued job its old worker must not get
    queued = d.post("/v1/jobs", {"runAt": "+0s", "queue": "q"}, token=fresh)
    assert queued.status == 201, queued
    for name in ("output", "events", "claim"):
        wait_for(ended[name].is_set, timeout=15, what=f"the {name} stream to end once its token was revoked")
    assert claimed == [{"executions": []}]
    [pending] = d.executions(queued.json()["jobId"])  # (as the admin)
    assert pending["status"] == "PENDING" and pending.get("workerId") is None


@pytest.mark.runs_no_jobs
def test_a_tenant_token_names_only_its_own_tenant_for_calendars(daemon: Daemon) -> None:
    a, b = tenant_token(daemon, "cal-a"), tenant_token(daemon, "cal-b")
    body = {"dates": ["2026-12-25"]}
    assert daemon.request("PUT", "/v1/calendars/hol", body, token=b).status == 200
    # another tenant's name is refused, not quietly read as the caller's own (PUT ?tenant=b
    # wrote a's calendar, DELETE ?tenant=b deleted a's own, both answering success)
    for method, payload in (("PUT", body), ("DELETE", None), ("GET", None)):
        r = daemon.request(method, "/v1/calendars/hol?tenant=cal-b", payload, token=a)
        assert r.status == 403 and "own tenant only" in r.json()["detail"], (method, r)
    problem(daemon.get("/v1/calendars?tenant=cal-b", token=a), 403)
    assert problem(daemon.get("/v1/calendars?tenant=!!!", token=a), 400)["code"] == "invalid_query"
    # its own name, or none, is its own tenant
    assert daemon.request("PUT", "/v1/calendars/hol?tenant=cal-a", body, token=a).status == 200
    assert [c["name"] for c in daemon.get("/v1/calendars", token=a).json()["calendars"]] == ["hol"]
    assert daemon.get("/v1/calendars/hol", token=b).json()["tenant"] == "cal-b"
