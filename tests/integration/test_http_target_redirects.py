"""An HTTP target's redirects, on a real daemon and its real workers, against local servers: each
hop's URL is judged as the job's own was (the URL rules, the tenant's allow-list), a refused
hop is never called and fails the run saying why, at most 10 are followed, methods change as
browsers change them, and the job's own headers stay with its URL's origin (docs/security.md).

Tenant acme may call 127.0.0.1 and localhost; 127.0.0.2, another loopback address, is a host
off its list. And no cookie an answer sets is kept, for a later hop or run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from tests.integration.conftest import Endpoint
from tests.integration.test_auth import tenant_token
from tests.support.daemon import Daemon
from tests.support.wait import wait_for

YEARLY = {"schedule": "@yearly", "retryPolicy": {"maxAttempts": 1}}
SECRETS = {"Authorization": "Bearer s3cret", "X-Api-Key": "k3y", "Cookie": "sid=c00kie"}


@pytest.fixture
def acme(make_daemon: Callable[..., Daemon]) -> tuple[Daemon, str]:
    d = make_daemon(workers=1)
    return d, tenant_token(d, "acme", httpAllow=["127.0.0.1", "localhost"])


def to(base: str, where: str, status: int = 302, path: str = "/start") -> str:
    """A URL of ``base`` that redirects to ``where`` with ``status``."""
    return f"{base}{path}?status={status}&to={quote(where, safe='')}"


def run_all(d: Daemon, token: str, http: dict[str, dict[str, Any]], payload: Any = None) -> dict[str, dict[str, Any]]:
    """One job per entry of ``http`` (name -> target), each triggered once; their finished runs."""
    jobs = {}
    for name, target in http.items():
        r = d.post("/v1/jobs", {**YEARLY, "name": name, "http": target, "payload": payload}, token=token)
        assert r.status == 201, r
        jobs[name] = r.json()["jobId"]
        assert d.post(f"/v1/jobs/{jobs[name]}/trigger", token=token).status in (200, 201, 202)

    def finished() -> dict[str, dict[str, Any]] | None:
        runs = {}
        for name, job in jobs.items():
            done = [e for e in d.get(f"/v1/jobs/{job}/executions", token=token).json()["executions"]
                    if e["status"] in ("SUCCEEDED", "DEAD")]  # fmt: skip
            if not done:
                return None
            runs[name] = d.get(f"/v1/executions/{done[0]['executionId']}", token=token).json()  # with its output
        return runs

    return wait_for(finished, 60, what="every triggered run to end")


def test_a_redirect_to_a_host_off_the_list_is_refused_and_never_called(acme: tuple[Daemon, str], front: Endpoint,
                                                                       far: Endpoint) -> None:
    d, token = acme
    base, _ = front
    far_base, far_got = far
    runs = run_all(d, token, {
        "off-list": {"url": to(base, f"{far_base}/latest/meta-data/"), "method": "GET"},
        "credentials": {"url": to(base, f"http://ops:pa55word@127.0.0.2:{far_base.rsplit(':', 1)[1]}/x"), "method": "GET"},
        "other-reading": {"url": to(base, "http://127.2/"), "method": "GET"},  # 127.0.0.2 to the C resolver
        "not-http": {"url": to(base, "file:///etc/passwd"), "method": "GET"},
        "unreadable": {"url": to(base, "http://[::1/x"), "method": "GET"},  # not even joinable to the URL
    })
    assert far_got == []  # nothing reached the host off the list, the metadata address's stand-in
    for run in runs.values():
        assert run["status"] == "DEAD" and run["exitCode"] == 302, run
        assert run["error"].startswith("redirect not followed: HTTP 302 to "), run["error"]
    assert runs["off-list"]["error"] == (f"redirect not followed: HTTP 302 to {far_base}/latest/meta-data/: the host 127.0.0.2 "
                                         "is not on tenant 'acme''s HTTP allow-list (127.0.0.1, localhost)")
    error = runs["credentials"]["error"]
    assert "carries user information" in error and f"to {far_base}/x:" in error and "pa55word" not in error, error
    assert "four decimal numbers" in runs["other-reading"]["error"], runs["other-reading"]
    assert "must be an absolute http:// or https:// URL" in runs["not-http"]["error"], runs["not-http"]
    assert runs["unreadable"]["error"] == ("redirect not followed: HTTP 302 to http://[::1/x: the URL is not a valid URL: "
                                           "Invalid IPv6 URL"), runs["unreadable"]

    # the list is the tenant's as it is at each run: widened, the same job's next run follows
    assert d.request("PATCH", "/v1/tenants/acme", {"httpAllow": ["127.0.0.1", "localhost", "127.0.0.2"]}).status == 200
    job = runs["off-list"]["jobId"]
    assert d.post(f"/v1/jobs/{job}/trigger", token=token).status in (200, 201, 202)
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in d.get(f"/v1/jobs/{job}/executions", token=token).json()["executions"]),
             30, what="the run after the list was widened to succeed")
    assert [r["path"] for r in far_got] == ["/latest/meta-data/"]


def test_a_redirect_to_an_allowed_host_is_followed_without_the_jobs_headers(acme: tuple[Daemon, str], front: Endpoint) -> None:
    d, token = acme
    base, got = front
    port = base.rsplit(":", 1)[1]
    runs = run_all(d, token, {
        "same-origin": {"url": to(base, "/home", path="/a"), "method": "POST", "headers": SECRETS},
        # localhost is on the list, and another host than 127.0.0.1: another origin
        "other-host": {"url": to(base, f"http://localhost:{port}/away", 307, path="/b"), "method": "POST", "headers": SECRETS},
    }, payload={"n": 1})
    assert all(run["status"] == "SUCCEEDED" and run["output"] == '{"ok": true}' for run in runs.values()), runs
    by_path = {r["path"].split("?")[0]: r for r in got}
    assert set(by_path) == {"/a", "/home", "/b", "/away"}, got
    for path in ("/a", "/home", "/b"):  # the job's URL, and a hop to its own origin: everything
        assert all(by_path[path]["headers"].get(k) == v for k, v in SECRETS.items()), by_path[path]
    away = by_path["/away"]
    assert not {"Authorization", "X-Api-Key", "Cookie"} & set(away["headers"]), away["headers"]
    # the run's identity goes to every hop, and a 307 repeats the request, body and its type
    assert away["headers"]["Host"] == f"localhost:{port}" and away["headers"]["Cronwheel-Job-Id"], away
    assert away["headers"]["Idempotency-Key"] == by_path["/b"]["headers"]["Idempotency-Key"]
    assert (away["method"], away["body"], away["headers"]["Content-Type"]) == ("POST", '{"n": 1}', "application/json")


def test_the_method_changes_as_browsers_change_it(acme: tuple[Daemon, str], front: Endpoint) -> None:
    d, token = acme
    base, got = front
    cases = {  # name: method, status, then the method and whether the body is sent
        "post-301": ("POST", 301, "GET", False), "post-302": ("POST", 302, "GET", False),
        "post-303": ("POST", 303, "GET", False), "delete-303": ("DELETE", 303, "GET", False),
        "put-302": ("PUT", 302, "PUT", True), "post-307": ("POST", 307, "POST", True),
        "patch-308": ("PATCH", 308, "PATCH", True),
    }
    runs = run_all(d, token, {name: {"url": to(base, f"/{name}", status), "method": method, "headers": {"Content-Type": "application/json; v=1"}}
                              for name, (method, status, _, _) in cases.items()}, payload={"n": 2})  # fmt: skip
    assert all(run["status"] == "SUCCEEDED" for run in runs.values()), runs
    hops = {r["path"][1:]: r for r in got if not r["path"].startswith("/start")}
    for name, (_, _, method, body) in cases.items():
        hop = hops[name]
        assert hop["method"] == method, (name, hop)
        if body:
            assert hop["body"] == '{"n": 2}' and hop["headers"]["Content-Type"] == "application/json; v=1", (name, hop)
        else:  # the body's headers go with it, as browsers drop them
            assert hop["body"] == "" and "Content-Type" not in hop["headers"], (name, hop)


def test_a_redirect_loop_ends_after_ten_redirects(acme: tuple[Daemon, str], front: Endpoint) -> None:
    d, token = acme
    base, got = front
    run = run_all(d, token, {"loop": {"url": f"{base}/loop", "method": "GET"}})["loop"]
    assert run["status"] == "DEAD" and run["exitCode"] == 302, run
    assert run["error"] == f"redirect not followed: HTTP 302 to {base}/loop: a run follows at most 10 redirects", run
    assert [r["path"] for r in got] == ["/loop"] * 11  # the job's URL, then 10 redirects


def test_a_cookie_an_answer_sets_is_never_sent_again(acme: tuple[Daemon, str], front: Endpoint) -> None:
    """The worker's HTTP session is every tenant's: a cookie jar in it would hand one tenant's
    session cookie to the next run that calls the same host, whoever's it is."""
    d, token = acme
    base, got = front
    local = base.replace("127.0.0.1", "localhost")  # a host name: a jar keeps no cookie of an IP address
    beta = tenant_token(d, "beta", httpAllow=["localhost"])
    run_all(d, token, {"sets": {"url": f"{local}/set?cookie=sid%3Dacme-secret&to=/next", "method": "GET"}})
    run_all(d, beta, {"reads": {"url": f"{local}/read", "method": "GET"}})
    assert [r["path"].split("?")[0] for r in got] == ["/set", "/next", "/read"]
    assert not any("Cookie" in r["headers"] for r in got), got  # not on the next hop, not in beta's run


def test_with_no_list_anywhere_any_hop_goes_and_with_an_empty_one_only_the_jobs_own(
        make_daemon: Callable[..., Daemon], front: Endpoint, far: Endpoint) -> None:  # fmt: skip
    """The daemon's list as a grant carries it: not set is any host; ``--http-allow ''`` (an
    empty list) none but the job's own (an admin's job: its URL is not judged when it is saved,
    its redirects are)."""
    base, _ = front
    far_base, far_got = far
    open_node = make_daemon("open", workers=1)
    runs = run_all(open_node, open_node.admin_token, {"anywhere": {"url": to(base, f"{far_base}/x"), "method": "GET"}})
    assert runs["anywhere"]["status"] == "SUCCEEDED" and [r["path"] for r in far_got] == ["/x"], runs
    closed = make_daemon("closed", workers=1, args=("--http-allow", ""))
    runs = run_all(closed, closed.admin_token, {
        "elsewhere": {"url": to(base, f"{far_base}/y"), "method": "GET"},
        "home": {"url": to(base, f"{base}/z"), "method": "GET"},
    })
    assert [r["path"] for r in far_got] == ["/x"]  # nothing more reached the other host
    assert runs["elsewhere"]["status"] == "DEAD" and runs["elsewhere"]["error"].endswith("(empty: no host but the job's own; `cronwheel tenant set default --http-allow HOST,...` opens it)"), runs
    assert runs["home"]["status"] == "SUCCEEDED", runs["home"]
