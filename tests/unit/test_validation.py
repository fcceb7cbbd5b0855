"""Request bodies → JobSpec, and every refusal names its field (cronwheel.api.validation)."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.api.fields import ValidationError, request_hash
from cronwheel.api.jobjson import execution_to_json, job_to_json
from cronwheel.api.jobpatch import parse_job_patch
from cronwheel.api.queries import (
    parse_execution_cursor,
    parse_idempotency_key,
    parse_job_cursor,
    parse_limit,
    parse_ms_cursor,
)
from cronwheel.api.validation import parse_job_body
from cronwheel.api.workercalls import parse_claim, parse_completion, parse_effect, parse_heartbeat
from cronwheel.core.ids import new_job_id
from cronwheel.core.model import (
    ExecStatus,
    Execution,
    Job,
    JobSpec,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)
from cronwheel.core.records import Outcome
from cronwheel.core.tenants import Tenant

NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z
BASE: dict[str, Any] = {"schedule": "0 * * * *", "command": "echo hi"}


def parse(body: dict[str, Any], **kw: Any) -> JobSpec:
    return parse_job_body(body, now_ms=NOW, **kw)


# ---------------------------------------------------------------- good bodies

GOOD: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (BASE, {"schedule": "0 * * * *", "run_at": None, "target": {"command": "echo hi"}, "timezone": "UTC"}),
    ({"schedule": "@every 5m", "command": "x"}, {"schedule": "@every 5m"}),
    ({"schedule": "H H * * *", "timezone": "Europe/Paris", "command": "x"}, {"timezone": "Europe/Paris"}),
    ({"runAt": "2026-03-01T10:00:00Z", "command": "x"}, {"schedule": None, "run_at": 1_772_359_200_000}),
    ({"runAt": "+90s", "command": "x"}, {"run_at": NOW + 90_000}),
    ({"schedule": "2026-03-01T10:00:00.250+01:00", "command": "x"}, {"schedule": None, "run_at": 1_772_355_600_250}),
    ({"schedule": "+1h30m", "command": "x"}, {"schedule": None, "run_at": NOW + 5_400_000}),
    ({**BASE, "name": "nightly backup"}, {"name": "nightly backup"}),
    ({"schedule": "@daily", "http": {"url": "https://example.com/hook", "method": "post", "headers": {"X-Token": "t"}}},
     {"target": {"http": {"url": "https://example.com/hook", "method": "POST", "headers": {"X-Token": "t"}}}}),
    ({"schedule": "@daily", "http": {"url": "http://10.0.0.1:8080/x"}},
     {"target": {"http": {"url": "http://10.0.0.1:8080/x", "method": "GET", "headers": {}}}}),
    ({"schedule": "@daily", "python": "myapp.tasks:cleanup"}, {"target": {"python": "myapp.tasks:cleanup"}}),
    ({"schedule": "@daily", "queue": "reports.eu-1"}, {"target": {"queue": "reports.eu-1"}}),
    # the minimal body names no target: its executions wait in queue "default" for remote workers
    ({"schedule": "@daily"}, {"target": {"queue": "default"}}),
    ({"schedule": "@daily", "payload": {"a": 1}, "retryPolicy": {"maxAttempts": 2}, "timeoutSec": 30},
     {"target": {"queue": "default"}, "timeout_sec": 30}),
    ({"schedule": "@daily", "queue": "a" * 100}, {"target": {"queue": "a" * 100}}),
    ({"schedule": "@daily", "target": {"command": "ls"}}, {"target": {"command": "ls"}}),
    ({**BASE, "payload": {"n": [1, 2.5, None, "x"]}}, {"payload": {"n": [1, 2.5, None, "x"]}}),
    ({**BASE, "payload": 0}, {"payload": 0}),
    ({**BASE, "retryPolicy": {"maxAttempts": 5, "initialBackoffSec": 2.5}},
     {"retry": RetryPolicy(max_attempts=5, initial_backoff_sec=2.5)}),
    ({**BASE, "retryPolicy": {"initialBackoffSec": 600}}, {"retry": RetryPolicy(initial_backoff_sec=600, max_backoff_sec=600)}),
    ({**BASE, "timeoutSec": 1, "leaseSec": 0.2, "jitterSec": 3600}, {"timeout_sec": 1.0, "lease_sec": 0.2, "jitter_sec": 3600}),
    ({**BASE, "timeoutSec": 604800, "leaseSec": 3600, "jitterSec": 30.0}, {"timeout_sec": 604800.0, "lease_sec": 3600.0, "jitter_sec": 30}),
    ({**BASE, "priority": "high", "overlap": "forbid", "misfire": "skip"},
     {"priority": Priority.HIGH, "overlap": OverlapPolicy.FORBID, "misfire": MisfirePolicy.SKIP}),
    ({**BASE, "priority": "batch", "misfire": "run_all", "overlap": "replace"},
     {"priority": Priority.BATCH, "misfire": MisfirePolicy.RUN_ALL, "overlap": OverlapPolicy.REPLACE}),
    ({**BASE, "name": None, "runAt": None, "payload": None}, {"name": None}),  # null = absent
    ({**BASE, "command": "x" * 16384}, {}),
]


@pytest.mark.parametrize(("body", "expect"), GOOD, ids=[str(i) for i in range(len(GOOD))])
def test_good_bodies(body: dict[str, Any], expect: dict[str, Any]) -> None:
    spec = parse(body)
    for attr, value in expect.items():
        assert getattr(spec, attr) == value, attr


def test_defaults_and_tenant() -> None:
    spec = parse(BASE, tenant="acme")
    assert spec.tenant == "acme"
    assert (spec.priority, spec.overlap, spec.misfire, spec.jitter_sec) == (
        Priority.DEFAULT, OverlapPolicy.ALLOW, MisfirePolicy.RUN_ONCE, 0)
    assert spec.retry == RetryPolicy()
    assert spec.timeout_sec == 3600.0 and spec.lease_sec == 60.0


# ---------------------------------------------------------------- bad bodies: (body, status, field, words in the detail)

BAD: list[tuple[Any, int, str | None, str]] = [
    ([1, 2], 400, None, "JSON object"),
    ({"command": "x"}, 422, None, "exactly one of schedule"),
    ({**BASE, "runAt": "+1m"}, 422, "runAt", "not both"),
    ({**BASE, "cron": "x"}, 422, "cron", "unknown field: cron"),
    ({**BASE, "zz": 1, "aa": 2}, 422, "aa", "aa, zz"),
    ({"schedul": "@daily", "comand": "x"}, 422, "comand",
     "unknown fields: comand (did you mean 'command'?), schedul (did you mean 'schedule'?) (allowed: "),
    ({**BASE, "retryPolicy": {"max_attemps": 5}}, 422, "retryPolicy.max_attemps",
     "unknown field: retryPolicy.max_attemps (did you mean 'maxAttempts'?) (allowed: "),
    ({"schedule": 5, "command": "x"}, 422, "schedule", "must be a string, not a number"),
    ({"schedule": "61 * * * *", "command": "x"}, 400, "schedule", "schedule: "),
    ({"schedule": "* * *", "command": "x"}, 400, "schedule", "expected 5 or 6 fields"),
    ({"schedule": "@sometimes", "command": "x"}, 400, "schedule", "unknown macro"),
    ({"schedule": "0 0 30 2 *", "command": "x"}, 400, "schedule", ""),
    ({"schedule": "   ", "command": "x"}, 400, "schedule", "not blank"),
    ({"schedule": "x" * 1001, "command": "x"}, 400, "schedule", "1000"),
    ({"runAt": "tomorrow", "command": "x"}, 400, "runAt", "RFC 3339"),
    ({"runAt": "2026-03-01T10:00:00", "command": "x"}, 400, "runAt", "offset"),
    ({"runAt": "2026-02-30T10:00:00Z", "command": "x"}, 400, "runAt", "day"),
    ({"runAt": 1772359200000, "command": "x"}, 422, "runAt", "must be a string"),
    ({**BASE, "timezone": "Mars/Base"}, 400, "timezone", "Mars/Base"),
    ({**BASE, "timezone": 1}, 422, "timezone", "string"),
    ({**BASE, "python": "m:f"}, 422, "python", "exactly one target"),
    ({"schedule": "@daily", "target": {"command": "x", "queue": "q"}}, 422, "target", "exactly one"),
    ({"schedule": "@daily", "target": {"shell": "x"}}, 422, "target.shell", "unknown field"),
    ({"schedule": "@daily", "target": "ls"}, 422, "target", "object"),
    ({**BASE, "command": ""}, 422, "command", "blank"),
    ({**BASE, "command": ["ls", "-l"]}, 422, "command", "must be a string, not an array"),
    ({**BASE, "command": "x" * 16385}, 422, "command", "16384"),
    ({**BASE, "command": "a\x00b"}, 422, "command", "NUL"),
    ({"schedule": "@daily", "http": {"url": "ftp://example.com"}}, 422, "http.url", "http"),
    ({"schedule": "@daily", "http": {"url": "file:///etc/passwd"}}, 422, "http.url", "http"),
    ({"schedule": "@daily", "http": {"url": "https://"}}, 422, "http.url", "absolute"),
    ({"schedule": "@daily", "http": {"url": "http://x:99999/"}}, 422, "http.url", "valid URL"),
    ({"schedule": "@daily", "http": {"url": "http://x/a b"}}, 422, "http.url", "spaces"),
    ({"schedule": "@daily", "http": {}}, 422, "http.url", "required"),
    ({"schedule": "@daily", "http": {"url": "http://x", "method": "TRACE"}}, 422, "http.method", "GET, POST"),
    ({"schedule": "@daily", "http": {"url": "http://x", "body": "{}"}}, 422, "http.body", "unknown"),
    ({"schedule": "@daily", "http": {"url": "http://x", "headers": {"X-A": 1}}}, 422, "http.headers.X-A", "string"),
    ({"schedule": "@daily", "http": {"url": "http://x", "headers": {"Bad Name": "v"}}}, 422, "http.headers.Bad Name", "header name"),
    ({"schedule": "@daily", "http": {"url": "http://x", "headers": {"X-A": "a\r\nb"}}}, 422, "http.headers.X-A", "CR"),
    ({"schedule": "@daily", "http": {"url": "http://x", "headers": {f"H{i}": "v" for i in range(51)}}}, 422, "http.headers", "50"),
    ({"schedule": "@daily", "python": "not a ref"}, 422, "python", "module:function"),
    ({"schedule": "@daily", "python": "mod"}, 422, "python", "module:function"),
    ({"schedule": "@daily", "queue": "-bad"}, 422, "queue", "letters"),
    ({"schedule": "@daily", "queue": "a" * 101}, 422, "queue", "letters"),
    ({"schedule": "@daily", "queue": "a:b"}, 422, "queue", "letters"),
    ({**BASE, "name": ""}, 422, "name", "not blank"),
    ({**BASE, "name": "x" * 201}, 422, "name", "200"),
    ({**BASE, "name": "two\nlines"}, 422, "name", "printable"),
    ({**BASE, "name": " nightly"}, 422, "name", "neither starts nor ends with a space"),
    ({**BASE, "name": "nightly "}, 422, "name", "neither starts nor ends with a space"),
    ({**BASE, "name": 7}, 422, "name", "string"),
    ({**BASE, "payload": "x" * 70_000}, 413, "payload", "65536"),
    ({**BASE, "retryPolicy": 3}, 422, "retryPolicy", "object"),
    ({**BASE, "retryPolicy": {"maxAttempts": 0}}, 422, "retryPolicy.maxAttempts", "between 1 and 1000"),
    ({**BASE, "retryPolicy": {"maxAttempts": 2.5}}, 422, "retryPolicy.maxAttempts", "integer"),
    ({**BASE, "retryPolicy": {"maxAttempts": True}}, 422, "retryPolicy.maxAttempts", "boolean"),
    ({**BASE, "retryPolicy": {"maxAttempts": "3"}}, 422, "retryPolicy.maxAttempts", "string"),
    ({**BASE, "retryPolicy": {"initialBackoffSec": 10, "maxBackoffSec": 5}}, 422, "retryPolicy.maxBackoffSec", ">= initialBackoffSec"),
    ({**BASE, "retryPolicy": {"multiplier": 0.5}}, 422, "retryPolicy.multiplier", "between 1 and 100"),
    ({**BASE, "retryPolicy": {"jitter": 2}}, 422, "retryPolicy.jitter", "between 0 and 1"),
    ({**BASE, "retryPolicy": {"retries": 2}}, 422, "retryPolicy.retries", "unknown"),
    ({**BASE, "timeoutSec": 0}, 422, "timeoutSec", "between 1 and 604800"),
    ({**BASE, "timeoutSec": 604801}, 422, "timeoutSec", "604800"),
    ({**BASE, "timeoutSec": True}, 422, "timeoutSec", "boolean"),
    ({**BASE, "timeoutSec": "30"}, 422, "timeoutSec", "string"),
    ({**BASE, "timeoutSec": float("inf")}, 422, "timeoutSec", "between"),
    ({**BASE, "leaseSec": 0.1}, 422, "leaseSec", "between 0.2 and 3600"),
    ({**BASE, "leaseSec": 3601}, 422, "leaseSec", "3600"),
    ({**BASE, "jitterSec": -1}, 422, "jitterSec", "between 0 and 3600"),
    ({**BASE, "jitterSec": 1.5}, 422, "jitterSec", "integer"),
    ({**BASE, "jitterSec": False}, 422, "jitterSec", "boolean"),
    ({**BASE, "priority": "urgent"}, 422, "priority", "high, default, batch"),
    ({**BASE, "priority": 0}, 422, "priority", "string"),
    ({**BASE, "priority": "HIGH"}, 422, "priority", "high, default, batch"),
    ({**BASE, "overlap": "queue"}, 422, "overlap", "allow, forbid, replace"),
    ({**BASE, "misfire": "all"}, 422, "misfire", "run_once, skip, run_all"),
]


@pytest.mark.parametrize(("body", "status", "field", "words"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_bodies_name_the_field(body: Any, status: int, field: str | None, words: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse(body)
    assert err.value.status == status, err.value.detail
    assert err.value.field == field, err.value.detail
    assert words in err.value.detail
    if field is not None and field.split(".")[0] in ("schedule", "runAt", "timezone", "timeoutSec"):
        assert field in str(err.value)


def test_a_schedule_that_never_fires_is_400() -> None:
    with pytest.raises(ValidationError) as err:
        parse({"schedule": "0 0 30 2 *", "command": "x"})
    assert err.value.status == 400 and err.value.field == "schedule"


# ---------------------------------------------------------------- request hash


def test_request_hash_is_canonical() -> None:
    a = {"schedule": "@daily", "command": "x", "payload": {"b": 1, "a": [1, 2]}}
    b = {"payload": {"a": [1, 2], "b": 1}, "command": "x", "schedule": "@daily"}
    assert request_hash(a) == request_hash(b)
    assert len(request_hash(a)) == 64
    assert request_hash(a) != request_hash({**a, "command": "y"})
    assert request_hash({"n": 1}) != request_hash({"n": "1"})


# ---------------------------------------------------------------- worker calls, headers, queries


def test_worker_bodies() -> None:
    assert parse_heartbeat({"workerId": "w1", "leaseEpoch": 3}) == ("w1", 3)
    c = parse_completion("j:1", {"workerId": "w", "leaseEpoch": 1, "outcome": "timed_out", "exitCode": -9,
                                 "error": "e" * 10_000, "output": "o" * 100_000})
    assert c.outcome is Outcome.TIMED_OUT and c.exit_code == -9 and c.execution_id == "j:1"
    assert len(c.error or "") == 8192 and len(c.output or "") == 65536
    assert parse_effect({"workerId": "w", "leaseEpoch": 0, "key": "charge-1"}) == ("w", 0, "charge-1")


@pytest.mark.parametrize(
    ("fn", "body", "field"),
    [
        (parse_heartbeat, {"leaseEpoch": 1}, "workerId"),
        (parse_heartbeat, {"workerId": "w"}, "leaseEpoch"),
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": "1"}, "leaseEpoch"),
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": -1}, "leaseEpoch"),
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": 1, "extra": 1}, "extra"),
        (parse_heartbeat, {"workerId": "", "leaseEpoch": 1}, "workerId"),
        (lambda b: parse_completion("j:1", b), {"workerId": "w", "leaseEpoch": 1}, "outcome"),
        (lambda b: parse_completion("j:1", b), {"workerId": "w", "leaseEpoch": 1, "outcome": "lost"}, "outcome"),
        (lambda b: parse_completion("j:1", b), {"workerId": "w", "leaseEpoch": 1, "outcome": "failed", "exitCode": "1"}, "exitCode"),
        (parse_effect, {"workerId": "w", "leaseEpoch": 1}, "key"),
        (parse_effect, {"workerId": "w", "leaseEpoch": 1, "key": ""}, "key"),
    ],
)
def test_bad_worker_bodies(fn: Any, body: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        fn(body)
    assert err.value.field == field and err.value.status == 422


_INTEGRAL_FLOAT = "must be an integer (no decimal point, no exponent)"


@pytest.mark.parametrize(
    ("fn", "body", "field", "words"),
    [
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": 1.0}, "leaseEpoch", _INTEGRAL_FLOAT),
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": 1e3}, "leaseEpoch", _INTEGRAL_FLOAT),
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": True}, "leaseEpoch", "must be an integer, not a boolean"),
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": 2**70}, "leaseEpoch", "between 0 and 9223372036854775807"),
        (parse_heartbeat, {"workerId": "w", "leaseEpoch": -1}, "leaseEpoch", "between 0 and"),
        (parse_effect, {"workerId": "w", "leaseEpoch": 2.0, "key": "k"}, "leaseEpoch", _INTEGRAL_FLOAT),
        (lambda b: parse_completion("j:1", b), {"workerId": "w", "leaseEpoch": 1.0, "outcome": "failed"}, "leaseEpoch", _INTEGRAL_FLOAT),
        (lambda b: parse_completion("j:1", b), {"workerId": "w", "leaseEpoch": 1, "outcome": "failed", "exitCode": 1.0}, "exitCode", _INTEGRAL_FLOAT),
        (lambda b: parse_completion("j:1", b), {"workerId": "w", "leaseEpoch": 1, "outcome": "failed", "exitCode": False}, "exitCode", "not a boolean"),
        (parse_claim, {"workerId": "w", "queues": ["q"], "max": 2.0}, "max", _INTEGRAL_FLOAT),
        (parse_claim, {"workerId": "w", "queues": ["q"], "max": True}, "max", "not a boolean"),
    ],
)
def test_a_remote_workers_integers_are_integers_as_sent(fn: Any, body: dict[str, Any], field: str, words: str) -> None:
    """A lease epoch is an identity: ``1.0`` is refused (422, naming the member), never read as
    1, as the job API reads its quantities (``maxAttempts: 3.0``)."""
    with pytest.raises(ValidationError) as err:
        fn(body)
    assert (err.value.field, err.value.status, err.value.code) == (field, 422, "invalid_field")
    assert words in err.value.detail, err.value.detail


def test_headers_and_queries() -> None:
    assert parse_idempotency_key(None) is None
    assert parse_idempotency_key("order-42") == "order-42"
    for bad in ("", "x" * 201, "a\tb"):
        with pytest.raises(ValidationError) as err:
            parse_idempotency_key(bad)
        assert err.value.status == 400 and err.value.field == "Idempotency-Key"
    assert parse_limit(None, 50) == 50 and parse_limit("7", 50) == 7
    for bad in ("0", "-1", "abc", "1001", ""):  # empty is not an integer either
        with pytest.raises(ValidationError):
            parse_limit(bad, 50)
    assert parse_ms_cursor("before", "1767225600000") == NOW
    assert parse_ms_cursor("before", "2026-01-01T00:00:00Z") == NOW
    with pytest.raises(ValidationError):
        parse_ms_cursor("before", "yesterday")


def test_after_cursors_are_ids_of_their_listing() -> None:
    job = new_job_id()
    assert parse_job_cursor(None) is None and parse_job_cursor("") is None
    assert parse_job_cursor(job) == job
    assert parse_execution_cursor(f"{job}:1767225600000") == f"{job}:1767225600000"
    for bad in ("zzz", job + "x", job.upper(), f"{job}:1", "é", job + "\n"):
        with pytest.raises(ValidationError) as err:
            parse_job_cursor(bad)
        assert err.value.status == 400 and err.value.field == "after" and "a job id" in str(err.value), bad
    for bad in (job, f"{job}:", f"{job}:{'9' * 19}", f"{job}:-1", "a:1", f"{job}:1\n"):
        with pytest.raises(ValidationError) as err:
            parse_execution_cursor(bad)
        assert err.value.field == "after" and "an execution id" in str(err.value), bad


# ---------------------------------------------------------------- to JSON


def test_job_and_execution_json() -> None:
    spec = parse({**BASE, "name": "n", "payload": {"a": 1}})
    job = Job("jabc", 7, JobStatus.ACTIVE, NOW + 3_600_000, NOW, NOW + 1, spec)
    data = job_to_json(job)
    assert data["jobId"] == "jabc" and data["status"] == "ACTIVE" and data["name"] == "n"
    assert data["nextRunAt"] == "2026-01-01T01:00:00.000Z" and data["updatedAt"] == "2026-01-01T00:00:00.001Z"
    assert data["runAt"] is None and data["target"] == {"command": "echo hi"} and data["priority"] == "default"
    assert data["retryPolicy"]["maxAttempts"] == 3

    ex = Execution("jabc:1767225600000", "jabc", "default", Priority.HIGH, NOW, ExecStatus.SUCCEEDED,
                   attempt=1, lease_epoch=2, worker_id="w", started_at=NOW + 1234, finished_at=NOW + 2000,
                   exit_code=0, output="out")
    data = execution_to_json(ex, Tenant("default"))
    assert data["executionId"] == "jabc:1767225600000" and data["leaseEpoch"] == 2
    assert data["startedAt"] == "2026-01-01T00:00:01.234Z" and data["finishedAt"] == "2026-01-01T00:00:02.000Z"
    assert data["lagMs"] == 1234 and data["leaseUntil"] is None and data["priority"] == "high"
    assert "output" not in data
    assert execution_to_json(ex, Tenant("default"), with_output=True)["output"] == "out"
    pending = Execution("jabc:1", "jabc", "default", Priority.DEFAULT, 1, ExecStatus.PENDING)
    data = execution_to_json(pending, Tenant("default"))
    assert data["lagMs"] is None and data["startedAt"] is None and "effectivePriority" not in data
    # a waiting high run of a tenant without the grant waits at default; a finished one shows none
    waiting = Execution("jabc:2", "jabc", "t", Priority.HIGH, 1, ExecStatus.RETRY_WAIT)
    assert execution_to_json(waiting, Tenant("t"))["effectivePriority"] == "default"
    assert "effectivePriority" not in execution_to_json(waiting, Tenant("t", allow_high_priority=True))
    assert "effectivePriority" not in execution_to_json(ex, Tenant("default"))


# ---------------------------------------------------------------- process setup (env, runAs, shell, stdin)


def test_process_fields_parse_and_show() -> None:
    spec = parse({**BASE, "env": {"PATH": "/opt/bin", "EMPTY": "", "UNICODE": "é ✓"}, "runAs": {"user": "www-data", "group": "adm"},
                  "shell": "/bin/bash", "stdin": "line 1\nline 2\n"})  # fmt: skip
    assert spec.env == {"PATH": "/opt/bin", "EMPTY": "", "UNICODE": "é ✓"}
    assert (spec.run_as is not None and spec.run_as.user, spec.run_as and spec.run_as.group) == ("www-data", "adm")
    assert (spec.shell, spec.stdin) == ("/bin/bash", "line 1\nline 2\n")
    shown = job_to_json(Job("j1", 0, JobStatus.ACTIVE, NOW, NOW, NOW, spec))
    assert (shown["env"], shown["runAs"], shown["shell"], shown["stdin"]) == (
        spec.env, {"user": "www-data", "group": "adm"}, "/bin/bash", "line 1\nline 2\n")
    plain = job_to_json(Job("j2", 0, JobStatus.ACTIVE, NOW, NOW, NOW, parse(BASE)))
    assert (plain["env"], plain["runAs"], plain["shell"], plain["stdin"]) == ({}, None, None, None)
    # a queue target's env goes to its remote workers; null members count as absent
    queued = parse({"schedule": "@hourly", "queue": "q", "env": {"A": "1"}, "shell": None})
    assert queued.env == {"A": "1"} and queued.shell is None


@pytest.mark.parametrize(
    ("extra", "status", "field", "words"),
    [
        ({"env": []}, 422, "env", "must be an object"),
        ({"env": {"1A": "x"}}, 422, "env.1A", "not a valid variable name"),
        ({"env": {"A-B": "x"}}, 422, "env.A-B", "not a valid variable name"),
        ({"env": {"": "x"}}, 422, "env.", "not a valid variable name"),
        ({"env": {"A" * 129: "x"}}, 422, "env." + "A" * 128, "at most 128 characters"),
        ({"env": {"CRONWHEEL_JOB_ID": "x"}}, 422, "env.CRONWHEEL_JOB_ID", "reserved"),
        ({"env": {"A": 1}}, 422, "env.A", "must be a string"),
        ({"env": {"A": "a\x00b"}}, 422, "env.A", "NUL"),
        ({"env": {"A": "\ud800"}}, 422, "env.A", "valid Unicode"),
        ({"env": {f"V{i}": "x" for i in range(101)}}, 422, "env", "at most 100 variables"),
        ({"env": {f"V{i}": "x" * 1000 for i in range(40)}}, 413, "env", "the limit is 32768 bytes"),
        ({"runAs": "root"}, 422, "runAs", "must be an object"),
        ({"runAs": {}}, 422, "runAs.user", "runAs.user is required"),
        ({"runAs": {"user": "ro ot"}}, 422, "runAs.user", "user name"),
        ({"runAs": {"user": "u" * 33}}, 422, "runAs.user", "1 to 32"),
        ({"runAs": {"user": "ann", "group": "-x"}}, 422, "runAs.group", "group name"),
        ({"runAs": {"user": "ann", "uid": 0}}, 422, "runAs.uid", "unknown field"),
        ({"shell": "bash"}, 422, "shell", "absolute path"),
        ({"shell": "/bin/ba\x00sh"}, 422, "shell", "absolute path"),
        ({"shell": 5}, 422, "shell", "must be a string"),
        ({"stdin": "x" * (64 * 1024 + 1)}, 413, "stdin", "the limit is 65536 bytes"),
        ({"stdin": "\udfff"}, 422, "stdin", "valid Unicode"),
        ({"http": {"url": "https://x.test/"}, "command": None, "env": {"A": "1"}}, 422, "env", "command and queue targets only"),
        ({"python": "m:f", "command": None, "stdin": "x"}, 422, "stdin", "command targets only"),
        ({"queue": "q", "command": None, "runAs": {"user": "ann"}}, 422, "runAs", "command targets only"),
    ],
)
def test_bad_process_fields_name_the_field(extra: dict[str, Any], status: int, field: str, words: str) -> None:
    with pytest.raises(ValidationError) as exc:
        parse({**BASE, **extra})
    err = exc.value
    assert (err.status, err.field) == (status, field), err.detail
    assert words in err.detail, err.detail


def test_a_patch_merges_objects_the_job_lacks_as_rfc_7386_says() -> None:
    """A nested null removes, even when the job has no such object yet: it merges into {}."""
    job = Job("jexample", 0, JobStatus.ACTIVE, NOW, NOW, NOW, parse_job_body({"schedule": "0 * * * *", "command": "true"}, now_ms=NOW))
    spec = parse_job_patch(job, {"env": {"A": None, "B": "1"}, "retryPolicy": {"jitter": None, "maxAttempts": 2}}, now_ms=NOW)
    assert spec.env == {"B": "1"} and spec.retry.max_attempts == 2


def test_a_patch_keeps_a_name_from_before_names_were_trimmed() -> None:
    """" nightly" was accepted once: such a job can still be changed, and renamed, but not
    named that way again."""
    spec = parse(BASE)
    spec.name = " nightly"
    job = Job("jexample", 0, JobStatus.ACTIVE, NOW, NOW, NOW, spec)
    assert parse_job_patch(job, {"timeoutSec": 5}, now_ms=NOW).name == " nightly"
    assert parse_job_patch(job, {"name": "nightly"}, now_ms=NOW).name == "nightly"
    with pytest.raises(ValidationError, match="neither starts nor ends"):
        parse_job_patch(job, {"name": "nightly "}, now_ms=NOW)


def test_a_patch_keeps_the_members_it_does_not_name() -> None:
    """misfireGraceSec too: the body a patch merges into is the job's whole body."""
    body = {**BASE, "misfireGraceSec": 30, "jitterSec": 5, "calendars": ["holidays"], "env": {"A": "1"}}
    job = Job("jexample", 0, JobStatus.ACTIVE, NOW, NOW, NOW, parse(body))
    spec = parse_job_patch(job, {"name": "renamed"}, now_ms=NOW)
    assert (spec.name, spec.misfire_grace_sec, spec.jitter_sec, spec.calendars, spec.env) == ("renamed", 30, 5, ("holidays",), {"A": "1"})


def test_a_job_read_back_and_sent_again_is_told_which_members_the_daemon_sets() -> None:
    """GET, edit, send back is how people use a REST API first: the refusal listed nine
    "unknown fields" that the daemon itself had just answered with."""
    from cronwheel.api.schema import Job as JobAnswer
    from cronwheel.core.jobfields import JOB_ANSWER_ONLY, JOB_FIELDS, names

    assert set(names(JobAnswer)) - set(JOB_FIELDS) == JOB_ANSWER_ONLY  # the set follows the answer's schema
    job = Job("jexample", 0, JobStatus.ACTIVE, NOW + 3_600_000, NOW, NOW, parse(BASE))
    read_back = {**job_to_json(job), "schedule": "5 * * * *"}
    for send in (lambda: parse_job_body(read_back, now_ms=NOW), lambda: parse_job_patch(job, read_back, now_ms=NOW)):
        with pytest.raises(ValidationError) as exc:
            send()
        assert exc.value.detail.startswith(f"unknown fields: {', '.join(sorted(JOB_ANSWER_ONLY & set(read_back)))}: the daemon sets them "
                                           "(a job's answer shows them): leave them out of a body; pause, resume and cancel "
                                           "change status (allowed: "), exc.value.detail  # fmt: skip
    with pytest.raises(ValidationError) as exc:
        parse_job_patch(job, {"jobId": "j2", "bogus": 1}, now_ms=NOW)
    assert exc.value.detail.startswith("unknown fields: bogus, jobId (jobId: the daemon sets it (a job's answer shows it): "
                                       "leave it out of a body) (allowed: "), exc.value.detail  # fmt: skip
    with pytest.raises(ValidationError) as exc:
        parse_job_body({**BASE, "bogus": 1}, now_ms=NOW)
    assert "daemon" not in exc.value.detail


def test_a_body_of_many_unknown_members_names_ten_and_counts_the_others() -> None:
    """Each one named is compared with every allowed member (its "did you mean"): naming all
    of a 1 MiB body's held the event loop for seconds, and cut the detail before its end."""
    with pytest.raises(ValidationError) as exc:
        parse({**BASE, **{f"x{i:02d}": 1 for i in range(30)}, "schedul": 1})
    assert exc.value.field == "schedul"
    assert exc.value.detail.startswith("unknown fields: schedul (did you mean 'schedule'?), x00, x01, x02, x03, x04, x05, "
                                       "x06, x07, x08, and 21 more (allowed: activeFrom, "), exc.value.detail
