"""The OpenAPI document and the validation code agree, member by member.

Two kinds of pins, so the two cannot drift apart:

* the document's numbers (lengths, ranges, item counts, enums) equal the constants and enums
  the validation modules use;
* a differential property test: for generated values of each member — around every boundary
  and at random — the document's schema (jsonschema, Draft 2020-12) accepts exactly what the
  server's parser accepts. Members whose validity JSON Schema cannot state (the document's own
  string formats, which a JSON Schema validator does not check) are pinned by the fuzz run
  instead (tests/integration/test_api_fuzz.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronwheel.api import jobpatch as jp
from cronwheel.api import queries as qv
from cronwheel.api import targets as tg
from cronwheel.api import tenancy as tv
from cronwheel.api import validation as v
from cronwheel.api import workercalls as wc
from cronwheel.core import jobfields as jf
from cronwheel.core import limits as lim
from cronwheel.core.model import Job, JobStatus, MisfirePolicy, OverlapPolicy, Priority
from cronwheel.core.tenants import TENANT_NAME_RE, TOKEN_ID_RE, Role

DOC = json.loads((Path(v.__file__).with_name("openapi.json")).read_text())
SCHEMAS = DOC["components"]["schemas"]
NOW = 1_767_225_600_000
BASE_JOB = {"schedule": "0 * * * *", "command": "true"}
PROPERTY = settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def doc_accepts(schema_name: str, instance: Any) -> bool:
    schema = {"$ref": f"#/components/schemas/{schema_name}", "components": DOC["components"]}
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def server_accepts(parse: Callable[[Any], Any], body: Any) -> bool:
    try:
        parse(body)
    except v.ValidationError:
        return False
    return True


def agree(schema_name: str, parse: Callable[[Any], Any], body: Any) -> None:
    documented, served = doc_accepts(schema_name, body), server_accepts(parse, body)
    assert documented == served, f"{schema_name}: the document {'accepts' if documented else 'refuses'} {body!r}, the server {'accepts' if served else 'refuses'} it"


def parse_job(body: Any) -> Any:
    return v.parse_job_body(body, now_ms=NOW)


# ---------------------------------------------------------------- constants


def test_the_documents_numbers_are_the_validation_constants() -> None:
    job = SCHEMAS["JobRequest"]["properties"]
    assert set(job) == set(v.JOB_FIELDS)
    assert set(SCHEMAS["JobItem"]["properties"]) == set(v.JOB_FIELDS) | {"idempotencyKey"}
    assert {k: val for k, val in SCHEMAS["JobItem"].items() if k not in ("properties", "description")} == {
        k: val for k, val in SCHEMAS["JobRequest"].items() if k not in ("properties", "description")}
    def without_descriptions(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: without_descriptions(val) for k, val in node.items() if k != "description"}
        return [without_descriptions(x) for x in node] if isinstance(node, list) else node

    # a patch names the members of a create body, under the same rules (env merges variable by
    # variable, so a variable may be null there)
    patch = {k: val for k, val in SCHEMAS["JobPatch"]["properties"].items() if k != "env"}
    assert without_descriptions(patch) == without_descriptions({k: val for k, val in job.items() if k != "env"})
    assert {k: val for k, val in SCHEMAS["EnvPatch"].items() if k not in ("additionalProperties", "description")} == {
        k: val for k, val in SCHEMAS["Env"].items() if k not in ("additionalProperties", "description")}
    env = SCHEMAS["Env"]
    assert (env["maxProperties"], env["propertyNames"]["maxLength"]) == (tg.MAX_ENV_VARS, tg.MAX_ENV_NAME_CHARS)
    assert job["shell"]["maxLength"] == tg.MAX_SHELL_BYTES and job["stdin"]["maxLength"] == tg.MAX_STDIN_BYTES
    run_as = SCHEMAS["RunAs"]["properties"]
    assert run_as["user"]["maxLength"] == run_as["group"]["maxLength"] == tg.MAX_ACCOUNT_NAME_CHARS
    assert job["name"]["maxLength"] == v.MAX_NAME_CHARS
    assert job["schedule"]["maxLength"] == v.MAX_SCHEDULE_CHARS
    assert job["timezone"]["maxLength"] == v.MAX_TIMEZONE_CHARS
    assert job["command"]["maxLength"] == tg.MAX_COMMAND_BYTES  # characters bound the bytes from above
    assert (job["timeoutSec"]["minimum"], job["timeoutSec"]["maximum"]) == v.TIMEOUT_SEC_RANGE
    assert (job["leaseSec"]["minimum"], job["leaseSec"]["maximum"]) == v.LEASE_SEC_RANGE
    assert (job["jitterSec"]["minimum"], job["jitterSec"]["maximum"]) == v.JITTER_SEC_RANGE
    assert job["priority"]["enum"] == [p.label for p in Priority] + [None]
    assert job["overlap"]["enum"] == [p.value for p in OverlapPolicy] + [None]
    assert job["misfire"]["enum"] == [p.value for p in MisfirePolicy] + [None]
    assert set(SCHEMAS["Target"]["properties"]) == set(v.TARGET_KINDS)
    assert set(SCHEMAS["RetryPolicy"]["properties"]) == set(v.RETRY_FIELDS)
    http = SCHEMAS["HttpTarget"]["properties"]
    assert http["url"]["maxLength"] == tg.MAX_URL_CHARS
    assert http["method"]["enum"] == [*tg.HTTP_METHODS, None]
    assert http["headers"]["maxProperties"] == tg.MAX_HEADERS
    assert http["headers"]["propertyNames"]["maxLength"] == tg.MAX_HEADER_NAME_CHARS
    assert http["headers"]["additionalProperties"]["maxLength"] == tg.MAX_HEADER_VALUE_CHARS
    batch = SCHEMAS["JobBatchRequest"]["properties"]["jobs"]
    assert (batch["minItems"], batch["maxItems"]) == (1, v.MAX_BATCH_JOBS)
    assert SCHEMAS["JobItem"]["properties"]["idempotencyKey"]["maxLength"] == v.MAX_IDEMPOTENCY_KEY_CHARS
    claim = SCHEMAS["ClaimRequest"]["properties"]
    assert claim["max"]["maximum"] == lim.MAX_CLAIM and claim["waitSec"]["maximum"] == lim.MAX_CLAIM_WAIT_SEC
    assert (claim["queues"]["minItems"], claim["queues"]["maxItems"]) == (1, lim.MAX_CLAIM_QUEUES)
    retry = SCHEMAS["RetryPolicy"]["properties"]
    for member, bounds in (("maxAttempts", lim.RETRY_MAX_ATTEMPTS_RANGE), ("initialBackoffSec", lim.RETRY_INITIAL_BACKOFF_SEC_RANGE),
                           ("maxBackoffSec", lim.RETRY_MAX_BACKOFF_SEC_RANGE), ("multiplier", lim.RETRY_MULTIPLIER_RANGE),
                           ("jitter", lim.RETRY_JITTER_RANGE)):
        assert (retry[member]["minimum"], retry[member]["maximum"]) == bounds, member
    assert (job["misfireGraceSec"]["minimum"], job["misfireGraceSec"]["maximum"]) == lim.MISFIRE_GRACE_SEC_RANGE
    assert job["managedBy"]["maxLength"] == lim.MAX_MANAGED_BY_CHARS
    assert job["calendars"]["maxItems"] == lim.MAX_JOB_CALENDARS
    chain = SCHEMAS["ChainRequest"]["properties"]
    assert job["onSuccess"]["maxItems"] == job["onFailure"]["maxItems"] == lim.MAX_CHAIN_CHILDREN
    assert chain["onSuccess"]["maxItems"] == chain["onFailure"]["maxItems"] == lim.MAX_CHAIN_CHILDREN
    calendar = SCHEMAS["CalendarRequest"]["properties"]
    assert calendar["dates"]["maxItems"] == calendar["windows"]["maxItems"] == lim.MAX_CALENDAR_ENTRIES
    assert calendar["description"]["maxLength"] == lim.MAX_CALENDAR_DESCRIPTION_CHARS
    assert job["notify"]["oneOf"][0]["maxItems"] == lim.MAX_NOTIFY_RULES
    rule = SCHEMAS["NotifyRule"]["properties"]
    assert rule["url"]["maxLength"] == lim.MAX_NOTIFY_URL_CHARS and rule["command"]["maxLength"] == lim.MAX_NOTIFY_COMMAND_BYTES
    assert (rule["secret"]["minLength"], rule["secret"]["maxLength"]) == (lim.MIN_SECRET_CHARS, lim.MAX_SECRET_CHARS)
    assert rule["to"]["oneOf"][1]["maxItems"] == lim.MAX_RECIPIENTS
    for member, bounds in (("afterSec", lim.NOTIFY_AFTER_SEC_RANGE), ("maxPerHour", lim.NOTIFY_MAX_PER_HOUR_RANGE),
                           ("maxAttempts", lim.NOTIFY_MAX_ATTEMPTS_RANGE)):
        assert (rule[member]["minimum"], rule[member]["maximum"]) == bounds, member
    for name in ("ClaimRequest", "LeaseRequest", "CompleteRequest", "EffectRequest"):
        assert SCHEMAS[name]["properties"]["workerId"]["maxLength"] == wc.MAX_WORKER_ID_CHARS
    assert SCHEMAS["EffectRequest"]["properties"]["key"]["maxLength"] == wc.MAX_EFFECT_KEY_CHARS
    assert SCHEMAS["CompleteRequest"]["properties"]["outcome"]["enum"] == list(wc.WORKER_OUTCOMES)
    for name in ("TenantRequest", "TenantPatch"):
        tenant = SCHEMAS[name]["properties"]
        assert set(tenant) - {"name"} == set(tv.TENANT_FIELDS)
        assert tenant["weight"]["maximum"] == lim.MAX_WEIGHT and tenant["httpAllow"]["maxItems"] == lim.MAX_HTTP_ALLOW
        assert tenant["maxRunning"]["maximum"] == tenant["maxJobs"]["maximum"] == tenant["submitBurst"]["maximum"] == lim.MAX_QUOTA
        assert tenant["submitRate"]["maximum"] == lim.MAX_RATE
    token = SCHEMAS["TokenRequest"]["properties"]
    assert sorted(token["role"]["enum"]) == sorted(r.value for r in Role)
    assert token["name"]["maxLength"] == lim.MAX_TOKEN_NAME_CHARS
    header = DOC["paths"]["/v1/jobs"]["post"]["parameters"][0]
    assert header["name"] == "Idempotency-Key" and header["schema"]["maxLength"] == v.MAX_IDEMPOTENCY_KEY_CHARS


# ---------------------------------------------------------------- differential: schema == parser


def _around(*points: float) -> st.SearchStrategy[Any]:
    """Numbers at, just inside and just outside each boundary, and anything else."""
    near = [q for p in points for q in (p, p - 1, p + 1, p - 0.001, p + 0.001)]
    return st.one_of(st.sampled_from(near), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                     st.sampled_from([None, True, "1", [], {}]))


TEXT = st.one_of(
    st.text(st.sampled_from("aZ09_.-:/ \t\n\x00\x1c\u00a0é*$!"), max_size=12),
    st.text(max_size=8),
    st.sampled_from([None, 1, True, [], {}]),
)


@pytest.mark.parametrize(("member", "points"), [
    ("timeoutSec", v.TIMEOUT_SEC_RANGE), ("leaseSec", v.LEASE_SEC_RANGE), ("jitterSec", v.JITTER_SEC_RANGE),
])
def test_job_numbers_agree(member: str, points: tuple[float, float]) -> None:
    @PROPERTY
    @given(_around(*points))
    def check(value: Any) -> None:
        agree("JobRequest", parse_job, {**BASE_JOB, member: value})

    check()


@pytest.mark.parametrize("member", ["maxAttempts", "initialBackoffSec", "maxBackoffSec", "multiplier", "jitter"])
def test_retry_policy_numbers_agree(member: str) -> None:
    @PROPERTY
    @given(_around(0, 1, 100, 1000, 86_400, 7 * 86_400))
    def check(value: Any) -> None:
        policy = {member: value}
        # the cross-member rule (maxBackoffSec >= initialBackoffSec) is stated in words only
        if member == "initialBackoffSec":
            policy["maxBackoffSec"] = 7 * 86_400
        if member == "maxBackoffSec":
            policy["initialBackoffSec"] = 0
        agree("JobRequest", parse_job, {**BASE_JOB, "retryPolicy": policy})

    check()


@pytest.mark.parametrize("member", ["queue", "python", "command", "priority", "overlap", "misfire"])
def test_job_strings_agree(member: str) -> None:
    @PROPERTY
    @given(st.one_of(TEXT, st.sampled_from(["a.b:c", "a:b", "q-1", "high", "forbid", "skip", "x" * 101, "a" * 501 + ":b"])))
    def check(value: Any) -> None:
        body = {"schedule": BASE_JOB["schedule"], member: value}
        if member not in v.TARGET_KINDS:
            body["command"] = "true"
        agree("JobRequest", parse_job, body)

    check()


def test_when_and_target_rules_agree() -> None:
    members = st.fixed_dictionaries({}, optional={
        "schedule": st.sampled_from(["0 * * * *", None]), "runAt": st.sampled_from(["2030-01-01T00:00:00Z", None]),
        "command": st.sampled_from(["true", None]), "queue": st.sampled_from(["q", None]),
        "python": st.sampled_from(["m:f", None]), "http": st.sampled_from([{"url": "http://h/"}, None]),
        "target": st.sampled_from([{"queue": "q"}, {"command": "true", "queue": None}, {"queue": "q", "python": "m:f"}, {}, None]),
    })

    @PROPERTY
    @given(members)
    def check(body: dict[str, Any]) -> None:
        agree("JobRequest", parse_job, body)

    check()


def test_patch_rules_agree() -> None:
    """A patch's schedule/runAt and target groups replace each other: the document says when a
    patch leaves the job without a schedule or with two targets, as the server finds."""
    job = Job("jexample", 0, JobStatus.ACTIVE, NOW, NOW, NOW, parse_job({**BASE_JOB, "name": "n"}))
    members = st.fixed_dictionaries({}, optional={
        "schedule": st.sampled_from(["0 * * * *", None]), "runAt": st.sampled_from(["2030-01-01T00:00:00Z", None]),
        "command": st.sampled_from(["true", None]), "queue": st.sampled_from(["q", None]),
        "target": st.sampled_from([{"queue": "q"}, None]), "name": st.sampled_from(["m", None]),
        "jitterSec": st.sampled_from([5, None, -1]),
    }).filter(bool)

    @PROPERTY
    @given(members)
    def check(patch: dict[str, Any]) -> None:
        agree("JobPatch", lambda body: jp.parse_job_patch(job, body, now_ms=NOW), patch)

    check()


def test_process_members_agree() -> None:
    """env, runAs, shell and stdin: their own shapes, and the targets they suit."""
    members = st.fixed_dictionaries({"schedule": st.just("0 * * * *")}, optional={
        "command": st.sampled_from(["true", None]), "queue": st.sampled_from(["q", None]),
        "python": st.sampled_from(["m:f", None]), "target": st.sampled_from([{"command": "true"}, {"queue": "q"}, None]),
        "env": st.one_of(st.none(), st.dictionaries(st.sampled_from(["A", "_b1", "1A", "CRONWHEEL_X", "a-b", ""]), TEXT, max_size=2)),
        "shell": st.sampled_from(["/bin/sh", "/bin/sh ", "sh", "/", "/a\x00", None, 1]),
        "stdin": st.one_of(TEXT, st.just("x")),
        "runAs": st.sampled_from([{"user": "root"}, {"user": "root", "group": None}, {"user": "no body"}, {"group": "root"}, None, {}]),
    })

    @PROPERTY
    @given(members)
    def check(body: dict[str, Any]) -> None:
        agree("JobRequest", parse_job, body)

    check()


def test_http_targets_agree() -> None:
    http = st.fixed_dictionaries({"url": st.sampled_from([
        "http://h/", "HTTPS://h:8080/x", "ftp://h/", "http:// h", "http://h/\x00", None,
        # no host, or a C1 control: refused by the server and by the pattern alike
        "https:///x", "https://:80/", "https://?q", "https://h\x80x", "https://h/\x9f",
    ])}, optional={
        "method": st.sampled_from(["GET", "DELETE", "HEAD", None, 1]),
        "headers": st.one_of(st.none(), st.dictionaries(TEXT.filter(lambda t: isinstance(t, str)), TEXT, max_size=3)),
    })

    @PROPERTY
    @given(http)
    def check(target: dict[str, Any]) -> None:
        agree("JobRequest", parse_job, {"schedule": "0 * * * *", "http": target})

    check()


def test_worker_bodies_agree() -> None:
    worker = st.one_of(st.sampled_from(["w", "", "x" * 201]), TEXT)
    epoch = _around(0, 2**63 - 1)
    lease = st.fixed_dictionaries({"workerId": worker, "leaseEpoch": epoch})
    complete = st.fixed_dictionaries({"workerId": worker, "leaseEpoch": epoch, "outcome": st.sampled_from(["succeeded", "lost", None])},
                                     optional={"exitCode": _around(-(2**31), 2**31 - 1), "error": TEXT, "output": TEXT})
    effect = st.fixed_dictionaries({"workerId": worker, "leaseEpoch": epoch, "key": st.one_of(TEXT, st.just("k" * 1025))})
    claim = st.fixed_dictionaries({"workerId": worker, "queues": st.one_of(st.lists(TEXT, max_size=3), st.none())},
                                  optional={"max": _around(1, lim.MAX_CLAIM), "waitSec": _around(0, lim.MAX_CLAIM_WAIT_SEC)})

    @PROPERTY
    @given(st.one_of(lease.map(lambda b: ("LeaseRequest", b)), complete.map(lambda b: ("CompleteRequest", b)),
                     effect.map(lambda b: ("EffectRequest", b)), claim.map(lambda b: ("ClaimRequest", b))))
    def check(case: tuple[str, dict[str, Any]]) -> None:
        name, body = case
        parse = {"LeaseRequest": wc.parse_heartbeat, "CompleteRequest": lambda b: wc.parse_completion("x:1", b),
                 "EffectRequest": wc.parse_effect, "ClaimRequest": wc.parse_claim}[name]
        agree(name, parse, body)

    check()


def test_tenant_and_token_bodies_agree() -> None:
    quota = _around(0, 1, lim.MAX_QUOTA)
    tenant = st.fixed_dictionaries({"name": st.one_of(TEXT, st.just("a" * 65))}, optional={
        "weight": _around(1, lim.MAX_WEIGHT), "maxRunning": quota, "maxJobs": quota, "submitBurst": quota,
        "submitRate": _around(lim.MIN_RATE, lim.MAX_RATE), "allowShell": st.sampled_from([True, False, None, 1]),
    })
    token = st.fixed_dictionaries({}, optional={
        "role": st.sampled_from(["tenant", "worker", "admin", "metrics", "root", None]),
        "tenant": st.one_of(TEXT, st.sampled_from(["acme", "a" * 65])),
    })

    @PROPERTY
    @given(st.one_of(tenant.map(lambda b: ("TenantRequest", b)), token.map(lambda b: ("TokenRequest", b))))
    def check(case: tuple[str, dict[str, Any]]) -> None:
        name, body = case
        agree(name, tv.parse_tenant_body if name == "TenantRequest" else tv.parse_token_body, body)

    check()


def test_query_patterns_agree() -> None:
    params = {p["name"]: p["schema"] for p in DOC["paths"]["/v1/jobs"]["get"]["parameters"]}

    @PROPERTY
    @given(st.one_of(TEXT.filter(lambda t: isinstance(t, str)), st.sampled_from(["active", "Paused", "COMPLETED", "done", ""])))
    def check(value: str) -> None:
        documented = jsonschema.Draft202012Validator(params["status"]).is_valid(value)
        assert documented == server_accepts(qv.parse_job_status, value), value

    check()


# ---------------------------------------------------------------- a pattern's end


def _patterns(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in ([v] if k == "pattern" and isinstance(v, str) else _patterns(v))]
    return [p for v in node for p in _patterns(v)] if isinstance(node, list) else []


def test_no_schema_pattern_lets_a_final_newline_through() -> None:
    """msgspec checks a ``pattern`` with ``re.search``, where ``$`` also matches before a final
    newline: ``"w\\n"`` passed as a workerId, ``"zz\\n"`` became a tenant. Every anchored
    pattern of the document (the very strings msgspec is given) ends in ``PATTERN_END``."""

    # (a pattern ending in "[^\u0000]*$" or "\s*$" admits a final newline as content anyway)
    request_patterns = {p for p in _patterns(DOC["components"]["schemas"])
                        if p.endswith("$") and not p.endswith(("[^\\u0000]*$", "\\s*$"))}
    assert len(request_patterns) > 10
    loose = sorted(p for p in request_patterns if not p.endswith(lim.PATTERN_END))
    assert not loose, loose
    for pattern, good in ((jf.WORKER_ID_PATTERN, "w-1"), (jf.QUEUE_PATTERN, "q"), (jf.JOB_ID_PATTERN, "j1"),
                          (jf.HEADER_VALUE_PATTERN, "v"), (jf.HEADER_NAME_PATTERN, "X-A"), (jf.ENV_NAME_PATTERN, "FOO"),
                          (jf.PYTHON_PATTERN, "os:getcwd"), (jf.SHELL_PATTERN, "/bin/sh"), (jf.HTTP_URL_PATTERN, "http://h/"),
                          (TENANT_NAME_RE.pattern, "zz"), (TOKEN_ID_RE.pattern, "tk_0123456789abcdef")):  # fmt: skip
        assert re.search(pattern, good), (pattern, good)
        assert not re.search(pattern, good + "\n"), (pattern, good)
