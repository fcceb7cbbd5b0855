"""A remote worker's routes: claim executions (a long poll), heartbeat, complete and record an
effect, each fenced by the lease it was granted: its epoch, and the worker it was granted to
(another worker, even of the same tenant, gets 409 ``wrong_worker``). A non-admin may only
touch its own tenant's executions."""

from __future__ import annotations

import asyncio

from aiohttp import web

from cronwheel.api import answers
from cronwheel.api.context import CredentialWatch, json_body, json_response, service_of, tenant_of
from cronwheel.api.problems import Problem
from cronwheel.api.workercalls import (
    grant_to_json,
    parse_claim,
    parse_completion,
    parse_effect,
    parse_heartbeat,
)
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_EFFECTS_PER_EXECUTION
from cronwheel.core.records import EffectVerdict, LeaseVerdict


async def _own_execution(request: web.Request, execution_id: str) -> None:
    """A non-admin may only touch its own tenant's executions: another's reads as absent."""
    tenant = await tenant_of(request)
    if tenant is not None and await service_of(request).get_execution(execution_id, tenant) is None:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")


def _wrong_worker(execution_id: str, worker_id: str) -> Problem:
    return Problem(409, "wrong_worker", f"the lease on {execution_id!r} at this leaseEpoch was granted to another worker, "
                   f"not to workerId {worker_id!r}: only the worker that claimed it may heartbeat, complete or record "
                   "effects for it; abort now", reason="wrong_worker")  # fmt: skip


def _lease_conflict(verdict: LeaseVerdict, execution_id: str, worker_id: str) -> Problem:
    if verdict is LeaseVerdict.NOT_FOUND:
        return Problem(404, "not_found", f"no execution {execution_id!r}")
    if verdict is LeaseVerdict.WRONG_WORKER:
        return _wrong_worker(execution_id, worker_id)
    if verdict is LeaseVerdict.CANCELLED:
        return Problem(409, "lease_conflict", f"execution {execution_id!r} was cancelled: abort it now", reason="cancelled")
    return Problem(409, "lease_conflict", f"the lease on {execution_id!r} is lost (another leaseEpoch holds it, or it is no longer running): abort now", reason="lease_lost")


async def claim(request: web.Request) -> web.Response:
    """A remote worker's long poll for executions of queue targets (tenant-scoped for non-admins)."""
    worker_id, queues, n, wait_sec = parse_claim(await json_body(request))

    credential = CredentialWatch(request)

    def alive() -> bool:  # the worker hung up (or died), or its token was revoked: no leases for it
        transport = request.transport
        return transport is not None and not transport.is_closing() and not credential.revoked_now()

    tenant = await tenant_of(request)
    watching = asyncio.get_running_loop().create_task(credential.watch(), name="claim-credential")
    try:
        grants = await service_of(request).claim_for_worker(queues, worker_id, n, wait_sec, tenant, alive)
    finally:
        watching.cancel()
    return json_response({"executions": [grant_to_json(g) for g in grants]})


async def heartbeat(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    worker_id, epoch = parse_heartbeat(await json_body(request))
    await _own_execution(request, execution_id)
    result = await service_of(request).heartbeat(execution_id, worker_id, epoch)
    if result.verdict is not LeaseVerdict.OK:
        raise _lease_conflict(result.verdict, execution_id, worker_id)
    return json_response(answers.HeartbeatResponse(
        extend_until=format_instant(result.extend_until), lease_epoch=epoch,  # type: ignore[arg-type]  # set once OK
    ))


async def complete(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    completion = parse_completion(execution_id, await json_body(request))
    await _own_execution(request, execution_id)
    result = await service_of(request).complete(completion)
    if result.verdict is not LeaseVerdict.OK:
        raise _lease_conflict(result.verdict, execution_id, completion.worker_id or "")
    return json_response(answers.CompleteResponse(
        execution_id=execution_id,
        status=result.status.value if result.status is not None else None,  # type: ignore[arg-type]  # not None once OK
        available_at=format_instant(result.available_at),
    ))


async def record_effect(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    worker_id, epoch, key = parse_effect(await json_body(request))
    await _own_execution(request, execution_id)
    verdict = await service_of(request).record_effect(execution_id, worker_id, epoch, key)
    if verdict is EffectVerdict.RECORDED:
        return json_response(answers.EffectResponse(recorded=True, duplicate=False, key=key), 201)
    if verdict is EffectVerdict.DUPLICATE:
        return json_response(answers.EffectResponse(recorded=False, duplicate=True, key=key), 200)
    if verdict is EffectVerdict.NOT_FOUND:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")
    if verdict is EffectVerdict.WRONG_WORKER:
        raise _wrong_worker(execution_id, worker_id)
    if verdict is EffectVerdict.TOO_MANY:
        raise Problem(422, "too_many_effects", f"execution {execution_id!r} has recorded {MAX_EFFECTS_PER_EXECUTION} "
                      "effects, the most one execution may: this one was not recorded, do not perform it")  # fmt: skip
    raise Problem(
        409, "fenced",
        f"leaseEpoch {epoch} is not the current lease of {execution_id!r} (or it is no longer running): effect not recorded, abort now",
        reason="fenced",
    )
