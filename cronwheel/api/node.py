"""The node's routes: status, the coming ticks per second (herd), who is calling, the health
check and the OpenAPI document."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from cronwheel.api import answers
from cronwheel.api.appkeys import CONFIG
from cronwheel.api.context import json_response, principal_of, service_of, tenant_of
from cronwheel.api.problems import Problem
from cronwheel.api.queries import parse_int_query

OPENAPI_PATH = Path(__file__).with_name("openapi.json")
OPENAPI_DOC = web.AppKey("cronwheel.openapi", bytes)


async def status(request: web.Request) -> web.Response:
    return json_response(await service_of(request).status())


async def node_config(request: web.Request) -> web.Response:
    """The configuration this daemon runs with, each key with its origin (admin only)."""
    report = request.app[CONFIG]
    if report is None:
        raise Problem(404, "not_found", "this daemon was not started by `cronwheel serve`: it has no configuration to show")
    return json_response(report())


async def herd(request: web.Request) -> web.Response:
    """The coming window's ticks per second (admin: every tenant's jobs; a tenant: its own)."""
    q = request.query
    window = parse_int_query("window", q.get("window"), 3600, 60, 86_400)
    top = parse_int_query("top", q.get("top"), 10, 1, 100)
    return json_response(await service_of(request).herd(await tenant_of(request), window, top))


async def whoami(request: web.Request) -> web.Response:
    """Who the caller is: its role, its tenant, its token (any authenticated caller)."""
    principal = await principal_of(request)
    return json_response(answers.Whoami(role=str(principal.role), tenant=principal.tenant,
                                        token_id=principal.token_id, via=principal.via))


async def healthz(request: web.Request) -> web.Response:
    return json_response(answers.Health("ok"))


async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=request.app[OPENAPI_DOC], content_type="application/json")
