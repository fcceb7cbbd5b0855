"""What the app holds for its handlers, under typed keys: the service, the tenant resolver, and
the node's metrics and event log (None in an app built without them). A module of its own so
that the middleware, the handlers and the ops routes all read them without importing each
other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from cronwheel.core.tenants import Principal
from cronwheel.engine.service import SchedulerService
from cronwheel.obs.events import EventLog
from cronwheel.obs.metrics import NodeMetrics

#: who is calling: a ``Principal``, a tenant name, or None = admin (maybe awaitable)
TenantResolver = Callable[[web.Request], "Principal | str | Awaitable[Principal | str | None] | None"]

SERVICE = web.AppKey("cronwheel.service", SchedulerService)
TENANT_RESOLVER: web.AppKey[TenantResolver | None] = web.AppKey("cronwheel.tenant_resolver")
METRICS: web.AppKey[NodeMetrics | None] = web.AppKey("cronwheel.metrics")
EVENTS: web.AppKey[EventLog | None] = web.AppKey("cronwheel.events")
#: whether this node can send email (None: not known, so nothing is said about it)
MAIL_TRANSPORT: web.AppKey[bool | None] = web.AppKey("cronwheel.mail_transport")
#: the configuration the daemon runs with, with origins (``GET /v1/config``; None: an app
#: built without one, as tests build it)
CONFIG: web.AppKey[Callable[[], dict[str, Any]] | None] = web.AppKey("cronwheel.config")
#: (method, route path) -> the query parameters the OpenAPI document gives that route; a /v1/
#: route answers a parameter it does not take with 400 (a typo is not silently ignored)
QUERY_PARAMETERS: web.AppKey[dict[tuple[str, str], frozenset[str]]] = web.AppKey("cronwheel.query_parameters")
