"""The execution routes: list a job's executions, read one, its output (followed live while it
runs here), and the dead-letter queue."""

from __future__ import annotations

import contextlib
from typing import Any

from aiohttp import web

from cronwheel.api import answers, ops
from cronwheel.api.context import (
    CredentialWatch,
    cut_page,
    json_response,
    no_body,
    service_of,
    tenant_of,
)
from cronwheel.api.jobjson import execution_to_json
from cronwheel.api.problems import Problem
from cronwheel.api.queries import (
    CURSOR_HEADER,
    parse_execution_cursor,
    parse_limit,
    parse_ms_cursor,
    parse_output_cursor,
)
from cronwheel.core.model import ExecStatus, Execution
from cronwheel.engine.liveoutput import Follower


async def list_executions(request: web.Request) -> web.Response:
    limit = parse_limit(request.query.get("limit"), 50)
    before = parse_ms_cursor("before", request.query.get("before"))
    executions = await service_of(request).list_executions(
        request.match_info["jobId"], limit + 1, before, await tenant_of(request)
    )
    page, nxt = cut_page(executions, limit, lambda e: str(e.scheduled_at))
    return json_response({"executions": _answers(request, page), "next": nxt})


def execution_json(request: web.Request, execution: Execution, with_output: bool = False) -> dict[str, Any]:
    """An execution as every route answers it, with the tier its tenant's grant queues it at."""
    return execution_to_json(execution, service_of(request).tenant_config(execution.tenant), with_output)


def _answers(request: web.Request, executions: list[Execution]) -> list[dict[str, Any]]:
    return [execution_json(request, e) for e in executions]


async def get_execution(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    ex = await service_of(request).get_execution(execution_id, await tenant_of(request))
    if ex is None:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")
    return json_response(execution_json(request, ex, with_output=True))


#: a follower with nothing new for this long looks again at the execution in the store
OUTPUT_IDLE_CHECK_SEC = 1.0


async def execution_output(request: web.Request) -> web.StreamResponse:
    """``GET /v1/executions/{id}/output[?follow=1][&after=EPOCH:OFFSET]``: an execution's output
    as text. While it runs on this node: what it printed so far (a bounded tail), and with
    ``follow`` every new chunk as the worker forwards it, until this attempt ends. Otherwise
    its stored output (the tail its last attempt ended with); ``follow`` on one not yet started
    waits for it. The ``Cronwheel-Cursor`` header names the hand-off whose output the body is
    and the offset of its first byte; ``after`` (such a cursor, moved on by the bytes read)
    resumes that hand-off's output at that byte."""
    execution_id = request.match_info["executionId"]
    service = service_of(request)
    tenant = await tenant_of(request)
    follow = ops.follows(request)
    after = parse_output_cursor(request.query.get("after"))
    ex = await service.get_execution(execution_id, tenant)
    if ex is None:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")
    live = service.live_output(execution_id)
    follower = service.follow_output(execution_id) if follow else None  # no await since the tail: no gap
    first, cursor = b"", None
    if live is not None:
        start = live.start if after is None or after[0] != live.epoch else min(max(after[1], live.start), live.end)
        first, cursor = live.data[start - live.start :], f"{live.epoch}:{start}"
    elif follower is None or ex.status.terminal:
        first = (ex.output or "").encode()
        _close(follower)
        follower = None
        if ex.status is not ExecStatus.RUNNING:  # else it runs elsewhere: this is an earlier attempt's
            start = min(after[1], len(first)) if after is not None and after[0] == ex.lease_epoch else 0
            first, cursor = first[start:], f"{ex.lease_epoch}:{start}"
    headers = {"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store",
               "X-Content-Type-Options": "nosniff", "X-Accel-Buffering": "no"}
    resp = web.StreamResponse(headers=headers if cursor is None else {**headers, CURSOR_HEADER: cursor})
    shown = live is not None  # some of its output was written live
    try:
        await resp.prepare(request)
        await resp.write(first)
        credential = CredentialWatch(request)
        while follower is not None and await credential.holds():
            data = await follower.next(OUTPUT_IDLE_CHECK_SEC)
            if data:
                shown = True
                await resp.write(data)
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
        with contextlib.suppress(ConnectionError):
            await resp.write_eof()
    except ConnectionError:
        pass
    finally:
        _close(follower)
    return resp


def _close(follower: Follower | None) -> None:
    if follower is not None:
        follower.close()


# ---------------------------------------------------------------- dead-letter queue


async def list_dead(request: web.Request) -> web.Response:
    limit = parse_limit(request.query.get("limit"), 100)
    after = parse_execution_cursor(request.query.get("after"))
    dead = await service_of(request).list_dead(await tenant_of(request), limit + 1, after)
    page, nxt = cut_page(dead, limit, lambda e: e.execution_id)
    return json_response({"executions": _answers(request, page), "next": nxt})


async def replay_dead(request: web.Request) -> web.Response:
    await no_body(request)
    ex = await service_of(request).replay_dead(request.match_info["executionId"], await tenant_of(request))
    return json_response(execution_json(request, ex))


async def purge_dead(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    await service_of(request).purge_dead(execution_id, await tenant_of(request))
    return json_response(answers.Purged(execution_id=execution_id, purged=True))
