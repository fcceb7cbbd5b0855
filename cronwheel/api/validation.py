"""Job bodies: a ``POST /v1/jobs`` body (or a batch of them) to a ``JobSpec`` — when it runs
(``schedule`` or ``runAt``, its time zone), its policies (retry, timeouts, priority, overlap,
misfire, jitter), scheduling beyond cron (calendars, active window, chains) and its
notification rules. What it runs is ``api.targets``; a patch of one is ``api.jobpatch``.
Pure: no HTTP, no I/O, no clock.

A body is decoded into its struct, ``core.jobfields.JobRequest`` (``api.decode``: its shape,
lengths, ranges, patterns and choices, as the OpenAPI document generated from the same struct
states them); what is left here are the rules between members and the domain's own checks:
exactly one of schedule/runAt, a schedule that fires, a zone the tz database knows, instants,
a payload's size, the retry backoffs' order, notification rules. Every refusal is a
``ValidationError`` (``api.fields``) that names the offending field.
"""

from __future__ import annotations

from typing import Any

from cronwheel.api.decode import decode
from cronwheel.api.fields import (
    ValidationError,
    bad,
    canonical_json,
    fmt_num,
    reject_unknown,
    request_hash,
    type_name,
)
from cronwheel.api.targets import parse_process, parse_target
from cronwheel.core import notify as nt
from cronwheel.core import schedule as sched
from cronwheel.core.ids import has_job_id_shape
from cronwheel.core.jobfields import (
    JOB_FIELDS,
    RETRY_FIELDS,
    TARGET_KINDS,
    JobBatchRequest,
    JobItem,
    JobRequest,
    names,
)
from cronwheel.core.jobfields import RetryPolicy as RetryBody
from cronwheel.core.limits import (
    JITTER_SEC_RANGE,
    LEASE_SEC_RANGE,
    MAX_BATCH_JOBS,
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_MANAGED_BY_CHARS,
    MAX_NAME_CHARS,
    MAX_PAYLOAD_BYTES,
    MAX_SCHEDULE_CHARS,
    MAX_TIMEZONE_CHARS,
    TIMEOUT_SEC_RANGE,
)
from cronwheel.core.model import (
    DEFAULT_TENANT,
    JobSpec,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)

#: the limits a job body is held to, named here as the tests of the document read them
__all__ = [
    "JITTER_SEC_RANGE", "JOB_FIELDS", "LEASE_SEC_RANGE", "MAX_BATCH_JOBS", "MAX_IDEMPOTENCY_KEY_CHARS", "MAX_NAME_CHARS",
    "MAX_PAYLOAD_BYTES", "MAX_SCHEDULE_CHARS", "MAX_TIMEZONE_CHARS", "RETRY_FIELDS", "TARGET_KINDS", "TIMEOUT_SEC_RANGE",
    "ValidationError", "parse_job_batch", "parse_job_body", "parse_retry_policy",
]  # fmt: skip

#: the target of a job cronwheel watches but does not run (it has a window and no schedule)
PING_TARGET: dict[str, Any] = {"ping": {}}
#: a placeholder id to validate schedules before the engine assigns the real one; ``H``
#: fields hash the id, so the offsets differ, but whether the text is valid does not.
_PROBE_JOB_ID = "jvalidation"
#: refusals by member that are not 422 (a member of the wrong type always is)
STATUSES = {
    "schedule": (400, "invalid_schedule"),
    "runAt": (400, "invalid_schedule"),
    "timezone": (400, "invalid_timezone"),
}


# ---------------------------------------------------------------- POST /v1/jobs


def parse_job_body(body: Any, *, now_ms: int, tenant: str = DEFAULT_TENANT) -> JobSpec:
    """Validate a ``POST /v1/jobs`` body into a ``JobSpec``.

    ``now_ms`` resolves relative one-offs (``"+90s"``) and checks that a recurring schedule
    fires at least once. A JSON ``null`` member counts as absent."""
    return job_spec(decode(JobRequest, body, statuses=STATUSES), now_ms=now_ms, tenant=tenant)


def job_spec(req: JobRequest, *, now_ms: int, tenant: str = DEFAULT_TENANT) -> JobSpec:
    """A decoded body's ``JobSpec``: the rules between members and the domain's checks."""
    timezone = "UTC"
    if req.timezone is not None:
        timezone = req.timezone
        try:
            sched.validate_timezone(timezone)
        except ValueError as exc:  # ScheduleError is a ValueError
            raise bad("timezone", f"timezone: {exc}", status=400, code="invalid_timezone") from None

    expect_ms = None
    if req.expect_success_within is not None:
        try:
            expect_ms = nt.parse_window(req.expect_success_within)
        except nt.RuleError as exc:
            raise bad(exc.field, exc.detail) from None
    if expect_ms is not None and all(getattr(req, k) is None for k in ("schedule", "run_at", "target", *TARGET_KINDS)):
        # watched, not run: a cron elsewhere reports its runs by pings
        schedule, run_at, target = None, None, dict(PING_TARGET)
    else:
        schedule, run_at = _parse_when(req, timezone, now_ms)
        target = parse_target(req)

    if req.name is not None and not req.name.isprintable():
        raise bad("name", "name must contain printable characters only (no newlines, tabs or control characters)")
    if req.name is not None and has_job_id_shape(req.name):
        raise bad("name", f"name {req.name!r} has the shape of a job id (j and 16 letters and digits): every "
                  "command takes ids and names alike, so such a name could name another job; choose another")

    if req.payload is not None:
        size = len(canonical_json(req.payload))
        if size > MAX_PAYLOAD_BYTES:
            raise bad("payload", f"payload is {size} bytes of JSON; the limit is {MAX_PAYLOAD_BYTES} bytes", status=413, code="payload_too_large")

    spec = JobSpec(target=target, schedule=schedule, run_at=run_at, timezone=timezone, name=req.name, tenant=tenant, payload=req.payload)
    spec.expect_success_within_ms = expect_ms
    if req.notify is not None:
        try:
            spec.notify = nt.rules_from_json(req.notify)
        except nt.RuleError as exc:
            raise bad(exc.field, exc.detail) from None
    if req.retry_policy is not None:
        spec.retry = retry_policy(req.retry_policy)
    if req.timeout_sec is not None:
        spec.timeout_sec = float(req.timeout_sec)
    if req.lease_sec is not None:
        spec.lease_sec = float(req.lease_sec)
    if req.jitter_sec is not None:
        spec.jitter_sec = req.jitter_sec
    if req.managed_by is not None:
        if not req.managed_by.isprintable():
            raise bad("managedBy", f"managedBy must be 1 to {MAX_MANAGED_BY_CHARS} printable characters and not blank")
        spec.managed_by = req.managed_by
    if req.priority is not None:
        spec.priority = Priority.parse(req.priority)
    if req.overlap is not None:
        spec.overlap = OverlapPolicy(req.overlap)
    if req.misfire is not None:
        spec.misfire = MisfirePolicy(req.misfire)
    spec.misfire_grace_sec = req.misfire_grace_sec  # null: the default, which fits the schedule
    _beyond_cron(req, spec)
    parse_process(req, spec)
    return spec


def _beyond_cron(req: JobRequest, spec: JobSpec) -> None:
    """calendars, activeFrom/activeUntil, onSuccess/onFailure (scheduling beyond cron)."""
    if req.calendars is not None:
        spec.calendars = tuple(dict.fromkeys(req.calendars))
    for field, text in (("activeFrom", req.active_from), ("activeUntil", req.active_until)):
        if text is None:
            continue
        if spec.schedule is None:
            raise bad(field, f"{field} bounds a recurring schedule; a one-off job (runAt) has none")
        try:
            at = sched.parse_instant(text.strip())
        except ValueError as exc:
            raise bad(field, f"{field}: {exc}") from None
        if field == "activeFrom":
            spec.active_from = at
        else:
            spec.active_until = at
    if spec.active_from is not None and spec.active_until is not None and spec.active_until < spec.active_from:
        raise bad("activeUntil", "activeUntil must not be before activeFrom")
    if req.on_success is not None:
        spec.on_success = tuple(dict.fromkeys(req.on_success))
    if req.on_failure is not None:
        spec.on_failure = tuple(dict.fromkeys(req.on_failure))


def _parse_when(req: JobRequest, timezone: str, now_ms: int) -> tuple[str | None, int | None]:
    given = [(k, v) for k, v in (("schedule", req.schedule), ("runAt", req.run_at)) if v is not None]
    if len(given) != 1:
        detail = "give exactly one of schedule (recurring) or runAt (one-off), " + ("not both" if given else "neither was given")
        raise bad(None if not given else "runAt", detail, code="missing_schedule" if not given else "invalid_field")
    field, text = given[0]
    if field == "runAt" or sched.looks_like_instant(text):
        try:
            at = sched.parse_instant(text.strip(), now_ms)
        except ValueError as exc:
            raise bad(field, f"{field}: {exc}", status=400, code="invalid_schedule") from None
        return None, at
    try:
        parsed = sched.parse_schedule(text, _PROBE_JOB_ID, timezone)
    except ValueError as exc:
        raise bad("schedule", f"schedule: {exc}", status=400, code="invalid_schedule") from None
    if parsed.kind == "once":
        once_at = parsed.next_after(-1)
        if once_at is None:
            raise bad("schedule", f"schedule: {text!r} never fires", status=400, code="invalid_schedule")
        return None, once_at
    if parsed.kind != "never" and parsed.next_after(now_ms) is None:
        raise bad("schedule", f"schedule: {text!r} never fires after now, or not before the year 9900 (the latest instant allowed)", status=400, code="invalid_schedule")
    return text, None


def parse_retry_policy(value: Any, field: str = "retryPolicy") -> RetryPolicy:
    """A ``retryPolicy`` body on its own (``field`` names it in refusals)."""
    return retry_policy(decode(RetryBody, value, where=field) if isinstance(value, dict) else _not_an_object(field, value), field)


def _not_an_object(field: str, value: Any) -> RetryBody:
    raise bad(field, f"{field} must be an object, not {type_name(value)}")


def retry_policy(body: RetryBody, field: str = "retryPolicy") -> RetryPolicy:
    """The policy a decoded ``retryPolicy`` gives: its members, the defaults for the rest."""
    d = RetryPolicy()
    initial = d.initial_backoff_sec if body.initial_backoff_sec is None else float(body.initial_backoff_sec)
    # the default cap follows a large initial backoff rather than contradicting it
    maximum = max(d.max_backoff_sec, initial) if body.max_backoff_sec is None else float(body.max_backoff_sec)
    if maximum < initial:
        raise bad(f"{field}.maxBackoffSec", f"{field}.maxBackoffSec ({fmt_num(maximum)}) must be >= initialBackoffSec ({fmt_num(initial)})")
    try:
        return RetryPolicy(
            d.max_attempts if body.max_attempts is None else body.max_attempts, initial, maximum,
            d.multiplier if body.multiplier is None else float(body.multiplier), d.jitter if body.jitter is None else float(body.jitter),
        )  # fmt: skip
    except ValueError as exc:  # the model's own checks, should the struct's drift from them
        raise bad(field, str(exc)) from None


# ---------------------------------------------------------------- POST /v1/jobs/batch


def parse_job_batch(body: Any, *, now_ms: int, tenant: str = DEFAULT_TENANT) -> list[tuple[JobSpec, str | None, str | None]]:
    """Validate a ``POST /v1/jobs/batch`` body ``{"jobs": [job, ...]}`` into (spec,
    idempotency key, request hash) triples. Each job is a ``POST /v1/jobs`` body, plus an
    optional ``idempotencyKey`` (the header's role, one per job): a ``JobItem``. All or
    nothing: the first invalid job refuses the batch, its error naming it
    (``jobs[3].schedule``)."""
    if not isinstance(body, dict):
        raise bad(None, f"the request body must be a JSON object, not {type_name(body)}", status=400, code="invalid_body")
    reject_unknown(None, body, names(JobBatchRequest))
    jobs = body.get("jobs")
    if not isinstance(jobs, list) or not 1 <= len(jobs) <= MAX_BATCH_JOBS:
        got = f"{len(jobs)} jobs" if isinstance(jobs, list) else type_name(jobs)
        raise bad("jobs", f"jobs must be an array of 1 to {MAX_BATCH_JOBS} job objects, not {got}")
    out: list[tuple[JobSpec, str | None, str | None]] = []
    keys: set[str] = set()
    for i, item in enumerate(jobs):
        where = f"jobs[{i}]"
        if not isinstance(item, dict):
            raise bad(where, f"{where} must be a job object, not {type_name(item)}")
        try:
            req = decode(JobItem, item, statuses=STATUSES)
            spec = job_spec(req, now_ms=now_ms, tenant=tenant)
        except ValidationError as exc:
            field = f"{where}.{exc.field}" if exc.field else where
            raise ValidationError(field, f"{where}: {exc.detail}", status=exc.status, code=exc.code) from None
        key = req.idempotency_key
        if key is not None:
            if key in keys:
                raise bad(f"{where}.idempotencyKey", f"{where}: idempotencyKey {key!r} appears twice in this batch")
            keys.add(key)
        # hashed without its key, as the single endpoint hashes a body: the same job sent
        # either way with the same key is one job
        unkeyed = {k: v for k, v in item.items() if k != "idempotencyKey"}
        out.append((spec, key, request_hash(unkeyed) if key is not None else None))
    return out
