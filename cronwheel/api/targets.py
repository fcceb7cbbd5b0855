"""What a job runs and how its process is set up: the target members of a decoded job body
(``command``, ``http``, ``python``, ``queue`` or ``target``) and ``env``, ``runAs``, ``shell``,
``stdin``: the rules their struct (``core.jobfields``) cannot say. Pure: no HTTP, no I/O, no
clock."""

from __future__ import annotations

import re
from typing import Any

from cronwheel.api.fields import as_text, bad
from cronwheel.core import model
from cronwheel.core.httpheaders import header_problem
from cronwheel.core.jobfields import HTTP_METHODS as HTTP_METHODS
from cronwheel.core.jobfields import PROCESS_FIELDS, TARGET_KINDS, HttpTarget, JobRequest
from cronwheel.core.limits import MAX_ACCOUNT_NAME_CHARS as MAX_ACCOUNT_NAME_CHARS
from cronwheel.core.limits import (
    MAX_COMMAND_BYTES,
    MAX_ENV_BYTES,
    MAX_ENV_NAME_CHARS,
    MAX_ENV_VARS,
    MAX_SHELL_BYTES,
    MAX_STDIN_BYTES,
    MAX_URL_CHARS,
)
from cronwheel.core.limits import MAX_HEADER_NAME_CHARS as MAX_HEADER_NAME_CHARS
from cronwheel.core.limits import MAX_HEADER_VALUE_CHARS as MAX_HEADER_VALUE_CHARS
from cronwheel.core.limits import MAX_HEADERS as MAX_HEADERS
from cronwheel.core.model import JobSpec
from cronwheel.core.urls import parse_http_url

#: the target of a body that names none (the minimal ``{ schedule, payload, retryPolicy,
#: timeoutSec }``): its executions wait in this queue for remote workers
DEFAULT_QUEUE = "default"
#: the document's pattern refuses the reserved prefix too; the server says why in words
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_target(req: JobRequest) -> dict[str, Any]:
    """The one target a decoded body names, directly (``command``) or in ``target``; a body
    that names none gets the default queue."""
    given = [k for k in (*TARGET_KINDS, "target") if getattr(req, k) is not None]
    if not given:
        return {"queue": DEFAULT_QUEUE}
    if len(given) != 1:
        raise bad(given[1], f"give exactly one target: command, http, python, queue or target; got {', '.join(given)}", code="invalid_target")
    kind = given[0]
    if kind == "target":
        assert req.target is not None
        inner = [k for k in TARGET_KINDS if getattr(req.target, k) is not None]
        if len(inner) != 1:
            raise bad("target", "target must have exactly one of command, http, python, queue", code="invalid_target")
        kind = inner[0]
        return {kind: _target_value(f"target.{kind}", getattr(req.target, kind))}
    return {kind: _target_value(kind, getattr(req, kind))}


def _target_value(field: str, value: str | HttpTarget) -> Any:
    """Its shape and patterns are the struct's (``core.jobfields``); what is left are the
    rules a pattern cannot say: a command's bytes, an URL that ``urlsplit`` takes and the
    headers that the worker keeps to itself (``core.urls``, ``core.httpheaders``)."""
    if isinstance(value, HttpTarget):
        return _parse_http(field, value)
    if field.endswith("command"):
        size = len(as_text(field, value).encode())
        if size > MAX_COMMAND_BYTES:
            raise bad(field, f"{field} is {size} bytes; the limit is {MAX_COMMAND_BYTES} bytes")
    return value


def _parse_http(field: str, spec: HttpTarget) -> dict[str, Any]:
    try:
        url = parse_http_url(spec.url, MAX_URL_CHARS)
    except ValueError as exc:
        raise bad(f"{field}.url", f"{field}.url {exc}, not {spec.url[:200]!r}") from None
    if url.has_userinfo:
        # a webhook rule may carry them (it has no headers, and its answers hide the password);
        # a target's URL is shown whole, in listings and in the errors of its runs
        raise bad(f"{field}.url", f"{field}.url carries user information (user:password@): give credentials in "
                  f"{field}.headers instead (Authorization), where listings and run errors do not show them")  # fmt: skip
    headers = dict(spec.headers or {})
    problem = header_problem(headers, url)
    if problem is not None:
        name, why = problem
        raise bad(f"{field}.headers.{name}", f"{field}.headers.{name} {why}")
    method = "GET"
    if spec.method is not None:
        method = spec.method.upper()
        if method not in HTTP_METHODS:
            raise bad(f"{field}.method", f"{field}.method must be one of {', '.join(HTTP_METHODS)}, not {spec.method!r}")
    return {"url": spec.url, "method": method, "headers": headers}


# ---------------------------------------------------------------- process setup


def parse_process(req: JobRequest, spec: JobSpec) -> None:
    """env, runAs, shell and stdin: how a command's process is set up (env also for queue
    targets, whose remote workers get it with each claim)."""
    given = [k for k in PROCESS_FIELDS if getattr(req, _ATTRS[k]) is not None]
    if not given:
        return
    kind = next(iter(spec.target))
    for k in given:
        if kind != "command" and not (k == "env" and kind == "queue"):
            allowed = "command and queue targets" if k == "env" else "command targets"
            raise bad(k, f"{k} applies to {allowed} only, not to a {kind} target")
    if req.env is not None:
        spec.env = _parse_env(req.env)
    if req.run_as is not None:
        spec.run_as = model.RunAs(req.run_as.user, req.run_as.group)
    if req.shell is not None:
        shell = as_text("shell", req.shell)
        if len(shell.encode()) > MAX_SHELL_BYTES or shell != shell.strip():
            raise bad("shell", f"shell must be an absolute path (e.g. /bin/bash) of at most {MAX_SHELL_BYTES} bytes, without NUL or surrounding spaces, not {shell[:100]!r}")
        spec.shell = shell
    if req.stdin is not None:
        stdin = as_text("stdin", req.stdin)
        if len(stdin.encode()) > MAX_STDIN_BYTES:
            raise bad("stdin", f"stdin is {len(stdin.encode())} bytes; the limit is {MAX_STDIN_BYTES} bytes", status=413, code="payload_too_large")
        spec.stdin = stdin


#: the struct's attribute of each process member
_ATTRS = {"env": "env", "runAs": "run_as", "shell": "shell", "stdin": "stdin"}


def _parse_env(raw: dict[str, str]) -> dict[str, str]:
    if len(raw) > MAX_ENV_VARS:
        raise bad("env", f"env may hold at most {MAX_ENV_VARS} variables, not {len(raw)}")
    env: dict[str, str] = {}
    size = 0
    for name, v in raw.items():
        where = f"env.{name[:MAX_ENV_NAME_CHARS]}"
        if len(name) > MAX_ENV_NAME_CHARS or not _ENV_NAME_RE.fullmatch(name):
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
