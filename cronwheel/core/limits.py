"""Every bound that the input boundary enforces, in one table.

Whatever enters the daemon (HTTP bodies, headers, paths, query strings, worker frames) is
checked against these before it can reach shared state: a value that fits here fits every
store and every wire format past the boundary (SQLite's and PostgreSQL's 64-bit integers and
text, msgpack frames, RFC 3339 years of four digits). New fields take their bounds from here,
and ``LIMITS`` is the table that docs/security.md prints (a test keeps the two equal). The
few bounds on what may pile up rather than enter (a job's waiting runs, a tenant's, an
execution's effects) are in the same table: an operator reads them in the same place.

Why one module: it is the one table of limits, so that a bound is never defined twice or
beside its code (a test refuses ``MAX_*`` names elsewhere in api/ and core/), and the table,
its constants and the text checks they feed are read together.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: the end of a text in a schema ``pattern``. msgspec checks a pattern with ``re.search``,
#: where ``$`` also matches just before a final newline, so ``"name\n"`` passed a pattern
#: ending in ``$``; JSON Schema's ``$`` has no such exception, and this reads the same to both
PATTERN_END = r"(?!\n)$"

# ---------------------------------------------------------------- instants and numbers

#: the first instant past every schedule and ``runAt``: 9900-01-01T00:00:00Z (a year of four
#: digits with room to spare); a computed next run at or past it means "never again"
MAX_INSTANT_MS = 250_246_627_200_000
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

# ---------------------------------------------------------------- the HTTP request

MAX_BODY_BYTES = 1 << 20
#: nesting of arrays and objects in a JSON body (the worker frame that carries a payload adds
#: a few levels of its own and allows 32)
MAX_JSON_DEPTH = 24
MAX_IDEMPOTENCY_KEY_CHARS = 200

# ---------------------------------------------------------------- connections (api/server.py)

#: TCP connections open at once, all clients together; beyond, new ones are closed at once
MAX_CONNECTIONS = 4096
#: TCP connections open at once from one client address, not yet vouched for by a request's
#: token (a connection counts against its caller once one is: below)
MAX_CONNECTIONS_PER_CLIENT = 256
#: trusted proxies walked at most from the right of a forwarding header: more of ours in a
#: row is a loop or a forgery (core/forwarded.py)
MAX_FORWARDED_HOPS = 32
#: TCP connections open at once that carried a request of one caller (a tenant, its workers
#: included, or a tenantless role), whatever their addresses
MAX_CONNECTIONS_PER_CALLER = 256
#: connections on the local Unix socket (a budget of its own: the admin can always get in)
MAX_LOCAL_CONNECTIONS = 256
#: a new connection must have sent its first request's headers within this
HEADER_TIMEOUT_SEC = 10.0
#: a request's body must have arrived within this once its headers did
BODY_TIMEOUT_SEC = 30.0
#: a kept-alive connection idle this long between requests is closed (longer than the
#: clients' own idle close, aiohttp's 15 s, so that a client never reuses a connection the
#: server is closing at that moment; nginx's default)
IDLE_TIMEOUT_SEC = 75.0

# ---------------------------------------------------------------- a job

MAX_NAME_CHARS = 200
MAX_SCHEDULE_CHARS = 1000
MAX_COMMAND_BYTES = 16 * 1024
MAX_PAYLOAD_BYTES = 64 * 1024
MAX_URL_CHARS = 8 * 1024
MAX_HEADERS = 50
MAX_HEADER_NAME_CHARS = 256
MAX_HEADER_VALUE_CHARS = 8 * 1024
#: redirects an HTTP target's run follows, each hop judged as the job's own URL (core.redirects)
MAX_REDIRECTS = 10
MAX_TIMEZONE_CHARS = 64
TIMEOUT_SEC_RANGE = (1.0, 7 * 86_400.0)
LEASE_SEC_RANGE = (0.2, 3600.0)
JITTER_SEC_RANGE = (0, 3600)
#: ``POST /v1/jobs/batch``: jobs per request (and the request stays under MAX_BODY_BYTES)
MAX_BATCH_JOBS = 1000

#: a job's process setup (env, runAs, shell, stdin): what a crontab's lines can carry, and room
MAX_ENV_VARS = 100
MAX_ENV_NAME_CHARS = 128
MAX_ENV_BYTES = 32 * 1024  #: names and values of one job's env together, UTF-8
MAX_STDIN_BYTES = 64 * 1024
MAX_SHELL_BYTES = 4096  #: PATH_MAX
MAX_ACCOUNT_NAME_CHARS = 32  #: useradd's limit on a user or group name

#: ``managedBy``: who manages a job (``cronwheel apply``'s mark)
MAX_MANAGED_BY_CHARS = 100
#: a job's ``retryPolicy``: attempts in all, and the backoff between them
RETRY_MAX_ATTEMPTS_RANGE = (1, 1000)
RETRY_INITIAL_BACKOFF_SEC_RANGE = (0, 86_400)
RETRY_MAX_BACKOFF_SEC_RANGE = (0, 7 * 86_400)
RETRY_MULTIPLIER_RANGE = (1, 100)
RETRY_JITTER_RANGE = (0, 1)  #: a fraction of each backoff
#: the range of a job's explicit ``misfireGraceSec``
MISFIRE_GRACE_SEC_RANGE = (0, 86_400)
#: the shortest and longest ``expectSuccessWithin`` windows (a dead-man's switch)
EXPECT_SUCCESS_WITHIN_MS_RANGE = (1_000, 366 * 86_400_000)

# ---------------------------------------------------------------- beyond cron

MAX_JOB_CALENDARS = 8  #: calendars one job may observe
MAX_CALENDAR_ENTRIES = 5_000  #: dates + windows of one calendar
MAX_CALENDAR_DESCRIPTION_CHARS = 500
MAX_TENANT_CALENDARS = 1_000  #: calendars one tenant keeps (each up to MAX_CALENDAR_ENTRIES)
MAX_CHAIN_CHILDREN = 16  #: per list (onSuccess, onFailure) of one job
MAX_BACKFILL_TICKS = 10_000  #: runnable ticks one backfill request may create
#: the most overdue runs a recurring ``allow`` job may have waiting to start (PENDING or
#: RETRY_WAIT, due, from its schedule): its ticks beyond them are recorded SKIPPED (reason
#: ``backlog``, core.planning). Without it a job whose runs nobody starts (its tenant held at
#: ``maxRunning``, no free worker, a queue no remote worker polls) queued one run per tick for
#: ever, each a row the retention never removes and, for a local target, memory in the
#: daemon: 500 every-second jobs held at ``maxRunning 1`` grew the daemon by ~0.9 GB an hour.
MAX_WAITING_RUNS = 100
#: a job's newest dead letters the retention keeps unless ``dlq_keep_last`` says otherwise: the
#: queue is not aged out, but a job failing every second must not grow it for ever
DLQ_KEEP_LAST = 1_000
#: a job found at MAX_WAITING_RUNS is claimed again about this long after (its first tick at or
#: after then: core.planning.backlog_look_again), and every tick in between is recorded by one
#: SKIPPED row: held one tick at a time, a tenant's 3,800 every-second jobs at the bound cost the
#: node's one store writer 3,800 claims, backlog probes and rows a second, its other tenants'
#: ticks seconds of lag, and the disk ~50 MB a minute.
BACKLOG_RECHECK_MS = 60_000
#: a tenant's local runs waiting in one node's ready queue, past which the runs it asks for (a
#: trigger, a backfill) are refused (429): each costs the daemon ~0.5 KB until it starts, and
#: without a submitRate a tenant held at maxRunning could queue them until the node ran out
#: of memory. Its scheduled ticks are not refused (MAX_WAITING_RUNS bounds each job's).
MAX_TENANT_WAITING = 100_000
MAX_HERD_EVALUATIONS = 200_000  #: schedule evaluations one herd preview may make (each ~20-30 µs)
#: the output tail a ping may carry (the rest of a long log belongs elsewhere)
MAX_PING_OUTPUT_CHARS = 65_536

# ---------------------------------------------------------------- notification rules

MAX_NOTIFY_RULES = 20  #: rules of one job
MAX_NOTIFY_URL_CHARS = 2048  #: a webhook rule's URL
MIN_SECRET_CHARS = 16  #: a webhook rule's secret keys an HMAC: not a short one
MAX_SECRET_CHARS = 200
MAX_RECIPIENTS = 20  #: an email rule's addresses
MAX_NOTIFY_COMMAND_BYTES = 8192  #: a command rule's command
NOTIFY_AFTER_SEC_RANGE = (1, 30 * 86_400)  #: a late rule's afterSec
NOTIFY_MAX_PER_HOUR_RANGE = (1, 3600)
NOTIFY_MAX_ATTEMPTS_RANGE = (1, 50)

# ---------------------------------------------------------------- tenants and tokens

MAX_WEIGHT = 1000  #: a tenant's fair share of the ready queue
MAX_QUOTA = 1_000_000_000  #: maxRunning, maxJobs, submitBurst
MAX_RATE = 1_000_000.0  #: submitRate, submissions per second
MIN_RATE = 0.001  #: submitRate: one submission in 1000 s (a smaller rate answers Retry-After in centuries)
MAX_HTTP_ALLOW = 100  #: hosts of a tenant's httpAllow
MAX_TOKEN_NAME_CHARS = 200
MAX_TOKEN_CHARS = 200  #: longer Authorization values are refused before hashing

# ---------------------------------------------------------------- worker calls

MAX_WORKER_ID_CHARS = 200
MAX_EFFECT_KEY_CHARS = 1024
#: effects one execution may record, over all its attempts: a job that records effects in a
#: loop (or a hostile one) otherwise grows the store by a row per call for as long as it runs
MAX_EFFECTS_PER_EXECUTION = 10_000
MAX_ERROR_CHARS = 8 * 1024  #: a completion's error is truncated (tail kept) beyond this
MAX_OUTPUT_CHARS = 64 * 1024  #: a completion's output tail is truncated beyond this
MAX_CLAIM = 100  #: executions one claim may take
MAX_CLAIM_WAIT_SEC = 30  #: the longest long poll
MAX_CLAIM_QUEUES = 100  #: queues one claim may name

# ---------------------------------------------------------------- worker frames (the local socket)

#: the most items one page of a listing holds (``limit``), and what a lookup by name reads at
#: most: its live holders first, then the newest namesakes
MAX_PAGE = 1000
MAX_FRAME_BYTES = 1 << 20  #: one frame's body, without its 4-byte length prefix
MAX_FRAME_ITEMS = 65_536  #: grants, results, beats in one frame
MAX_FRAME_ID_CHARS = 1024  #: an execution, job or worker id, a tenant, a reason in a frame


@dataclass(frozen=True)
class Limit:
    name: str
    value: str
    applies_to: str


def _num(x: float) -> str:
    """A bound as people write it: ``2592000``, ``0.2``, never ``2.592e+06``."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _range(bounds: tuple[float, float]) -> str:
    return f"{_num(bounds[0])} .. {_num(bounds[1])}"


#: the table of docs/security.md, "Limits" (name, value as documented, what it bounds)
LIMITS: tuple[Limit, ...] = (
    Limit("request body", f"{MAX_BODY_BYTES} bytes", "every request (413 from Content-Length, or mid-stream)"),
    Limit("JSON nesting", f"{MAX_JSON_DEPTH} levels", "every JSON body"),
    Limit("strings", "valid Unicode, no NUL", "every string in a body, path, query or header (no lone surrogates)"),
    Limit("numbers", "finite, integers within 64 bits", "every number in a body (no NaN, Infinity, 1e400)"),
    Limit("instants", "1970-01-01 .. 9899-12-31", "runAt, the next run a schedule computes, a calendar's dates and windows"),
    Limit("connections", f"{MAX_CONNECTIONS} in all, {MAX_CONNECTIONS_PER_CLIENT} per client address",
          "the TCP API, fewer under a low file limit (beyond: closed at once; per address: until a request's token counts it against its tenant)"),
    Limit("connections per tenant", f"{MAX_CONNECTIONS_PER_CALLER}",
          "TCP connections whose last request was a tenant's, its workers' included (fewer under a low file limit; beyond: 429 too_many_connections)"),
    Limit("forwarded hops", f"{MAX_FORWARDED_HOPS} trusted proxies",
          "X-Forwarded-For / Forwarded from a trusted proxy, walked from the right (more: the request is the proxy's own)"),
    Limit("local connections", f"{MAX_LOCAL_CONNECTIONS}", "the Unix socket, a budget of its own (fewer under a low file limit)"),
    Limit("header timeout", f"{HEADER_TIMEOUT_SEC:g} s", "a new connection's first request headers"),
    Limit("body timeout", f"{BODY_TIMEOUT_SEC:g} s", "a request's body, once its headers arrived (408)"),
    Limit("idle timeout", f"{IDLE_TIMEOUT_SEC:g} s", "a kept-alive connection between requests"),
    Limit("Idempotency-Key", f"{MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII", "header, and a batch's idempotencyKey"),
    Limit("name", f"{MAX_NAME_CHARS} characters", "a job's name (printable)"),
    Limit("schedule / runAt", f"{MAX_SCHEDULE_CHARS} characters", "the text given"),
    Limit("command", f"{MAX_COMMAND_BYTES} bytes", "a command target"),
    Limit("payload", f"{MAX_PAYLOAD_BYTES} bytes of JSON", "a job's payload"),
    Limit("http.url", f"{MAX_URL_CHARS} characters", "an HTTP target"),
    Limit("http.headers", f"{MAX_HEADERS} headers, names {MAX_HEADER_NAME_CHARS}, values {MAX_HEADER_VALUE_CHARS}", "an HTTP target"),
    Limit("redirects", f"{MAX_REDIRECTS} followed", "an HTTP target's run (one more: the run fails)"),
    Limit("timezone", f"{MAX_TIMEZONE_CHARS} characters", "an IANA name"),
    Limit("timeoutSec", f"{TIMEOUT_SEC_RANGE[0]:g} .. {TIMEOUT_SEC_RANGE[1]:g}", "seconds"),
    Limit("leaseSec", f"{LEASE_SEC_RANGE[0]:g} .. {LEASE_SEC_RANGE[1]:g}", "seconds"),
    Limit("jitterSec", f"{JITTER_SEC_RANGE[0]} .. {JITTER_SEC_RANGE[1]}", "seconds"),
    Limit("env", f"{MAX_ENV_VARS} variables, names {MAX_ENV_NAME_CHARS}, {MAX_ENV_BYTES} bytes in all", "a job's environment"),
    Limit("stdin", f"{MAX_STDIN_BYTES} bytes", "a command's standard input"),
    Limit("shell", f"{MAX_SHELL_BYTES} bytes", "a command's shell path"),
    Limit("runAs", f"{MAX_ACCOUNT_NAME_CHARS} characters", "a user or group name"),
    Limit("batch", f"{MAX_BATCH_JOBS} jobs", "POST /v1/jobs/batch"),
    Limit("managedBy", f"{MAX_MANAGED_BY_CHARS} characters", "a job's manager (printable, not blank)"),
    Limit("retryPolicy.maxAttempts", _range(RETRY_MAX_ATTEMPTS_RANGE), "attempts of one execution, the first included"),
    Limit("retryPolicy.initialBackoffSec", _range(RETRY_INITIAL_BACKOFF_SEC_RANGE), "seconds before the first retry"),
    Limit("retryPolicy.maxBackoffSec", _range(RETRY_MAX_BACKOFF_SEC_RANGE), "seconds, the longest backoff (at least initialBackoffSec)"),
    Limit("retryPolicy.multiplier", _range(RETRY_MULTIPLIER_RANGE), "growth of the backoff from one retry to the next"),
    Limit("retryPolicy.jitter", _range(RETRY_JITTER_RANGE), "the fraction of a backoff drawn at random"),
    Limit("misfireGraceSec", _range(MISFIRE_GRACE_SEC_RANGE), "seconds a late tick still runs as scheduled"),
    Limit("expectSuccessWithin", f"{EXPECT_SUCCESS_WITHIN_MS_RANGE[0] // 1000}s .. {EXPECT_SUCCESS_WITHIN_MS_RANGE[1] // 86_400_000}d",
          "a watched job's window"),
    Limit("calendars", f"{MAX_JOB_CALENDARS} calendars", "observed by one job"),
    Limit("calendar", f"{MAX_CALENDAR_ENTRIES} dates and windows, description {MAX_CALENDAR_DESCRIPTION_CHARS} characters",
          "PUT /v1/calendars/{name}"),
    Limit("calendars kept", f"{MAX_TENANT_CALENDARS} calendars", "per tenant (a new one beyond: 422 too_many_calendars)"),
    Limit("onSuccess / onFailure", f"{MAX_CHAIN_CHILDREN} jobs each", "a job's chain"),
    Limit("backfill", f"{MAX_BACKFILL_TICKS} ticks",
          "one POST /v1/jobs/{id}/backfill (beyond: 422, nothing created); planned in a thread, one at a time per "
          "tenant with its herd previews and upcoming ticks"),
    Limit("waiting runs", f"{MAX_WAITING_RUNS} runs",
          "a recurring job's overdue scheduled runs not yet started (past it the job is held: claimed again "
          f"{BACKLOG_RECHECK_MS // 2000}-{BACKLOG_RECHECK_MS * 3 // 2000} s later, its ticks between recorded by one "
          "SKIPPED row, reason backlog)"),
    Limit("dead letters", f"{DLQ_KEEP_LAST} executions (`dlq_keep_last`)",
          "a job's newest dead letters kept; the retention's pass deletes older ones with a `dlq.pruned` warning, so a "
          "job failing every second does not grow the store for ever, and a neighbour's dead letters are never among them; "
          "each job's dead notifications are bounded the same way"),
    Limit("waiting runs of a tenant", f"{MAX_TENANT_WAITING} runs",
          "per node: a trigger or backfill that would queue more of a tenant's local runs is refused (429, quota waiting)"),
    Limit("herd preview", f"{MAX_HERD_EVALUATIONS} schedule evaluations",
          "one GET /v1/herd or cronwheel lint (beyond: 422 herd_too_large); counted in a thread, one at a time per tenant"),
    Limit("ping output", f"{MAX_PING_OUTPUT_CHARS} characters", "POST /v1/jobs/{id}/ping (the tail is kept)"),
    Limit("notify", f"{MAX_NOTIFY_RULES} rules", "a job's notification rules"),
    Limit("notify url", f"{MAX_NOTIFY_URL_CHARS} characters", "a webhook rule"),
    Limit("notify secret", f"{MIN_SECRET_CHARS} .. {MAX_SECRET_CHARS} bytes", "a webhook rule (it keys the HMAC signature)"),
    Limit("notify to", f"{MAX_RECIPIENTS} addresses", "an email rule"),
    Limit("notify command", f"{MAX_NOTIFY_COMMAND_BYTES} bytes", "a command rule"),
    Limit("notify afterSec", _range(NOTIFY_AFTER_SEC_RANGE), "seconds after the tick, a late rule"),
    Limit("notify maxPerHour", _range(NOTIFY_MAX_PER_HOUR_RANGE), "notifications sent per rolling hour, per job"),
    Limit("notify maxAttempts", _range(NOTIFY_MAX_ATTEMPTS_RANGE), "deliveries of one notification before it is dead-lettered"),
    Limit("tenant weight", _range((1, MAX_WEIGHT)), "a tenant's share of the ready queue"),
    Limit("tenant quotas", f"0 .. {MAX_QUOTA}", "maxRunning, maxJobs (submitBurst from 1)"),
    Limit("tenant submitRate", f"{MIN_RATE:g} .. {_num(MAX_RATE)}", "submissions per second"),
    Limit("tenant httpAllow", f"{MAX_HTTP_ALLOW} hosts", "a tenant's HTTP allow-list"),
    Limit("token name", f"{MAX_TOKEN_NAME_CHARS} characters", "POST /v1/tokens (printable)"),
    Limit("token", f"{MAX_TOKEN_CHARS} characters", "the Authorization header's bearer token (longer: refused before hashing)"),
    Limit("workerId", f"{MAX_WORKER_ID_CHARS} characters", "claim, heartbeat, complete, effects"),
    Limit("claim", f"{MAX_CLAIM} executions, {MAX_CLAIM_QUEUES} queues, waitSec 0 .. {MAX_CLAIM_WAIT_SEC}",
          "POST /v1/workers/claim"),
    Limit("effect key", f"{MAX_EFFECT_KEY_CHARS} characters", "POST /v1/executions/{id}/effects"),
    Limit("effects", f"{MAX_EFFECTS_PER_EXECUTION} per execution",
          "POST /v1/executions/{id}/effects, all attempts together (beyond: 422 too_many_effects, nothing recorded)"),
    Limit("error / output", f"{MAX_ERROR_CHARS} / {MAX_OUTPUT_CHARS} characters", "a completion (the tail is kept)"),
    Limit("worker frame", f"{MAX_FRAME_BYTES} bytes, {MAX_FRAME_ITEMS} records, ids {MAX_FRAME_ID_CHARS} characters",
          "a frame on the worker socket (grants, results, beats)"),
)


# ---------------------------------------------------------------- text and JSON values


def text_problem(text: str) -> str | None:
    """Why ``text`` may not enter (a lone surrogate, a NUL), or None when it may.

    A lone surrogate (``"\\udc00"`` in JSON, undecodable bytes in a header) is not Unicode:
    no store can encode it. PostgreSQL's text cannot hold NUL at all."""
    if text.isascii():
        return "a NUL character" if "\x00" in text else None
    if "\x00" in text:
        return "a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate (U+{ord(text[exc.start]):04X}) at character {exc.start}"
    return None


_UNFIT = re.compile("[\x00\ud800-\udfff]")


def scrub_text(text: str) -> str:
    """``text`` made fit to enter: NUL and lone surrogates replaced by U+FFFD. For what a
    worker reports about a run it finished (output, error): refused, the run could not be
    reported at all; scrubbed, it is reported with the bytes no store can hold marked."""
    if text_problem(text) is None:
        return text
    return _UNFIT.sub("\ufffd", text)


def number_problem(value: int | float) -> str | None:
    """Why a JSON number may not enter (non-finite, an integer beyond 64 bits), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r}, not a finite number"
    if not INT64_MIN <= value <= INT64_MAX:
        return "an integer beyond 64 bits"
    return None


@dataclass(frozen=True)
class JsonRefusal:
    """Why part of a JSON value may not enter: ``path`` like ``payload.items[3]`` (empty for
    the value itself), ``why`` a phrase (``contains a NUL character``), ``malformed`` for text
    and nesting (a 400) rather than a number out of range (a 422)."""

    path: str
    why: str
    malformed: bool


def json_problem(value: Any, max_depth: int = MAX_JSON_DEPTH) -> JsonRefusal | None:
    """The first thing in a decoded JSON value that may not enter, or None when all of it may.
    Iterative, so a deeply nested value costs no recursion."""
    for path, depth, item in _walk(value):
        if depth > max_depth:
            return JsonRefusal(path, f"is nested deeper than {max_depth} levels", True)
        if isinstance(item, str):
            why = text_problem(item)
            if why is not None:
                return JsonRefusal(path, f"contains {why}", True)
        elif isinstance(item, int | float):
            why = number_problem(item)
            if why is not None:
                return JsonRefusal(path, f"is {why}", False)
    return None


class JsonTextError(ValueError):
    """JSON text that may not enter, in words (``refusal``: what ``json_problem`` found in a
    value that did parse; None for text that is not JSON)."""

    def __init__(self, message: str, refusal: JsonRefusal | None = None) -> None:
        super().__init__(message)
        self.refusal = refusal


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _RepeatedName(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose members are named once each. JSON leaves a repeated name to the
    reader, and readers differ: Python keeps the last, others the first or refuse it, so a
    proxy or a log could see another request than the one the daemon acts on. Refused, at a
    cost measured at 1–2 µs per job of a 1,000-job batch and ~5 µs for one job, beside the
    ~40 µs per job that ``loads_checked`` took before (three alternating runs)."""
    members = dict(pairs)
    if len(members) < len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _RepeatedName(name)
            seen.add(name)
    return members


def loads_checked(text: str, what: str = "the JSON") -> Any:
    """``text`` decoded, refusing what the API refuses at its door: malformed JSON, NaN and
    Infinity, a name given twice in one object, nesting too deep to decode or to keep,
    integers of more than Python's 4,300 digits or beyond 64 bits, lone surrogates and NUL.
    One reader for the API's bodies and the CLI's JSON arguments and files, so each says no
    in the same words."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_members)
    except _RepeatedName as exc:
        shown = exc.name.encode("utf-8", "backslashreplace").decode("utf-8")[:100]
        raise JsonTextError(f"malformed JSON: the name {shown!r} is given twice in one object") from None
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unexpected UTF-8 BOM"):  # Python's hint names its own codec
            raise JsonTextError("malformed JSON: it starts with a byte-order mark (U+FEFF): send it without one") from None
        raise JsonTextError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise JsonTextError(f"{what} is nested too deeply") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's own bound, not the JSON's fault alone
            raise JsonTextError("malformed JSON: an integer of more than 4300 digits") from None
        raise JsonTextError(f"malformed JSON: {exc}") from None
    bad = json_problem(value)
    if bad is not None:
        raise JsonTextError(f"{what}: {bad.path} {bad.why}" if bad.path else f"{what} {bad.why}", bad)
    return value


def _walk(value: Any) -> Iterator[tuple[str, int, Any]]:
    stack: list[tuple[str, int, Any]] = [("", 0, value)]
    while stack:
        path, depth, item = stack.pop()
        yield path, depth, item
        if isinstance(item, dict):
            for key, child in item.items():
                shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")  # a path fit to print
                key_path = f"{path}.{shown}" if path else shown
                yield key_path, depth + 1, key  # a key is text too
                stack.append((key_path, depth + 1, child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", depth + 1, child) for i, child in enumerate(item))
