"""The API keeps its own contract, on a real daemon: ``Allow`` and OPTIONS on every documented
path, ``null`` members as the document says, the last admin token kept, and the local owner's
way back in when every admin token is gone."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from cronwheel.api.auth import Authenticator
from cronwheel.core.tenants import ApiToken, Role, Tenant
from tests.support.daemon import REPO, ApiResponse, Daemon

OPENAPI = REPO / "cronwheel" / "api" / "openapi.json"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def problem(resp: ApiResponse, status: int) -> dict[str, Any]:
    assert resp.status == status, resp
    assert resp.headers.get("Content-Type", "").startswith("application/problem+json"), resp.headers
    body: dict[str, Any] = resp.json()
    return body


def _allow(resp: ApiResponse) -> set[str]:
    return {m.strip() for m in resp.headers.get("Allow", "").split(",") if m.strip()}


# ---------------------------------------------------------------- Allow and OPTIONS


@pytest.mark.runs_no_jobs
def test_every_documented_path_allows_exactly_its_methods(daemon: Daemon) -> None:
    """OPTIONS answers 204 with ``Allow`` = the path's documented methods + OPTIONS; every other
    method answers 405 with the same ``Allow``. ``/v1/jobs/batch`` is its own path, not a job
    named "batch" (the bug: its 405 listed DELETE and GET, the methods of ``/v1/jobs/{jobId}``)."""
    doc = json.loads(OPENAPI.read_text())
    assert "/v1/jobs/batch" in doc["paths"]
    for template, item in doc["paths"].items():
        documented = {m.upper() for m in item if m.upper() in METHODS}
        documented |= {"HEAD"} if "GET" in documented else set()  # HTTP's HEAD, for every GET
        path = re.sub(r"\{\w+\}", "x1", template)
        options = daemon.request("OPTIONS", path, body=None)
        assert options.status == 204, (template, options)
        assert _allow(options) == documented | {"OPTIONS"}, (template, options.headers.get("Allow"))
        for method in METHODS:
            resp = daemon.request(method, path, body={} if method in ("POST", "PUT", "PATCH") else None)
            if method in documented:
                assert resp.status != 405, (method, template, resp)
                continue
            body = problem(resp, 405)
            assert body["code"] == "method_not_allowed", (method, template)
            assert _allow(resp) == documented | {"OPTIONS"}, (method, template, resp.headers.get("Allow"))


@pytest.mark.runs_no_jobs
def test_a_job_named_like_a_static_path_is_still_found_by_name(daemon: Daemon) -> None:
    """``/v1/jobs/batch`` is the batch route, so the CLI's lookup by name must not stop at its 405."""
    job = daemon.add_job({"schedule": "0 0 1 1 *", "queue": "q", "name": "batch"})
    res = daemon.cli("pause", "batch")
    assert res.returncode == 0, res.stderr
    assert daemon.get(f"/v1/jobs/{job['jobId']}").json()["status"] == "PAUSED"


@pytest.mark.runs_no_jobs
def test_options_needs_the_same_credentials_as_the_path(daemon: Daemon) -> None:
    assert daemon.request("OPTIONS", "/v1/jobs", token=None).status == 401
    assert daemon.request("OPTIONS", "/healthz", token=None).status == 204  # an open path stays open


@pytest.mark.runs_no_jobs
def test_head_answers_as_get_would_without_the_body(daemon: Daemon) -> None:
    # a monitor probing HEAD / or HEAD /healthz got 401 where GET got 200
    for path in ("/", "/healthz"):
        got, head = daemon.request("GET", path, token=None), daemon.request("HEAD", path, token=None)
        assert (head.status, head.body) == (200, b""), (path, head)
        assert head.headers["Content-Type"] == got.headers["Content-Type"], path
    assert daemon.request("HEAD", "/v1/jobs", token=None).status == 401  # the same credentials as GET
    assert daemon.request("HEAD", "/v1/jobs").status == 200
    assert daemon.request("HEAD", "/v1/jobs?limt=5").status == 400
    # a followed stream is not followed for HEAD: the answer ends
    assert daemon.request("HEAD", "/v1/events?follow=1").status == 200


# ---------------------------------------------------------------- null members


@pytest.mark.parametrize("member", ["max", "waitSec"])
@pytest.mark.runs_no_jobs
def test_claim_takes_null_as_absent_as_documented(daemon: Daemon, member: str) -> None:
    """The document says ``null`` means absent for the claim's optional members; the server agrees."""
    doc = json.loads(OPENAPI.read_text())
    assert "null" in doc["components"]["schemas"]["ClaimRequest"]["properties"][member]["type"]
    resp = daemon.post("/v1/workers/claim", {"workerId": "w1", "queues": ["q"], member: None})
    assert resp.status == 200, resp
    assert resp.json() == {"executions": []}


# ---------------------------------------------------------------- the last admin token


def _tokens(daemon: Daemon, **kw: Any) -> list[dict[str, Any]]:
    resp = daemon.get("/v1/tokens", **kw)
    assert resp.status == 200, resp
    tokens: list[dict[str, Any]] = resp.json()["tokens"]
    return tokens


@pytest.mark.runs_no_jobs
def test_the_last_active_admin_token_cannot_be_revoked(daemon: Daemon) -> None:
    (first,) = [t for t in _tokens(daemon) if t["role"] == "admin"]
    body = problem(daemon.request("DELETE", f"/v1/tokens/{first['tokenId']}"), 409)
    assert body["reason"] == "last_admin_token" and "last active admin token" in body["detail"]
    assert daemon.get("/v1/status").status == 200, "the token still works"

    created = daemon.post("/v1/tokens", {"role": "admin", "name": "second"})
    assert created.status == 201, created
    second = created.json()
    resp = daemon.request("DELETE", f"/v1/tokens/{first['tokenId']}", token=second["token"])
    assert resp.status == 200 and resp.json()["revokedAt"] is not None, resp
    problem(daemon.request("DELETE", f"/v1/tokens/{second['tokenId']}", token=second["token"]), 409)
    assert daemon.get("/v1/status", token=second["token"]).status == 200


def _cli_over_socket(daemon: Daemon, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as the daemon's own user on its own machine: the default URL, the Unix socket."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_DATA_DIR": str(daemon.data_dir)}
    for var in ("CRONWHEEL_URL", "CRONWHEEL_TOKEN"):
        env.pop(var, None)
    if token is not None:
        env["CRONWHEEL_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "cronwheel", *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.runs_no_jobs
def test_the_owner_gets_back_in_over_the_local_socket(daemon: Daemon) -> None:
    """Every admin token lost: the file's token revoked with another admin token, the file
    deleted, the other token forgotten. The data directory's owner mints a new admin token
    through the Unix socket (peer credentials), and a restart writes a new admin-token file."""
    old = daemon.admin_token
    (old_id,) = [t["tokenId"] for t in _tokens(daemon) if t["role"] == "admin"]
    other = daemon.post("/v1/tokens", {"role": "admin", "name": "to be forgotten"}).json()
    assert daemon.request("DELETE", f"/v1/tokens/{old_id}", token=other["token"]).status == 200
    (daemon.data_dir / "admin-token").unlink()
    assert daemon.get("/v1/status", token=old).status == 401

    # a revoked token sent over the socket is refused, saying how to act as the admin there
    refused = _cli_over_socket(daemon, "token", "create", "--role", "admin", token=old)
    assert refused.returncode == 1 and "send no token" in refused.stderr and "Traceback" not in refused.stderr

    res = _cli_over_socket(daemon, "token", "create", "--role", "admin", "--name", "way back", "--json")
    assert res.returncode == 0, res.stderr
    fresh = json.loads(res.stdout)
    assert fresh["role"] == "admin" and fresh["name"] == "way back"
    assert daemon.get("/v1/tokens", token=fresh["token"]).status == 200  # over TCP

    # and a restart gives the file back, whatever happened to its token
    daemon.stop()
    daemon.start()
    assert daemon.admin_token not in (old, fresh["token"])
    assert daemon.get("/v1/status").status == 200


class _NoTokens:
    def tenant_config(self, name: str) -> Tenant:
        return Tenant(name)

    async def lookup_token(self, secret: str) -> ApiToken | None:
        return ApiToken("tk_0123456789abcdef", "h", Role.TENANT, "acme") if secret == "known" else None


def test_root_is_admin_on_the_local_socket_of_a_daemon_run_by_another_user(tmp_path: Path) -> None:
    """Root reaches the 0700 data dir anyway; refusing it would only hide the way back. Real
    Unix socket and SO_PEERCRED; the daemon's uid is pretended (the tests run as one user)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the point is a peer uid 0 that is not the daemon's")
    authenticate = Authenticator(_NoTokens(), uid=12345)

    async def who(request: web.Request) -> web.Response:
        principal = await authenticate(request)
        return web.json_response({"role": principal.role.value})

    async def main() -> list[bytes]:
        app = web.Application()
        app.router.add_get("/", who)
        runner = web.AppRunner(app)
        await runner.setup()
        path = str(tmp_path / "api.sock")
        await web.UnixSite(runner, path).start()
        try:
            answers = []
            for headers in (b"", b"Authorization: Bearer revoked\r\n"):
                reader, writer = await asyncio.open_unix_connection(path)
                writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + b"\r\n")
                answers.append(await reader.read())
                writer.close()
            return answers
        finally:
            await runner.cleanup()

    as_admin, with_revoked = asyncio.run(main())
    assert b" 200 " in as_admin.split(b"\r\n", 1)[0] and b'"role": "admin"' in as_admin
    # the bare app has no problem middleware: the refusal surfaces as an error, not admin
    assert b" 200 " not in with_revoked.split(b"\r\n", 1)[0]


@pytest.mark.runs_no_jobs
def test_a_page_of_big_jobs_ends_early_and_next_carries_on(daemon: Daemon) -> None:
    """A job's answer can be a megabyte (payload, env, stdin, an HTTP target's headers): a page
    of a thousand was read, held and encoded at once on the loop every tenant shares (a 57 MiB
    page of 60 KB payloads put a neighbour's p90 at 347 ms). A page now ends once its jobs pass
    4 MiB, with `next`; following it gives every job once, in order."""
    from cronwheel.api.jobs import LIST_PAGE_BYTES

    def every_page() -> list[list[str]]:
        pages: list[list[str]] = []
        after = ""
        while True:
            r = daemon.get(f"/v1/jobs?limit=1000&after={after}")
            assert r.status == 200 and len(r.body) <= LIST_PAGE_BYTES + 100_000, len(r.body)
            page = r.json()
            pages.append([j["jobId"] for j in page["jobs"]])
            if not page["next"]:
                return pages
            after = page["next"]
            assert after == pages[-1][-1]

    # small jobs come a thousand to a page, read from the store a chunk at a time
    r = daemon.post("/v1/jobs/batch", {"jobs": [{"schedule": "0 0 1 1 *", "queue": "s"}] * 1000})
    ids = [x["jobId"] for x in r.json()["results"]]
    assert every_page() == [sorted(ids)]
    payload = {"blob": "y" * 60_000}
    for _ in range(7):
        r = daemon.post("/v1/jobs/batch", {"jobs": [{"schedule": "0 0 1 1 *", "queue": "q", "payload": payload}] * 15})
        assert r.status == 200, r
        ids += [x["jobId"] for x in r.json()["results"]]
    pages = every_page()  # 105 jobs of 60 KB among them: more than one page of 4 MiB holds
    assert len(pages) >= 2 and all(len(p) < 1000 for p in pages[:-1]), [len(p) for p in pages]
    assert [j for p in pages for j in p] == sorted(ids)
