"""The admin routes: tenants, their default notification rules, and API tokens."""

from __future__ import annotations

from aiohttp import web

from cronwheel.api import answers
from cronwheel.api import notifying as nv
from cronwheel.api import tenancy as tv
from cronwheel.api.clients import client_of
from cronwheel.api.context import json_body, json_response, mail_warnings, service_of, tenant_of
from cronwheel.api.ops import parse_flag
from cronwheel.api.problems import Problem
from cronwheel.core import notify as nt
from cronwheel.core.tenants import valid_tenant_name


async def list_tenants(request: web.Request) -> web.Response:
    service = service_of(request)
    tenants = await service.list_tenants()
    live, left = service.tenant_stats(), await service.jobs_left(tenants)
    return json_response(answers.TenantList([tv.tenant_answer(t, live.get(t.name, {}), left.get(t.name)) for t in tenants]))


async def get_tenant(request: web.Request) -> web.Response:
    """An admin sees any tenant; a tenant token its own only (another's answers 404, as an
    unknown one: names do not leak)."""
    name = request.match_info["name"]
    own = await tenant_of(request)
    if own is not None and own != name:
        raise Problem(404, "not_found", f"no tenant {name[:64]!r}")
    service = service_of(request)
    tenant, jobs, applied = await service.get_tenant(name)
    answer = tv.tenant_answer(tenant, service.tenant_stats().get(name, {}), jobs)
    answer.effective_http_allow = None if applied is None else list(applied)
    return json_response(answer)


async def create_tenant(request: web.Request) -> web.Response:
    body = tv.parse_tenant_body(await json_body(request))
    tenant = await service_of(request).create_tenant(body, remote=client_of(request).address)
    return json_response(tv.tenant_answer(tenant), 201, {"Location": f"/v1/tenants/{tenant.name}"})


async def update_tenant(request: web.Request) -> web.Response:
    changes = tv.parse_tenant_patch(await json_body(request))
    tenant = await service_of(request).update_tenant(request.match_info["name"], changes, remote=client_of(request).address)
    return json_response(tv.tenant_answer(tenant))


async def delete_tenant(request: web.Request) -> web.Response:
    """202: the deletion is under way (a forced one's live jobs are cancelled in the background,
    then retention removes its rows), its ``jobs`` the live ones left; ``Location`` is where to
    follow it (``GET`` answers 404 once it is gone); asking again answers the same.
    ``?force=true`` cancels its live jobs (else 409 ``tenant_not_empty``)."""
    name = request.match_info["name"]
    force = parse_flag("force", request.query.get("force"))
    if not valid_tenant_name(name):  # no such tenant can exist: said without echoing all of it
        raise Problem(404, "not_found", f"no tenant {name[:64]!r} (cronwheel tenant ls lists them)")
    tenant, left = await service_of(request).delete_tenant(name, force, remote=client_of(request).address)
    return json_response(tv.tenant_answer(tenant, jobs=left), 202, {"Location": f"/v1/tenants/{name}"})


async def create_token(request: web.Request) -> web.Response:
    role, tenant, name = tv.parse_token_body(await json_body(request))
    token, secret = await service_of(request).create_token(role, tenant, name, remote=client_of(request).address)
    return json_response(tv.token_created(token, secret), 201, {"Cache-Control": "no-store"})


async def list_tokens(request: web.Request) -> web.Response:
    tenant = request.query.get("tenant") or None
    if tenant is not None and len(tenant) > 64:
        raise Problem(400, "invalid_query", "tenant must be a tenant name", field="tenant")
    tokens = await service_of(request).list_tokens(tenant)
    return json_response(answers.TokenList([tv.token_answer(t) for t in tokens]))


async def revoke_token(request: web.Request) -> web.Response:
    token_id = request.match_info["tokenId"]
    if not tv.valid_token_id(token_id):
        raise Problem(404, "not_found", f"no token {token_id[:40]!r}")
    revoked = await service_of(request).revoke_token(token_id, remote=client_of(request).address)
    return json_response(tv.token_answer(revoked))


async def get_tenant_notify(request: web.Request) -> web.Response:
    rules = await service_of(request).tenant_notify(request.match_info["name"])
    return json_response(answers.TenantNotifyAnswer(tenant=request.match_info["name"], notify=nt.rules_to_json(rules, redact=True)))


async def set_tenant_notify(request: web.Request) -> web.Response:
    rules = nv.parse_rules_body(await json_body(request))
    name = request.match_info["name"]
    await service_of(request).set_tenant_notify(name, rules)
    answer = answers.TenantNotifyAnswer(tenant=name, notify=nt.rules_to_json(rules, redact=True))
    warnings = mail_warnings(request, rules)
    if warnings:
        answer.warnings = warnings
    return json_response(answer)
