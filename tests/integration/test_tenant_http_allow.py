"""A tenant's own HTTP allow-list says three things, as the daemon's does: not set (null: the
daemon's ``--http-allow`` applies), empty (no host at all) or its hosts. A real daemon, on SQLite
and on PostgreSQL, its CLI, and its workers' redirects (docs/security.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.test_auth import problem, tenant_token
from tests.integration.test_http_target_redirects import Endpoint, run_all, to
from tests.support.daemon import Daemon
from tests.support.receiver import WebhookReceiver
from tests.support.wait import wait_for

SECRET = "s3cret-for-the-hmac-signature"
DAEMONS_LIST = "api.example.com"  #: the daemon's --http-allow
YEARLY = {"schedule": "@yearly"}
CLOSED = ("tenant 'shut''s httpAllow is empty: `cronwheel tenant set shut --http-allow HOST,...` opens it to "
          "those hosts, `--http-allow-inherit` to the daemon's list")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def node(request: pytest.FixtureRequest, make_daemon: Callable[..., Daemon]) -> Daemon:
    store = () if request.param == "sqlite" else ("--store", str(request.getfixturevalue("postgres_dsn")))
    return make_daemon(workers=1, args=("--http-allow", DAEMONS_LIST, *store))


def http_allow(d: Daemon, tenant: str) -> Any:
    return next(t for t in d.get("/v1/tenants").json()["tenants"] if t["name"] == tenant)["httpAllow"]


def http_job(**extra: Any) -> dict[str, Any]:
    return {**YEARLY, "http": {"url": f"https://{DAEMONS_LIST}/x"}, **extra}


@pytest.mark.runs_no_jobs
def test_an_empty_list_closes_the_tenant_and_null_gives_it_the_daemons_again(node: Daemon) -> None:
    d = node
    shut = tenant_token(d, "shut", httpAllow=[])
    inherits = tenant_token(d, "inherits")
    tenants = {t["name"]: t for t in d.get("/v1/tenants").json()["tenants"]}
    assert tenants["shut"]["httpAllow"] == [] and tenants["inherits"]["httpAllow"] is None, tenants
    assert tenants["default"]["httpAllow"] is None

    # the daemon's list holds the host: a tenant with no list of its own may call it ...
    assert d.post("/v1/jobs", http_job(), token=inherits).status == 201
    # ... a tenant with its own empty list may not, nor write to it with a webhook or mail
    refused = problem(d.post("/v1/jobs", http_job(), token=shut), 403)
    assert refused["field"] == "http.url" and refused["detail"] == (
        f"HTTP targets of tenant 'shut' may call no host ({CLOSED}); not '{DAEMONS_LIST}'"), refused
    queued = {**YEARLY, "queue": "q"}  # a target no list bounds: only its rules are judged
    hook = {"on": "dead", "via": "webhook", "url": f"https://{DAEMONS_LIST}/hook", "secret": SECRET}
    refused = problem(d.post("/v1/jobs", {**queued, "notify": [hook]}, token=shut), 403)
    assert refused["field"] == "notify[0].url" and CLOSED in refused["detail"], refused
    mail = {"on": "dead", "via": "email", "to": [f"ops@{DAEMONS_LIST}"]}
    refused = problem(d.post("/v1/jobs", {**queued, "notify": [mail]}, token=shut), 403)
    assert refused["field"] == "notify[0].to[0]" and CLOSED in refused["detail"], refused
    assert d.post("/v1/jobs", {**queued, "notify": [hook, mail]}, token=inherits).status == 201

    # what the store keeps survives a restart (the node reads its tenants back)
    d.stop()
    d.start()
    assert http_allow(d, "shut") == []
    assert problem(d.post("/v1/jobs", http_job(), token=shut), 403)["field"] == "http.url"

    # null: back to none of its own, the daemon's list
    opened = d.request("PATCH", "/v1/tenants/shut", {"httpAllow": None})
    assert opened.status == 200 and opened.json()["httpAllow"] is None, opened
    assert d.post("/v1/jobs", http_job(), token=shut).status == 201
    assert problem(d.post("/v1/jobs", {**YEARLY, "http": {"url": "https://elsewhere.test/"}}, token=shut), 403)
    # and an empty list for the one that inherited: closed, whatever the daemon's list says
    closed = d.request("PATCH", "/v1/tenants/inherits", {"httpAllow": []})
    assert closed.status == 200 and closed.json()["httpAllow"] == [], closed
    assert problem(d.post("/v1/jobs", http_job(), token=inherits), 403)["field"] == "http.url"
    # another change leaves either setting as it is
    assert d.request("PATCH", "/v1/tenants/inherits", {"weight": 2}).json()["httpAllow"] == []
    assert d.request("PATCH", "/v1/tenants/shut", {"weight": 2}).json()["httpAllow"] is None


@pytest.mark.runs_no_jobs
def test_an_entry_no_url_can_match_is_refused_not_kept(daemon: Daemon) -> None:
    """A URL may write an IPv4 address as four decimal numbers only, and no zone id: an entry
    written otherwise (``127.1`` for 127.0.0.1) was kept, and matched nothing, silently."""
    d = daemon
    assert d.post("/v1/tenants", {"name": "acme"}).status == 201
    for entry, words in [("127.1", "reads as an IPv4 address"), ("2130706433", "reads as an IPv4 address"),
                         ("0x7f.0.0.1", "reads as an IPv4 address"), ("*.10.0.0.1", "reads as an IPv4 address"),
                         ("fe80::1%eth0", "zone id")]:
        body = problem(d.request("PATCH", "/v1/tenants/acme", {"httpAllow": ["api.acme.test", entry]}), 422)
        assert body["field"] == "httpAllow[1]" and words in body["detail"] and repr(entry) in body["detail"], body
        problem(d.post("/v1/tenants", {"name": "other", "httpAllow": [entry]}), 422)
    assert http_allow(d, "acme") is None
    out = d.cli("tenant", "set", "acme", "--http-allow", "api.acme.test,127.1")
    assert out.returncode != 0 and "'127.1' reads as an IPv4 address" in out.stderr, out
    assert d.request("PATCH", "/v1/tenants/acme", {"httpAllow": ["127.0.0.1", "*.acme1.test", "[::1]"]}).status == 200
    assert http_allow(d, "acme") == ["127.0.0.1", "*.acme1.test", "::1"]


@pytest.mark.runs_no_jobs
def test_the_cli_spells_the_three_settings_and_shows_which_a_tenant_has(daemon: Daemon) -> None:
    d = daemon

    def cli(*args: str) -> str:
        out = d.cli(*args)
        assert out.returncode == 0, out
        return out.stdout

    assert "http allow:     (the daemon's list)" in cli("tenant", "add", "acme")
    assert "http allow:     (none: every host refused)" in cli("tenant", "set", "acme", "--http-allow", "")
    assert http_allow(d, "acme") == []
    listed = {line.split()[0]: line for line in cli("tenant", "ls").splitlines()[1:]}
    assert listed["acme"].endswith("(none)") and listed["default"].endswith("(daemon's)"), listed
    assert "http allow:     a.example, *.b.example" in cli("tenant", "set", "acme", "--http-allow", "a.example,*.b.example")
    assert cli("tenant", "ls").splitlines()[1].endswith("a.example, *.b.example")
    assert "http allow:     (the daemon's list)" in cli("tenant", "set", "acme", "--http-allow-inherit")
    assert http_allow(d, "acme") is None
    both = d.cli("tenant", "set", "acme", "--http-allow", "", "--http-allow-inherit")
    assert both.returncode == 2 and "--http-allow and --http-allow-inherit: give one" in both.stderr, both
    assert http_allow(d, "acme") is None


def test_a_closed_tenants_jobs_follow_no_redirect_off_their_own_host(make_daemon: Callable[..., Daemon],
                                                                     front: Endpoint, far: Endpoint) -> None:  # fmt: skip
    """Its jobs saved before the list was closed still call their own host (a job's URL is
    judged when it is saved, not at each run), but no redirect of theirs goes anywhere else:
    the grant carries the empty list, not the daemon's (here: none, any host)."""
    base, got = front
    far_base, far_got = far
    d = make_daemon(workers=1)
    token = tenant_token(d, "shut", httpAllow=["127.0.0.1", "127.0.0.2"])
    jobs = {"elsewhere": {"url": to(base, f"{far_base}/y"), "method": "GET"},
            "home": {"url": to(base, f"{base}/z"), "method": "GET"}}
    before = run_all(d, token, jobs)
    assert all(r["status"] == "SUCCEEDED" for r in before.values()) and [r["path"] for r in far_got] == ["/y"], before
    assert d.request("PATCH", "/v1/tenants/shut", {"httpAllow": []}).status == 200
    got.clear()
    for run in before.values():
        assert d.post(f"/v1/jobs/{run['jobId']}/trigger", token=token).status in (200, 201, 202)

    def second(first: dict[str, Any]) -> dict[str, Any] | None:
        done = [e for e in d.get(f"/v1/jobs/{first['jobId']}/executions", token=token).json()["executions"]
                if e["status"] in ("SUCCEEDED", "DEAD") and e["executionId"] != first["executionId"]]  # fmt: skip
        return d.get(f"/v1/executions/{done[0]['executionId']}", token=token).json() if done else None

    after = {name: wait_for(lambda run=run: second(run), 60, what=f"{name}'s second run") for name, run in before.items()}
    assert [r["path"] for r in far_got] == ["/y"]  # nothing more reached the other host
    assert after["elsewhere"]["status"] == "DEAD", after
    assert after["elsewhere"]["error"] == (
        f"redirect not followed: HTTP 302 to {far_base}/y: the host 127.0.0.2 is not on tenant 'shut''s HTTP "
        "allow-list (empty: no host but the job's own; `cronwheel tenant set shut --http-allow HOST,...` opens it)")
    # its own host: called, and a redirect back to it followed, as the run calls that host anyway
    assert after["home"]["status"] == "SUCCEEDED", after
    assert sorted(r["path"].split("?")[0] for r in got) == ["/start", "/start", "/z"], got


def test_a_closed_tenants_webhooks_are_refused_at_delivery(make_daemon: Callable[..., Daemon]) -> None:
    """A rule saved while its host was allowed is judged again at each delivery: closed since,
    the notification is not sent, and says the list is empty."""
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon(workers=1)
        token = tenant_token(d, "shut", httpAllow=["127.0.0.1"], allowShell=True)
        hook = {"on": "dead", "via": "webhook", "url": rx.url, "secret": SECRET, "maxAttempts": 1}
        job = d.post("/v1/jobs", {**YEARLY, "command": "exit 1", "retryPolicy": {"maxAttempts": 1}, "notify": [hook]},
                     token=token)  # fmt: skip
        assert job.status == 201, job
        assert d.request("PATCH", "/v1/tenants/shut", {"httpAllow": []}).status == 200
        assert d.post(f"/v1/jobs/{job.json()['jobId']}/trigger", token=token).status in (200, 201, 202)
        dead = wait_for(lambda: d.get("/v1/notifications?status=DEAD").json()["notifications"], 60,
                        what="the refused notification dead-lettered")  # fmt: skip
        assert dead[0]["error"].endswith("is not in tenant 'shut''s HTTP allow-list (it is empty: no host)"), dead
        assert rx.unique() == {}
