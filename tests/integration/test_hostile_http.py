"""Hostile and broken HTTP input against a real daemon: every rejection is a clear 4xx (a
problem document naming the field where there is one), never a 500 or a traceback, the
daemon lives on, and nothing acknowledged is lost."""

from __future__ import annotations

import gzip
import json
import socket
import string
import time
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.daemon import Daemon

JOB = {"schedule": "0 0 1 1 *", "http": {"url": "https://example.org/hook"}}


def raw_exchange(d: Daemon, head: bytes, body_chunks: list[bytes] = (), timeout: float = 10) -> bytes:  # type: ignore[assignment]
    """Send ``head`` then the chunks over a raw socket (stopping when the server answers or
    closes); return what it answered."""
    parts = urlsplit(d.url)
    s = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
    try:
        s.sendall(head)
        for chunk in body_chunks:
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        data = b""
        try:
            while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + _content_length(data):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        return data
    finally:
        s.close()


def _content_length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def status_of(response: bytes) -> int:
    assert response.startswith(b"HTTP/1."), response[:200]
    return int(response.split(b" ", 2)[1])


def problem(r: Any, status: int, field: str | None = None) -> dict[str, Any]:
    assert r.status == status, r
    assert r.headers["Content-Type"].startswith("application/problem+json")
    body = r.json()
    if field is not None:
        assert body.get("field") == field, body
    return dict(body)


def alive(d: Daemon) -> None:
    assert d.get("/healthz", token=None).status == 200
    assert d.proc is not None and d.proc.poll() is None


def no_server_errors(d: Daemon) -> None:
    log = d.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "api.unhandled_error" not in log and "api.internal_error" not in log
    assert d.admin_token not in log


@pytest.mark.runs_no_jobs
def test_oversized_bodies_are_413_before_and_while_reading(daemon: Daemon) -> None:
    auth = f"Authorization: Bearer {daemon.admin_token}\r\n".encode()
    # Content-Length over the limit: answered from the headers, the body is never sent
    t0 = time.monotonic()
    resp = raw_exchange(daemon, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        + auth + b"Content-Length: 1000000000\r\n\r\n")
    assert status_of(resp) == 413 and b"payload_too_large" in resp
    assert time.monotonic() - t0 < 5
    # chunked: refused in the middle of the stream, once past the limit
    head = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth + b"Transfer-Encoding: chunked\r\n\r\n"
    piece = b"x" * 65536
    chunks = [b'%x\r\n{"payload": "\r\n' % len(b'{"payload": "')] + [b"%x\r\n" % len(piece) + piece + b"\r\n"] * 40 + [b"0\r\n\r\n"]
    resp = raw_exchange(daemon, head, chunks)
    assert status_of(resp) == 413, resp[:300]
    # a JSON payload over 64 KiB inside a small enough body
    body = problem(daemon.post("/v1/jobs", {**JOB, "payload": "x" * (64 * 1024)}), 413, "payload")
    assert "65536" in body["detail"]
    assert daemon.get("/v1/jobs").json()["jobs"] == []
    alive(daemon)
    no_server_errors(daemon)


@pytest.mark.runs_no_jobs
def test_a_client_gone_before_its_body_arrived_is_not_an_internal_error(daemon: Daemon) -> None:
    """A connection closed while its request's body is read (a remote worker giving up its
    long poll, a client killed) is the client's doing: it was logged as ``api.internal_error``
    with a traceback (ConnectionResetError), which the soak saw on ``/v1/workers/claim``."""
    parts = urlsplit(daemon.url)
    auth = f"Authorization: Bearer {daemon.admin_token}\r\n".encode()
    for path in (b"/v1/workers/claim", b"/v1/jobs", b"/v1/tenants"):
        s = socket.create_connection((parts.hostname, parts.port), timeout=10)
        s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth
                  + b'Content-Length: 1000\r\n\r\n{"workerId": "w1", ')
        s.close()  # the headers and part of the body sent: the daemon reads the rest in vain
    # an event logged after the hang-ups were handled: what they logged is before it
    assert daemon.post("/v1/tenants", {"name": "after-hangups"}).status == 201
    daemon.wait_event("tenant.created", tenant="after-hangups")
    assert daemon.events("api.internal_error") == []
    alive(daemon)
    no_server_errors(daemon)


@pytest.mark.runs_no_jobs
def test_malformed_and_mistyped_bodies_name_the_field(daemon: Daemon) -> None:
    for raw in (b'{"schedule": ', b"[" * 100_000, b'{"a": NaN}', b"\xff\xfe", b'{"a": 1} trailing'):
        problem(daemon.request("POST", "/v1/jobs", raw=raw), 400)
    problem(daemon.request("POST", "/v1/jobs", raw=b"[1, 2]"), 400)
    problem(daemon.request("POST", "/v1/jobs", raw=b"{}", headers={"Content-Type": "text/plain"}), 415)
    # a body that says it is compressed and is not
    for encoding in ("gzip", "deflate"):
        body = problem(daemon.request("POST", "/v1/jobs", raw=json.dumps(JOB).encode(),
                                      headers={"Content-Encoding": encoding}), 400)  # fmt: skip
        assert (body["code"], body["detail"]) == (
            "malformed_body", f"the request body cannot be read: Can not decode content-encoding: {encoding}"
        ), body
    # (one the server does not decode at all is refused while parsing the request)
    problem(daemon.request("POST", "/v1/jobs", raw=b"{}", headers={"Content-Encoding": "br"}), 400)
    for body, field in [
        ({**JOB, "timeoutSec": "30"}, "timeoutSec"),
        ({**JOB, "retryPolicy": {"maxAttempts": 1.5}}, "retryPolicy.maxAttempts"),
        ({**JOB, "retryPolicy": {"tries": 3}}, "retryPolicy.tries"),
        ({**JOB, "priority": ["high"]}, "priority"),
        ({**JOB, "colour": "blue"}, "colour"),
        ({**JOB, "name": "n" * 201}, "name"),
        ({**JOB, "name": "tab\there"}, "name"),
        ({**JOB, "name": "jbgrl2ehbe73gc55f"}, "name"),  # the shape of a job id: it could name another job
        ({**JOB, "jitterSec": 10**30}, "jitterSec"),
        ({"schedule": "0 0 1 1 *", "http": {"url": "file:///etc/passwd"}}, "http.url"),
    ]:
        problem(daemon.post("/v1/jobs", body), 422, field)
    problem(daemon.post(f"/v1/executions/{'j' * 17}:1/heartbeat", {"workerId": "w", "leaseEpoch": "1"}), 422, "leaseEpoch")
    problem(daemon.post(f"/v1/executions/{'j' * 17}:1/heartbeat", {"workerId": "w", "leaseEpoch": 1, "x": 1}), 422, "x")
    problem(daemon.post(f"/v1/executions/{'j' * 17}:1/heartbeat", {"workerId": "w", "leaseEpoch": 2**70}), 422, "leaseEpoch")
    assert daemon.get("/v1/jobs").json()["jobs"] == []
    # one that is: read as any other
    created = daemon.request("POST", "/v1/jobs", raw=gzip.compress(json.dumps(JOB).encode()),
                             headers={"Content-Encoding": "gzip"})  # fmt: skip
    assert created.status == 201, created
    no_server_errors(daemon)


@pytest.mark.runs_no_jobs
def test_schedules_that_never_fire_are_400(daemon: Daemon) -> None:
    for text in ("0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *"):
        body = problem(daemon.post("/v1/jobs", {"schedule": text, "http": {"url": "https://example.org/"}}), 400, "schedule")
        assert "never" in body["detail"], body
    problem(daemon.post("/v1/jobs", {"schedule": "x" * 5000, "command": "true"}), 400, "schedule")
    problem(daemon.post("/v1/jobs", {"runAt": "9999-99-99T00:00:00Z", "command": "true"}), 400, "runAt")


@pytest.mark.runs_no_jobs
def test_query_parameters_headers_and_paths_are_bounded(daemon: Daemon) -> None:
    job = daemon.add_job(JOB)["jobId"]
    problem(daemon.get("/v1/jobs?limit=10000000"), 400, "limit")
    problem(daemon.get("/v1/jobs?limit=-1"), 400, "limit")
    problem(daemon.get(f"/v1/jobs/{job}/executions?limit=1e9"), 400, "limit")
    for query in ("before=99999999999999999999999999", "before=-5", "before=2026-13-45T00:00:00Z"):
        r = daemon.get(f"/v1/jobs/{job}/executions?{query}")
        assert r.status in (200, 400), (query, r)
    for path in (f"/v1/jobs?after={'z' * 7000}", f"/v1/dlq?after={'z' * 7000}", "/v1/jobs?status=" + "A" * 5000,
                 "/v1/tokens?tenant=" + "t" * 5000):
        assert daemon.get(path).status in (200, 400), path
    problem(daemon.post("/v1/jobs", JOB, headers={"Idempotency-Key": "k" * 201}), 400, "Idempotency-Key")
    problem(daemon.post("/v1/jobs", JOB, headers={"Idempotency-Key": "caf\u00e9".encode().decode("latin-1")}), 400, "Idempotency-Key")
    # past the parser's limits: a plain 400 (or 431), the connection closed, the daemon fine
    auth = f"Authorization: Bearer {daemon.admin_token}\r\n".encode()
    for head in (
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth + b"X-Big: " + b"a" * 100_000 + b"\r\n\r\n",
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth + b"".join(b"X-%d: 1\r\n" % i for i in range(5000)) + b"\r\n",
        b"GET /v1/jobs/" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n",
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + b"t" * 20_000 + b"\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)),  # a TLS hello on the plain port
        b"GET / HTTP/9.9\r\n\r\n",
    ):
        resp = raw_exchange(daemon, head)
        assert resp == b"" or status_of(resp) in (400, 404, 414, 431, 505), resp[:200]
    resp = raw_exchange(daemon, b"GET /v1/jobs/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n")
    detail = json.loads(resp.split(b"\r\n\r\n", 1)[1])["detail"]
    assert detail == "the request could not be parsed: Got more than 8190 bytes when reading", detail
    # bytes that are not UTF-8 once percent-decoded (the parsed query would show them as U+FFFD)
    for query in ("after=%ff", "after=%ed%a0%80", "tenant=ok&%c3=1"):
        body = problem(daemon.get(f"/v1/jobs?{query}"), 400)
        assert body["code"] == "invalid_query" and "not UTF-8" in body["detail"], (query, body)
    assert daemon.get("/v1/jobs?name=%C3%A9").status == 200  # é, percent-encoded
    # a cursor is a previous page's next (an id), never a string to compare: else an empty page
    for path in ("/v1/jobs?after=zzz", f"/v1/jobs?after={job}x", "/v1/jobs?after=%C3%A9",
                 f"/v1/dlq?after={job}", f"/v1/dlq?after={job}:{'9' * 19}", "/v1/dlq?after=a:1"):
        body = problem(daemon.get(path), 400, "after")
        assert body["code"] == "invalid_query" and "previous page" in body["detail"], (path, body)
    assert daemon.get(f"/v1/jobs?after={job}").status == 200
    assert daemon.get(f"/v1/dlq?after={job}:1767225600000").status == 200
    # one header given twice, each copy valid (two tenants' tokens, two keys): which one counts?
    for name, value in (("Authorization", f"Bearer {daemon.admin_token}"), ("Idempotency-Key", "k1")):
        resp = raw_exchange(daemon, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            + auth + (f"{name}: {value}\r\n".encode() if name != "Authorization" else b"")
                            + f"{name}: {value}\r\nContent-Length: 2\r\n\r\n{{}}".encode())  # fmt: skip
        assert status_of(resp) == 400 and f"the {name} header is given 2 times".encode() in resp, resp[:300]
    body = problem(daemon.request("POST", "/v1/jobs", raw=b'{"payload": ' + b"9" * 5000 + b"}"), 400)
    assert body["detail"] == "malformed JSON: an integer of more than 4300 digits", body
    for path in ("/v1/jobs/" + quote("\u2603" * 100), "/v1/executions/a:b:c", "/v1/jobs/%2e%2e%2f"):
        problem(daemon.get(path), 404)
    # an id it was given is quoted back, not all 7,000 characters of it
    body = problem(daemon.get("/v1/jobs/" + "j" * 7000), 404)
    assert len(body["detail"]) <= 1000 and body["detail"].startswith("no job 'jjj") and "more characters)" in body["detail"]
    problem(daemon.get("/v1/jobs/%00"), 400)  # NUL is refused at the boundary, whatever the route
    problem(daemon.request("DELETE", "/v1/dlq/%2e%2e%2f"), 404)
    alive(daemon)
    assert daemon.get(f"/v1/jobs/{job}").status == 200, "what was acknowledged is still there"
    no_server_errors(daemon)
    assert "t" * 200 not in daemon.log_path.read_text(), "an oversized Authorization header is not logged"


@pytest.mark.runs_no_jobs
def test_a_query_parameter_a_route_does_not_take_or_gives_twice_is_refused(daemon: Daemon) -> None:
    job = daemon.add_job(JOB)["jobId"]
    # a typo would otherwise be ignored: the first page of everything instead of five
    body = problem(daemon.get("/v1/jobs?limt=5"), 400, "limt")
    assert body["code"] == "invalid_query", body
    assert body["detail"] == "unknown query parameter 'limt': GET /v1/jobs takes after, limit, name, status, tenant"
    body = problem(daemon.get(f"/v1/jobs/{job}?verbose=1"), 400, "verbose")
    assert body["detail"] == "unknown query parameter 'verbose': GET /v1/jobs/{jobId} takes no query parameters"
    problem(daemon.get("/v1/events?follow=1&tail=5"), 400, "tail")  # refused before the stream opens
    problem(daemon.post("/v1/dlq/x/replay?force=1", {}), 400, "force")
    body = problem(daemon.get("/v1/events?n=1&n=500"), 400, "n")
    assert body["detail"] == "the query parameter 'n' is given 2 times: give it once", body
    # what a route takes still works, and the probes stay lenient (monitors add what they like)
    assert daemon.get("/v1/jobs?limit=5&status=ACTIVE").status == 200
    assert daemon.get(f"/v1/jobs/{job}/executions?limit=5").status == 200
    assert daemon.get("/v1/events?n=1").status == 200
    assert daemon.get("/healthz?probe=lb").status == 200
    # credentials first: without them a route's parameters are no way to map the API
    assert daemon.request("GET", "/v1/jobs?x=1", token=None).status == 401
    assert daemon.request("GET", "/v1/nonexist?x=1", token=None).status == 401
    tenant = daemon.post("/v1/tokens", {"tenant": "default"}).json()["token"]
    assert daemon.request("GET", "/v1/tenants?x=1", token=tenant).status == 403
    no_server_errors(daemon)


@pytest.mark.runs_no_jobs
def test_a_final_newline_does_not_slip_past_a_fields_rules(daemon: Daemon) -> None:
    # Python's "$" also matches before a final newline: each of these was accepted (a tenant
    # named "zz\n" was created and its answer's Location header broke the connection)
    job = {"schedule": "0 0 1 1 *", "command": "true"}
    cases = [
        ("/v1/tenants", {"name": "zz\n"}, "name"),
        ("/v1/workers/claim", {"workerId": "w\n", "queues": ["default"]}, "workerId"),
        ("/v1/workers/claim", {"workerId": "w", "queues": ["default\n"]}, "queues[0]"),
        ("/v1/jobs", {"schedule": "0 0 1 1 *", "queue": "q\n"}, "queue"),
        ("/v1/jobs", {**job, "env": {"FOO\n": "x"}}, "env"),
        ("/v1/jobs", {**JOB, "http": {"url": "https://example.org/hook", "headers": {"X-A": "v\n"}}}, None),
        ("/v1/jobs", {**JOB, "http": {"url": "https://example.org/hook\n"}}, None),
        ("/v1/jobs", {"schedule": "0 0 1 1 *", "python": "os:getcwd\n"}, "python"),
        ("/v1/jobs", {**job, "notify": [{"on": "failure", "via": "email", "to": ["ops@example.com\n"]}]}, None),
    ]
    for path, body, field in cases:
        r = daemon.post(path, body)
        assert r.status in (400, 422), (path, body, r)
        if field is not None:
            assert r.json().get("field", "").startswith(field), (path, body, r.json())
    assert "zz\n" not in [t["name"] for t in daemon.get("/v1/tenants").json()["tenants"]]
    no_server_errors(daemon)


def test_a_route_that_takes_no_body_refuses_one_rather_than_ignore_it(daemon: Daemon) -> None:
    job = daemon.add_job(JOB)["jobId"]
    # {"force": true} on a pause must not read as if it had been honoured
    body = problem(daemon.post(f"/v1/jobs/{job}/pause", {"force": True}), 400, "force")
    assert body["code"] == "unknown_field" and body["detail"].endswith("takes no body fields, not force"), body
    assert daemon.get(f"/v1/jobs/{job}").json()["status"] == "ACTIVE", "a refused request changed nothing"
    body = problem(daemon.post(f"/v1/jobs/{job}/trigger", [1]), 400)
    assert body["code"] == "invalid_body" and "not a JSON list" in body["detail"], body
    problem(daemon.post("/v1/dlq/nope/replay", {"all": True}), 400, "all")
    # nothing, {} and null are all "no body" (the dashboard sends {})
    assert daemon.post(f"/v1/jobs/{job}/pause", {}).status == 200
    assert daemon.request("POST", f"/v1/jobs/{job}/resume", raw=b"").status == 200
    assert daemon.request("POST", f"/v1/jobs/{job}/pause", raw=b"null", headers={"Content-Type": "application/json"}).status == 200
    no_server_errors(daemon)


_printable = st.text(alphabet=string.printable, max_size=40)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | _printable,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_printable, inner, max_size=4),
    max_leaves=12,
)
_fields = st.sampled_from(["schedule", "runAt", "timezone", "name", "command", "http", "python", "queue", "target",
                           "payload", "retryPolicy", "timeoutSec", "leaseSec", "priority", "overlap", "misfire",
                           "jitterSec", "workerId", "leaseEpoch", "outcome", "key", "weight", "maxRunning", "httpAllow",
                           "role", "tenant"])


@pytest.mark.runs_no_jobs
def test_fuzzed_requests_never_get_a_500(daemon: Daemon) -> None:
    job = daemon.add_job(JOB)["jobId"]
    xid = f"{job}:1"
    tenant_token = daemon.post("/v1/tokens", {"tenant": "default"}).json()["token"]
    posts = ["/v1/jobs", f"/v1/jobs/{job}/pause", f"/v1/jobs/{job}/resume", f"/v1/executions/{xid}/heartbeat",
             f"/v1/executions/{xid}/complete", f"/v1/executions/{xid}/effects", "/v1/tenants", "/v1/tokens",
             f"/v1/dlq/{xid}/replay"]
    gets = ["/v1/jobs", f"/v1/jobs/{job}/executions", "/v1/dlq", "/v1/tokens", "/v1/events"]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(
        path=st.sampled_from(posts),
        body=st.dictionaries(_fields, _json, max_size=6) | _json,
        as_tenant=st.booleans(),
    )
    def post(path: str, body: Any, as_tenant: bool) -> None:
        r = daemon.post(path, body, token=tenant_token if as_tenant else daemon.admin_token)
        assert r.status < 500, (path, body, r)
        if r.status >= 400:
            assert r.headers["Content-Type"].startswith("application/problem+json"), r

    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(
        path=st.sampled_from(gets),
        params=st.dictionaries(st.sampled_from(["limit", "after", "before", "status", "n", "since", "job", "event", "tenant"]),
                               st.text(max_size=30), max_size=4),
    )
    def get(path: str, params: dict[str, str]) -> None:
        query = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in params.items())
        r = daemon.get(f"{path}?{query}")
        assert r.status < 500, (path, query, r)

    post()
    get()
    alive(daemon)
    assert daemon.get(f"/v1/jobs/{job}").status == 200
    no_server_errors(daemon)
    statuses = {json.dumps(e.get("status")) for e in daemon.events("http.bad_request")}
    assert "500" not in statuses


def test_what_is_not_taken_is_refused_with_the_status_docs_security_md_gives(daemon: Daemon) -> None:
    """docs/security.md ("Nothing is silently ignored") and the OpenAPI conventions say which
    status each refusal is; they once said 400 for an unknown body member, which is a 422."""
    job = daemon.add_job(JOB)["jobId"]
    cases = [
        ("POST", "/v1/jobs", {**JOB, "bogus": 1}, 422, "unknown_field"),
        ("PUT", "/v1/calendars/c", {"bogus": 1}, 422, "unknown_field"),
        ("POST", f"/v1/jobs/{job}/pause", {"force": True}, 400, "unknown_field"),
        ("POST", f"/v1/jobs/{job}/pause", [1], 400, "invalid_body"),
        ("GET", "/v1/jobs?bogus=1", None, 400, "invalid_query"),
        ("GET", "/v1/jobs?limit=1&limit=2", None, 400, "invalid_query"),
    ]
    for method, path, body, status, code in cases:
        r = daemon.request(method, path, body)
        assert (r.status, r.json()["code"]) == (status, code), (method, path, body, r)
    twice = b'{"schedule": "0 0 1 1 *", "schedule": "@hourly"}'
    head = (f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {daemon.admin_token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(twice)}\r\nConnection: close\r\n\r\n").encode()
    answer = raw_exchange(daemon, head, [twice])
    assert answer.startswith(b"HTTP/1.1 400") and b'"malformed_json"' in answer, answer[:400]
