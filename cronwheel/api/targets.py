"""What a job runs and how its process is set up: the target members of a job body
(``command``, ``http``, ``python``, ``queue`` or ``target``) and ``env``, ``runAs``, ``shell``,
``stdin``. Pure: no HTTP, no I/O, no clock."""

from __future__ import annotations

import re
from typing import Any

from cronwheel.api.fields import as_object, as_string, as_text, bad, reject_unknown
from cronwheel.core import model
from cronwheel.core.jobfields import (
    ACCOUNT_PATTERN,
    HEADER_NAME_PATTERN,
    HTTP_METHODS,
    PROCESS_FIELDS,
    PYTHON_PATTERN,
    QUEUE_PATTERN,
    TARGET_KINDS,
    HttpTarget,
    RunAs,
    names,
)
from cronwheel.core.limits import (
    MAX_ACCOUNT_NAME_CHARS,
    MAX_COMMAND_BYTES,
    MAX_ENV_BYTES,
    MAX_ENV_NAME_CHARS,
    MAX_ENV_VARS,
    MAX_HEADER_NAME_CHARS,
    MAX_HEADER_VALUE_CHARS,
    MAX_HEADERS,
    MAX_SHELL_BYTES,
    MAX_STDIN_BYTES,
    MAX_URL_CHARS,
)
from cronwheel.core.model import JobSpec
from cronwheel.core.urls import http_url_problem

_PYTHON_RE = re.compile(PYTHON_PATTERN)
_QUEUE_RE = re.compile(QUEUE_PATTERN)
#: the target of a body that names none (the minimal ``{ schedule, payload, retryPolicy,
#: timeoutSec }``): its executions wait in this queue for remote workers
DEFAULT_QUEUE = "default"
_HEADER_NAME_RE = re.compile(HEADER_NAME_PATTERN)
#: the document's pattern refuses the reserved prefix too; the server says why in words
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ACCOUNT_RE = re.compile(ACCOUNT_PATTERN)


def parse_target(data: dict[str, Any]) -> dict[str, Any]:
    given = [k for k in (*TARGET_KINDS, "target") if k in data]
    if not given:
        return {"queue": DEFAULT_QUEUE}
    if len(given) != 1:
        what = f"got {', '.join(given)}" if given else "none was given"
        raise bad(given[1] if len(given) > 1 else None, f"give exactly one target: command, http, python, queue or target; {what}", code="invalid_target")
    kind = given[0]
    if kind == "target":
        inner = as_object("target", data["target"])
        inner_given = [k for k in inner if inner[k] is not None]
        reject_unknown("target", inner, TARGET_KINDS)
        if len(inner_given) != 1:
            raise bad("target", "target must have exactly one of command, http, python, queue", code="invalid_target")
        kind = inner_given[0]
        return {kind: parse_target_value(f"target.{kind}", kind, inner[kind])}
    return {kind: parse_target_value(kind, kind, data[kind])}


def parse_target_value(field: str, kind: str, value: Any) -> Any:
    if kind == "command":
        cmd = as_string(field, value)
        if not cmd.strip():
            raise bad(field, f"{field} must not be blank")
        if "\x00" in cmd:
            raise bad(field, f"{field} must not contain NUL characters")
        size = len(cmd.encode())
        if size > MAX_COMMAND_BYTES:
            raise bad(field, f"{field} is {size} bytes; the limit is {MAX_COMMAND_BYTES} bytes")
        return cmd
    if kind == "python":
        ref = as_string(field, value)
        if len(ref) > 500 or not _PYTHON_RE.match(ref):
            raise bad(field, f"{field} must name a callable as module:function (e.g. myapp.tasks:cleanup), not {ref[:100]!r}")
        return ref
    if kind == "queue":
        name = as_string(field, value)
        if not _QUEUE_RE.match(name):
            raise bad(field, f"{field} must be 1 to 100 characters of letters, digits and _ . - (starting with a letter or digit)")
        return name
    return _parse_http(field, value)


def _parse_http(field: str, value: Any) -> dict[str, Any]:
    spec = as_object(field, value)
    reject_unknown(field, spec, names(HttpTarget))
    if spec.get("url") is None:
        raise bad(f"{field}.url", f"{field}.url is required")
    url = as_string(f"{field}.url", spec["url"])
    problem = http_url_problem(url, MAX_URL_CHARS)
    if problem is not None:
        raise bad(f"{field}.url", f"{field}.url {problem}, not {url[:200]!r}")
    method = "GET"
    if spec.get("method") is not None:
        method = as_string(f"{field}.method", spec["method"]).upper()
        if method not in HTTP_METHODS:
            raise bad(f"{field}.method", f"{field}.method must be one of {', '.join(HTTP_METHODS)}, not {spec['method']!r}")
    headers: dict[str, str] = {}
    if spec.get("headers") is not None:
        raw = as_object(f"{field}.headers", spec["headers"])
        if len(raw) > MAX_HEADERS:
            raise bad(f"{field}.headers", f"{field}.headers may hold at most {MAX_HEADERS} headers, not {len(raw)}")
        for k, v in raw.items():
            where = f"{field}.headers.{k}"
            if len(k) > MAX_HEADER_NAME_CHARS or not _HEADER_NAME_RE.match(k):
                raise bad(where, f"{where}: {k[:100]!r} is not a valid header name")
            text = as_string(where, v)
            if len(text) > MAX_HEADER_VALUE_CHARS or any(c in text for c in "\r\n\x00"):
                raise bad(where, f"{where} must be at most {MAX_HEADER_VALUE_CHARS} characters without CR, LF or NUL")
            headers[k] = text
    return {"url": url, "method": method, "headers": headers}


# ---------------------------------------------------------------- process setup


def parse_process(data: dict[str, Any], spec: JobSpec) -> None:
    """env, runAs, shell and stdin: how a command's process is set up (env also for queue
    targets, whose remote workers get it with each claim)."""
    given = [k for k in PROCESS_FIELDS if k in data]
    if not given:
        return
    kind = next(iter(spec.target))
    for k in given:
        if kind != "command" and not (k == "env" and kind == "queue"):
            allowed = "command and queue targets" if k == "env" else "command targets"
            raise bad(k, f"{k} applies to {allowed} only, not to a {kind} target")
    if "env" in data:
        spec.env = _parse_env(data["env"])
    if "runAs" in data:
        spec.run_as = _parse_run_as(data["runAs"])
    if "shell" in data:
        shell = as_text("shell", data["shell"])
        if not shell.startswith("/") or len(shell.encode()) > MAX_SHELL_BYTES or "\x00" in shell or shell != shell.strip():
            raise bad("shell", f"shell must be an absolute path (e.g. /bin/bash) of at most {MAX_SHELL_BYTES} bytes, without NUL or surrounding spaces, not {shell[:100]!r}")
        spec.shell = shell
    if "stdin" in data:
        stdin = as_text("stdin", data["stdin"])
        if len(stdin.encode()) > MAX_STDIN_BYTES:
            raise bad("stdin", f"stdin is {len(stdin.encode())} bytes; the limit is {MAX_STDIN_BYTES} bytes", status=413, code="payload_too_large")
        spec.stdin = stdin


def _parse_env(value: Any) -> dict[str, str]:
    raw = as_object("env", value)
    if len(raw) > MAX_ENV_VARS:
        raise bad("env", f"env may hold at most {MAX_ENV_VARS} variables, not {len(raw)}")
    env: dict[str, str] = {}
    size = 0
    for name, v in raw.items():
        where = f"env.{name[:MAX_ENV_NAME_CHARS]}"
        if len(name) > MAX_ENV_NAME_CHARS or not _ENV_NAME_RE.match(name):
            raise bad(where, f"env: {name[:100]!r} is not a valid variable name (letters, digits and _, not starting with a digit, at most {MAX_ENV_NAME_CHARS} characters)")
        if name.startswith("CRONWHEEL_"):
            raise bad(where, f"env: {name} is reserved: every run gets the CRONWHEEL_* variables from the daemon")
        text = as_text(where, v)
        if "\x00" in text:
            raise bad(where, f"{where} must not contain NUL characters (an environment cannot hold them)")
        size += len(name) + len(text.encode()) + 2
        env[name] = text
    if size > MAX_ENV_BYTES:
        raise bad("env", f"env is {size} bytes; the limit is {MAX_ENV_BYTES} bytes", status=413, code="payload_too_large")
    return env


def _parse_run_as(value: Any) -> model.RunAs:
    raw = as_object("runAs", value)
    reject_unknown("runAs", raw, names(RunAs))
    accounts: dict[str, str | None] = {"user": None, "group": None}
    for key in accounts:
        if raw.get(key) is None:
            continue
        where = f"runAs.{key}"
        name = as_string(where, raw[key])
        if len(name) > MAX_ACCOUNT_NAME_CHARS or not _ACCOUNT_RE.match(name):
            raise bad(where, f"{where} must be a {key} name of 1 to {MAX_ACCOUNT_NAME_CHARS} letters, digits and _ . - (not {name[:100]!r})")
        accounts[key] = name
    user = accounts["user"]
    if user is None:
        raise bad("runAs.user", "runAs.user is required")
    return model.RunAs(user, accounts["group"])


