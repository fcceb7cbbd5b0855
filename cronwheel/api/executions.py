"""The execution routes: list a job's executions, read one, its output (followed live while it
runs here), and the dead-letter queue."""

from __future__ import annotations

import codecs
import contextlib

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
from cronwheel.api.queries import parse_execution_cursor, parse_limit, parse_ms_cursor


async def list_executions(request: web.Request) -> web.Response:
    limit = parse_limit(request.query.get("limit"), 50)
    before = parse_ms_cursor("before", request.query.get("before"))
    executions = await service_of(request).list_executions(
        request.match_info["jobId"], limit + 1, before, await tenant_of(request)
    )
    page, nxt = cut_page(executions, limit, lambda e: str(e.scheduled_at))
    return json_response({"executions": [execution_to_json(e) for e in page], "next": nxt})


async def get_execution(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    ex = await service_of(request).get_execution(execution_id, await tenant_of(request))
    if ex is None:
        raise Problem(404, "not_found", f"no execution {execution_id!r}")
    return json_response(execution_to_json(ex, with_output=True))


#: a follower with nothing new for this long looks again at the execution in the store
OUTPUT_IDLE_CHECK_SEC = 1.0


async def execution_output(request: web.Request) -> web.StreamResponse:
    """``GET /v1/executions/{id}/output[?follow=1]``: an execution's output as text. While it
    runs on this node: what it printed so far (a bounded tail), and with ``follow`` every new
    chunk as the worker forwards it, until this attempt ends. Otherwise its stored output (the
    tail its last attempt ended with); ``follow`` on one not yet started waits for it."""
    execution_id = request.match_info["executionId"]
    service = service_of(request)
    tenant = await tenant_of(request)
    follow = ops.follows(request)
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
        credential = CredentialWatch(request)
        while follower is not None and await credential.holds():
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


# ---------------------------------------------------------------- dead-letter queue


async def list_dead(request: web.Request) -> web.Response:
    limit = parse_limit(request.query.get("limit"), 100)
    after = parse_execution_cursor(request.query.get("after"))
    dead = await service_of(request).list_dead(await tenant_of(request), limit + 1, after)
    page, nxt = cut_page(dead, limit, lambda e: e.execution_id)
    return json_response({"executions": [execution_to_json(e) for e in page], "next": nxt})


async def replay_dead(request: web.Request) -> web.Response:
    await no_body(request)
    ex = await service_of(request).replay_dead(request.match_info["executionId"], await tenant_of(request))
    return json_response(execution_to_json(ex))


async def purge_dead(request: web.Request) -> web.Response:
    execution_id = request.match_info["executionId"]
    await service_of(request).purge_dead(execution_id, await tenant_of(request))
    return json_response(answers.Purged(execution_id=execution_id, purged=True))
