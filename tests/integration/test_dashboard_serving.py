"""The dashboard's files as a real daemon serves them (no browser: tests/browser drives one).

The page and its assets need no credentials and carry a strict CSP; every data call the page
makes still does (the same auth as the API). ``GET /v1/status/activity`` feeds its overview.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from cronwheel.api.dashboard import STATIC
from tests.support.daemon import Daemon
from tests.support.wait import wait_for

OPENAPI = Path(__file__).parents[2] / "cronwheel" / "api" / "openapi.json"
NOOP = "cronwheel.worker.noop:noop"
ASSETS = {
    "/": "text/html",
    "/ui/app.js": "text/javascript",
    "/ui/api.js": "text/javascript",
    "/ui/dom.js": "text/javascript",
    "/ui/overview.js": "text/javascript",
    "/ui/style.css": "text/css",
    "/ui/favicon.svg": "image/svg+xml",
}


@pytest.mark.runs_no_jobs
def test_page_and_assets_are_served_without_credentials_with_a_strict_csp(daemon: Daemon) -> None:
    for path, ctype in ASSETS.items():
        r = daemon.get(path, token=None)
        assert r.status == 200, (path, r)
        assert r.headers["Content-Type"].split(";")[0] == ctype, path
        csp = r.headers["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
        assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'", csp
        assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'", csp
        assert "unsafe" not in csp, csp  # no 'unsafe-inline' / 'unsafe-eval' anywhere
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["X-Frame-Options"] == "DENY"
        etag = r.headers["ETag"]
        again = daemon.get(path, token=None, headers={"If-None-Match": etag})
        assert again.status == 304 and again.body == b"", path
    page = daemon.get("/", token=None).body.decode()
    assert '<script type="module" src="/ui/app.js"></script>' in page


@pytest.mark.runs_no_jobs
def test_the_data_still_needs_a_token(daemon: Daemon) -> None:
    for path in ("/v1/jobs", "/v1/status", "/v1/status/activity", "/v1/dlq", "/v1/herd", "/v1/events"):
        r = daemon.get(path, token=None)
        assert r.status == 401, (path, r)
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert daemon.get("/v1/jobs").status == 200


def _unix_get(sock_path: Path, path: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """A request over the daemon's Unix socket, with no token (as a local operator's browser
    behind a socket forward would)."""

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.settimeout(10)
            self.sock.connect(str(sock_path))

    conn = UnixConnection("localhost")
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


@pytest.mark.runs_no_jobs
def test_the_local_socket_serves_page_and_data_without_a_token(daemon: Daemon) -> None:
    sock = daemon.data_dir / "api.sock"
    status, headers, body = _unix_get(sock, "/")
    assert status == 200 and b"/ui/app.js" in body
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    for path in ("/v1/jobs", "/v1/status", "/v1/status/activity", "/v1/herd"):
        status, _, body = _unix_get(sock, path)
        assert status == 200, (path, body[:300])


@pytest.mark.runs_no_jobs
def test_writes_from_another_web_origin_are_refused(daemon: Daemon) -> None:
    """Where a caller needs no token (the socket, if forwarded to a TCP port), a page of
    another site must not pause or replay through the visitor's browser: writes carrying a
    foreign Origin are refused; the dashboard's own and non-browser clients are not."""
    job = daemon.add_job({"schedule": "0 0 1 1 *", "command": "true"})["jobId"]
    sock = daemon.data_dir / "api.sock"
    for origin in ("https://evil.example", "null", "http://localhost.evil.example"):
        status, _, body = _unix_get(sock, f"/v1/jobs/{job}/pause", "POST", {"Origin": origin, "Host": "localhost"})
        assert status == 403 and b"cross_origin" in body, (origin, status, body[:200])
    assert daemon.get(f"/v1/jobs/{job}").json()["status"] == "ACTIVE"
    status, _, body = _unix_get(sock, f"/v1/jobs/{job}/pause", "POST", {"Origin": "http://localhost", "Host": "localhost"})
    assert status == 200, body[:300]
    r = daemon.post(f"/v1/jobs/{job}/resume", headers={"Origin": "https://evil.example"})  # with a token too
    assert r.status == 403
    assert daemon.post(f"/v1/jobs/{job}/resume").status == 200  # no Origin: not a browser
    status, _, _ = _unix_get(sock, "/v1/jobs", "GET", {"Origin": "https://evil.example"})
    assert status == 200  # reads are not writes (and CORS keeps their answers from that page)


@pytest.mark.runs_no_jobs
def test_unknown_or_sneaky_asset_names_are_404(daemon: Daemon) -> None:
    for path in ("/ui/nope.js", "/ui/..%2Fopenapi.json", "/ui/%2E%2E%2F__init__.py", "/ui/__init__.py",
                 "/ui/.hidden.js", "/ui/index.html.bak", "/ui/app.js%00.css"):
        r = daemon.get(path, token=None)
        assert r.status == (400 if "%00" in path else 404), (path, r)  # NUL: refused at the boundary
        assert r.headers["Content-Type"].startswith("application/problem+json")
    assert daemon.request("POST", "/", token=None).status in (401, 405)  # GET only


def test_static_files_fetch_nothing_from_elsewhere_and_never_build_html_from_data() -> None:
    """No CDN (the page must work with no network) and no inline script (the CSP forbids it);
    the scripts build the DOM from text, never from HTML strings."""
    files = sorted(p for p in STATIC.iterdir() if p.is_file())
    assert {p.name for p in files} >= {"index.html", "app.js", "api.js", "dom.js", "overview.js", "style.css", "favicon.svg"}
    for p in files:
        text = p.read_text()
        # the SVG namespace is an identifier, not a fetch
        urls = [u for u in re.findall(r"https?://[^\s\"')]+", text) if u != "http://www.w3.org/2000/svg"]
        assert urls == [], (p.name, urls)
        if p.suffix == ".js":
            assert not re.search(r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function", text), p.name
    page = (STATIC / "index.html").read_text()
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", page, re.S)
    assert scripts and all(s.strip() == "" for s in scripts)
    assert re.search(r"\son[a-z]+=", page) is None  # no inline event handlers
    assert "style=" not in page


def test_activity_reports_the_last_hour_of_lag_and_what_runs(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(args=("--grace-sec", "1"))  # the sleeper is not waited for at teardown
    daemon.add_job({"schedule": "* * * * * *", "python": NOOP})
    sleeper_id = daemon.add_job({"runAt": "+0s", "command": "sleep 30", "name": "sleeper"})["jobId"]

    def data() -> dict | None:
        r = daemon.get("/v1/status/activity")
        assert r.status == 200, r
        doc = r.json()
        started = sum(m["count"] for m in doc["lagHistory"]["minutes"])
        running = any(r["jobId"] == sleeper_id for r in doc["running"])
        return doc if started >= 3 and running else None

    doc = wait_for(data, 30, what="lag samples and a running execution")
    spec = json.loads(OPENAPI.read_text())
    schema = {"$ref": "#/components/schemas/Activity", "components": spec["components"]}
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    minutes = doc["lagHistory"]["minutes"]
    assert len(minutes) == 60 and minutes == sorted(minutes, key=lambda m: m["at"])
    assert doc["at"][:16] == minutes[-1]["at"][:16]  # the current minute is last
    busy = [m for m in minutes if m["count"]]
    assert all(0 <= m["p50"] <= m["p99"] <= m["max"] for m in busy)
    # the sleeper is in a local worker, with the epoch of its grant
    sleeper = next(r for r in doc["running"] if r["jobId"] == sleeper_id)
    assert sleeper["executionId"].startswith(sleeper_id + ":") and sleeper["leaseEpoch"] == 1 and sleeper["workerId"]
    assert doc["runningTotal"] >= 1 and sleeper["runningSec"] is not None and sleeper["runningSec"] >= 0
    # the node's own status agrees that it ran first attempts
    assert daemon.status()["dispatchLagMs"]["samples"] >= 3

    # admin only, like /v1/status: a tenant token is refused
    assert daemon.post("/v1/tenants", {"name": "acme"}).status == 201
    token = daemon.post("/v1/tokens", {"tenant": "acme", "role": "tenant"}).json()["token"]
    r = daemon.get("/v1/status/activity", token=token)
    assert r.status == 403, r
