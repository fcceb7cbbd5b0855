"""The job routes: create (one or a batch), list, read, patch, cancel, pause, resume, trigger,
ping, and the scheduling beyond cron of one job (backfill, chain, upcoming ticks)."""

from __future__ import annotations

import os
from typing import Any

import msgspec
from aiohttp import web

from cronwheel.api import answers, schema
from cronwheel.api import beyondcron as bc
from cronwheel.api import notifying as nv
from cronwheel.api.context import (
    encode_json,
    json_body,
    json_bytes_response,
    json_response,
    mail_warnings,
    no_body,
    principal_of,
    service_of,
    tenant_of,
)
from cronwheel.api.executions import execution_json
from cronwheel.api.fields import request_hash
from cronwheel.api.jobjson import job_answer
from cronwheel.api.jobpatch import parse_job_patch
from cronwheel.api.problems import Problem
from cronwheel.api.queries import (
    parse_idempotency_key,
    parse_job_cursor,
    parse_job_status,
    parse_limit,
)
from cronwheel.api.validation import parse_job_batch, parse_job_body
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_NAME_CHARS
from cronwheel.core.model import DEFAULT_TENANT, Job, JobSpec, Priority
from cronwheel.core.notify import rules_refusal
from cronwheel.core.records import CreateOutcome, CreateResult
from cronwheel.core.tenants import (
    Principal,
    Refusal,
    effective_priority,
    priority_refusal,
    target_refusal,
    valid_tenant_name,
)
from cronwheel.worker.launch import run_as_refusal


async def create_job(request: web.Request) -> web.Response:
    key = parse_idempotency_key(request.headers.get("Idempotency-Key"))
    tenant = await tenant_of(request)
    body = await json_body(request)
    service = service_of(request)
    spec = parse_job_body(body, now_ms=service.now_ms(), tenant=tenant or DEFAULT_TENANT)
    principal = await principal_of(request)
    refusal = _refusal(spec, principal)
    if refusal is not None:
        raise Problem(403, refusal.code, refusal.detail, field=refusal.field)
    _check_run_as(spec)
    result = await service.create_job(spec, key, request_hash(body) if key is not None else None)
    if result.outcome is CreateOutcome.CONFLICT:
        raise Problem(
            422, "idempotency_key_reused",
            f"Idempotency-Key {key!r} was already used with a different request body; use a new key for a new job",
            field="Idempotency-Key", jobId=result.job_id,
        )
    headers = {"Location": f"/v1/jobs/{result.job_id}"}
    if result.outcome is CreateOutcome.REPLAYED:
        headers["Idempotent-Replayed"] = "true"
    answer = answers.JobCreated(job_id=result.job_id, next_run_at=format_instant(result.next_run_at))  # type: ignore[arg-type]  # set once created
    warnings = mail_warnings(request, spec.notify)
    if warnings:
        answer.warnings = warnings
    return json_response(answer, 201, headers)


async def create_jobs(request: web.Request) -> web.Response:
    """``POST /v1/jobs/batch``: up to MAX_BATCH_JOBS jobs in one request and one commit.
    Validated all or nothing (the first bad job refuses the batch, named by its index); then
    one result per job, in order, each with the status a single ``POST /v1/jobs`` would have
    answered (201 created, 200 replayed, 422 key reused, 429 over maxJobs)."""
    tenant = await tenant_of(request)
    body = await json_body(request)
    service = service_of(request)
    items = parse_job_batch(body, now_ms=service.now_ms(), tenant=tenant or DEFAULT_TENANT)
    principal = await principal_of(request)
    for i, (spec, _, _) in enumerate(items):
        refusal = _refusal(spec, principal)
        if refusal is not None:
            raise Problem(403, refusal.code, f"jobs[{i}]: {refusal.detail}", field=f"jobs[{i}].{refusal.field}")
        _check_run_as(spec, f"jobs[{i}]")
    results = await service.create_jobs(items)
    answer = answers.JobBatchResponse([_batch_result(i, r) for i, r in enumerate(results)])
    warnings = [w for i, (spec, _, _) in enumerate(items) for w in mail_warnings(request, spec.notify, f"jobs[{i}].notify")]
    if warnings:
        answer.warnings = warnings
    return json_response(answer)


def _refusal(spec: JobSpec, principal: Principal) -> Refusal | None:
    """Why ``principal`` may not create this job: its target, its priority or its rules."""
    return (target_refusal(spec.target, principal) or priority_refusal(spec.priority, principal)
            or rules_refusal(spec.notify, principal))


def _check_run_as(spec: JobSpec, where: str = "") -> None:
    """A job's runAs is honoured by this node's workers, which run as the daemon's user: refused
    now unless that is root and the account exists, rather than failing at every run."""
    if spec.run_as is None:
        return
    why = run_as_refusal(spec.run_as.user, spec.run_as.group, os.geteuid())
    if why is not None:
        prefix = f"{where}." if where else ""
        raise Problem(422, "run_as_refused", f"{where}: {why}" if where else why, field=f"{prefix}runAs")


def _batch_result(index: int, result: CreateResult) -> answers.JobBatchItem:
    item = answers.JobBatchItem
    if result.outcome is CreateOutcome.CREATED:
        return item(index=index, status=201, job_id=result.job_id, next_run_at=format_instant(result.next_run_at))  # type: ignore[arg-type]  # set once created
    if result.outcome is CreateOutcome.REPLAYED:
        return item(index=index, status=200, job_id=result.job_id, next_run_at=format_instant(result.next_run_at), replayed=True)  # type: ignore[arg-type]
    if result.outcome is CreateOutcome.NAME_TAKEN:
        return item(index=index, status=409, code="name_taken", job_id=result.job_id,  # type: ignore[arg-type]
                    detail=f"another live job of the tenant ({result.job_id}) has this name; names are unique per tenant")
    if result.outcome is CreateOutcome.CONFLICT:
        return item(index=index, status=422, code="idempotency_key_reused", job_id=result.job_id,  # type: ignore[arg-type]
                    detail="this idempotencyKey was already used with a different job; use a new key for a new job")
    if result.outcome is CreateOutcome.TENANT_DELETING:
        return item(index=index, status=409, code="tenant_deleting", detail="the tenant is being deleted: it takes no new job")
    if result.outcome is CreateOutcome.FAILED:
        return item(index=index, status=500, code="internal_error", error_id=result.error_id,  # type: ignore[arg-type]
                    detail=f"this job could not be stored, the others were (errorId {result.error_id}, see the daemon log)")
    return item(index=index, status=429, code="quota_exceeded", detail="the tenant has as many registered jobs as its maxJobs allows")


async def list_jobs(request: web.Request) -> web.Response:
    q = request.query
    status = parse_job_status(q.get("status"))
    limit = parse_limit(q.get("limit"), 100)
    after = parse_job_cursor(q.get("after"))
    scope = await tenant_of(request)
    wanted = q.get("tenant") or None
    if wanted is not None and not valid_tenant_name(wanted):
        raise Problem(400, "invalid_query", f"tenant must be a tenant name, not {wanted[:70]!r}", field="tenant")
    if wanted is not None and scope is not None and wanted != scope:
        return json_response({"jobs": [], "next": None})  # another tenant's jobs read as absent
    name = q.get("name")
    if name is not None and not 0 < len(name) <= MAX_NAME_CHARS:
        raise Problem(400, "invalid_query", f"name must be 1 to {MAX_NAME_CHARS} characters", field="name")
    if name is not None:  # a lookup by name: the live holder first, never more than one page
        named = await service_of(request).jobs_named(name, scope or wanted)
        named = [j for j in named if status is None or j.status is status][:limit]
        return json_response({"jobs": await _job_answers(request, named), "next": None})
    parts: list[bytes] = []  # each job's answer, encoded
    size, nxt = 0, None
    while len(parts) < limit and nxt is None:
        # as many as the page has room for, judged by the jobs read so far: a page of big jobs
        # holds a few of them in memory at a time, not a thousand
        room = LIST_FIRST_READ if not parts else (LIST_PAGE_BYTES - size) * len(parts) // size + 1
        want = max(1, min(LIST_READ_JOBS, limit - len(parts), room))
        jobs = await service_of(request).list_jobs(scope or wanted, status, want + 1, after)
        chunk, more = jobs[:want], len(jobs) > want
        for job, answer in zip(chunk, await _job_answers(request, chunk), strict=True):
            encoded = encode_json(answer)
            if parts and size + len(encoded) > LIST_PAGE_BYTES:
                nxt = after  # the page ends before this job: the next one starts with it
                break
            parts.append(encoded)
            size += len(encoded)
            after = job.id
        else:
            if not more:
                break
            if len(parts) == limit:
                nxt = after
    return json_bytes_response(b'{"jobs":[' + b",".join(parts) + b'],"next":' + encode_json(nxt) + b"}")


#: a listing's jobs are read from the store at most this many at a time, the first time fewer
LIST_READ_JOBS, LIST_FIRST_READ = 100, 25
#: a page of jobs ends early once its encoded jobs pass this (it holds one at least): a job's
#: answer can be a megabyte (its payload, env, stdin, an HTTP target's headers), and a
#: thousand of them were read, held and encoded at once, on the loop every tenant shares
LIST_PAGE_BYTES = 4 << 20


async def _job_answers(request: web.Request, jobs: list[Job]) -> list[schema.Job]:
    """Jobs' answers, each with its ``lastRun`` (one store read for the whole list), as
    structs: a listing is only encoded, and 1,000 dicts built first cost the event loop about
    a third more (docs/benchmarks.md, "A neighbour's reads")."""
    service = service_of(request)
    last = await service.last_runs([j.id for j in jobs], await tenant_of(request)) if jobs else {}
    out = [job_answer(j, last.get(j.id)) for j in jobs]
    for job, answer in zip(jobs, out, strict=True):
        if job.spec.priority is Priority.HIGH:  # a grant its tenant may not hold (any more)
            tier = effective_priority(job.spec.priority, service.tenant_config(job.spec.tenant))
            if tier is not job.spec.priority:
                answer.effective_priority = tier.label
    return out


async def _job_json(request: web.Request, job: Job) -> dict[str, Any]:
    return msgspec.to_builtins((await _job_answers(request, [job]))[0])  # type: ignore[no-any-return]


async def _job_or_404(request: web.Request) -> Any:
    job_id = request.match_info["jobId"]
    job = await service_of(request).get_job(job_id, await tenant_of(request))
    if job is None:
        raise Problem(404, "not_found", f"no job {job_id!r}")
    return job


async def get_job(request: web.Request) -> web.Response:
    return json_response(await _job_json(request, await _job_or_404(request)))


async def update_job(request: web.Request) -> web.Response:
    """``PATCH /v1/jobs/{jobId}``: a merge patch of the job's definition, validated as a create
    body is (``jobpatch.parse_job_patch``); the job keeps its id and history."""
    job = await _job_or_404(request)
    body = await json_body(request)
    service = service_of(request)
    spec = parse_job_patch(job, body, now_ms=service.now_ms())
    principal = await principal_of(request)
    refusal = target_refusal(spec.target, principal)
    if refusal is None and spec.priority is not job.spec.priority:  # a job left high stays so (queued at default
        refusal = priority_refusal(spec.priority, principal)        # while its tenant lacks the grant)
    if refusal is None and "notify" in body:  # rules kept as they were saved are not judged again
        refusal = rules_refusal(spec.notify, principal)
    if refusal is not None:
        raise Problem(403, refusal.code, refusal.detail, field=refusal.field)
    if spec.run_as != job.spec.run_as:  # a patch of other members keeps a runAs as it stands
        _check_run_as(spec)
    answer = await _job_json(request, await service.update_job(job.id, spec, await tenant_of(request)))
    warnings = mail_warnings(request, spec.notify) if "notify" in body else []
    if warnings:
        answer = {**answer, "warnings": warnings}
    return json_response(answer)


async def cancel_job(request: web.Request) -> web.Response:
    job = await service_of(request).cancel_job(request.match_info["jobId"], await tenant_of(request))
    return json_response(await _job_json(request, job))


async def pause_job(request: web.Request) -> web.Response:
    await no_body(request)
    job = await service_of(request).pause_job(request.match_info["jobId"], await tenant_of(request))
    return json_response(await _job_json(request, job))


async def resume_job(request: web.Request) -> web.Response:
    await no_body(request)
    job = await service_of(request).resume_job(request.match_info["jobId"], await tenant_of(request))
    return json_response(await _job_json(request, job))


async def trigger_job(request: web.Request) -> web.Response:
    await no_body(request)
    ex = await service_of(request).trigger_job(request.match_info["jobId"], await tenant_of(request))
    return json_response(execution_json(request, ex), 202, {"Location": f"/v1/executions/{ex.execution_id}"})


async def ping_job(request: web.Request) -> web.Response:
    """A run elsewhere reports on a job: start, success (the default) or fail."""
    kind, exit_code, output = nv.parse_ping(await json_body(request, optional=True))
    job, ex = await service_of(request).ping(request.match_info["jobId"], kind, exit_code, output, await tenant_of(request))
    execution = None if ex is None else execution_json(request, ex)
    return json_response(answers.PingResponse(job_id=job.id, status=kind, execution=execution))


async def backfill_job(request: web.Request) -> web.Response:
    service = service_of(request)
    start, end, dry = bc.parse_backfill_body(await json_body(request))
    result = await service.backfill(request.match_info["jobId"], start, end, dry, await tenant_of(request))
    return json_response(result, 200 if dry else 202)


async def cancel_backfill(request: web.Request) -> web.Response:
    n = await service_of(request).cancel_backfill(request.match_info["jobId"], await tenant_of(request))
    return json_response(answers.BackfillCancelled(job_id=request.match_info["jobId"], cancelled=n))


async def set_chain(request: web.Request) -> web.Response:
    on_success, on_failure = bc.parse_chain_body(await json_body(request))
    job = await service_of(request).set_chain(request.match_info["jobId"], on_success, on_failure, await tenant_of(request))
    return json_response(await _job_json(request, job))


async def upcoming(request: web.Request) -> web.Response:
    service = service_of(request)
    count, after = bc.parse_upcoming_query(request.query.get("count"), request.query.get("from"), service.now_ms())
    return json_response(await service.upcoming(request.match_info["jobId"], count, after, await tenant_of(request)))
