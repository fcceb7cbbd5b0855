"""What the app holds for its handlers, under typed keys: the service, the tenant resolver, and
the node's metrics and event log (None in an app built without them). A module of its own so
that the middleware, the handlers and the ops routes all read them without importing each
other."""

from __future__ import annotations

from aiohttp import web

from cronwheel.engine.service import SchedulerService

SERVICE = web.AppKey("cronwheel.service", SchedulerService)
TENANT_RESOLVER = web.AppKey("cronwheel.tenant_resolver", object)
METRICS = web.AppKey("cronwheel.metrics", object)
EVENTS = web.AppKey("cronwheel.events", object)
