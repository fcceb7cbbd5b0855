"""The HTTP API: routes, JSON bodies and problem responses around a ``SchedulerService``.

This is the only module that knows HTTP. Every error leaves as an
``application/problem+json`` document (RFC 9457) ``{type, title, status, detail, code,
field?, reason?}``; an unexpected exception is logged with its traceback and answered with a
bare 500 that carries an ``errorId`` to find it in the log, never the traceback itself.

Tenancy has one seam: ``tenant_resolver(request)``, answering a ``core.tenants.Principal``
(or a tenant name, or None = admin, sees every tenant); without one every caller is admin and
jobs go to the default tenant. The daemon's resolver is ``api.auth.Authenticator`` (bearer
tokens over TCP, peer uid on the Unix socket). ``ACCESS`` says which roles may call each
route; another tenant's objects answer 404, never 403, so ids do not leak.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import enum
import inspect
import json
import logging
import os
import time
import traceback
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from cronwheel.api import beyondcron as bc
from cronwheel.api import dashboard, ops, routing
from cronwheel.api import notifying as nv
from cronwheel.api import tenancy as tv
from cronwheel.api import validation as v
from cronwheel.api.auth import CHALLENGE, CHALLENGE_INVALID
from cronwheel.core.ids import new_error_id
from cronwheel.core.limits import BODY_TIMEOUT_SEC, MAX_BODY_BYTES, json_problem, text_problem
from cronwheel.core.model import DEFAULT_TENANT, Job, JobSpec
from cronwheel.core.notify import no_mail_warnings, rules_refusal
from cronwheel.core.quota import retry_after_header
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.records import CreateOutcome, CreateResult, EffectVerdict, LeaseVerdict
from cronwheel.core.tenants import ADMIN, Principal, Role, target_refusal, valid_tenant_name
from cronwheel.engine.service import (
    Conflict,
    Forbidden,
    InternalError,
    NotFound,
    SchedulerService,
    ServiceError,
    TooManyRequests,
    Unauthorized,
    Unavailable,
    Unprocessable,
)
from cronwheel.obs.events import EventLog, iso_ms
from cronwheel.store.base import StoreUnavailable
from cronwheel.worker.launch import run_as_refusal

log = logging.getLogger("cronwheel.api")

PROBLEM_JSON = "application/problem+json"
OPENAPI_PATH = Path(__file__).with_name("openapi.json")

TenantResolver = Callable[[web.Request], "Principal | str | Awaitable[Principal | str | None] | None"]

SERVICE = web.AppKey("cronwheel.service", SchedulerService)
TENANT_RESOLVER = web.AppKey("cronwheel.tenant_resolver", object)
OPENAPI_DOC = web.AppKey("cronwheel.openapi", bytes)
#: ``ACCESS`` plus the app's own OPTIONS handlers (one per path)
ROUTE_ACCESS = web.AppKey("cronwheel.route_access", dict)
#: whether this node can send email (None: not known, so nothing is said about it)
MAIL_TRANSPORT = web.AppKey("cronwheel.mail_transport", object)

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


def problem_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> web.Response:
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


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=json.dumps(data, default=str), content_type="application/json", headers=headers)


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
async def _problems(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    try:
        length = request.content_length
        if length is not None and length > MAX_BODY_BYTES:
            return _too_large(length)
        _check_request_text(request)
        return await handler(request)
    except Problem as p:
        return problem_response(p.status, p.code, p.detail, headers=p.headers, **p.extra)
    except v.ValidationError as e:
        return problem_response(e.status, e.code, e.detail, field=e.field)
    except ServiceError as e:
        return service_error_response(e)
    except StoreUnavailable as e:
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
        error_id = new_error_id()
        _report_internal_error(request, error_id, exc)
        return problem_response(500, "internal_error", f"internal error (errorId {error_id}, see the daemon log)", errorId=error_id)


#: a traceback per kind of internal error (exception type and where it was raised) at most
#: this often; the other occurrences log their one line without it
TRACEBACK_EVERY_SEC = 60.0
_tracebacks = OncePer(TRACEBACK_EVERY_SEC)


def _report_internal_error(request: web.Request, error_id: str, exc: Exception) -> None:
    """One structured line per internal error, carrying the id its caller was given; the
    traceback only for the first of its kind in a while (a flood stays one line each)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    with_traceback = _tracebacks.allow((type(exc).__name__, where), time.monotonic())
    fields: dict[str, Any] = {
        "errorId": error_id, "method": request.method, "path": _printable(request.path),
        "error": type(exc).__name__, "detail": _printable(str(exc))[:300], "where": where,
    }
    if with_traceback:
        fields["traceback"] = "".join(traceback.format_exception(exc))[-4000:]
        fields["sameErrorsWithoutTraceback"] = _tracebacks.suppressed or None
    events = request.app.get(ops.EVENTS)
    if isinstance(events, EventLog):
        events.emit("api.internal_error", **fields)
    else:  # an app built without an event log (tests with a fake service)
        log.error("api.internal_error %s", json.dumps(fields, default=str))


def _check_request_text(request: web.Request) -> None:
    """The boundary for what is not a body: the path, query parameters and header values are
    valid Unicode without NUL (aiohttp decodes undecodable bytes to lone surrogates), whatever
    the route does with them."""
    why = text_problem(request.path)
    if why is not None:
        raise Problem(400, "invalid_path", f"the request path contains {why}")
    for name, value in request.query.items():
        why = text_problem(name) or text_problem(value)
        if why is not None:
            raise Problem(400, "invalid_query", f"the query parameter {_printable(name)!r} contains {why}", field=_printable(name))
    for name, value in request.headers.items():
        why = text_problem(value)
        if why is not None:
            raise Problem(400, "invalid_header", f"the {_printable(name)} header contains {why}", field=_printable(name))


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


# ---------------------------------------------------------------- helpers


_PRINCIPAL = web.RequestKey("cronwheel.principal", Principal)  # resolved once per request


async def _principal(request: web.Request) -> Principal:
    """Who is calling (resolved once per request; Unauthorized/Forbidden from the resolver)."""
    cached = request.get(_PRINCIPAL)
    if isinstance(cached, Principal):
        return cached
    resolver = request.app[TENANT_RESOLVER]
    result: Any = None if resolver is None else resolver(request)  # type: ignore[operator]
    if inspect.isawaitable(result):
        result = await result
    if result is None:
        principal = ADMIN
    elif isinstance(result, Principal):
        principal = result
    elif isinstance(result, str):
        principal = Principal(Role.TENANT, result)
    else:
        raise TypeError(f"tenant_resolver returned {type(result).__name__}, not Principal | str | None")
    request[_PRINCIPAL] = principal
    return principal


async def _tenant(request: web.Request) -> str | None:
    """The tenant a request is scoped to; None for admins (every tenant)."""
    principal = await _principal(request)
    return None if principal.is_admin else principal.tenant


async def _own_execution(request: web.Request, execution_id: str) -> None:
    """A non-admin may only touch its own tenant's executions: another's reads as absent."""
    tenant = await _tenant(request)
    if tenant is not None and await _service(request).get_execution(execution_id, tenant) is None:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


async def _body(request: web.Request, *, optional: bool = False) -> Any:
    """The request's JSON body. ``optional``: an empty body reads as None."""
    if not request.body_exists:
        if optional:
            return None
        raise Problem(400, "missing_body", "this request needs a JSON body (Content-Type: application/json)")
    ctype = request.content_type
    try:
        raw = await asyncio.wait_for(request.read(), BODY_TIMEOUT_SEC)
    except TimeoutError:
        raise Problem(408, "request_timeout", f"the request body did not arrive within {BODY_TIMEOUT_SEC:g} seconds",
                      headers={"Connection": "close"}) from None
    if optional and not raw.strip():
        return None
    if ctype != "application/json" and not ctype.endswith("+json"):
        raise Problem(415, "unsupported_media_type", f"the body must be JSON sent as Content-Type: application/json, not {ctype!r}")
    charset = request.charset
    if charset and charset.lower() not in ("utf-8", "utf8"):
        raise Problem(415, "unsupported_media_type", f"JSON must be UTF-8, not {charset!r}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Problem(400, "malformed_json", f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise Problem(400, "malformed_json", f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise Problem(400, "malformed_json", f"malformed JSON: {exc}") from None
    except RecursionError:
        raise Problem(400, "malformed_json", "the JSON body is nested too deeply") from None
    # the boundary for bodies: nothing past here meets a lone surrogate, a NUL, a NaN, an
    # integer no store can hold, or nesting a worker frame would refuse
    bad = json_problem(value)
    if bad is not None:
        status, code = (400, "invalid_value") if bad.malformed else (422, "out_of_range")
        raise Problem(status, code, f"{bad.path or 'the body'} {bad.why}", field=bad.path or None)
    return value


def _service(request: web.Request) -> SchedulerService:
    return request.app[SERVICE]


def _page(items: list[Any], limit: int, cursor: Callable[[Any], str]) -> tuple[list[Any], str | None]:
    """Cut a ``limit + 1`` fetch to ``limit`` items and the cursor of the next page."""
    if len(items) > limit:
        items = items[:limit]
        return items, cursor(items[-1])
    return items, None


def _lease_conflict(verdict: LeaseVerdict, execution_id: str) -> Problem:
    if verdict is LeaseVerdict.NOT_FOUND:
        return Problem(404, "not_found", f"no execution {execution_id!r}")
    if verdict is LeaseVerdict.CANCELLED:
        return Problem(409, "lease_conflict", f"execution {execution_id!r} was cancelled: abort it now", reason="cancelled")
    return Problem(409, "lease_conflict", f"the lease on {execution_id!r} is lost (another leaseEpoch holds it, or it is no longer running): abort now", reason="lease_lost")


# ---------------------------------------------------------------- jobs


async def create_job(request: web.Request) -> web.Response:
    key = v.parse_idempotency_key(request.headers.get("Idempotency-Key"))
    tenant = await _tenant(request)
    body = await _body(request)
    service = _service(request)
    spec = v.parse_job_body(body, now_ms=service.now_ms(), tenant=tenant or DEFAULT_TENANT)
    principal = await _principal(request)
    refusal = target_refusal(spec.target, principal) or rules_refusal(spec.notify, principal)
    if refusal is not None:
        raise Problem(403, refusal.code, refusal.detail, field=refusal.field)
    _check_run_as(spec)
    result = await service.create_job(spec, key, v.request_hash(body) if key is not None else None)
    if result.outcome is CreateOutcome.CONFLICT:
        raise Problem(
            422, "idempotency_key_reused",
            f"Idempotency-Key {key!r} was already used with a different request body; use a new key for a new job",
            field="Idempotency-Key", jobId=result.job_id,
        )
    headers = {"Location": f"/v1/jobs/{result.job_id}"}
    if result.outcome is CreateOutcome.REPLAYED:
        headers["Idempotent-Replayed"] = "true"
    answer: dict[str, Any] = {"jobId": result.job_id, "nextRunAt": iso_ms(result.next_run_at)}
    warnings = _mail_warnings(request, spec)
    if warnings:
        answer["warnings"] = warnings
    return _json(answer, 201, headers)


def _mail_warnings(request: web.Request, spec: JobSpec, field: str = "notify") -> list[str]:
    """What an accepted job should know: its email rules cannot be sent by this node (the rule
    is kept, not refused: mail may be configured later, or on another node)."""
    if request.app.get(MAIL_TRANSPORT) is not False:
        return []
    return no_mail_warnings(spec.notify, field)


async def create_jobs(request: web.Request) -> web.Response:
    """``POST /v1/jobs/batch``: up to MAX_BATCH_JOBS jobs in one request and one commit.
    Validated all or nothing (the first bad job refuses the batch, named by its index); then
    one result per job, in order, each with the status a single ``POST /v1/jobs`` would have
    answered (201 created, 200 replayed, 422 key reused, 429 over maxJobs)."""
    tenant = await _tenant(request)
    body = await _body(request)
    service = _service(request)
    items = v.parse_job_batch(body, now_ms=service.now_ms(), tenant=tenant or DEFAULT_TENANT)
    principal = await _principal(request)
    for i, (spec, _, _) in enumerate(items):
        refusal = target_refusal(spec.target, principal) or rules_refusal(spec.notify, principal)
        if refusal is not None:
            raise Problem(403, refusal.code, f"jobs[{i}]: {refusal.detail}", field=f"jobs[{i}].{refusal.field}")
        _check_run_as(spec, f"jobs[{i}]")
    results = await service.create_jobs(items)
    answer: dict[str, Any] = {"results": [_batch_result(i, r) for i, r in enumerate(results)]}
    warnings = [w for i, (spec, _, _) in enumerate(items) for w in _mail_warnings(request, spec, f"jobs[{i}].notify")]
    if warnings:
        answer["warnings"] = warnings
    return _json(answer)


def _check_run_as(spec: JobSpec, where: str = "") -> None:
    """A job's runAs is honoured by this node's workers, which run as the daemon's user: refused
    now unless that is root and the account exists, rather than failing at every run."""
    if spec.run_as is None:
        return
    why = run_as_refusal(spec.run_as.user, spec.run_as.group, os.geteuid())
    if why is not None:
        prefix = f"{where}." if where else ""
        raise Problem(422, "run_as_refused", f"{where}: {why}" if where else why, field=f"{prefix}runAs")


def _batch_result(index: int, result: CreateResult) -> dict[str, Any]:
    if result.outcome is CreateOutcome.CREATED:
        return {"index": index, "status": 201, "jobId": result.job_id, "nextRunAt": iso_ms(result.next_run_at)}
    if result.outcome is CreateOutcome.REPLAYED:
        return {"index": index, "status": 200, "jobId": result.job_id, "nextRunAt": iso_ms(result.next_run_at), "replayed": True}
    if result.outcome is CreateOutcome.NAME_TAKEN:
        return {"index": index, "status": 409, "code": "name_taken", "jobId": result.job_id,
                "detail": f"another live job of the tenant ({result.job_id}) has this name; names are unique per tenant"}
    if result.outcome is CreateOutcome.CONFLICT:
        return {"index": index, "status": 422, "code": "idempotency_key_reused", "jobId": result.job_id,
                "detail": "this idempotencyKey was already used with a different job; use a new key for a new job"}
    if result.outcome is CreateOutcome.FAILED:
        return {"index": index, "status": 500, "code": "internal_error", "errorId": result.error_id,
                "detail": f"this job could not be stored, the others were (errorId {result.error_id}, see the daemon log)"}
    return {"index": index, "status": 429, "code": "quota_exceeded",
            "detail": "the tenant has as many registered jobs as its maxJobs allows"}


async def list_jobs(request: web.Request) -> web.Response:
    q = request.query
    status = v.parse_job_status(q.get("status"))
    limit = v.parse_limit(q.get("limit"), 100)
    after = q.get("after") or None
    scope = await _tenant(request)
    wanted = q.get("tenant") or None
    if wanted is not None and not valid_tenant_name(wanted):
        raise Problem(400, "invalid_query", f"tenant must be a tenant name, not {wanted[:70]!r}", field="tenant")
    if wanted is not None and scope is not None and wanted != scope:
        return _json({"jobs": [], "next": None})  # another tenant's jobs read as absent
    name = q.get("name")
    if name is not None and not 0 < len(name) <= v.MAX_NAME_CHARS:
        raise Problem(400, "invalid_query", f"name must be 1 to {v.MAX_NAME_CHARS} characters", field="name")
    if name is not None:  # a lookup by name: the live holder first, never more than one page
        named = await _service(request).jobs_named(name, scope or wanted)
        named = [j for j in named if status is None or j.status is status][:limit]
        return _json({"jobs": await _jobs_json(request, named), "next": None})
    jobs = await _service(request).list_jobs(scope or wanted, status, limit + 1, after)
    page, nxt = _page(jobs, limit, lambda j: j.id)
    return _json({"jobs": await _jobs_json(request, page), "next": nxt})


async def _jobs_json(request: web.Request, jobs: list[Job]) -> list[dict[str, Any]]:
    """Jobs as JSON, each with its ``lastRun`` (one store read for the whole list)."""
    last = await _service(request).last_runs([j.id for j in jobs], await _tenant(request)) if jobs else {}
    return [v.job_to_json(j, last.get(j.id)) for j in jobs]


async def _job_json(request: web.Request, job: Job) -> dict[str, Any]:
    return (await _jobs_json(request, [job]))[0]


async def _job_or_404(request: web.Request) -> Any:
    job_id = request.match_info["jobId"]
    job = await _service(request).get_job(job_id, await _tenant(request))
    if job is None:
        raise Problem(404, "not_found", f"no job {job_id!r}")
    return job


async def get_job(request: web.Request) -> web.Response:
    return _json(await _job_json(request, await _job_or_404(request)))


async def update_job(request: web.Request) -> web.Response:
    """``PATCH /v1/jobs/{jobId}``: a merge patch of the job's definition, validated as a create
    body is (``validation.parse_job_patch``); the job keeps its id and history."""
    job = await _job_or_404(request)
    body = await _body(request)
    service = _service(request)
    spec = v.parse_job_patch(job, body, now_ms=service.now_ms())
    principal = await _principal(request)
    refusal = target_refusal(spec.target, principal)
    if refusal is None and "notify" in body:  # rules kept as they were saved are not judged again
        refusal = rules_refusal(spec.notify, principal)
    if refusal is not None:
        raise Problem(403, refusal.code, refusal.detail, field=refusal.field)
    if spec.run_as != job.spec.run_as:  # a patch of other members keeps a runAs as it stands
        _check_run_as(spec)
    answer = await _job_json(request, await service.update_job(job.id, spec, await _tenant(request)))
    warnings = _mail_warnings(request, spec) if "notify" in body else []
    if warnings:
        answer = {**answer, "warnings": warnings}
    return _json(answer)


async def cancel_job(request: web.Request) -> web.Response:
    job = await _service(request).cancel_job(request.match_info["jobId"], await _tenant(request))
    return _json(await _job_json(request, job))


async def pause_job(request: web.Request) -> web.Response:
    await _body(request, optional=True)
    job = await _service(request).pause_job(request.match_info["jobId"], await _tenant(request))
    return _json(await _job_json(request, job))


async def resume_job(request: web.Request) -> web.Response:
    await _body(request, optional=True)
    job = await _service(request).resume_job(request.match_info["jobId"], await _tenant(request))
    return _json(await _job_json(request, job))


async def trigger_job(request: web.Request) -> web.Response:
    await _body(request, optional=True)
    ex = await _service(request).trigger_job(request.match_info["jobId"], await _tenant(request))
    return _json(v.execution_to_json(ex), 202, {"Location": f"/v1/executions/{ex.execution_id}"})


async def ping_job(request: web.Request) -> web.Response:
    """A run elsewhere reports on a job: start, success (the default) or fail."""
    kind, exit_code, output = nv.parse_ping(await _body(request, optional=True))
    job, ex = await _service(request).ping(request.match_info["jobId"], kind, exit_code, output, await _tenant(request))
    data: dict[str, Any] = {"jobId": job.id, "status": kind, "execution": None if ex is None else v.execution_to_json(ex)}
    return _json(data)


# ---------------------------------------------------------------- notifications


async def list_notifications(request: web.Request) -> web.Response:
    q = request.query
    limit = v.parse_limit(q.get("limit"), 100)
    status = nv.parse_notification_status(q.get("status"))
    job_id = q.get("jobId") or None
    if job_id is not None and len(job_id) > 200:
        raise Problem(400, "invalid_query", "jobId must be a job id", field="jobId")
    found = await _service(request).list_notifications(
        await _tenant(request), job_id, status, limit + 1, nv.parse_before(q.get("before"))
    )
    page, nxt = _page(found, limit, nv.cursor_of)
    return _json({"notifications": [nv.notification_to_json(n) for n in page], "next": nxt})


async def replay_notification(request: web.Request) -> web.Response:
    await _body(request, optional=True)
    n = await _service(request).replay_notification(request.match_info["notificationId"], await _tenant(request))
    return _json(nv.notification_to_json(n))


async def purge_notification(request: web.Request) -> web.Response:
    notification_id = request.match_info["notificationId"]
    await _service(request).purge_notification(notification_id, await _tenant(request))
    return _json({"notificationId": notification_id, "purged": True})


async def get_tenant_notify(request: web.Request) -> web.Response:
    rules = await _service(request).tenant_notify(request.match_info["name"])
    return _json({"tenant": request.match_info["name"], "notify": [r.to_json(redact=True) for r in rules]})


async def set_tenant_notify(request: web.Request) -> web.Response:
    rules = nv.parse_rules_body(await _body(request))
    name = request.match_info["name"]
    await _service(request).set_tenant_notify(name, rules)
    return _json({"tenant": name, "notify": [r.to_json(redact=True) for r in rules]})


async def backfill_job(request: web.Request) -> web.Response:
    service = _service(request)
    start, end, dry = bc.parse_backfill_body(await _body(request))
    result = await service.backfill(request.match_info["jobId"], start, end, dry, await _tenant(request))
    return _json(result, 200 if dry else 202)


async def cancel_backfill(request: web.Request) -> web.Response:
    n = await _service(request).cancel_backfill(request.match_info["jobId"], await _tenant(request))
    return _json({"jobId": request.match_info["jobId"], "cancelled": n})


async def set_chain(request: web.Request) -> web.Response:
    on_success, on_failure = bc.parse_chain_body(await _body(request))
    job = await _service(request).set_chain(request.match_info["jobId"], on_success, on_failure, await _tenant(request))
    return _json(v.job_to_json(job))


async def upcoming(request: web.Request) -> web.Response:
    service = _service(request)
    count, after = bc.parse_upcoming_query(request.query.get("count"), request.query.get("from"), service.now_ms())
    return _json(await service.upcoming(request.match_info["jobId"], count, after, await _tenant(request)))


# ---------------------------------------------------------------- calendars


async def _calendar_tenant(request: web.Request) -> str:
    """A tenant token's own tenant; an admin's ``?tenant=`` (default: the default tenant)."""
    tenant = await _tenant(request)
    if tenant is not None:
        return tenant
    asked = request.query.get("tenant")
    if asked is not None and not valid_tenant_name(asked):
        raise Problem(400, "invalid_field", f"tenant: {asked[:80]!r} is not a tenant name", field="tenant")
    return asked or DEFAULT_TENANT


async def list_calendars(request: web.Request) -> web.Response:
    tenant = await _tenant(request)
    if tenant is None and "tenant" in request.query:
        tenant = await _calendar_tenant(request)
    cals = await _service(request).list_calendars(tenant)
    return _json({"calendars": [bc.calendar_to_json(c) for c in cals]})


async def get_calendar(request: web.Request) -> web.Response:
    name = bc.check_calendar_name(request.match_info["name"])
    return _json(bc.calendar_to_json(await _service(request).get_calendar(name, await _calendar_tenant(request))))


async def put_calendar(request: web.Request) -> web.Response:
    name = bc.check_calendar_name(request.match_info["name"], creating=True)
    cal = bc.parse_calendar_body(name, await _body(request), await _calendar_tenant(request))
    return _json(bc.calendar_to_json(await _service(request).put_calendar(cal)))


async def delete_calendar(request: web.Request) -> web.Response:
    name = bc.check_calendar_name(request.match_info["name"])
    await _service(request).delete_calendar(name, await _calendar_tenant(request))
    return web.Response(status=204)


# ---------------------------------------------------------------- executions


async def list_executions(request: web.Request) -> web.Response:
    limit = v.parse_limit(request.query.get("limit"), 50)
    before = v.parse_ms_cursor("before", request.query.get("before"))
    executions = await _service(request).list_executions(
        request.match_info["jobId"], limit + 1, before, await _tenant(request)
    )
    page, nxt = _page(executions, limit, lambda e: str(e.scheduled_at))
    return _json({"executions": [v.execution_to_json(e) for e in page], "next": nxt})


async def get_execution(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    ex = await _service(request).get_execution(execution_id, await _tenant(request))
    if ex is None:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")
    return _json(v.execution_to_json(ex, with_output=True))


#: a follower with nothing new for this long looks again at the execution in the store
OUTPUT_IDLE_CHECK_SEC = 1.0


async def execution_output(request: web.Request) -> web.StreamResponse:
    """``GET /v1/executions/{id}/output[?follow=1]``: an execution's output as text. While it
    runs on this node: what it printed so far (a bounded tail), and with ``follow`` every new
    chunk as the worker forwards it, until this attempt ends. Otherwise its stored output (the
    tail its last attempt ended with); ``follow`` on one not yet started waits for it."""
    execution_id = request.match_info["executionId"]
    service = _service(request)
    tenant = await _tenant(request)
    follow = ops.parse_flag("follow", request.query.get("follow"))
    ex = await service.get_execution(execution_id, tenant)
    if ex is None:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")
    tail = service.live_output(execution_id)
    follower = service.follow_output(execution_id) if follow else None  # no await since the tail: no gap
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    resp = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store",
                                       "X-Content-Type-Options": "nosniff", "X-Accel-Buffering": "no"})
    shown = tail is not None  # some of its output was written live
    try:
        await resp.prepare(request)
        if tail is not None:
            await resp.write(decode(tail).encode())
        elif follower is None or ex.status.terminal:
            await resp.write((ex.output or "").encode())
            follower = None
        while follower is not None:
            data = await follower.next(OUTPUT_IDLE_CHECK_SEC)
            if data:
                shown = True
                await resp.write(decode(data).encode())
                continue
            if follower.ended:
                break
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            if service.live_output(execution_id) is None:  # it runs elsewhere, or not yet
                ex = await service.get_execution(execution_id, tenant)
                if ex is None or ex.status.terminal:  # it ran on another node: what it stored
                    await resp.write(b"" if shown or ex is None else (ex.output or "").encode())
                    break
        await resp.write(decode(b"", final=True).encode())
        with contextlib.suppress(ConnectionError):
            await resp.write_eof()
    except ConnectionError:
        pass
    finally:
        if follower is not None:
            follower.close()
    return resp


async def claim(request: web.Request) -> web.Response:
    """A remote worker's long poll for executions of queue targets (tenant-scoped for non-admins)."""
    worker_id, queues, n, wait_sec = v.parse_claim(await _body(request))

    def alive() -> bool:  # the worker hung up (or died): stop taking leases for it
        transport = request.transport
        return transport is not None and not transport.is_closing()

    grants = await _service(request).claim_for_worker(queues, worker_id, n, wait_sec, await _tenant(request), alive)
    return _json({"executions": [v.grant_to_json(g) for g in grants]})


async def heartbeat(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    worker_id, epoch = v.parse_heartbeat(await _body(request))
    await _own_execution(request, execution_id)
    result = await _service(request).heartbeat(execution_id, worker_id, epoch)
    if result.verdict is not LeaseVerdict.OK:
        raise _lease_conflict(result.verdict, execution_id)
    return _json({"extendUntil": iso_ms(result.extend_until), "leaseEpoch": epoch})


async def complete(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    completion = v.parse_completion(execution_id, await _body(request))
    await _own_execution(request, execution_id)
    result = await _service(request).complete(completion)
    if result.verdict is not LeaseVerdict.OK:
        raise _lease_conflict(result.verdict, execution_id)
    return _json({
        "executionId": execution_id,
        "status": result.status.value if result.status is not None else None,
        "availableAt": iso_ms(result.available_at),
    })


async def record_effect(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    _worker_id, epoch, key = v.parse_effect(await _body(request))
    await _own_execution(request, execution_id)
    verdict = await _service(request).record_effect(execution_id, epoch, key)
    if verdict is EffectVerdict.RECORDED:
        return _json({"recorded": True, "duplicate": False, "key": key}, 201)
    if verdict is EffectVerdict.DUPLICATE:
        return _json({"recorded": False, "duplicate": True, "key": key}, 200)
    if verdict is EffectVerdict.NOT_FOUND:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")
    raise Problem(
        409, "fenced",
        f"leaseEpoch {epoch} is not the current lease of {execution_id!r} (or it is no longer running): effect not recorded, abort now",
        reason="fenced",
    )


# ---------------------------------------------------------------- dead-letter queue


async def list_dead(request: web.Request) -> web.Response:
    limit = v.parse_limit(request.query.get("limit"), 100)
    after = request.query.get("after") or None
    dead = await _service(request).list_dead(await _tenant(request), limit + 1, after)
    page, nxt = _page(dead, limit, lambda e: e.execution_id)
    return _json({"executions": [v.execution_to_json(e) for e in page], "next": nxt})


async def replay_dead(request: web.Request) -> web.Response:
    await _body(request, optional=True)
    ex = await _service(request).replay_dead(request.match_info["executionId"], await _tenant(request))
    return _json(v.execution_to_json(ex))


async def purge_dead(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    await _service(request).purge_dead(execution_id, await _tenant(request))
    return _json({"executionId": execution_id, "purged": True})


# ---------------------------------------------------------------- the node


async def status(request: web.Request) -> web.Response:
    return _json(await _service(request).status())


async def herd(request: web.Request) -> web.Response:
    """The coming window's ticks per second (admin: every tenant's jobs; a tenant: its own)."""
    q = request.query
    window = _int_query(q.get("window"), "window", 3600, 60, 86_400)
    top = _int_query(q.get("top"), "top", 10, 1, 100)
    return _json(await _service(request).herd(await _tenant(request), window, top))


def _int_query(value: str | None, name: str, default: int, lo: int, hi: int) -> int:
    if value is None:  # empty is not an integer (like parse_limit)
        return default
    if not (value.isascii() and value.isdigit() and len(value) <= 12) or not lo <= int(value) <= hi:
        raise Problem(400, "invalid_query", f"{name} must be an integer between {lo} and {hi}, not {value[:50]!r}", field=name)
    return int(value)


async def healthz(request: web.Request) -> web.Response:
    return _json({"status": "ok"})


async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=request.app[OPENAPI_DOC], content_type="application/json")


# ---------------------------------------------------------------- tenants and tokens (admin)


async def list_tenants(request: web.Request) -> web.Response:
    service = _service(request)
    tenants = await service.list_tenants()
    live = service.tenant_stats()
    return _json({"tenants": [tv.tenant_to_json(t, live.get(t.name, {})) for t in tenants]})


async def create_tenant(request: web.Request) -> web.Response:
    tenant = await _service(request).create_tenant(tv.parse_tenant_body(await _body(request)))
    return _json(tv.tenant_to_json(tenant), 201, {"Location": f"/v1/tenants/{tenant.name}"})


async def update_tenant(request: web.Request) -> web.Response:
    changes = tv.parse_tenant_patch(await _body(request))
    tenant = await _service(request).update_tenant(request.match_info["name"], changes)
    return _json(tv.tenant_to_json(tenant))


async def create_token(request: web.Request) -> web.Response:
    role, tenant, name = tv.parse_token_body(await _body(request))
    token, secret = await _service(request).create_token(role, tenant, name)
    return _json(tv.token_to_json(token, secret), 201, {"Cache-Control": "no-store"})


async def list_tokens(request: web.Request) -> web.Response:
    tenant = request.query.get("tenant") or None
    if tenant is not None and len(tenant) > 64:
        raise Problem(400, "invalid_query", "tenant must be a tenant name", field="tenant")
    tokens = await _service(request).list_tokens(tenant)
    return _json({"tokens": [tv.token_to_json(t) for t in tokens]})


async def revoke_token(request: web.Request) -> web.Response:
    token_id = request.match_info["tokenId"]
    if not tv.valid_token_id(token_id):
        raise Problem(404, "not_found", f"no token {token_id[:40]!r}")
    return _json(tv.token_to_json(await _service(request).revoke_token(token_id)))


#: (method, path, handler): the whole API; the OpenAPI document is tested against this table
ROUTES: tuple[tuple[str, str, Callable[[web.Request], Awaitable[web.StreamResponse]]], ...] = (
    ("POST", "/v1/jobs", create_job),
    ("POST", "/v1/jobs/batch", create_jobs),
    ("GET", "/v1/jobs", list_jobs),
    ("GET", "/v1/jobs/{jobId}", get_job),
    ("PATCH", "/v1/jobs/{jobId}", update_job),
    ("DELETE", "/v1/jobs/{jobId}", cancel_job),
    ("POST", "/v1/jobs/{jobId}/pause", pause_job),
    ("POST", "/v1/jobs/{jobId}/resume", resume_job),
    ("POST", "/v1/jobs/{jobId}/trigger", trigger_job),
    ("GET", "/v1/jobs/{jobId}/executions", list_executions),
    ("POST", "/v1/jobs/{jobId}/ping", ping_job),
    ("GET", "/v1/notifications", list_notifications),
    ("POST", "/v1/notifications/{notificationId}/replay", replay_notification),
    ("DELETE", "/v1/notifications/{notificationId}", purge_notification),
    ("POST", "/v1/jobs/{jobId}/backfill", backfill_job),
    ("DELETE", "/v1/jobs/{jobId}/backfill", cancel_backfill),
    ("PUT", "/v1/jobs/{jobId}/chain", set_chain),
    ("GET", "/v1/jobs/{jobId}/upcoming", upcoming),
    ("GET", "/v1/calendars", list_calendars),
    ("GET", "/v1/calendars/{name}", get_calendar),
    ("PUT", "/v1/calendars/{name}", put_calendar),
    ("DELETE", "/v1/calendars/{name}", delete_calendar),
    ("GET", "/v1/executions/{executionId}", get_execution),
    ("GET", "/v1/executions/{executionId}/output", execution_output),
    ("POST", "/v1/workers/claim", claim),
    ("POST", "/v1/executions/{executionId}/heartbeat", heartbeat),
    ("POST", "/v1/executions/{executionId}/complete", complete),
    ("POST", "/v1/executions/{executionId}/effects", record_effect),
    ("GET", "/v1/dlq", list_dead),
    ("POST", "/v1/dlq/{executionId}/replay", replay_dead),
    ("DELETE", "/v1/dlq/{executionId}", purge_dead),
    ("GET", "/v1/status", status),
    ("GET", "/v1/herd", herd),
    ("GET", "/v1/status/activity", ops.activity),
    ("GET", "/healthz", healthz),
    ("GET", "/v1/openapi.json", openapi),
    ("GET", "/v1/events", ops.events),
    ("GET", "/metrics", ops.metrics),
    ("GET", "/v1/tenants", list_tenants),
    ("POST", "/v1/tenants", create_tenant),
    ("PATCH", "/v1/tenants/{name}", update_tenant),
    ("GET", "/v1/tenants/{name}/notify", get_tenant_notify),
    ("PUT", "/v1/tenants/{name}/notify", set_tenant_notify),
    ("POST", "/v1/tokens", create_token),
    ("GET", "/v1/tokens", list_tokens),
    ("DELETE", "/v1/tokens/{tokenId}", revoke_token),
    ("GET", "/", dashboard.index),
    ("GET", "/ui/{asset}", dashboard.asset),
)


class Access(enum.Enum):
    """Who may call a route (see ``ACCESS``)."""

    OPEN = "open"  #: anyone, no credentials (health checks, the dashboard's static files)
    ANY = "any"  #: any authenticated caller
    WORK = "work"  #: worker calls: worker, tenant and admin tokens (own tenant's executions)
    MANAGE = "manage"  #: jobs, executions, DLQ: tenant (its own) and admin tokens
    ADMIN = "admin"  #: the whole node: admin only
    METRICS = "metrics"  #: the Prometheus metrics: admin and metrics tokens


#: a route not listed here is admin-only (a remote workers' claim route belongs to WORK)
ACCESS: dict[Callable[..., Any], Access] = {
    healthz: Access.OPEN,
    ops.metrics: Access.METRICS,
    # the dashboard's page and assets hold no data; its API calls are authenticated as usual
    dashboard.index: Access.OPEN,
    dashboard.asset: Access.OPEN,
    openapi: Access.ANY,
    claim: Access.WORK,
    heartbeat: Access.WORK,
    complete: Access.WORK,
    record_effect: Access.WORK,
    ping_job: Access.WORK,  # a crontab line elsewhere needs no more than a worker token
    **dict.fromkeys(
        (create_job, create_jobs, list_jobs, get_job, update_job, cancel_job, pause_job, resume_job, trigger_job,
         list_executions, get_execution, execution_output, list_dead, replay_dead, purge_dead, herd,
         list_notifications, replay_notification, purge_notification, backfill_job, cancel_backfill, set_chain, upcoming,
         list_calendars, get_calendar, put_calendar, delete_calendar),
        Access.MANAGE,
    ),
}


def _allowed(principal: Principal, access: Access) -> bool:
    if access in (Access.OPEN, Access.ANY) or principal.is_admin:
        return True
    if access is Access.WORK:
        return principal.may_work()
    if access is Access.MANAGE:
        return principal.may_manage()
    if access is Access.METRICS:
        return principal.may_scrape()
    return False


def _refuse_cross_site_writes(request: web.Request) -> None:
    """A browser sends ``Origin`` with every POST/PATCH/DELETE; one from another site is
    refused. Bearer tokens are never sent by a browser on its own, so over TCP this is defence
    in depth; it matters where every caller is admin without a token (the Unix socket, if
    someone forwards it to a TCP port): a web page must not pause or replay through it."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    origin = request.headers.get("Origin")
    if origin is None:
        return  # not a browser (curl, the CLI, workers)
    if origin == "null" or urlsplit(origin).netloc.lower() != request.host.lower():
        raise Problem(403, "cross_origin", f"a {request.method} from the web origin {origin[:100]!r} is refused: "
                      "the API takes writes from its own dashboard and from non-browser clients only")


@web.middleware
async def _authorize(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Authenticate before any handler reads the body, then check the route's ``ACCESS``.
    Unknown paths need credentials too (then 404/405), so probing learns nothing."""
    _refuse_cross_site_writes(request)
    info = request.match_info
    access = Access.ANY if info.http_exception is not None else request.app[ROUTE_ACCESS].get(info.handler, Access.ADMIN)
    if access is not Access.OPEN:
        principal = await _principal(request)
        if not _allowed(principal, access):
            who = f"{principal.role.value} token" + (f" of tenant {principal.tenant!r}" if principal.tenant else "")
            need = {Access.WORK: "a worker, tenant or admin token", Access.MANAGE: "a tenant or admin token",
                    Access.METRICS: "a metrics or admin token"}.get(access, "an admin token")
            raise Problem(403, "forbidden", f"a {who} may not {request.method} {request.path}: that needs {need}")
    return await handler(request)


def make_app(
    service: SchedulerService,
    *,
    tenant_resolver: TenantResolver | None = None,
    metrics: ops.NodeMetrics | None = None,
    events: ops.EventLog | None = None,
    mail_transport: bool | None = None,
) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[_problems, _authorize])
    app[SERVICE] = service
    app[MAIL_TRANSPORT] = mail_transport
    app[TENANT_RESOLVER] = tenant_resolver
    app[OPENAPI_DOC] = OPENAPI_PATH.read_bytes()
    ops.install(app, metrics=metrics, events=events)
    access = app[ROUTE_ACCESS] = dict(ACCESS)
    paths = [path for _, path, _ in ROUTES]
    allow = routing.allowed_methods((method, path) for method, path, _ in ROUTES)
    for path in dict.fromkeys(paths):  # in the table's order: the router tries them in turn
        routed = routing.exclusive_path(path, paths)
        handlers = [(m, h) for m, p, h in ROUTES if p == path]
        for method, handler in handlers:
            app.router.add_route(method, routed, handler)
        options = routing.options_handler(allow[path])
        app.router.add_route("OPTIONS", routed, options)
        # OPTIONS asks for the credentials the path's routes ask for (an open path stays open)
        access[options] = Access.OPEN if all(ACCESS.get(h) is Access.OPEN for _, h in handlers) else Access.ANY
    return app
