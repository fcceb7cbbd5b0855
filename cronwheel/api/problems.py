"""Every error leaves as an ``application/problem+json`` document (RFC 9457) ``{type, title,
status, detail, code, field?, reason?}``: a handler's ``Problem``, a ``ValidationError``, the
service's domain errors (one table maps each to its HTTP status), aiohttp's own 404/405/413,
and an unexpected exception, which is logged with its traceback and answered with a bare 500
that carries an ``errorId`` to find it in the log, never the traceback itself. The boundary
checks of what is not a body (path, query, headers) run here, before any handler."""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote_to_bytes

from aiohttp import web

from cronwheel.api.appkeys import EVENTS, QUERY_PARAMETERS
from cronwheel.api.auth import CHALLENGE, CHALLENGE_INVALID
from cronwheel.api.clients import client_of
from cronwheel.api.fields import ValidationError
from cronwheel.core.ids import new_error_id
from cronwheel.core.limits import MAX_BODY_BYTES, text_problem
from cronwheel.core.quota import retry_after_header
from cronwheel.core.ratelimit import OncePer
from cronwheel.engine.service import (
    Conflict,
    Forbidden,
    InternalError,
    NotFound,
    ServiceError,
    TooManyRequests,
    Unauthorized,
    Unavailable,
    Unprocessable,
)
from cronwheel.obs.events import EventLog
from cronwheel.store.base import StoreUnavailable

log = logging.getLogger("cronwheel.api")

PROBLEM_JSON = "application/problem+json"

_CODE_BY_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "quota_exceeded",
    500: "internal_error",
    503: "unavailable",
}


class Problem(Exception):
    """Raised by a handler to answer with a problem document."""

    def __init__(self, status: int, code: str, detail: str, *, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers
        self.extra = extra


#: a problem's detail is cut past this many characters: the messages are a line or two, but
#: some quote what they were given (a 404's id, up to the 8 KiB of a request line)
DETAIL_CHARS = 1000


def problem_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> web.Response:
    if len(detail) > DETAIL_CHARS:
        detail = f"{detail[: DETAIL_CHARS - 40]}… ({len(detail) - DETAIL_CHARS + 40} more characters)"
    body: dict[str, Any] = {
        "type": f"urn:cronwheel:problem:{code}",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    body.update((k, val) for k, val in extra.items() if val is not None and k not in body)
    return web.Response(
        status=status,
        text=json.dumps(body, default=str),
        content_type=PROBLEM_JSON,
        headers=headers,
    )


# ---------------------------------------------------------------- middleware

#: the HTTP status of each domain error the service raises (most specific class first)
STATUS_BY_ERROR: tuple[tuple[type[ServiceError], int], ...] = (
    (NotFound, 404), (Conflict, 409), (Unprocessable, 422), (Unauthorized, 401), (Forbidden, 403),
    (TooManyRequests, 429), (Unavailable, 503), (InternalError, 500), (ServiceError, 400),
)


def service_error_response(e: ServiceError) -> web.Response:
    status = next(code for cls, code in STATUS_BY_ERROR if isinstance(e, cls))
    headers: dict[str, str] = {}
    if e.retry_after_sec is not None:
        headers["Retry-After"] = retry_after_header(e.retry_after_sec)
    if isinstance(e, Unauthorized):
        headers["WWW-Authenticate"] = CHALLENGE_INVALID if e.presented else CHALLENGE
    return problem_response(status, e.code, str(e), headers=headers or None, **e.extra)


@web.middleware
async def answer_problems(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    try:
        length = request.content_length
        if length is not None and length > MAX_BODY_BYTES:
            return _too_large(length)
        _check_request_text(request)
        return await handler(request)
    except Problem as p:
        return problem_response(p.status, p.code, p.detail, headers=p.headers, **p.extra)
    except ValidationError as e:
        return problem_response(e.status, e.code, e.detail, field=e.field)
    except ServiceError as e:
        return service_error_response(e)
    except StoreUnavailable as e:  # the engine makes most of these Unavailable; a completion's group commit (Dispatcher.finish) lets it through
        return problem_response(503, "unavailable", f"the store is unavailable, retry in a moment: {e}", headers={"Retry-After": "1"})
    except web.HTTPException as e:
        if e.status < 400:
            raise
        if e.status == 413:
            return _too_large(None)
        headers = {"Allow": e.headers["Allow"]} if "Allow" in e.headers else None
        detail = _http_detail(request, e)
        return problem_response(e.status, _CODE_BY_STATUS.get(e.status, "http_error"), detail, headers=headers)
    except Exception as exc:
        error_id = report_internal_error(request, exc)
        return problem_response(500, "internal_error", f"internal error (errorId {error_id}, see the daemon log)", errorId=error_id)


#: a traceback per kind of internal error (exception type and where it was raised) at most
#: this often; the other occurrences log their one line without it
TRACEBACK_EVERY_SEC = 60.0
_tracebacks = OncePer(TRACEBACK_EVERY_SEC)


def report_internal_error(request: web.Request, exc: Exception) -> str:
    """One structured line per internal error, carrying a new id for its caller (returned); the
    traceback only for the first of its kind in a while (a flood stays one line each)."""
    error_id = new_error_id()
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    with_traceback = _tracebacks.allow((type(exc).__name__, where), time.monotonic())
    fields: dict[str, Any] = {
        "errorId": error_id, "method": request.method, "path": _printable(request.path),
        "error": type(exc).__name__, "detail": _printable(str(exc))[:300], "where": where,
        "remote": client_of(request).address,
    }
    if with_traceback:
        fields["traceback"] = "".join(traceback.format_exception(exc))[-4000:]
        fields["sameErrorsWithoutTraceback"] = _tracebacks.suppressed or None
    events = request.app.get(EVENTS)
    if isinstance(events, EventLog):
        events.emit("api.internal_error", **fields)
    else:  # an app built without an event log (tests with a fake service)
        log.error("api.internal_error %s", json.dumps(fields, default=str))
    return error_id


#: headers whose meaning a second copy would make ambiguous (who asks, what is deduplicated)
_ONCE_ONLY_HEADERS = ("Authorization", "Idempotency-Key", "Content-Type", "Content-Encoding")


def _check_request_text(request: web.Request) -> None:
    """The boundary for what is not a body: the path, query parameters and header values are
    valid Unicode without NUL (aiohttp decodes undecodable bytes to lone surrogates), whatever
    the route does with them."""
    why = text_problem(request.path)
    if why is not None:
        raise Problem(400, "invalid_path", f"the request path contains {why}")
    raw_query = request.rel_url.raw_query_string
    if "%" in raw_query:  # the parsed query replaced bytes that are not UTF-8 with U+FFFD: look at them
        for piece in raw_query.replace("=", "&").split("&"):
            try:
                unquote_to_bytes(piece).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise Problem(400, "invalid_query", f"the query string is not UTF-8 once percent-decoded: "
                              f"{_printable(piece)!r} (byte {exc.start})") from None
    for name, value in request.query.items():
        why = text_problem(name) or text_problem(value)
        if why is not None:
            raise Problem(400, "invalid_query", f"the query parameter {_printable(name)!r} contains {why}", field=_printable(name))
    for name, value in request.headers.items():
        why = text_problem(value)
        if why is not None:
            raise Problem(400, "invalid_header", f"the {_printable(name)} header contains {why}", field=_printable(name))
    for name in _ONCE_ONLY_HEADERS:  # which of two would count is anybody's guess: neither does
        given = len(request.headers.getall(name, ()))
        if given > 1:
            raise Problem(400, "invalid_header", f"the {name} header is given {given} times: give it once", field=name)


@web.middleware
async def refuse_unknown_query(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """A /v1/ route takes the query parameters its OpenAPI operation lists, each once: a typo
    (``limt=5``) or a second copy (which would count is anybody's guess) is refused, not
    silently ignored. After ``authorize``: a caller without the credentials gets 401 or 403
    first, so a route's parameters are no way to map the API. The probes and the dashboard's
    pages (``/healthz``, ``/metrics``, ``/``) stay lenient: monitors and browsers add what they
    like."""
    if request.query and request.path.startswith("/v1/"):
        _check_query_names(request)
    return await handler(request)


def _check_query_names(request: web.Request) -> None:
    route = request.match_info.route
    info = route.resource.canonical if route.resource is not None else None
    method = "GET" if request.method == "HEAD" else request.method  # a HEAD is its GET's
    takes = request.app.get(QUERY_PARAMETERS, {}).get((method, info or ""))
    if takes is None:  # OPTIONS, or no such route: the router answers
        return
    for name in dict.fromkeys(request.query):
        if name not in takes:
            listed = ", ".join(sorted(takes)) if takes else "no query parameters"
            raise Problem(400, "invalid_query", f"unknown query parameter {_printable(name)!r}: "
                          f"{method} {info} takes {listed}", field=_printable(name))
        given = len(request.query.getall(name))
        if given > 1:
            raise Problem(400, "invalid_query", f"the query parameter {name!r} is given {given} times: give it once",
                          field=name)


def _printable(text: str) -> str:
    """``text`` with lone surrogates written as escapes, fit for a log line or a JSON answer."""
    return text[:100].encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def _too_large(length: int | None) -> web.Response:
    got = f" (got {length} bytes)" if length is not None else ""
    return problem_response(413, "payload_too_large", f"the request body is larger than {MAX_BODY_BYTES} bytes{got}")


def _http_detail(request: web.Request, e: web.HTTPException) -> str:
    if e.status == 404:
        return f"no route for {request.path}"
    if e.status == 405:
        return f"{request.method} is not allowed on {request.path} (allowed: {e.headers.get('Allow', '')})"
    return e.text or HTTPStatus(e.status).phrase
