"""The calendar routes: a tenant's named calendars (their JSON: ``api.beyondcron``)."""

from __future__ import annotations

from aiohttp import web

from cronwheel.api import beyondcron as bc
from cronwheel.api.context import (
    encode_json,
    json_body,
    json_bytes_response,
    json_response,
    service_of,
    tenant_of,
)
from cronwheel.api.problems import Problem
from cronwheel.core.calendar import CalendarDocument
from cronwheel.core.instants import format_instant
from cronwheel.core.model import DEFAULT_TENANT
from cronwheel.core.tenants import valid_tenant_name


async def _asked_tenant(request: web.Request) -> tuple[str | None, str | None]:
    """(the caller's tenant, None for an admin; the ``?tenant=`` asked for, checked). A tenant
    token may name its own tenant only: another's is refused, not quietly read as its own
    (a ``PUT ?tenant=b`` by tenant a wrote a's calendar and answered 200)."""
    tenant = await tenant_of(request)
    asked = request.query.get("tenant")
    if asked is not None and not valid_tenant_name(asked):
        raise Problem(400, "invalid_query", f"tenant: {asked[:80]!r} is not a tenant name", field="tenant")
    if tenant is not None and asked is not None and asked != tenant:
        raise Problem(403, "forbidden", f"a token of tenant {tenant!r} acts for its own tenant only, not {asked!r}",
                      field="tenant")
    return tenant, asked


async def _calendar_tenant(request: web.Request) -> str:
    """A tenant token's own tenant; an admin's ``?tenant=`` (default: the default tenant)."""
    tenant, asked = await _asked_tenant(request)
    return tenant or asked or DEFAULT_TENANT


async def list_calendars(request: web.Request) -> web.Response:
    tenant, asked = await _asked_tenant(request)
    docs = await service_of(request).list_calendar_documents(tenant or asked)
    return json_bytes_response(b'{"calendars":[' + b",".join(map(_document_answer, docs)) + b"]}")


def _document_answer(doc: CalendarDocument) -> bytes:
    """A stored calendar's answer (``answers.Calendar``), its stored spec spliced in as it is:
    a tenant's thousand calendars of 5,000 dates each were 1.5 million dates parsed, checked,
    sorted and encoded again for every listing (seconds of the reader every tenant's reads
    take turns at, and of the loop)."""
    head = encode_json({"name": doc.name, "tenant": doc.tenant})[:-1]
    tail = encode_json({"createdAt": format_instant(doc.created_at or None), "updatedAt": format_instant(doc.updated_at or None)})[1:]
    spec = doc.spec.strip()[1:-1].strip().encode()  # the members of the stored object
    return head + b"," + (spec + b"," if spec else b"") + tail


async def get_calendar(request: web.Request) -> web.Response:
    name = bc.check_calendar_name(request.match_info["name"])
    return json_response(bc.calendar_answer(await service_of(request).get_calendar(name, await _calendar_tenant(request))))


async def put_calendar(request: web.Request) -> web.Response:
    name = bc.check_calendar_name(request.match_info["name"], creating=True)
    cal = bc.parse_calendar_body(name, await json_body(request), await _calendar_tenant(request))
    return json_response(bc.calendar_answer(await service_of(request).put_calendar(cal)))


async def delete_calendar(request: web.Request) -> web.Response:
    name = bc.check_calendar_name(request.match_info["name"])
    await service_of(request).delete_calendar(name, await _calendar_tenant(request))
    return web.Response(status=204)
