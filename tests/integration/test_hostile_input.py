"""The strict input boundary against a real daemon: lone surrogates, NUL, NaN, huge and
negative numbers, deep nesting and wrong types at every field of every route answer a 4xx
problem document, never a 500, and the daemon stays healthy (one tenant's bad input never
reaches a shared write)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.integration.test_hostile_http import alive, no_server_errors, problem
from tests.support.daemon import REPO, Daemon

QUEUE_JOB = {"schedule": "0 0 1 1 *", "queue": "q"}


def post_text(d: Daemon, path: str, text: str, token: str | None = None) -> Any:
    """POST a JSON text as written (so that ``\\udc00`` escapes and ``NaN`` reach the daemon)."""
    return d.request("POST", path, raw=text.encode(), token=token or d.admin_token)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_store_daemon(request: pytest.FixtureRequest, make_daemon: Callable[..., Daemon]) -> Daemon:
    if request.param == "sqlite":
        return make_daemon()
    return make_daemon(args=("--store", request.getfixturevalue("postgres_dsn")))


def test_each_finding_of_the_issue_is_a_4xx_naming_the_field(any_store_daemon: Daemon) -> None:
    daemon = any_store_daemon
    cases = [
        ("/v1/jobs", '{"schedule": "@every 99999999999999d", "queue": "q"}', "schedule"),
        ("/v1/jobs", '{"schedule": "@every 100000000d", "queue": "q"}', "schedule"),
        ("/v1/jobs", '{"schedule": "* * * * *", "queue": "q", "payload": {"a": "\\udc00"}}', "payload.a"),
        ("/v1/jobs", '{"schedule": "* * * * *", "queue": "q", "payload": {"\\udc00": 1}}', "payload.\\udc00"),
        ("/v1/jobs", '{"schedule": "* * * * *", "queue": "q", "payload": {"a": "x\\u0000"}}', "payload.a"),
        ("/v1/jobs", '{"schedule": "* * * * *", "queue": "q", "payload": [1e400]}', "payload[0]"),
        ("/v1/jobs", '{"schedule": "* * * * *", "queue": "q", "payload": 123456789012345678901234567890}', "payload"),
        ("/v1/jobs", '{"schedule": "* * * * *", "command": "echo \\udc00"}', "command"),
        ("/v1/jobs", '{"schedule": "* * * * *", "http": {"url": "http://x/", "headers": {"X": "\\udc00"}}}', "http.headers.X"),
        ("/v1/jobs/batch", '{"jobs": [{"schedule": "* * * * *", "queue": "q", "name": "\\ud800"}]}', "jobs[0].name"),
        ("/v1/workers/claim", '{"workerId": "\\udc00", "queues": ["q"]}', "workerId"),
        ("/v1/executions/x/effects", '{"workerId": "w", "leaseEpoch": 1, "key": "\\udc00"}', "key"),
        ("/v1/executions/x/complete", '{"workerId": "w", "leaseEpoch": 1, "outcome": "succeeded", "output": "o\\udc00"}', "output"),
        ("/v1/executions/x/complete", '{"workerId": "w", "leaseEpoch": 1, "outcome": "failed", "error": "\\udfff"}', "error"),
        ("/v1/tenants", '{"name": "t\\udc00"}', "name"),
    ]
    out_of_range = {"payload[0]", "payload"}  # numbers: well-formed, refused (422)
    for path, text, field in cases:
        body = problem(post_text(daemon, path, text), 422 if field in out_of_range else 400, field)
        assert body["detail"], body
    # 1e308 where an integer goes is an integer of 309 digits to the decoder: named, not echoed whole
    huge = problem(post_text(daemon, "/v1/jobs", '{"schedule": "0 0 1 1 *", "queue": "q", "retryPolicy": {"maxAttempts": 1e308}}'),
                   422, "retryPolicy.maxAttempts")  # fmt: skip
    assert huge["detail"] == "retryPolicy.maxAttempts must be between 1 and 1000, not 100000… (309 digits)", huge
    deep = "[" * 30 + "]" * 30
    problem(post_text(daemon, "/v1/jobs", f'{{"schedule": "* * * * *", "queue": "q", "payload": {deep}}}'), 400)
    twice = problem(post_text(daemon, "/v1/jobs", '{"schedule": "* * * * *", "queue": "q", "name": "a", "name": "b"}'), 400)
    assert twice["code"] == "malformed_json" and "'name' is given twice" in twice["detail"], twice
    # headers, paths and query strings: bytes that are not UTF-8 arrive as lone surrogates
    from tests.integration.test_hostile_http import raw_exchange, status_of

    auth = f"Authorization: Bearer {daemon.admin_token}\r\n".encode()
    for head in (
        b"GET /v1/jobs/\xed\xb0\x80 HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n",
        b"GET /v1/jobs?after=%ED%B0%80 HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n",
        b"GET /v1/jobs/%00 HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n",
        b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nIdempotency-Key: \xff\xfe\r\nContent-Type: application/json\r\n" + auth
        + b"Content-Length: 2\r\n\r\n{}",
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xed\xb0\x80\r\n\r\n",
    ):
        resp = raw_exchange(daemon, head)
        assert status_of(resp) in (200, 400, 401, 404), resp[:300]  # 200: a percent escape kept as text
        if status_of(resp) >= 400:  # the parser's refusals too: a problem document
            assert b"application/problem+json" in resp, resp[:300]
    # what the HTTP parser refuses (too long, too many headers, smuggling) is a problem too
    for head in (
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n",
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(5000)) + b"\r\n",
        b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
    ):
        resp = raw_exchange(daemon, head)
        assert 400 <= status_of(resp) < 500 and b"application/problem+json" in resp, resp[:300]
        assert b'"code": "bad_request"' in resp and b"a" * 100 not in resp
    # nothing was stored, and every listing still renders for the admin
    assert daemon.get("/v1/jobs").json()["jobs"] == []
    for args in (("ls",), ("ls", "--json"), ("status",)):
        r = daemon.cli(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr[-500:])
    alive(daemon)
    no_server_errors(daemon)


# ---------------------------------------------------------------- generated

_hostile_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["\udc00", "a\ud800b", "\udfff", "\x00", "x\x00y", "\x1b[2J", "\u202e", "\ufffe"]),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()), min_size=1, max_size=3),
)
_hostile_number = st.one_of(
    st.integers(-(2**80), 2**80),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, -1, 0, -(10**18)]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_leaf = st.none() | st.booleans() | _hostile_number | _hostile_text
_value = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_hostile_text, inner, max_size=3),
    max_leaves=10,
)
_deep = st.integers(20, 60).map(lambda n: json.loads("[" * n + "]" * n))
_FIELDS = ["schedule", "runAt", "timezone", "name", "command", "http", "python", "queue", "target", "payload",
           "retryPolicy", "timeoutSec", "leaseSec", "priority", "overlap", "misfire", "jitterSec", "workerId",
           "leaseEpoch", "outcome", "exitCode", "error", "output", "key", "queues", "max", "waitSec", "jobs",
           "idempotencyKey", "weight", "maxRunning", "maxJobs", "submitRate", "submitBurst", "httpAllow",
           "allowShell", "role", "tenant"]


def _dumps(value: Any) -> str:
    """JSON as a hostile client writes it: lone surrogates as ``\\u`` escapes, NaN and
    Infinity as bare words (json.dumps does both by default)."""
    return json.dumps(value)


#: every operation of the API document that takes a JSON body or a path parameter: the routes
#: the generated test sends hostile input to (the document equals the route table, see
#: test_api_app.py, so a route added to the daemon is added here)
DOC = json.loads((REPO / "cronwheel" / "api" / "openapi.json").read_text())
OPERATIONS = sorted(
    (method.upper(), path, (op.get("requestBody") or {}).get("content", {}).get("application/json", {}).get("schema"))
    for path, item in DOC["paths"].items()
    for method, op in item.items()
    if method in ("get", "post", "put", "patch", "delete")
    and ("{" in path or "application/json" in (op.get("requestBody") or {}).get("content", {}))
)  # fmt: skip
#: a valid body of each request schema, whose members the test replaces one at a time
BASES: dict[str, dict[str, Any]] = {
    "JobRequest": QUEUE_JOB,
    "JobBatchRequest": {"jobs": [QUEUE_JOB]},
    "JobPatch": {"name": "renamed"},
    "BackfillRequest": {"from": "2020-01-01T00:00:00Z", "to": "2024-01-01T00:00:00Z", "dryRun": True},
    "ChainRequest": {"onSuccess": []},
    "CalendarRequest": {"dates": ["2026-12-25"]},
    "ClaimRequest": {"workerId": "w", "queues": ["q"]},
    "LeaseRequest": {"workerId": "w", "leaseEpoch": 1},
    "CompleteRequest": {"workerId": "w", "leaseEpoch": 1, "outcome": "succeeded"},
    "EffectRequest": {"workerId": "w", "leaseEpoch": 1, "key": "k"},
    "TenantRequest": {"name": "t1"},
    "TenantPatch": {"weight": 2},
    "TokenRequest": {"tenant": "default"},
    "PingRequest": {"status": "success"},
    "TenantNotify": {"notify": []},
}
#: hypothesis examples per operation: every operation gets them, and the whole API takes about
#: 10 s (some 1700 requests on a small machine)
EXAMPLES_PER_OPERATION = 50
_hostile_segment = st.one_of(
    _hostile_text,
    st.sampled_from(["..", "%2e%2e", "a/b", "", " ", "x" * 5000, "-1", "0", "\udc00", "j:99999999999999999999999"]),
)


def _schema_name(schema: dict[str, Any] | None) -> str | None:
    return None if schema is None else str(schema["$ref"]).rsplit("/", 1)[1]


def test_every_route_that_takes_input_is_generated_against() -> None:
    """The route list comes from the document: every write route is in it (25 and more)."""
    writes = {(m, p) for m, p, _ in OPERATIONS if m != "GET"}
    documented = {(m.upper(), p) for p, item in DOC["paths"].items() for m in item if m in ("post", "put", "patch", "delete")}
    assert writes == documented and len(writes) >= 25
    assert {_schema_name(s) for _, _, s in OPERATIONS} - {None} <= set(BASES), "a request schema with no valid base body"


def _send_hostile(d: Daemon, method: str, path: str, schema: dict[str, Any] | None, real: dict[str, str], tenant_token: str) -> None:
    """EXAMPLES_PER_OPERATION calls of one operation: its path parameters a real id or a hostile
    segment, its body a valid one with one member (of its schema, or any) made hostile."""
    name = _schema_name(schema)
    base = BASES.get(name, {}) if name else {}
    members = sorted(DOC["components"]["schemas"][name].get("properties", {})) if name else []
    # mostly the real id, so that the body is read and refused rather than the route not found
    segment = {p: st.one_of(st.just(value), st.just(value), _hostile_segment) for p, value in real.items()}

    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True, database=None)
    @given(values=st.fixed_dictionaries(segment), field=st.sampled_from(members or _FIELDS) | st.sampled_from(_FIELDS),
           value=_value | _deep, as_tenant=st.booleans())
    def send(values: dict[str, str], field: str, value: Any, as_tenant: bool) -> None:
        # a valid long poll only waits (up to 30 s): not what this test is about
        assume(not (field == "waitSec" and isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 30))
        # percent-encoded as UTF-8, lone surrogates too: they arrive as the bytes a broken client sends
        target = re.sub(r"{(\w+)}", lambda m: quote(values[m.group(1)].encode("utf-8", "surrogatepass"), safe=""), path)
        body = {**base, field: value}
        r = d.request(method, target, raw=_dumps(body).encode() if schema or method != "GET" else None,
                      token=tenant_token if as_tenant else d.admin_token)
        assert r.status < 500, (method, target, body, r)
        if r.status >= 400:
            assert r.headers["Content-Type"].startswith("application/problem+json"), (method, target, r)

    send()


def test_generated_hostile_bodies_get_only_4xx_problems(daemon: Daemon) -> None:
    job = daemon.add_job(QUEUE_JOB)["jobId"]
    victim = daemon.add_job(QUEUE_JOB)["jobId"]  # what DELETE routes may really delete
    trig = daemon.post(f"/v1/jobs/{job}/trigger")
    assert trig.status in (200, 201, 202), trig
    xid = daemon.executions(job)[0]["executionId"]  # queued in q: no worker serves it
    daemon.request("PUT", "/v1/calendars/hols", {"dates": ["2026-12-25"]})
    daemon.request("PUT", "/v1/calendars/gone", {"dates": ["2026-12-25"]})
    assert daemon.post("/v1/tenants", {"name": "t0"}).status == 201
    tenant_token = daemon.post("/v1/tokens", {"tenant": "default"}).json()["token"]
    spare = daemon.post("/v1/tokens", {"tenant": "t0"}).json()["tokenId"]

    def real_id(method: str, path: str, param: str) -> str:
        if param == "jobId":
            return victim if method == "DELETE" else job
        if param == "name":
            return ("gone" if method == "DELETE" else "hols") if path.startswith("/v1/calendars") else "default"
        return {"executionId": xid, "tokenId": spare, "notificationId": "n1", "asset": "app.js"}.get(param, "x")

    seen: list[tuple[str, str]] = []
    for method, path, schema in OPERATIONS:
        _send_hostile(daemon, method, path, schema, {p: real_id(method, path, p) for p in re.findall(r"{(\w+)}", path)},
                      tenant_token)
        seen.append((method, path))
    assert len(seen) == len(OPERATIONS)
    alive(daemon)
    assert daemon.get(f"/v1/jobs/{job}").status == 200
    for args in (("ls",), ("dlq", "ls")):
        r = daemon.cli(*args)
        assert r.returncode == 0, (args, r.stderr[-500:])
    no_server_errors(daemon)


#: every query parameter of every GET operation of the document, with its schema
QUERY_PARAMS = sorted(
    (path, p["name"], p.get("schema", {}).get("type"))
    for path, item in DOC["paths"].items()
    for p in (item.get("get") or {}).get("parameters", [])
    if p.get("in") == "query"
)  # fmt: skip
_HOSTILE_QUERY = ["9" * 5000, "99999999999999999999", "\u0663", "\u00b2", "-1", "1e3", " 1", "0x10", "\u202e", "x" * 3000]


@pytest.mark.runs_no_jobs
def test_every_query_parameter_refuses_hostile_values_naming_itself(daemon: Daemon) -> None:
    """Each query parameter of every GET route gets numbers too long for ``int()`` (more than
    4300 digits: a ValueError, once a 500), digits of other scripts (``int("٣")`` is 3) and
    the like: 200, or a 400 problem naming that parameter; an integer one never takes them."""
    job = daemon.add_job(QUEUE_JOB)["jobId"]
    daemon.request("PUT", "/v1/calendars/hols", {"dates": ["2026-12-25"]})
    ids = {"jobId": job, "executionId": f"{job}:1", "name": "hols"}
    assert {name for _, name, kind in QUERY_PARAMS if kind == "integer"} >= {"limit", "count", "window", "top", "n"}
    for path, name, kind in QUERY_PARAMS:
        target = re.sub(r"{(\w+)}", lambda m: ids[m[1]], path)
        for value in _HOSTILE_QUERY:
            r = daemon.get(f"{target}?{name}={quote(value)}")
            assert r.status in (200, 400, 404), (path, name, value[:20], r)
            if r.status == 400 or kind == "integer":
                problem(r, 400, name)
    alive(daemon)
    no_server_errors(daemon)
