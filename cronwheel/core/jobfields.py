"""A job's fields, declared once: the members of a ``POST /v1/jobs`` body as msgspec structs,
with their types, limits (``core/limits.py``) and descriptions. The OpenAPI document's
``JobRequest``, ``JobItem``, ``JobPatch``, ``RetryPolicy``, ``Target``, ``HttpTarget``,
``RunAs``, ``Env`` and ``EnvPatch`` are generated from them (``api/openapi.py``); the API's
job parsing, its answers, the CLI and the job files (crontab, TOML, JSON) take the field names
from here (``JOB_FIELDS``, ``TARGET_KINDS``…). Pure: no I/O.

A struct's class names are the document's component names, so ``RetryPolicy`` here is the
JSON body of one, not ``core.model.RetryPolicy`` (the policy itself).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from cronwheel.core import limits as lim
from cronwheel.core import model
from cronwheel.core.calendar import NAME_RE as CALENDAR_NAME_RE

#: what a JSON Schema ``pattern`` (a search) needs to find in a string that is not blank
NOT_BLANK = r"[^\t\n\u000b\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
#: a name: not blank, and no space at either end (" nightly" would list as "nightly" and not be
#: found by that word)
TRIMMED_PATTERN = f"^{NOT_BLANK}(?:[\\s\\S]*{NOT_BLANK})?" + lim.PATTERN_END
_NOT_BLANK_NOR_NUL = NOT_BLANK.replace("[^", "[^\\u0000", 1)
#: a job id as ``ids.new_job_id`` makes it (a chain names its children by id)
JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}" + lim.PATTERN_END
CALENDAR_NAME_PATTERN = CALENDAR_NAME_RE.pattern
QUEUE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}" + lim.PATTERN_END
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
PYTHON_PATTERN = rf"^{_DOTTED}:{_DOTTED}" + lim.PATTERN_END
HEADER_NAME_PATTERN = r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+" + lim.PATTERN_END
ENV_NAME_PATTERN = r"^(?!CRONWHEEL_)[A-Za-z_][A-Za-z0-9_]*" + lim.PATTERN_END
#: POSIX portable user names (useradd's default check), "$" allowed last for machine accounts
ACCOUNT_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?" + lim.PATTERN_END
_URL_CHAR = r"[^\u0000-\u001f\u007f-\u009f \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
HTTP_URL_PATTERN = "^[Hh][Tt][Tt][Pp][Ss]?://" + _URL_CHAR.replace("[^", "[^/?#:", 1) + _URL_CHAR + "*" + lim.PATTERN_END
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
PRINTABLE_ASCII = r"^[\u0020-\u007e]*" + lim.PATTERN_END
#: a remote worker's id: any text a log line or a terminal shows as it is (no control characters)
WORKER_ID_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f]+" + lim.PATTERN_END

_COMMAND_DOC = "A shell command: not blank, no NUL, at most 16 KiB encoded as UTF-8 (JSON Schema counts characters: `maxLength` is the upper bound; the byte limit is the server's)."
COMMAND_PATTERN = f"^[^\\u0000]*{_NOT_BLANK_NOR_NUL}[^\\u0000]*$"
SHELL_PATTERN = f"^/(?:[^\\u0000]*{_NOT_BLANK_NOR_NUL})?" + lim.PATTERN_END
#: a header value: no control character but a tab (RFC 9110 field-content); CR and LF would
#: end the header, and the rest are refused by some servers and read as separators by others
HEADER_VALUE_PATTERN = r"^[^\u0000-\u0008\u000a-\u001f\u007f-\u009f]*" + lim.PATTERN_END
Command = Annotated[str, Meta(min_length=1, max_length=lim.MAX_COMMAND_BYTES, pattern=COMMAND_PATTERN, description=_COMMAND_DOC)]
PythonRef = Annotated[str, Meta(max_length=500, pattern=PYTHON_PATTERN, description="`module:function`, at most 500 characters.")]
Queue = Annotated[str, Meta(pattern=QUEUE_PATTERN, description="A named queue served by remote workers (`POST /v1/workers/claim`); local workers never run it.")]


def ordered(values: tuple[str, ...], default: str | None = None) -> Meta:
    """The choices of a ``Literal`` in the order given (and its default): msgspec sorts them,
    so the document takes them from ``x-enum`` (``api/openapi.py``), and so do refusals."""
    extra: dict[str, Any] = {"type": "string", "x-enum": list(values)}
    if default is not None:
        extra["default"] = default
    return Meta(extra_json_schema=extra)


class HttpTarget(msgspec.Struct, forbid_unknown_fields=True):
    """`null` members count as absent."""

    url: Annotated[str, Meta(max_length=lim.MAX_URL_CHARS, pattern=HTTP_URL_PATTERN, extra_json_schema={"format": "http-url"},
                             description="An absolute http:// or https:// URL with a host, at most 8192 characters, no spaces or control characters (format `http-url`: what Python's `urllib.parse.urlsplit` takes, "
                                         "with a port from 1 to 65535 if any, and as its host an IPv4 address of four decimal numbers, an IPv6 address in brackets without a zone id, "
                                         "or an ASCII host name (IDNA form) without a final dot). No user information (`user:password@`): credentials go in `headers`.")]
    #: any case is taken (the server upper-cases it): a choice the server checks, not msgspec
    method: Annotated[str, ordered(HTTP_METHODS, "GET"), Meta(description="Upper case, or any case of these (sent upper case).")] | None = None
    headers: Annotated[dict[Annotated[str, Meta(max_length=lim.MAX_HEADER_NAME_CHARS, pattern=HEADER_NAME_PATTERN)],
                            Annotated[str, Meta(max_length=lim.MAX_HEADER_VALUE_CHARS, pattern=HEADER_VALUE_PATTERN)]],
                       Meta(max_length=lim.MAX_HEADERS, description=(
                           "Sent with the request (the `Cronwheel-*` and `Idempotency-Key` headers are the worker's and replace any given). "
                           "Names are case-insensitive: one may not be given twice. The worker keeps to itself `Content-Length`, `Transfer-Encoding`, `Connection`, "
                           "`Keep-Alive`, `Upgrade`, `TE`, `Trailer`, `Expect` and `Proxy-*` (422), and `Host` unless it repeats the URL's host (the allow-list judges the URL)."))] | None = None


def _one_of_set(members: dict[str, str], *, or_none: bool) -> dict[str, Any]:
    """Exactly one of ``members`` (name → JSON type) is not null (or, ``or_none``, none is)."""
    alternatives: list[dict[str, Any]] = [
        {"required": [name], "properties": {name: {"type": kind}, **{o: {"type": "null"} for o in members if o != name}}}
        for name, kind in members.items()
    ]
    if or_none:
        alternatives.append({"properties": {name: {"type": "null"} for name in members}})
    return {"oneOf": alternatives}


#: the kinds of target, and the JSON type of each
_TARGET_TYPES = {"command": "string", "http": "object", "python": "string", "queue": "string"}


class Target(msgspec.Struct, forbid_unknown_fields=True):
    """Exactly one member that is not null."""

    json_schema_extra: ClassVar[dict[str, Any]] = _one_of_set(_TARGET_TYPES, or_none=False)

    command: Command | None = None
    http: HttpTarget | None = None
    python: PythonRef | None = None
    queue: Queue | None = None


_DEFAULT_RETRY = model.RetryPolicy()


def _ranged(bounds: tuple[float, float], default: Any = None, description: str | None = None) -> Meta:
    extra = {} if default is None else {"default": default}
    return Meta(ge=bounds[0], le=bounds[1], extra_json_schema=extra, description=description)


class RetryPolicy(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """`null` members count as absent. `maxBackoffSec` must be >= `initialBackoffSec` (422; JSON Schema cannot compare two members)."""

    max_attempts: Annotated[int, _ranged(lim.RETRY_MAX_ATTEMPTS_RANGE, _DEFAULT_RETRY.max_attempts)] | None = None
    initial_backoff_sec: Annotated[float, _ranged(lim.RETRY_INITIAL_BACKOFF_SEC_RANGE, _DEFAULT_RETRY.initial_backoff_sec)] | None = None
    max_backoff_sec: Annotated[float, _ranged(lim.RETRY_MAX_BACKOFF_SEC_RANGE, _DEFAULT_RETRY.max_backoff_sec,
                                              "Must be >= initialBackoffSec; defaults to max(300, initialBackoffSec).")] | None = None
    multiplier: Annotated[float, _ranged(lim.RETRY_MULTIPLIER_RANGE, _DEFAULT_RETRY.multiplier)] | None = None
    jitter: Annotated[float, _ranged(lim.RETRY_JITTER_RANGE, _DEFAULT_RETRY.jitter, "± fraction of each delay.")] | None = None


_ACCOUNT = Meta(min_length=1, max_length=lim.MAX_ACCOUNT_NAME_CHARS, pattern=ACCOUNT_PATTERN)


class RunAs(msgspec.Struct, forbid_unknown_fields=True):
    """The account a command runs as (a system crontab line's user field), honoured by local workers of a daemon running as root: the user's uid, the group (default the user's primary group), its supplementary groups, `HOME`, `USER`, `LOGNAME` and its home directory as the working directory, as cron does. Refused (422 `run_as_refused`) when the daemon does not run as root or the account does not exist; a run whose user has vanished since fails with an error that says so."""

    user: Annotated[str, _ACCOUNT]
    group: Annotated[str, _ACCOUNT] | None = None


# an env's names, values and size are the server's checks (api/targets.py), which say which
# rule a variable breaks (a reserved name, a NUL, the bytes of them all): the document states
# them, msgspec only takes text
_ENV_NAME = Annotated[str, Meta(extra_json_schema={"pattern": ENV_NAME_PATTERN, "maxLength": lim.MAX_ENV_NAME_CHARS})]
_NO_NUL = r"^[^\u0000]*$"
_ENV_VALUE = Annotated[str, Meta(extra_json_schema={"pattern": _NO_NUL})]
Env = Annotated[dict[_ENV_NAME, _ENV_VALUE], Meta(title="Env", extra_json_schema={"maxProperties": lim.MAX_ENV_VARS}, description=(
    "Variables added to a command's environment (over the daemon's; names starting `CRONWHEEL_` are reserved for the run's own). "
    "Names are letters, digits and `_`, not starting with a digit, at most 128 characters; values are text without NUL; at most 32 KiB in all (413 beyond). "
    "Command and queue targets only (a remote worker receives them with each claim)."))]
EnvPatch = Annotated[dict[_ENV_NAME, Annotated[str, Meta(extra_json_schema={"pattern": _NO_NUL, "type": ["string", "null"]})] | None],
                     Meta(title="EnvPatch", extra_json_schema={"maxProperties": lim.MAX_ENV_VARS},
                          description="An `env` in a patch: each variable named replaces the job's, `null` removes it.")]

_NOTIFY_SCHEMA = {
    "oneOf": [{"type": "array", "maxItems": lim.MAX_NOTIFY_RULES, "items": {"$ref": "#/components/schemas/NotifyRule"}}, {"type": "null"}],
    "description": "Replaces the job's rules whole (a webhook rule must carry its secret again); null or [] removes them (the tenant's defaults apply).",
}
_WINDOW_MAX_SEC = lim.EXPECT_SUCCESS_WITHIN_MS_RANGE[1] // 1000
_EXPECT_SCHEMA = {
    "oneOf": [
        {
            "oneOf": [{"type": "string", "pattern": r"^\s*\d{1,12}\s*(ms|s|m|h|d|w)?\s*$"},
                      {"type": "number", "minimum": lim.EXPECT_SUCCESS_WITHIN_MS_RANGE[0] // 1000, "maximum": _WINDOW_MAX_SEC}],
            "description": "The dead-man's switch: `missed` is told when no run succeeds for this long (`26h`, `90m`, `2d`, or seconds). A job with a window and no schedule, runAt or target is watched, not run: it reports its runs by `POST /v1/jobs/{jobId}/ping`.",
            "examples": ["26h"],
        },
        {"type": "null"},
    ],
    "description": "A new window is armed from now; null removes it.",
}  # fmt: skip


def _schema(schema: dict[str, Any]) -> Meta:
    """A member whose schema refers to a component no struct declares (``NotifyRule``): given
    whole (``api/openapi.py`` puts it in place of msgspec's)."""
    return Meta(extra_json_schema={"x-schema": schema})


#: a string that names a command target, directly or inside ``target``
_NAMES = {
    kind: {"anyOf": [{"required": [kind], "properties": {kind: {"type": "string"}}},
                     {"required": ["target"], "properties": {"target": {"type": "object", "required": [kind], "properties": {kind: {"type": "string"}}}}}]}
    for kind in ("command", "queue")
}  # fmt: skip
_NO_TARGET = {"properties": {name: {"type": "null"} for name in (*_TARGET_TYPES, "target")}}


def _needs(field: str, target: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [{"properties": {field: {"type": "null"}}}, target]}


_WHEN = _one_of_set({"schedule": "string", "runAt": "string"}, or_none=False)
_TARGETS = _one_of_set({**_TARGET_TYPES, "target": "object"}, or_none=True)
_JOB_RULES: dict[str, Any] = {
    "allOf": [_WHEN, _TARGETS],
    "dependentSchemas": {
        **{field: _needs(field, _NAMES["command"]) for field in ("runAs", "shell", "stdin")},
        "env": _needs("env", {"anyOf": [_NAMES["command"], {"anyOf": [*_NAMES["queue"]["anyOf"], _NO_TARGET]}]}),
    },
}
_NOW_DEFAULT = "UTC"
#: the choices of the policies, in the model's order (a Literal states them for msgspec and
#: mypy; a unit test keeps the two equal)
PRIORITIES = tuple(p.label for p in model.Priority)
OVERLAPS = tuple(p.value for p in model.OverlapPolicy)
MISFIRES = tuple(p.value for p in model.MisfirePolicy)
_DEADMAN_AND_TARGETS = "`runAs`, `shell` and `stdin` need a command target, `env` a command or queue target (a body without a target has queue `default`). With `expectSuccessWithin` and no schedule, runAt or target, the job is watched, not run (target `{\"ping\": {}}`)."


#: a job's answer's members that no body takes: the daemon sets them. A body read back from
#: ``GET /v1/jobs/{jobId}`` and sent again carries them; its refusal says so.
JOB_ANSWER_ONLY = frozenset({
    "bucketId", "createdAt", "effectivePriority", "jobId", "lastRun", "nextRunAt", "status", "tenant", "updatedAt",
    "warnings", "window",
})


class JobRequest(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """Exactly one of `schedule` / `runAt`, and at most one target (`command`, `http`, `python`, `queue` or `target`). A body with no target (the minimal body `{ schedule, payload, retryPolicy, timeoutSec }`) gets `{"queue": "default"}`: its executions wait in queue `default` for remote workers. Unknown members are refused (422); a `null` member counts as absent. Rules JSON Schema cannot state: a recurring schedule must fire after now (400 `invalid_schedule`); `retryPolicy.maxBackoffSec` >= `initialBackoffSec` (422); `payload` at most 64 KiB encoded (413); `command` at most 16 KiB as UTF-8 (422). `runAs`, `shell` and `stdin` need a command target, `env` a command or queue target (a body without a target has queue `default`). With `expectSuccessWithin` and no schedule, runAt or target, the job is watched, not run (target `{"ping": {}}`)."""

    json_schema_extra: ClassVar[dict[str, Any]] = _JOB_RULES
    answer_only: ClassVar[frozenset[str]] = JOB_ANSWER_ONLY

    name: Annotated[str, Meta(min_length=1, max_length=lim.MAX_NAME_CHARS, pattern=TRIMMED_PATTERN, extra_json_schema={"format": "printable"},
                              description="Printable (format `printable`: letters, marks, numbers, punctuation, symbols and spaces), neither starting nor ending with a space; unique per tenant among its live jobs (every status but CANCELLED): a clash answers 409 `name_taken` naming the holder. The CLI refers to jobs by id or name.")] | None = None
    schedule: Annotated[str, Meta(min_length=1, max_length=lim.MAX_SCHEDULE_CHARS, pattern=NOT_BLANK, examples=["0 * * * *", "H H * * *", "@every 5m", "+90s"], extra_json_schema={"format": "schedule"},
                                  description="Cron (5 or 6 fields, `H` for a hashed offset), `@every 5m`, a macro (`@hourly`…); an RFC 3339 instant or `+DURATION` makes a one-off. Format `schedule`: what `cronwheel next` parses, firing at least once after now (a one-off: an instant in 1970..9899); anything else is 400 `invalid_schedule`.")] | None = None
    run_at: Annotated[str, Meta(min_length=1, max_length=lim.MAX_SCHEDULE_CHARS, pattern=NOT_BLANK, examples=["2026-11-29T23:00:00Z"], extra_json_schema={"format": "instant-or-delay"},
                                description="One-off: an RFC 3339 instant with a UTC offset, or `+DURATION` from now (format `instant-or-delay`), in 1970..9899; else 400 `invalid_schedule`.")] | None = None
    timezone: Annotated[str, Meta(min_length=1, max_length=lim.MAX_TIMEZONE_CHARS, extra_json_schema={"format": "time-zone", "default": _NOW_DEFAULT},
                                  description="IANA zone the schedule is evaluated in (format `time-zone`: a name the server's tz database knows; else 400 `invalid_timezone`).")] | None = None
    command: Command | None = None
    http: HttpTarget | None = None
    python: PythonRef | None = None
    queue: Queue | None = None
    target: Target | None = None
    payload: Annotated[Any, Meta(description="Any JSON value, at most 64 KiB encoded (413 beyond). `null`: no payload.")] = None
    retry_policy: RetryPolicy | None = None
    timeout_sec: Annotated[float, _ranged(lim.TIMEOUT_SEC_RANGE, model.DEFAULT_TIMEOUT_SEC)] | None = None
    lease_sec: Annotated[float, _ranged(lim.LEASE_SEC_RANGE, model.DEFAULT_LEASE_SEC)] | None = None
    priority: Annotated[Literal["high", "default", "batch"], ordered(PRIORITIES, model.Priority.DEFAULT.label)] | None = None
    overlap: Annotated[Literal["allow", "forbid", "replace"], ordered(OVERLAPS, model.OverlapPolicy.ALLOW.value)] | None = None
    misfire: Annotated[Literal["run_once", "skip", "run_all"], ordered(MISFIRES, model.MisfirePolicy.RUN_ONCE.value)] | None = None
    jitter_sec: Annotated[int, _ranged(lim.JITTER_SEC_RANGE, 0)] | None = None
    misfire_grace_sec: Annotated[int, Meta(ge=lim.MISFIRE_GRACE_SEC_RANGE[0], le=lim.MISFIRE_GRACE_SEC_RANGE[1], extra_json_schema={"default": None},
                                           description="How late (seconds) a tick may start and still just run; a tick later than this is missed and follows `misfire`. null or absent: the default that fits the schedule: until the job's next tick comes due, at most 60 s.")] | None = None
    env: Env | None = None
    run_as: RunAs | None = None
    shell: Annotated[str, Meta(max_length=lim.MAX_SHELL_BYTES, pattern=SHELL_PATTERN, examples=["/bin/bash"],
                               description="Command targets: the shell that runs the command as `SHELL -c COMMAND` (a crontab's `SHELL=`); default `/bin/sh`. An absolute path. No NUL, no trailing space; at most 4096 bytes as UTF-8.")] | None = None
    # its limit is in bytes (413 beyond, api/targets.py): characters bound them from above
    stdin: Annotated[str, Meta(extra_json_schema={"maxLength": lim.MAX_STDIN_BYTES},
                               description="Command targets: the command's standard input (a crontab's text after `%`), at most 64 KiB of UTF-8 (413 beyond); default: the payload as JSON and a newline.")] | None = None
    calendars: Annotated[list[Annotated[str, Meta(pattern=CALENDAR_NAME_PATTERN)]], Meta(max_length=lim.MAX_JOB_CALENDARS,
                         description="Names of the tenant's calendars whose excluded days and windows this job observes, read in its `timezone`; an excluded tick is recorded SKIPPED with reason `calendar: NAME`. Unknown names are refused (422 `unknown_reference`).")] | None = None
    active_from: Annotated[str, Meta(extra_json_schema={"format": "instant"},
                                     description="Recurring jobs: no tick before this instant. An RFC 3339 instant with a UTC offset, in 1970..9899 (format `instant`; else 422).")] | None = None
    active_until: Annotated[str, Meta(extra_json_schema={"format": "instant"},
                                      description="Recurring jobs: no tick after this instant; the job is then settled by its last run, SUCCEEDED or FAILED, as a one-off job is. An RFC 3339 instant with a UTC offset, in 1970..9899 (format `instant`; else 422), not before `activeFrom` (else 422).")] | None = None
    on_success: Annotated[list[Annotated[str, Meta(pattern=JOB_ID_PATTERN)]], Meta(max_length=lim.MAX_CHAIN_CHILDREN,
                          description="Jobs of the same tenant to run when an execution of this one ends SUCCEEDED (a chain). The child's execution is `(childJobId, parent scheduledAt)`: once per parent tick, whatever the parent's redeliveries.")] | None = None
    on_failure: Annotated[list[Annotated[str, Meta(pattern=JOB_ID_PATTERN)]], Meta(max_length=lim.MAX_CHAIN_CHILDREN,
                          description="Jobs to run when an execution of this one ends DEAD (its retries spent).")] | None = None
    managed_by: Annotated[str, Meta(min_length=1, max_length=lim.MAX_MANAGED_BY_CHARS, pattern=NOT_BLANK, extra_json_schema={"format": "printable"},
                                    description="Who manages this job's definition: `apply` for jobs created by `cronwheel apply` from files (its --prune deletes only those). Absent for jobs made by hand. 1 to 100 printable characters, not blank.")] | None = None
    notify: Annotated[Any, _schema(_NOTIFY_SCHEMA)] = None
    expect_success_within: Annotated[Any, _schema(_EXPECT_SCHEMA)] = None


class JobItem(JobRequest):
    """A `POST /v1/jobs` body plus its own `idempotencyKey`. `runAs`, `shell` and `stdin` need a command target, `env` a command or queue target (a body without a target has queue `default`). With `expectSuccessWithin` and no schedule, runAt or target, the job is watched, not run (target `{"ping": {}}`)."""

    idempotency_key: Annotated[str, Meta(min_length=1, max_length=lim.MAX_IDEMPOTENCY_KEY_CHARS, pattern=PRINTABLE_ASCII,
                                         description="1 to 200 printable ASCII characters, unique within the batch (422 for a repeat).")] | None = None


class JobPatch(JobRequest):
    """A merge patch of a job's definition: any members of `JobRequest`, with the same rules; `null` removes one (its default applies again). `schedule` and `runAt` replace each other (naming either needs one of them as a string); the targets replace each other (at most one of them not null). The patched job is validated as a create body: what depends on the job's current definition (e.g. a `retryPolicy.maxBackoffSec` below its `initialBackoffSec`) is refused as a create would be. See `PATCH /v1/jobs/{jobId}`. `runAs`, `shell`, `stdin` and `env` must suit the target the job has after the patch (422 otherwise; it depends on the job's current target)."""

    json_schema_extra: ClassVar[dict[str, Any]] = {
        "minProperties": 1,
        "allOf": [_TARGETS],
        "dependentSchemas": {"schedule": _WHEN, "runAt": _WHEN},
    }

    env: Annotated[EnvPatch | None, Meta(description="Merged variable by variable: a variable set to `null` is removed.")] = None  # type: ignore[assignment]


class JobBatchRequest(msgspec.Struct, forbid_unknown_fields=True):
    jobs: Annotated[list[JobItem], Meta(min_length=1, max_length=lim.MAX_BATCH_JOBS)]


#: a pattern in words, for refusals: "queue must be {words}, not '-x'"
PATTERN_WORDS = {
    QUEUE_PATTERN: "1 to 100 characters of letters, digits and _ . - (starting with a letter or digit)",
    PYTHON_PATTERN: "a callable named as module:function (e.g. myapp.tasks:cleanup)",
    JOB_ID_PATTERN: "a job id",
    CALENDAR_NAME_PATTERN: "1 to 64 letters, digits and _ . - (starting with a letter or digit)",  # a tenant's name too
    HEADER_NAME_PATTERN: "a valid header name",
    ACCOUNT_PATTERN: "a user name or group name of letters, digits and _ . - (a $ may end it)",
    HTTP_URL_PATTERN: "an absolute http:// or https:// URL with a host, without spaces or control characters",
    HEADER_VALUE_PATTERN: "text without control characters such as CR, LF or NUL (a tab is taken)",
    COMMAND_PATTERN: "text that is not blank, without NUL characters",
    SHELL_PATTERN: "an absolute path (e.g. /bin/bash) without NUL or trailing spaces",
    NOT_BLANK: "text that is not blank",
    TRIMMED_PATTERN: "text that neither starts nor ends with a space (and is not blank)",
    PRINTABLE_ASCII: "printable ASCII characters",
    WORKER_ID_PATTERN: "text without control characters",
}


def names(struct: type[msgspec.Struct]) -> tuple[str, ...]:
    """The JSON names of a struct's members, in their order."""
    return tuple(f.encode_name for f in msgspec.structs.fields(struct))


#: the members of a job body (``POST /v1/jobs``), in the order they are declared
JOB_FIELDS = names(JobRequest)
#: the kinds of target a body may name directly (``command``) or inside ``target``
TARGET_KINDS = names(Target)
RETRY_FIELDS = names(RetryPolicy)
#: members of a job body that set up a command's process; env also travels to remote workers
PROCESS_FIELDS = ("env", "runAs", "shell", "stdin")
#: the members of a job body that a job's answer carries back under the same name and that a
#: body recreating the job may hold (the target is the answer's ``target``; calendars, chains,
#: managedBy and notify are exported with care of their own, or not at all)
CARRIED_BACK = tuple(k for k in JOB_FIELDS if k not in (*TARGET_KINDS, "target", "calendars", "onSuccess", "onFailure", "managedBy", "notify"))
#: the structs of a job body, for the OpenAPI document (``api/openapi.py``)
STRUCTS: tuple[type[msgspec.Struct], ...] = (JobRequest, JobItem, JobPatch, JobBatchRequest, Target, HttpTarget, RetryPolicy, RunAs)
