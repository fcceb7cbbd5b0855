"""The calendar routes: a tenant's named calendars (their JSON: ``api.beyondcron``)."""

from __future__ import annotations

from aiohttp import web

from cronwheel.api import beyondcron as bc
from cronwheel.api.context import (
    encode_json,
    json_body,
    json_response,
    service_of,
    tenant_of,
)
from cronwheel.api.problems import Problem, report_internal_error
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


#: calendars read from the store at a time for a listing, each sent on before the next are
#: read: a tenant's thousand full calendars (~65 KB each) were read, built and joined whole,
#: ~200 MB per listing, and a few dozen listings in flight would have held the node's memory
LIST_READ_CALENDARS = 16


async def list_calendars(request: web.Request) -> web.StreamResponse:
    tenant, asked = await _asked_tenant(request)
    service = service_of(request)
    docs = await service.list_calendar_documents(tenant or asked, None, LIST_READ_CALENDARS)  # (a refusal is a problem)
    resp = web.StreamResponse(headers={"Content-Type": "application/json; charset=utf-8"})
    await resp.prepare(request)
    try:
        await resp.write(b'{"calendars":[')
        comma = b""
        while docs:
            await resp.write(comma + b",".join(map(_document_answer, docs)))
            comma = b","
            if len(docs) < LIST_READ_CALENDARS:
                break
            docs = await service.list_calendar_documents(tenant or asked, (docs[-1].tenant, docs[-1].name),
                                                         LIST_READ_CALENDARS)  # fmt: skip
        await resp.write(b"]}")
        await resp.write_eof()
    except ConnectionError:
        pass  # the caller went away
    except Exception as exc:  # the answer has begun: cut it short, so that it cannot pass for whole
        report_internal_error(request, exc)
        if request.transport is not None:
            request.transport.abort()
    return resp


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
