"""Job bodies: a ``POST /v1/jobs`` body (or a batch of them) to a ``JobSpec`` — when it runs
(``schedule`` or ``runAt``, its time zone), its policies (retry, timeouts, priority, overlap,
misfire, jitter), scheduling beyond cron (calendars, active window, chains) and its
notification rules. What it runs is ``api.targets``; a patch of one is ``api.jobpatch``.
Pure: no HTTP, no I/O, no clock.

Every refusal is a ``ValidationError`` (``api.fields``) that names the offending field. The
members a body may hold are those of ``core.jobfields.JobRequest`` (the OpenAPI document's
``JobRequest``, generated from it).
"""

from __future__ import annotations

import re
from typing import Any

from cronwheel.api.fields import (
    ValidationError,
    as_choice,
    as_integer,
    as_number,
    as_object,
    as_string,
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
from cronwheel.core.calendar import NAME_RE as CALENDAR_NAME_RE
from cronwheel.core.jobfields import (
    JOB_FIELDS,
    JOB_ID_PATTERN,
    RETRY_FIELDS,
    TARGET_KINDS,
    JobBatchRequest,
    names,
)
from cronwheel.core.limits import (
    JITTER_SEC_RANGE,
    LEASE_SEC_RANGE,
    MAX_BATCH_JOBS,
    MAX_CHAIN_CHILDREN,
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_INSTANT_MS,
    MAX_JOB_CALENDARS,
    MAX_MANAGED_BY_CHARS,
    MAX_NAME_CHARS,
    MAX_PAYLOAD_BYTES,
    MAX_SCHEDULE_CHARS,
    MAX_TIMEZONE_CHARS,
    MISFIRE_GRACE_SEC_RANGE,
    RETRY_INITIAL_BACKOFF_SEC_RANGE,
    RETRY_JITTER_RANGE,
    RETRY_MAX_ATTEMPTS_RANGE,
    RETRY_MAX_BACKOFF_SEC_RANGE,
    RETRY_MULTIPLIER_RANGE,
    TIMEOUT_SEC_RANGE,
)
from cronwheel.core.model import (
    DEFAULT_LEASE_SEC,
    DEFAULT_TENANT,
    DEFAULT_TIMEOUT_SEC,
    JobSpec,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)

# ---------------------------------------------------------------- limits (one table: core/limits.py)

#: the target of a job cronwheel watches but does not run (it has a window and no schedule)
PING_TARGET: dict[str, Any] = {"ping": {}}


#: a placeholder id to validate schedules before the engine assigns the real one; ``H``
#: fields hash the id, so the offsets differ, but whether the text is valid does not.
_PROBE_JOB_ID = "jvalidation"
#: a job id as ``ids.new_job_id`` makes it (a chain names its children by id)
JOB_ID_RE = re.compile(JOB_ID_PATTERN)


# ---------------------------------------------------------------- POST /v1/jobs


def parse_job_body(body: Any, *, now_ms: int, tenant: str = DEFAULT_TENANT) -> JobSpec:
    """Validate a ``POST /v1/jobs`` body into a ``JobSpec``.

    ``now_ms`` resolves relative one-offs (``"+90s"``) and checks that a recurring schedule
    fires at least once. A JSON ``null`` member counts as absent."""
    if not isinstance(body, dict):
        raise bad(None, f"the request body must be a JSON object, not {type_name(body)}", status=400, code="invalid_body")
    reject_unknown(None, body, JOB_FIELDS)
    data = {k: v for k, v in body.items() if v is not None}

    timezone = "UTC"
    if "timezone" in data:
        timezone = as_string("timezone", data["timezone"])
        if not timezone or len(timezone) > MAX_TIMEZONE_CHARS:
            raise bad("timezone", f"timezone must be an IANA zone name of 1 to {MAX_TIMEZONE_CHARS} characters", status=400, code="invalid_timezone")
        try:
            sched.validate_timezone(timezone)
        except ValueError as exc:  # ScheduleError is a ValueError
            raise bad("timezone", f"timezone: {exc}", status=400, code="invalid_timezone") from None

    expect_ms = None
    if "expectSuccessWithin" in data:
        try:
            expect_ms = nt.parse_window(data["expectSuccessWithin"])
        except nt.RuleError as exc:
            raise bad(exc.field, exc.detail) from None
    if expect_ms is not None and not any(k in data for k in ("schedule", "runAt", "target", *TARGET_KINDS)):
        # watched, not run: a cron elsewhere reports its runs by pings
        schedule, run_at, target = None, None, dict(PING_TARGET)
    else:
        schedule, run_at = _parse_when(data, timezone, now_ms)
        target = parse_target(data)

    name = None
    if "name" in data:
        name = as_string("name", data["name"])
        if not name.strip() or len(name) > MAX_NAME_CHARS:
            raise bad("name", f"name must be 1 to {MAX_NAME_CHARS} characters and not blank")
        if not name.isprintable():
            raise bad("name", "name must contain printable characters only (no newlines, tabs or control characters)")

    payload = data.get("payload")
    if payload is not None:
        size = len(canonical_json(payload))
        if size > MAX_PAYLOAD_BYTES:
            raise bad("payload", f"payload is {size} bytes of JSON; the limit is {MAX_PAYLOAD_BYTES} bytes", status=413, code="payload_too_large")

    spec = JobSpec(target=target, schedule=schedule, run_at=run_at, timezone=timezone, name=name, tenant=tenant, payload=payload)
    spec.expect_success_within_ms = expect_ms
    if "notify" in data:
        try:
            spec.notify = nt.rules_from_json(data["notify"])
        except nt.RuleError as exc:
            raise bad(exc.field, exc.detail) from None
    if "retryPolicy" in data:
        spec.retry = parse_retry_policy(data["retryPolicy"])
    spec.timeout_sec = as_number("timeoutSec", data.get("timeoutSec", DEFAULT_TIMEOUT_SEC), *TIMEOUT_SEC_RANGE, " seconds")
    spec.lease_sec = as_number("leaseSec", data.get("leaseSec", DEFAULT_LEASE_SEC), *LEASE_SEC_RANGE, " seconds")
    spec.jitter_sec = as_integer("jitterSec", data.get("jitterSec", 0), *JITTER_SEC_RANGE, " seconds")
    if "managedBy" in data:
        spec.managed_by = as_string("managedBy", data["managedBy"])
        if not spec.managed_by.strip() or len(spec.managed_by) > MAX_MANAGED_BY_CHARS or not spec.managed_by.isprintable():
            raise bad("managedBy", f"managedBy must be 1 to {MAX_MANAGED_BY_CHARS} printable characters and not blank")
    if "priority" in data:
        spec.priority = Priority.parse(as_choice("priority", data["priority"], tuple(p.label for p in Priority)))
    if "overlap" in data:
        spec.overlap = OverlapPolicy(as_choice("overlap", data["overlap"], tuple(p.value for p in OverlapPolicy)))
    if "misfire" in data:
        spec.misfire = MisfirePolicy(as_choice("misfire", data["misfire"], tuple(p.value for p in MisfirePolicy)))
    if data.get("misfireGraceSec") is not None:  # null: the default, which fits the schedule
        spec.misfire_grace_sec = as_integer("misfireGraceSec", data["misfireGraceSec"], *MISFIRE_GRACE_SEC_RANGE, " seconds")
    parse_beyond_cron_fields(data, spec)
    parse_process(data, spec)
    return spec


def parse_beyond_cron_fields(data: dict[str, Any], spec: JobSpec) -> None:
    """calendars, activeFrom/activeUntil, onSuccess/onFailure (scheduling beyond cron)."""
    if "calendars" in data:
        names = _string_list("calendars", data["calendars"], MAX_JOB_CALENDARS)
        for i, name in enumerate(names):
            if not CALENDAR_NAME_RE.fullmatch(name):
                raise bad(f"calendars[{i}]", f"calendars[{i}]: {name[:80]!r} is not a calendar name")
        spec.calendars = tuple(dict.fromkeys(names))
    for field in ("activeFrom", "activeUntil"):
        if field in data:
            if spec.schedule is None:
                raise bad(field, f"{field} bounds a recurring schedule; a one-off job (runAt) has none")
            text = as_string(field, data[field])
            try:
                at = sched.parse_instant(text.strip())
            except ValueError as exc:
                raise bad(field, f"{field}: {exc}") from None
            if not 0 <= at < MAX_INSTANT_MS:
                raise bad(field, f"{field}: {text.strip()!r} is outside 1970..9899")
            if field == "activeFrom":
                spec.active_from = at
            else:
                spec.active_until = at
    if spec.active_from is not None and spec.active_until is not None and spec.active_until < spec.active_from:
        raise bad("activeUntil", "activeUntil must not be before activeFrom")
    for field in ("onSuccess", "onFailure"):
        if field in data:
            ids = _string_list(field, data[field], MAX_CHAIN_CHILDREN)
            for i, jid in enumerate(ids):
                if not JOB_ID_RE.fullmatch(jid):
                    raise bad(f"{field}[{i}]", f"{field}[{i}]: {jid[:80]!r} is not a job id")
            if field == "onSuccess":
                spec.on_success = tuple(dict.fromkeys(ids))
            else:
                spec.on_failure = tuple(dict.fromkeys(ids))


def _string_list(field: str, value: Any, most: int) -> list[str]:
    if not isinstance(value, list):
        raise bad(field, f"{field} must be an array of strings, not {type_name(value)}")
    if len(value) > most:
        raise bad(field, f"{field} holds at most {most} entries, not {len(value)}")
    return [as_string(f"{field}[{i}]", item) for i, item in enumerate(value)]


def _parse_when(data: dict[str, Any], timezone: str, now_ms: int) -> tuple[str | None, int | None]:
    given = [k for k in ("schedule", "runAt") if k in data]
    if len(given) != 1:
        detail = "give exactly one of schedule (recurring) or runAt (one-off), " + ("not both" if given else "neither was given")
        raise bad(None if not given else "runAt", detail, code="missing_schedule" if not given else "invalid_field")
    field = given[0]
    text = as_string(field, data[field])
    if not text.strip() or len(text) > MAX_SCHEDULE_CHARS:
        raise bad(field, f"{field} must be 1 to {MAX_SCHEDULE_CHARS} characters and not blank", status=400, code="invalid_schedule")
    if field == "runAt" or sched.looks_like_instant(text):
        try:
            at = sched.parse_instant(text.strip(), now_ms)
        except ValueError as exc:
            raise bad(field, f"{field}: {exc}", status=400, code="invalid_schedule") from None
        if not 0 <= at < MAX_INSTANT_MS:
            raise bad(field, f"{field}: {text.strip()!r} is outside 1970..9899", status=400, code="invalid_schedule")
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
    data = {k: v for k, v in as_object(field, value).items() if v is not None}
    reject_unknown(field, data, RETRY_FIELDS)
    d = RetryPolicy()
    max_attempts = as_integer(f"{field}.maxAttempts", data.get("maxAttempts", d.max_attempts), *RETRY_MAX_ATTEMPTS_RANGE)
    initial = as_number(f"{field}.initialBackoffSec", data.get("initialBackoffSec", d.initial_backoff_sec), *RETRY_INITIAL_BACKOFF_SEC_RANGE, " seconds")
    # the default cap follows a large initial backoff rather than contradicting it
    maximum = as_number(f"{field}.maxBackoffSec", data.get("maxBackoffSec", max(d.max_backoff_sec, initial)), *RETRY_MAX_BACKOFF_SEC_RANGE, " seconds")
    if maximum < initial:
        raise bad(f"{field}.maxBackoffSec", f"{field}.maxBackoffSec ({fmt_num(maximum)}) must be >= initialBackoffSec ({fmt_num(initial)})")
    multiplier = as_number(f"{field}.multiplier", data.get("multiplier", d.multiplier), *RETRY_MULTIPLIER_RANGE)
    jitter = as_number(f"{field}.jitter", data.get("jitter", d.jitter), *RETRY_JITTER_RANGE)
    try:
        return RetryPolicy(max_attempts, initial, maximum, multiplier, jitter)
    except ValueError as exc:  # the model's own checks, should ours drift from them
        raise bad(field, str(exc)) from None


# ---------------------------------------------------------------- POST /v1/jobs/batch


def parse_job_batch(body: Any, *, now_ms: int, tenant: str = DEFAULT_TENANT) -> list[tuple[JobSpec, str | None, str | None]]:
    """Validate a ``POST /v1/jobs/batch`` body ``{"jobs": [job, ...]}`` into (spec,
    idempotency key, request hash) triples. Each job is a ``POST /v1/jobs`` body, plus an
    optional ``idempotencyKey`` (the header's role, one per job). All or nothing: the first
    invalid job refuses the batch, its error naming it (``jobs[3].schedule``)."""
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
        item = dict(item)
        key = item.pop("idempotencyKey", None)
        if key is not None and not (
            isinstance(key, str) and 0 < len(key) <= MAX_IDEMPOTENCY_KEY_CHARS and key.isprintable() and key.isascii()
        ):
            raise bad(f"{where}.idempotencyKey", f"{where}.idempotencyKey must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters")
        try:
            spec = parse_job_body(item, now_ms=now_ms, tenant=tenant)
        except ValidationError as exc:
            field = f"{where}.{exc.field}" if exc.field else where
            raise ValidationError(field, f"{where}: {exc.detail}", status=exc.status, code=exc.code) from None
        if key is not None:
            if key in keys:
                raise bad(f"{where}.idempotencyKey", f"{where}: idempotencyKey {key!r} appears twice in this batch")
            keys.add(key)
        # hashed without its key, as the single endpoint hashes a body: the same job sent
        # either way with the same key is one job
        out.append((spec, key, request_hash(item) if key is not None else None))
    return out

