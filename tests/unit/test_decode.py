"""api/decode.py: msgspec's verdict on a body, worded as the API words refusals and naming the
member's JSON path."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.api.beyondcron import parse_backfill_body
from cronwheel.api.fields import ValidationError
from cronwheel.api.notifying import parse_ping
from cronwheel.api.tenancy import parse_tenant_body, parse_tenant_patch, parse_token_body
from cronwheel.api.validation import parse_job_body

NOW = 1_767_225_600_000
BASE = {"schedule": "0 * * * *", "command": "true"}


@pytest.mark.parametrize(
    ("parse", "body", "field", "words"),
    [
        (parse_tenant_body, {"name": "acme", "weight": None}, "weight", "weight cannot be null"),
        (parse_tenant_body, {"name": "acme", "submitRate": 0}, "submitRate", "between 0.001 and 1000000"),
        (parse_tenant_body, {"name": "acme", "submitRate": 1e-300}, "submitRate", "between 0.001 and 1000000"),
        (parse_tenant_body, {"name": "a b"}, "name", "1 to 64 letters"),
        (parse_tenant_body, {"name": "acme", "zz": 1, "aa": 2}, "aa", "unknown fields: aa, zz"),
        (parse_tenant_patch, {}, None, "nothing to change"),
        (parse_token_body, {"role": "root"}, "role", "one of tenant, worker, admin, metrics"),
        (parse_ping, {"exitCode": True}, "exitCode", "must be an integer, not a boolean"),
        (parse_backfill_body, {"to": "2026-01-01T00:00:00Z"}, "from", "from is required"),
        (lambda b: parse_job_body(b, now_ms=NOW), {**BASE, "http": None, "command": None, "target": {"http": {"url": "http://h/", "headers": {"X": 1}}}},
         "target.http.headers.X", "must be a string, not a number"),
        (lambda b: parse_job_body(b, now_ms=NOW), {**BASE, "retryPolicy": {"maxAttempts": 10**30}}, "retryPolicy.maxAttempts", "between 1 and 1000"),
    ],
)  # fmt: skip
def test_refusals_name_the_member(parse: Any, body: Any, field: str | None, words: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse(body)
    assert (err.value.status, err.value.field) == (422, field), err.value.detail
    assert words in err.value.detail


def test_integral_floats_are_integers_and_a_patch_null_clears() -> None:
    assert parse_tenant_body({"name": "acme", "weight": 3.0}).weight == 3
    assert parse_job_body({**BASE, "jitterSec": 30.0}, now_ms=NOW).jitter_sec == 30
    assert parse_tenant_patch({"maxJobs": None}) == {"max_jobs": None}
    assert parse_ping(None) == ("success", None, None)


def test_a_batch_evaluates_each_structs_annotations_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``msgspec.structs.fields`` evaluates a struct's annotations on every call (milliseconds
    for a job body); asked at every member of every job, one tenant's batch of a thousand
    full bodies held the event loop for many seconds, and another tenant's leases expired."""
    import msgspec

    from cronwheel.api import decode
    from cronwheel.api.validation import parse_job_batch

    calls: list[type] = []
    real = msgspec.structs.fields
    monkeypatch.setattr(msgspec.structs, "fields", lambda struct: calls.append(struct) or real(struct))
    decode.struct_members.cache_clear()
    job = {"runAt": "+30d", "queue": "q", "retryPolicy": {"maxAttempts": 3, "multiplier": 2}, "timeoutSec": 60,
           "priority": "batch", "env": {"A": "1"}, "runAs": None, "calendars": [], "notify": [], "onSuccess": []}
    specs = parse_job_batch({"jobs": [dict(job) for _ in range(200)]}, now_ms=NOW)
    assert len(specs) == 200
    assert len(calls) == len(set(calls)), f"{len(calls)} evaluations of {len(set(calls))} structs"


def test_negative_zero_is_zero() -> None:
    spec = parse_job_body({**BASE, "retryPolicy": {"initialBackoffSec": -0.0}, "timeoutSec": 5, "leaseSec": 30}, now_ms=NOW)
    assert str(spec.retry.initial_backoff_sec) == "0.0"
