"""Who may call which route: ``Access`` names the kinds of callers a route admits, the
``authorize`` middleware authenticates before any handler reads the body and checks the
route's access (``app.ACCESS``); another tenant's objects answer 404, never 403, so ids do
not leak. Writes from another web origin are refused."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from cronwheel.api.clients import client_of, identified
from cronwheel.api.context import principal_of
from cronwheel.api.problems import Problem
from cronwheel.core.forwarded import reads_line
from cronwheel.core.tenants import Principal
from cronwheel.engine.fairturns import asking

#: ``ACCESS`` plus the app's own OPTIONS handlers (one per path)
ROUTE_ACCESS: web.AppKey[dict[Callable[..., object], Access]] = web.AppKey("cronwheel.route_access")


class Access(enum.Enum):
    """Who may call a route (see ``ACCESS``)."""

    OPEN = "open"  #: anyone, no credentials (health checks, the dashboard's static files)
    ANY = "any"  #: any authenticated caller
    WORK = "work"  #: worker calls: worker, tenant and admin tokens (own tenant's executions)
    MANAGE = "manage"  #: jobs, executions, DLQ: tenant (its own) and admin tokens
    ADMIN = "admin"  #: the whole node: admin only
    METRICS = "metrics"  #: the Prometheus metrics: admin and metrics tokens


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
async def identify_client(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Whose request it is (``api.clients``), before anything reads it; behind a trusted
    proxy, a connection nobody vouched for counts against that client's address from now on."""
    identify = getattr(request.protocol, "identify", None)
    if identify is not None:
        client, held = identify(request.headers)
        identified(request, client)
        if held is not None:
            raise Problem(429, "too_many_connections",
                          f"the client address {client.address} already holds {held} connections to this node that "
                          "have not been authenticated, its most: wait for some to be answered",
                          headers={"Retry-After": "1"})  # and closed: nobody vouched for it
    return await handler(request)


@web.middleware
async def authorize(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Authenticate before any handler reads the body, then check the route's ``ACCESS``.
    Unknown paths need credentials too (then 404/405), so probing learns nothing."""
    _refuse_cross_site_writes(request)
    info = request.match_info
    access = Access.ANY if info.http_exception is not None else request.app[ROUTE_ACCESS].get(info.handler, Access.ADMIN)
    if access is not Access.OPEN:
        # a token the node has not seen lately (an unknown one always) is looked up in the
        # store: in its client address's line of turns, not as the engine's own read, which
        # goes before every tenant's and is not bounded, so a flood of made-up tokens would
        # queue every neighbour's reads behind it
        checking = asking.set(reads_line(client_of(request).address))
        try:
            principal = await principal_of(request)
        finally:
            asking.reset(checking)
        if not _allowed(principal, access):
            who = f"{principal.role.value} token" + (f" of tenant {principal.tenant!r}" if principal.tenant else "")
            need = {Access.WORK: "a worker, tenant or admin token", Access.MANAGE: "a tenant or admin token",
                    Access.METRICS: "a metrics or admin token"}.get(access, "an admin token")
            raise Problem(403, "forbidden", f"a {who} may not {request.method} {request.path}: that needs {need}")
        caller = principal.tenant or f"({principal.role.value})"
        _count_connection(request, principal, caller)
        # the node's reads take turns by asker, so that one tenant's flood of reads does not
        # queue everyone else's behind it (engine/fairturns.py)
        reading_for = asking.set(caller)
        try:
            return await handler(request)
        finally:
            asking.reset(reading_for)
    return await handler(request)


def _count_connection(request: web.Request, principal: Principal, caller: str) -> None:
    """The connection counts against its caller from now on, no longer against its address
    (api/server.py): a tenant's open streams and idle connections spend its own budget, not
    its neighbours' behind the same NAT or proxy."""
    vouch = getattr(request.protocol, "vouch", None)
    held = vouch(caller) if vouch is not None else None
    if held is not None:
        who = f"tenant {principal.tenant!r}" if principal.tenant else f"the {principal.role.value} role"
        raise Problem(429, "too_many_connections",
                      f"{who} already holds {held} connections to this node, its most: close some (a followed stream, "
                      "an idle connection of a client pool) or wait for them to end", headers={"Retry-After": "1"})
