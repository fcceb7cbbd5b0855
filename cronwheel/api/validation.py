"""Request bodies to model objects, model objects to JSON. Pure: no HTTP, no I/O, no clock.

Every refusal is a ``ValidationError`` that names the offending field, carries the HTTP
status the API answers with (400 malformed/unparseable, 413 too large, 422 well-formed but
not acceptable) and a sentence a person can act on.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Mapping
from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core import schedule as sched
from cronwheel.core.calendar import NAME_RE as CALENDAR_NAME_RE
from cronwheel.core.deadman import overdue
from cronwheel.core.limits import (
    JITTER_SEC_RANGE,
    LEASE_SEC_RANGE,
    MAX_ACCOUNT_NAME_CHARS,
    MAX_BATCH_JOBS,
    MAX_CHAIN_CHILDREN,
    MAX_CLAIM,
    MAX_CLAIM_QUEUES,
    MAX_CLAIM_WAIT_SEC,
    MAX_COMMAND_BYTES,
    MAX_EFFECT_KEY_CHARS,
    MAX_ENV_BYTES,
    MAX_ENV_NAME_CHARS,
    MAX_ENV_VARS,
    MAX_ERROR_CHARS,
    MAX_HEADER_NAME_CHARS,
    MAX_HEADER_VALUE_CHARS,
    MAX_HEADERS,
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_INSTANT_MS,
    MAX_JOB_CALENDARS,
    MAX_MANAGED_BY_CHARS,
    MAX_NAME_CHARS,
    MAX_OUTPUT_CHARS,
    MAX_PAYLOAD_BYTES,
    MAX_SCHEDULE_CHARS,
    MAX_SHELL_BYTES,
    MAX_STDIN_BYTES,
    MAX_TIMEZONE_CHARS,
    MAX_URL_CHARS,
    MAX_WORKER_ID_CHARS,
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
    Execution,
    Grant,
    Job,
    JobSpec,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
    RunAs,
)
from cronwheel.core.records import Completion, Outcome
from cronwheel.core.urls import http_url_problem
from cronwheel.obs.events import iso_ms

# ---------------------------------------------------------------- limits (one table: core/limits.py)

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
TARGET_KINDS = ("command", "http", "python", "queue")
#: the target of a job cronwheel watches but does not run (it has a window and no schedule)
PING_TARGET = {"ping": {}}
#: members of a job body that set up a command's process; env also travels to remote workers
PROCESS_FIELDS = ("env", "runAs", "shell", "stdin")

JOB_FIELDS = frozenset(
    {
        "schedule", "runAt", "timezone", "name", *TARGET_KINDS, "target", "payload",
        "retryPolicy", "timeoutSec", "leaseSec", "priority", "overlap", "misfire", "jitterSec",
        "misfireGraceSec", "calendars", "activeFrom", "activeUntil", "onSuccess", "onFailure", *PROCESS_FIELDS,
        "managedBy",
        "notify", "expectSuccessWithin",
    }
)
RETRY_FIELDS = ("maxAttempts", "initialBackoffSec", "maxBackoffSec", "multiplier", "jitter")

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_PYTHON_RE = re.compile(rf"^{_DOTTED}:{_DOTTED}$")
_QUEUE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")
#: the target of a body that names none (the minimal ``{ schedule, payload, retryPolicy,
#: timeoutSec }``): its executions wait in this queue for remote workers
DEFAULT_QUEUE = "default"
_HEADER_NAME_RE = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: POSIX portable user names (useradd's default check), "$" allowed last for machine accounts
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?$")
#: a placeholder id to validate schedules before the engine assigns the real one; ``H``
#: fields hash the id, so the offsets differ, but whether the text is valid does not.
_PROBE_JOB_ID = "jvalidation"
#: a job id as ``ids.new_job_id`` makes it (a chain names its children by id)
JOB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")


class ValidationError(ValueError):
    """A request the API refuses before it reaches the service.

    ``field`` is the JSON path of the offending member (``retryPolicy.maxAttempts``), the
    header name, the query parameter, or None for the body as a whole; ``str(err)`` is the
    full sentence."""

    def __init__(self, field: str | None, detail: str, *, status: int = 422, code: str = "invalid_field") -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.status = status
        self.code = code


def _bad(field: str | None, detail: str, status: int = 422, code: str = "invalid_field") -> ValidationError:
    return ValidationError(field, detail, status=status, code=code)


# ---------------------------------------------------------------- small type checks


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _string(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _bad(field, f"{field} must be a string, not {_type_name(value)}")
    return value


def _object(field: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(field, f"{field} must be an object, not {_type_name(value)}")
    return value


def _number(field: str, value: Any, lo: float, hi: float, unit: str = "") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(field, f"{field} must be a number, not {_type_name(value)}")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise _bad(field, f"{field} must be between {_fmt_num(lo)} and {_fmt_num(hi)}{unit}, not {value!r}")
    return float(value)


def _integer(field: str, value: Any, lo: int, hi: int, unit: str = "") -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(field, f"{field} must be an integer, not {_type_name(value)}")
    if not lo <= value <= hi:
        raise _bad(field, f"{field} must be between {lo} and {hi}{unit}, not {value}")
    return value


def _choice(field: str, value: Any, choices: tuple[str, ...]) -> str:
    text = _string(field, value)
    if text not in choices:
        raise _bad(field, f"{field} must be one of {', '.join(choices)}, not {text!r}")
    return text


def _fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _reject_unknown(where: str | None, data: Mapping[str, Any], allowed: frozenset[str] | tuple[str, ...]) -> None:
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        prefix = f"{where}." if where else ""
        names = ", ".join(prefix + k for k in unknown)
        noun = "field" if len(unknown) == 1 else "fields"
        raise _bad(prefix + unknown[0], f"unknown {noun}: {names} (allowed: {', '.join(sorted(allowed))})", code="unknown_field")


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def request_hash(body: Any) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of a request body: the same
    logical request always hashes the same, whatever its key order or whitespace."""
    return hashlib.sha256(canonical_json(body)).hexdigest()


# ---------------------------------------------------------------- POST /v1/jobs


def parse_job_body(body: Any, *, now_ms: int, tenant: str = DEFAULT_TENANT) -> JobSpec:
    """Validate a ``POST /v1/jobs`` body into a ``JobSpec``.

    ``now_ms`` resolves relative one-offs (``"+90s"``) and checks that a recurring schedule
    fires at least once. A JSON ``null`` member counts as absent."""
    if not isinstance(body, dict):
        raise _bad(None, f"the request body must be a JSON object, not {_type_name(body)}", status=400, code="invalid_body")
    _reject_unknown(None, body, JOB_FIELDS)
    data = {k: v for k, v in body.items() if v is not None}

    timezone = "UTC"
    if "timezone" in data:
        timezone = _string("timezone", data["timezone"])
        if not timezone or len(timezone) > MAX_TIMEZONE_CHARS:
            raise _bad("timezone", f"timezone must be an IANA zone name of 1 to {MAX_TIMEZONE_CHARS} characters", status=400, code="invalid_timezone")
        try:
            sched.validate_timezone(timezone)
        except ValueError as exc:  # ScheduleError is a ValueError
            raise _bad("timezone", f"timezone: {exc}", status=400, code="invalid_timezone") from None

    expect_ms = None
    if "expectSuccessWithin" in data:
        try:
            expect_ms = nt.parse_window(data["expectSuccessWithin"])
        except nt.RuleError as exc:
            raise _bad(exc.field, exc.detail) from None
    if expect_ms is not None and not any(k in data for k in ("schedule", "runAt", "target", *TARGET_KINDS)):
        # watched, not run: a cron elsewhere reports its runs by pings
        schedule, run_at, target = None, None, dict(PING_TARGET)
    else:
        schedule, run_at = _parse_when(data, timezone, now_ms)
        target = _parse_target(data)

    name = None
    if "name" in data:
        name = _string("name", data["name"])
        if not name.strip() or len(name) > MAX_NAME_CHARS:
            raise _bad("name", f"name must be 1 to {MAX_NAME_CHARS} characters and not blank")
        if not name.isprintable():
            raise _bad("name", "name must contain printable characters only (no newlines, tabs or control characters)")

    payload = data.get("payload")
    if payload is not None:
        size = len(canonical_json(payload))
        if size > MAX_PAYLOAD_BYTES:
            raise _bad("payload", f"payload is {size} bytes of JSON; the limit is {MAX_PAYLOAD_BYTES} bytes", status=413, code="payload_too_large")

    spec = JobSpec(target=target, schedule=schedule, run_at=run_at, timezone=timezone, name=name, tenant=tenant, payload=payload)
    spec.expect_success_within_ms = expect_ms
    if "notify" in data:
        try:
            spec.notify = nt.rules_from_json(data["notify"])
        except nt.RuleError as exc:
            raise _bad(exc.field, exc.detail) from None
    if "retryPolicy" in data:
        spec.retry = parse_retry_policy(data["retryPolicy"])
    spec.timeout_sec = _number("timeoutSec", data.get("timeoutSec", DEFAULT_TIMEOUT_SEC), *TIMEOUT_SEC_RANGE, " seconds")
    spec.lease_sec = _number("leaseSec", data.get("leaseSec", DEFAULT_LEASE_SEC), *LEASE_SEC_RANGE, " seconds")
    spec.jitter_sec = _integer("jitterSec", data.get("jitterSec", 0), *JITTER_SEC_RANGE, " seconds")
    if "managedBy" in data:
        spec.managed_by = _string("managedBy", data["managedBy"])
        if not spec.managed_by.strip() or len(spec.managed_by) > MAX_MANAGED_BY_CHARS or not spec.managed_by.isprintable():
            raise _bad("managedBy", f"managedBy must be 1 to {MAX_MANAGED_BY_CHARS} printable characters and not blank")
    if "priority" in data:
        spec.priority = Priority.parse(_choice("priority", data["priority"], tuple(p.label for p in Priority)))
    if "overlap" in data:
        spec.overlap = OverlapPolicy(_choice("overlap", data["overlap"], tuple(p.value for p in OverlapPolicy)))
    if "misfire" in data:
        spec.misfire = MisfirePolicy(_choice("misfire", data["misfire"], tuple(p.value for p in MisfirePolicy)))
    if data.get("misfireGraceSec") is not None:  # null: the default, which fits the schedule
        spec.misfire_grace_sec = _integer("misfireGraceSec", data["misfireGraceSec"], *MISFIRE_GRACE_SEC_RANGE, " seconds")
    parse_beyond_cron_fields(data, spec)
    _parse_process(data, spec)
    return spec


def parse_beyond_cron_fields(data: dict[str, Any], spec: JobSpec) -> None:
    """calendars, activeFrom/activeUntil, onSuccess/onFailure (scheduling beyond cron)."""
    if "calendars" in data:
        names = _string_list("calendars", data["calendars"], MAX_JOB_CALENDARS)
        for i, name in enumerate(names):
            if not CALENDAR_NAME_RE.fullmatch(name):
                raise _bad(f"calendars[{i}]", f"calendars[{i}]: {name[:80]!r} is not a calendar name")
        spec.calendars = tuple(dict.fromkeys(names))
    for field in ("activeFrom", "activeUntil"):
        if field in data:
            if spec.schedule is None:
                raise _bad(field, f"{field} bounds a recurring schedule; a one-off job (runAt) has none")
            text = _string(field, data[field])
            try:
                at = sched.parse_instant(text.strip())
            except ValueError as exc:
                raise _bad(field, f"{field}: {exc}") from None
            if not 0 <= at < MAX_INSTANT_MS:
                raise _bad(field, f"{field}: {text.strip()!r} is outside 1970..9899")
            if field == "activeFrom":
                spec.active_from = at
            else:
                spec.active_until = at
    if spec.active_from is not None and spec.active_until is not None and spec.active_until < spec.active_from:
        raise _bad("activeUntil", "activeUntil must not be before activeFrom")
    for field in ("onSuccess", "onFailure"):
        if field in data:
            ids = _string_list(field, data[field], MAX_CHAIN_CHILDREN)
            for i, jid in enumerate(ids):
                if not JOB_ID_RE.fullmatch(jid):
                    raise _bad(f"{field}[{i}]", f"{field}[{i}]: {jid[:80]!r} is not a job id")
            if field == "onSuccess":
                spec.on_success = tuple(dict.fromkeys(ids))
            else:
                spec.on_failure = tuple(dict.fromkeys(ids))


def _string_list(field: str, value: Any, most: int) -> list[str]:
    if not isinstance(value, list):
        raise _bad(field, f"{field} must be an array of strings, not {_type_name(value)}")
    if len(value) > most:
        raise _bad(field, f"{field} holds at most {most} entries, not {len(value)}")
    return [_string(f"{field}[{i}]", item) for i, item in enumerate(value)]


# ---------------------------------------------------------------- process setup


def _parse_process(data: dict[str, Any], spec: JobSpec) -> None:
    """env, runAs, shell and stdin: how a command's process is set up (env also for queue
    targets, whose remote workers get it with each claim)."""
    given = [k for k in PROCESS_FIELDS if k in data]
    if not given:
        return
    kind = next(iter(spec.target))
    for k in given:
        if kind != "command" and not (k == "env" and kind == "queue"):
            allowed = "command and queue targets" if k == "env" else "command targets"
            raise _bad(k, f"{k} applies to {allowed} only, not to a {kind} target")
    if "env" in data:
        spec.env = _parse_env(data["env"])
    if "runAs" in data:
        spec.run_as = _parse_run_as(data["runAs"])
    if "shell" in data:
        shell = _text("shell", data["shell"])
        if not shell.startswith("/") or len(shell.encode()) > MAX_SHELL_BYTES or "\x00" in shell or shell != shell.strip():
            raise _bad("shell", f"shell must be an absolute path (e.g. /bin/bash) of at most {MAX_SHELL_BYTES} bytes, without NUL or surrounding spaces, not {shell[:100]!r}")
        spec.shell = shell
    if "stdin" in data:
        stdin = _text("stdin", data["stdin"])
        if len(stdin.encode()) > MAX_STDIN_BYTES:
            raise _bad("stdin", f"stdin is {len(stdin.encode())} bytes; the limit is {MAX_STDIN_BYTES} bytes", status=413, code="payload_too_large")
        spec.stdin = stdin


def _text(field: str, value: Any) -> str:
    """A string that is valid Unicode text (no lone surrogates: it must become UTF-8 bytes)."""
    text = _string(field, value)
    try:
        text.encode()
    except UnicodeEncodeError:
        raise _bad(field, f"{field} must be valid Unicode text (it holds a lone surrogate)") from None
    return text


def _parse_env(value: Any) -> dict[str, str]:
    raw = _object("env", value)
    if len(raw) > MAX_ENV_VARS:
        raise _bad("env", f"env may hold at most {MAX_ENV_VARS} variables, not {len(raw)}")
    env: dict[str, str] = {}
    size = 0
    for name, v in raw.items():
        where = f"env.{name[:MAX_ENV_NAME_CHARS]}"
        if len(name) > MAX_ENV_NAME_CHARS or not _ENV_NAME_RE.match(name):
            raise _bad(where, f"env: {name[:100]!r} is not a valid variable name (letters, digits and _, not starting with a digit, at most {MAX_ENV_NAME_CHARS} characters)")
        if name.startswith("CRONWHEEL_"):
            raise _bad(where, f"env: {name} is reserved: every run gets the CRONWHEEL_* variables from the daemon")
        text = _text(where, v)
        if "\x00" in text:
            raise _bad(where, f"{where} must not contain NUL characters (an environment cannot hold them)")
        size += len(name) + len(text.encode()) + 2
        env[name] = text
    if size > MAX_ENV_BYTES:
        raise _bad("env", f"env is {size} bytes; the limit is {MAX_ENV_BYTES} bytes", status=413, code="payload_too_large")
    return env


def _parse_run_as(value: Any) -> RunAs:
    raw = _object("runAs", value)
    _reject_unknown("runAs", raw, ("user", "group"))
    names: dict[str, str | None] = {"user": None, "group": None}
    for key in names:
        if raw.get(key) is None:
            continue
        where = f"runAs.{key}"
        name = _string(where, raw[key])
        if len(name) > MAX_ACCOUNT_NAME_CHARS or not _ACCOUNT_RE.match(name):
            raise _bad(where, f"{where} must be a {key} name of 1 to {MAX_ACCOUNT_NAME_CHARS} letters, digits and _ . - (not {name[:100]!r})")
        names[key] = name
    user = names["user"]
    if user is None:
        raise _bad("runAs.user", "runAs.user is required")
    return RunAs(user, names["group"])


# ---------------------------------------------------------------- PATCH /v1/jobs/{id}

#: members of a patch that replace each other: naming one removes the others from the job
_EXCLUSIVE_GROUPS = (("schedule", "runAt"), (*TARGET_KINDS, "target"))
#: objects a patch merges member by member (``{"env": {"A": null}}`` removes one variable)
_MERGED_OBJECTS = ("retryPolicy", "env", "runAs")


def job_body(job: Job) -> dict[str, Any]:
    """The ``POST /v1/jobs`` body that creates ``job``'s definition as it stands: what a
    patch is merged into."""
    spec = job.spec
    body: dict[str, Any] = {
        "timezone": spec.timezone,
        "target": spec.target,
        "notify": nt.rules_to_json(spec.notify),  # with the secrets: merged and validated, never shown
        "retryPolicy": spec.retry.to_json(),
        "timeoutSec": spec.timeout_sec,
        "leaseSec": spec.lease_sec,
        "priority": spec.priority.label,
        "overlap": spec.overlap.value,
        "misfire": spec.misfire.value,
        "jitterSec": spec.jitter_sec,
    }
    if spec.schedule is not None:
        body["schedule"] = spec.schedule
    else:
        body["runAt"] = iso_ms(spec.run_at)
    if spec.name is not None:
        body["name"] = spec.name
    if spec.payload is not None:
        body["payload"] = spec.payload
    process = spec.process_json()
    if process is not None:
        body.update(process)
    for key, value in (("calendars", list(spec.calendars)), ("activeFrom", iso_ms(spec.active_from)),
                       ("activeUntil", iso_ms(spec.active_until)), ("onSuccess", list(spec.on_success)),
                       ("onFailure", list(spec.on_failure))):  # fmt: skip
        if value:
            body[key] = value
    if spec.managed_by is not None:  # kept by a patch that does not name it
        body["managedBy"] = spec.managed_by
    if spec.expect_success_within_ms is not None:
        body["expectSuccessWithin"] = nt.format_window(spec.expect_success_within_ms)
    if "ping" in spec.target:  # a watched job: its window alone makes it one again
        del body["target"]
    return body


def parse_job_patch(job: Job, patch: Any, *, now_ms: int) -> JobSpec:
    """Validate a ``PATCH /v1/jobs/{id}`` body against ``job`` into its new ``JobSpec``.

    The body is a JSON merge patch (RFC 7386) of the create body: members it names replace
    the job's (objects such as ``retryPolicy`` merge member by member), ``null`` removes an
    optional member (its default applies again), the rest is kept. ``schedule``/``runAt``
    replace each other, and so do the targets (``command``, ``http``, ``python``, ``queue``,
    ``target``; a target is replaced whole). The result is validated exactly as a create
    body is, by ``parse_job_body``, so an update accepts and refuses what a create does."""
    if not isinstance(patch, dict):
        raise _bad(None, f"the request body must be a JSON object, not {_type_name(patch)}", status=400, code="invalid_body")
    if not patch:
        raise _bad(None, f"the patch is empty: name at least one of {', '.join(sorted(JOB_FIELDS))}", code="empty_patch")
    _reject_unknown(None, patch, JOB_FIELDS)
    merged = job_body(job)
    for group in _EXCLUSIVE_GROUPS:
        if any(k in patch for k in group):
            for k in group:
                merged.pop(k, None)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and key in _MERGED_OBJECTS:
            # RFC 7386: a member the job lacks merges into {}, so the patch's nulls still remove
            current = merged.get(key)
            merged[key] = _merge(current if isinstance(current, dict) else {}, value)
        else:
            merged[key] = value
    return parse_job_body(merged, now_ms=now_ms, tenant=job.tenant)


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _parse_when(data: dict[str, Any], timezone: str, now_ms: int) -> tuple[str | None, int | None]:
    given = [k for k in ("schedule", "runAt") if k in data]
    if len(given) != 1:
        detail = "give exactly one of schedule (recurring) or runAt (one-off), " + ("not both" if given else "neither was given")
        raise _bad(None if not given else "runAt", detail, code="missing_schedule" if not given else "invalid_field")
    field = given[0]
    text = _string(field, data[field])
    if not text.strip() or len(text) > MAX_SCHEDULE_CHARS:
        raise _bad(field, f"{field} must be 1 to {MAX_SCHEDULE_CHARS} characters and not blank", status=400, code="invalid_schedule")
    if field == "runAt" or sched.looks_like_instant(text):
        try:
            at = sched.parse_instant(text.strip(), now_ms)
        except ValueError as exc:
            raise _bad(field, f"{field}: {exc}", status=400, code="invalid_schedule") from None
        if not 0 <= at < MAX_INSTANT_MS:
            raise _bad(field, f"{field}: {text.strip()!r} is outside 1970..9899", status=400, code="invalid_schedule")
        return None, at
    try:
        parsed = sched.parse_schedule(text, _PROBE_JOB_ID, timezone)
    except ValueError as exc:
        raise _bad("schedule", f"schedule: {exc}", status=400, code="invalid_schedule") from None
    if parsed.kind == "once":
        once_at = parsed.next_after(-1)
        if once_at is None:
            raise _bad("schedule", f"schedule: {text!r} never fires", status=400, code="invalid_schedule")
        return None, once_at
    if parsed.kind != "never" and parsed.next_after(now_ms) is None:
        raise _bad("schedule", f"schedule: {text!r} never fires after now, or not before the year 9900 (the latest instant allowed)", status=400, code="invalid_schedule")
    return text, None


def _parse_target(data: dict[str, Any]) -> dict[str, Any]:
    given = [k for k in (*TARGET_KINDS, "target") if k in data]
    if not given:
        return {"queue": DEFAULT_QUEUE}
    if len(given) != 1:
        what = f"got {', '.join(given)}" if given else "none was given"
        raise _bad(given[1] if len(given) > 1 else None, f"give exactly one target: command, http, python, queue or target; {what}", code="invalid_target")
    kind = given[0]
    if kind == "target":
        inner = _object("target", data["target"])
        inner_given = [k for k in inner if inner[k] is not None]
        _reject_unknown("target", inner, TARGET_KINDS)
        if len(inner_given) != 1:
            raise _bad("target", "target must have exactly one of command, http, python, queue", code="invalid_target")
        kind = inner_given[0]
        return {kind: _parse_target_value(f"target.{kind}", kind, inner[kind])}
    return {kind: _parse_target_value(kind, kind, data[kind])}


def _parse_target_value(field: str, kind: str, value: Any) -> Any:
    if kind == "command":
        cmd = _string(field, value)
        if not cmd.strip():
            raise _bad(field, f"{field} must not be blank")
        if "\x00" in cmd:
            raise _bad(field, f"{field} must not contain NUL characters")
        size = len(cmd.encode())
        if size > MAX_COMMAND_BYTES:
            raise _bad(field, f"{field} is {size} bytes; the limit is {MAX_COMMAND_BYTES} bytes")
        return cmd
    if kind == "python":
        ref = _string(field, value)
        if len(ref) > 500 or not _PYTHON_RE.match(ref):
            raise _bad(field, f"{field} must name a callable as module:function (e.g. myapp.tasks:cleanup), not {ref[:100]!r}")
        return ref
    if kind == "queue":
        name = _string(field, value)
        if not _QUEUE_RE.match(name):
            raise _bad(field, f"{field} must be 1 to 100 characters of letters, digits and _ . - (starting with a letter or digit)")
        return name
    return _parse_http(field, value)


def _parse_http(field: str, value: Any) -> dict[str, Any]:
    spec = _object(field, value)
    _reject_unknown(field, spec, ("url", "method", "headers"))
    if spec.get("url") is None:
        raise _bad(f"{field}.url", f"{field}.url is required")
    url = _string(f"{field}.url", spec["url"])
    problem = http_url_problem(url, MAX_URL_CHARS)
    if problem is not None:
        raise _bad(f"{field}.url", f"{field}.url {problem}, not {url[:200]!r}")
    method = "GET"
    if spec.get("method") is not None:
        method = _string(f"{field}.method", spec["method"]).upper()
        if method not in HTTP_METHODS:
            raise _bad(f"{field}.method", f"{field}.method must be one of {', '.join(HTTP_METHODS)}, not {spec['method']!r}")
    headers: dict[str, str] = {}
    if spec.get("headers") is not None:
        raw = _object(f"{field}.headers", spec["headers"])
        if len(raw) > MAX_HEADERS:
            raise _bad(f"{field}.headers", f"{field}.headers may hold at most {MAX_HEADERS} headers, not {len(raw)}")
        for k, v in raw.items():
            where = f"{field}.headers.{k}"
            if len(k) > MAX_HEADER_NAME_CHARS or not _HEADER_NAME_RE.match(k):
                raise _bad(where, f"{where}: {k[:100]!r} is not a valid header name")
            text = _string(where, v)
            if len(text) > MAX_HEADER_VALUE_CHARS or any(c in text for c in "\r\n\x00"):
                raise _bad(where, f"{where} must be at most {MAX_HEADER_VALUE_CHARS} characters without CR, LF or NUL")
            headers[k] = text
    return {"url": url, "method": method, "headers": headers}


def parse_retry_policy(value: Any, field: str = "retryPolicy") -> RetryPolicy:
    data = {k: v for k, v in _object(field, value).items() if v is not None}
    _reject_unknown(field, data, RETRY_FIELDS)
    d = RetryPolicy()
    max_attempts = _integer(f"{field}.maxAttempts", data.get("maxAttempts", d.max_attempts), *RETRY_MAX_ATTEMPTS_RANGE)
    initial = _number(f"{field}.initialBackoffSec", data.get("initialBackoffSec", d.initial_backoff_sec), *RETRY_INITIAL_BACKOFF_SEC_RANGE, " seconds")
    # the default cap follows a large initial backoff rather than contradicting it
    maximum = _number(f"{field}.maxBackoffSec", data.get("maxBackoffSec", max(d.max_backoff_sec, initial)), *RETRY_MAX_BACKOFF_SEC_RANGE, " seconds")
    if maximum < initial:
        raise _bad(f"{field}.maxBackoffSec", f"{field}.maxBackoffSec ({_fmt_num(maximum)}) must be >= initialBackoffSec ({_fmt_num(initial)})")
    multiplier = _number(f"{field}.multiplier", data.get("multiplier", d.multiplier), *RETRY_MULTIPLIER_RANGE)
    jitter = _number(f"{field}.jitter", data.get("jitter", d.jitter), *RETRY_JITTER_RANGE)
    try:
        return RetryPolicy(max_attempts, initial, maximum, multiplier, jitter)
    except ValueError as exc:  # the model's own checks, should ours drift from them
        raise _bad(field, str(exc)) from None


# ---------------------------------------------------------------- worker calls


def _worker_fields(body: Any, allowed: tuple[str, ...]) -> tuple[dict[str, Any], str, int]:
    if not isinstance(body, dict):
        raise _bad(None, f"the request body must be a JSON object, not {_type_name(body)}", status=400, code="invalid_body")
    _reject_unknown(None, body, allowed)
    if body.get("workerId") is None:
        raise _bad("workerId", "workerId is required")
    worker_id = _string("workerId", body["workerId"])
    if not worker_id or len(worker_id) > MAX_WORKER_ID_CHARS:
        raise _bad("workerId", f"workerId must be 1 to {MAX_WORKER_ID_CHARS} characters")
    if body.get("leaseEpoch") is None:
        raise _bad("leaseEpoch", "leaseEpoch is required (the fencing token received with the lease)")
    epoch = _integer("leaseEpoch", body["leaseEpoch"], 0, 2**63 - 1)
    return body, worker_id, epoch


def parse_heartbeat(body: Any) -> tuple[str, int]:
    """``{workerId, leaseEpoch}`` → ``(worker_id, lease_epoch)``."""
    _, worker_id, epoch = _worker_fields(body, ("workerId", "leaseEpoch"))
    return worker_id, epoch



def parse_claim(body: Any) -> tuple[str, list[str], int, float]:
    """``{workerId, queues, max?, waitSec?}`` → ``(worker_id, queues, max, wait_sec)``."""
    if not isinstance(body, dict):
        raise _bad(None, f"the request body must be a JSON object, not {_type_name(body)}", status=400, code="invalid_body")
    _reject_unknown(None, body, ("workerId", "queues", "max", "waitSec"))
    if body.get("workerId") is None:
        raise _bad("workerId", "workerId is required")
    worker_id = _string("workerId", body["workerId"])
    if not worker_id or len(worker_id) > MAX_WORKER_ID_CHARS:
        raise _bad("workerId", f"workerId must be 1 to {MAX_WORKER_ID_CHARS} characters")
    queues = body.get("queues")
    if not isinstance(queues, list) or not 1 <= len(queues) <= MAX_CLAIM_QUEUES:
        raise _bad("queues", f"queues must be a list of 1 to {MAX_CLAIM_QUEUES} queue names")
    names: list[str] = []
    for i, name in enumerate(queues):
        names.append(_parse_target_value(f"queues[{i}]", "queue", name))
    n = 1 if body.get("max") is None else _integer("max", body["max"], 1, MAX_CLAIM)
    wait = 0.0 if body.get("waitSec") is None else _number("waitSec", body["waitSec"], 0, MAX_CLAIM_WAIT_SEC, " seconds")
    return worker_id, list(dict.fromkeys(names)), n, wait


def grant_to_json(g: Grant) -> dict[str, Any]:
    """What a remote worker needs to run and fence an execution it claimed."""
    return {
        "executionId": g.execution_id,
        "jobId": g.job_id,
        "tenant": g.tenant,
        "queue": g.queue,
        "leaseEpoch": g.lease_epoch,
        "attempt": g.attempt,
        "scheduledAt": iso_ms(g.scheduled_at),
        "leaseUntil": iso_ms(g.lease_until),
        "leaseSec": g.lease_sec,
        "timeoutSec": g.timeout_sec,
        "payload": g.payload,
        "env": (g.process or {}).get("env") or {},
        "context": g.context,
    }


#: the outcomes a worker may report; ``lost`` is the daemon's own verdict
WORKER_OUTCOMES = (Outcome.SUCCEEDED.value, Outcome.FAILED.value, Outcome.TIMED_OUT.value)


def parse_completion(execution_id: str, body: Any) -> Completion:
    """``{workerId, leaseEpoch, outcome, exitCode?, error?, output?}`` → ``Completion``.
    Long ``error`` and ``output`` are cut to their tail rather than refused: a worker that
    finished must be able to report it."""
    data, worker_id, epoch = _worker_fields(body, ("workerId", "leaseEpoch", "outcome", "exitCode", "error", "output"))
    if data.get("outcome") is None:
        raise _bad("outcome", f"outcome is required: one of {', '.join(WORKER_OUTCOMES)}")
    outcome = Outcome(_choice("outcome", data["outcome"], WORKER_OUTCOMES))
    exit_code = None
    if data.get("exitCode") is not None:
        exit_code = _integer("exitCode", data["exitCode"], -(2**31), 2**31 - 1)
    error = _string("error", data["error"])[-MAX_ERROR_CHARS:] if data.get("error") is not None else None
    output = _string("output", data["output"])[-MAX_OUTPUT_CHARS:] if data.get("output") is not None else None
    return Completion(execution_id, worker_id, epoch, outcome, exit_code, error, output)


def parse_effect(body: Any) -> tuple[str, int, str]:
    """``{workerId, leaseEpoch, key}`` → ``(worker_id, lease_epoch, key)``."""
    data, worker_id, epoch = _worker_fields(body, ("workerId", "leaseEpoch", "key"))
    if data.get("key") is None:
        raise _bad("key", "key is required (the idempotency key of the side effect)")
    key = _string("key", data["key"])
    if not key or len(key) > MAX_EFFECT_KEY_CHARS:
        raise _bad("key", f"key must be 1 to {MAX_EFFECT_KEY_CHARS} characters")
    return worker_id, epoch, key


# ---------------------------------------------------------------- headers and query strings


def parse_job_batch(body: Any, *, now_ms: int, tenant: str = DEFAULT_TENANT) -> list[tuple[JobSpec, str | None, str | None]]:
    """Validate a ``POST /v1/jobs/batch`` body ``{"jobs": [job, ...]}`` into (spec,
    idempotency key, request hash) triples. Each job is a ``POST /v1/jobs`` body, plus an
    optional ``idempotencyKey`` (the header's role, one per job). All or nothing: the first
    invalid job refuses the batch, its error naming it (``jobs[3].schedule``)."""
    if not isinstance(body, dict):
        raise _bad(None, f"the request body must be a JSON object, not {_type_name(body)}", status=400, code="invalid_body")
    _reject_unknown(None, body, ("jobs",))
    jobs = body.get("jobs")
    if not isinstance(jobs, list) or not 1 <= len(jobs) <= MAX_BATCH_JOBS:
        got = f"{len(jobs)} jobs" if isinstance(jobs, list) else _type_name(jobs)
        raise _bad("jobs", f"jobs must be an array of 1 to {MAX_BATCH_JOBS} job objects, not {got}")
    out: list[tuple[JobSpec, str | None, str | None]] = []
    keys: set[str] = set()
    for i, item in enumerate(jobs):
        where = f"jobs[{i}]"
        if not isinstance(item, dict):
            raise _bad(where, f"{where} must be a job object, not {_type_name(item)}")
        item = dict(item)
        key = item.pop("idempotencyKey", None)
        if key is not None and not (
            isinstance(key, str) and 0 < len(key) <= MAX_IDEMPOTENCY_KEY_CHARS and key.isprintable() and key.isascii()
        ):
            raise _bad(f"{where}.idempotencyKey", f"{where}.idempotencyKey must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters")
        try:
            spec = parse_job_body(item, now_ms=now_ms, tenant=tenant)
        except ValidationError as exc:
            field = f"{where}.{exc.field}" if exc.field else where
            raise ValidationError(field, f"{where}: {exc.detail}", status=exc.status, code=exc.code) from None
        if key is not None:
            if key in keys:
                raise _bad(f"{where}.idempotencyKey", f"{where}: idempotencyKey {key!r} appears twice in this batch")
            keys.add(key)
        # hashed without its key, as the single endpoint hashes a body: the same job sent
        # either way with the same key is one job
        out.append((spec, key, request_hash(item) if key is not None else None))
    return out


def parse_idempotency_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not value or len(value) > MAX_IDEMPOTENCY_KEY_CHARS or not value.isprintable() or not value.isascii():
        raise _bad("Idempotency-Key", f"the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters", status=400, code="invalid_header")
    return value


def parse_limit(value: str | None, default: int, maximum: int = 1000) -> int:
    if value is None:  # an empty ``limit=`` is not an integer: refused, as the document says
        return default
    # isascii: "²".isdigit() is True but int() refuses it; len: a huge number is just refused
    if not (value.isascii() and value.isdigit() and len(value) <= 12) or not 1 <= int(value) <= maximum:
        raise _bad("limit", f"limit must be an integer between 1 and {maximum}, not {value[:50]!r}", status=400, code="invalid_query")
    return int(value)


def parse_job_status(value: str | None) -> JobStatus | None:
    if value is None or value == "":
        return None
    try:
        return JobStatus(value.upper())
    except ValueError:
        choices = ", ".join(s.value.lower() for s in JobStatus)
        raise _bad("status", f"status must be one of {choices}, not {value[:50]!r}", status=400, code="invalid_query") from None


def parse_ms_cursor(field: str, value: str | None) -> int | None:
    """A ``before`` cursor: the integer milliseconds from a previous page's ``next``, or an
    RFC 3339 instant."""
    if value is None or value == "":
        return None
    if value.isascii() and value.isdigit():
        if len(value) > 18:  # beyond any instant in ms, and beyond what the store binds (int64)
            raise _bad(field, f"{field} is out of range: {value[:30]}…", status=400, code="invalid_query")
        return int(value)
    if sched.INSTANT_START.match(value):
        try:
            return sched.parse_instant(value)
        except ValueError:
            pass
    raise _bad(field, f"{field} must be a cursor from a previous page or an RFC 3339 instant, not {value[:50]!r}", status=400, code="invalid_query")


# ---------------------------------------------------------------- to JSON


def window_to_json(job: Job, now_ms: int | None) -> dict[str, Any] | None:
    """The dead-man's window as stored: its deadline, and whether it is overdue now."""
    w = job.window
    if w is None:
        return None
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    return {"deadline": iso_ms(w.deadline_at), "overdue": overdue(w, now), "overdueSince": iso_ms(w.overdue_since)}


def job_to_json(job: Job, last_run: Execution | None = None, now_ms: int | None = None) -> dict[str, Any]:
    """``last_run``: the job's latest execution that started (``Store.last_runs``), shown as
    ``lastRun`` without its output."""
    spec = job.spec
    return {
        "jobId": job.id,
        "name": spec.name,
        "tenant": spec.tenant,
        "status": job.status.value,
        "schedule": spec.schedule,
        "runAt": iso_ms(spec.run_at),
        "timezone": spec.timezone,
        "nextRunAt": iso_ms(job.next_run_at),
        "target": spec.target,
        "payload": spec.payload,
        "retryPolicy": spec.retry.to_json(),
        "timeoutSec": spec.timeout_sec,
        "leaseSec": spec.lease_sec,
        "priority": spec.priority.label,
        "overlap": spec.overlap.value,
        "misfire": spec.misfire.value,
        "jitterSec": spec.jitter_sec,
        "misfireGraceSec": spec.misfire_grace_sec,
        "notify": nt.rules_to_json(spec.notify, redact=True),
        "expectSuccessWithin": None if spec.expect_success_within_ms is None else nt.format_window(spec.expect_success_within_ms),
        "window": window_to_json(job, now_ms),
        "env": spec.env,
        "runAs": None if spec.run_as is None else spec.run_as.to_json(),
        "shell": spec.shell,
        "stdin": spec.stdin,
        "calendars": list(spec.calendars),
        "activeFrom": iso_ms(spec.active_from),
        "activeUntil": iso_ms(spec.active_until),
        "onSuccess": list(spec.on_success),
        "onFailure": list(spec.on_failure),
        "managedBy": spec.managed_by,
        "bucketId": job.bucket_id,
        "createdAt": iso_ms(job.created_at),
        "updatedAt": iso_ms(job.updated_at),
        "lastRun": None if last_run is None else execution_to_json(last_run),
    }


def execution_to_json(execution: Execution, with_output: bool = False) -> dict[str, Any]:
    e = execution
    data: dict[str, Any] = {
        "executionId": e.execution_id,
        "jobId": e.job_id,
        "tenant": e.tenant,
        "status": e.status.value,
        "priority": e.priority.label,
        "scheduledAt": iso_ms(e.scheduled_at),
        "attempt": e.attempt,
        "maxAttempts": e.max_attempts,
        "leaseEpoch": e.lease_epoch,
        "workerId": e.worker_id,
        "leaseUntil": iso_ms(e.lease_until),
        "availableAt": iso_ms(e.available_at or None),
        "createdAt": iso_ms(e.created_at or None),
        "startedAt": iso_ms(e.started_at),
        "finishedAt": iso_ms(e.finished_at),
        "lagMs": None if e.started_at is None else e.started_at - e.scheduled_at,
        "exitCode": e.exit_code,
        "error": e.error,
        "reason": e.reason,
        "queue": e.queue,
        "origin": e.origin.value,
        "context": e.context,
    }
    if with_output:
        data["output"] = e.output
    return data
