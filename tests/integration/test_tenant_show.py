"""One tenant read back: ``GET /v1/tenants/{name}`` and ``cronwheel tenant show NAME`` give its
settings, its usage against its quotas and the HTTP allow-list that applies to it, its own or
the daemon's. An admin reads any tenant, a tenant's token its own only. A real daemon and its
CLI (docs/security.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.integration.test_auth import problem, tenant_token
from tests.support.daemon import Daemon

DAEMONS_LIST = "api.example.com"  #: the daemon's --http-allow
YEARLY = {"schedule": "@yearly", "command": "true"}


def test_an_admin_reads_any_tenant_and_a_tenant_its_own_only(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(args=("--http-allow", DAEMONS_LIST))
    acme = tenant_token(d, "acme", maxJobs=10, maxRunning=3, allowShell=True)
    other = tenant_token(d, "other", httpAllow=["own.example"])
    worker = tenant_token(d, "acme", role="worker")
    ids = [d.post("/v1/jobs", YEARLY, token=acme).json()["jobId"] for _ in range(3)]
    assert d.post(f"/v1/jobs/{ids[1]}/pause", None, token=acme).status == 200
    assert d.request("DELETE", f"/v1/jobs/{ids[2]}", token=acme).status in (200, 204)

    shown = d.get("/v1/tenants/acme")
    assert shown.status == 200, shown
    t = shown.json()
    # what maxJobs counts: the ACTIVE and the PAUSED job, not the cancelled one
    assert (t["name"], t["maxJobs"], t["jobs"], t["maxRunning"], t["allowShell"]) == ("acme", 10, 2, 3, True), t
    assert t["running"] == 0 and t["queued"] == 0 and t["quotaWaiting"] is False, t
    # no list of its own: the daemon's applies, and the answer says which
    assert t["httpAllow"] is None and t["effectiveHttpAllow"] == [DAEMONS_LIST], t
    own = d.get("/v1/tenants/other").json()
    assert own["httpAllow"] == own["effectiveHttpAllow"] == ["own.example"] and own["jobs"] == 0, own

    # a tenant's token: its own tenant, and another's answers as an unknown one (names do not leak)
    assert d.get("/v1/tenants/acme", token=acme).json() == t
    assert d.get("/v1/tenants/other", token=other).json()["name"] == "other"
    hidden = problem(d.get("/v1/tenants/other", token=acme), 404)
    unknown = problem(d.get("/v1/tenants/nope"), 404)
    assert hidden["code"] == unknown["code"] == "not_found" and "'nope'" in unknown["detail"], unknown
    assert "tenant ls" in unknown["detail"], unknown
    assert problem(d.get("/v1/tenants/acme", token=worker), 403)["code"] == "forbidden"
    # the path's methods: the new GET with the PATCH there was
    options = d.request("OPTIONS", "/v1/tenants/acme")
    assert options.status == 204 and {m.strip() for m in options.headers["Allow"].split(",")} >= {"GET", "PATCH"}, options


@pytest.mark.runs_no_jobs
def test_tenant_show_prints_the_settings_the_usage_and_whose_http_list_applies(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(args=("--http-allow", DAEMONS_LIST))
    acme = tenant_token(d, "acme", maxJobs=5, allowShell=True)
    assert d.post("/v1/jobs", YEARLY, token=acme).status == 201

    out = d.cli("tenant", "show", "acme")
    assert out.returncode == 0, out
    lines = dict(line.split(":", 1) for line in out.stdout.splitlines())
    assert lines["jobs"].strip() == "1 of 5", out.stdout
    assert lines["running here"].strip() == "0 (no quota)" and lines["queued here"].strip() == "0", out.stdout
    assert lines["http allow"].strip() == f"the daemon's list: {DAEMONS_LIST}", out.stdout
    assert d.cli("tenant", "set", "acme", "--http-allow", "").returncode == 0
    closed = d.cli("tenant", "show", "acme").stdout
    assert "http allow:     (none: every host refused)" in closed, closed
    as_json = json.loads(d.cli("tenant", "show", "acme", "--json").stdout)
    assert as_json["jobs"] == 1 and as_json["effectiveHttpAllow"] == [], as_json

    missing = d.cli("tenant", "show", "nope")
    assert missing.returncode != 0 and "no tenant 'nope'" in missing.stderr and "Traceback" not in missing.stderr, missing

    # with the tenant's own token (as its CI would run it)
    env = {**d.cli_env(), "CRONWHEEL_TOKEN": acme}
    env.pop("CRONWHEEL_DATA_DIR")
    mine = subprocess.run([sys.executable, "-m", "cronwheel", "tenant", "show", "acme"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert mine.returncode == 0 and "jobs:" in mine.stdout, mine
    theirs = subprocess.run([sys.executable, "-m", "cronwheel", "tenant", "show", "default"], capture_output=True,
                            text=True, env=env, timeout=60)
    assert theirs.returncode != 0 and "no tenant 'default'" in theirs.stderr, theirs
    # without NAME: the token's own tenant (GET /v1/whoami), and a tenantless caller is told to name one
    own = subprocess.run([sys.executable, "-m", "cronwheel", "tenant", "show", "--json"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert own.returncode == 0 and json.loads(own.stdout)["name"] == "acme", own
    admin = d.cli("tenant", "show")
    assert admin.returncode == 2 and "belong to no tenant" in admin.stderr and "Traceback" not in admin.stderr, admin


@pytest.mark.runs_no_jobs
def test_whoami_says_the_callers_role_tenant_and_token(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    acme = tenant_token(d, "acme")
    worker = tenant_token(d, "acme", role="worker")
    metrics = d.post("/v1/tokens", {"role": "metrics"}).json()["token"]
    seen = {}
    for who, token in (("admin", None), ("acme", acme), ("worker", worker), ("metrics", metrics)):
        r = d.get("/v1/whoami", token=token) if token else d.get("/v1/whoami")
        assert r.status == 200, r
        seen[who] = r.json()
    assert (seen["acme"]["role"], seen["acme"]["tenant"], seen["acme"]["via"]) == ("tenant", "acme", "token")
    assert seen["acme"]["tokenId"].startswith("tk_") and seen["acme"]["tokenId"] != seen["worker"]["tokenId"]
    assert (seen["worker"]["role"], seen["worker"]["tenant"]) == ("worker", "acme")
    assert (seen["metrics"]["role"], seen["metrics"]["tenant"]) == ("metrics", None)
    assert (seen["admin"]["role"], seen["admin"]["tenant"]) == ("admin", None)
    # the token id is the one its revocation takes: revoked, the token is refused
    assert d.request("DELETE", f"/v1/tokens/{seen['acme']['tokenId']}").status in (200, 204)
    assert d.get("/v1/whoami", token=acme).status == 401
    assert d.get("/v1/whoami", token=None).status == 401
    out = d.cli("whoami")
    assert out.returncode == 0 and "role:" in out.stdout and "admin" in out.stdout, out
