"""The HTTP API around a ``SchedulerService``: the route table, who may call each route
(``ACCESS``), and the app factory ``make_app``. The routes live in one module per resource
(jobs, executions, workers, notifications, calendars, the node, admin); problem responses in
``api.problems``; what a handler reads from its request in ``api.context``."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from cronwheel.api import dashboard, ops, routing
from cronwheel.api.access import ROUTE_ACCESS, Access, authorize, identify_client
from cronwheel.api.admin import (
    create_tenant,
    create_token,
    delete_tenant,
    get_tenant,
    get_tenant_notify,
    list_tenants,
    list_tokens,
    revoke_token,
    set_tenant_notify,
    update_tenant,
)
from cronwheel.api.appkeys import (
    CONFIG,
    MAIL_TRANSPORT,
    QUERY_PARAMETERS,
    SERVICE,
    TENANT_RESOLVER,
    TenantResolver,
)
from cronwheel.api.calendars import delete_calendar, get_calendar, list_calendars, put_calendar
from cronwheel.api.executions import (
    execution_output,
    get_execution,
    list_dead,
    list_executions,
    purge_dead,
    replay_dead,
)
from cronwheel.api.jobs import (
    backfill_job,
    cancel_backfill,
    cancel_job,
    create_job,
    create_jobs,
    get_job,
    list_jobs,
    pause_job,
    ping_job,
    resume_job,
    set_chain,
    trigger_job,
    upcoming,
    update_job,
)
from cronwheel.api.node import (
    OPENAPI_DOC,
    OPENAPI_PATH,
    healthz,
    herd,
    node_config,
    openapi,
    status,
    whoami,
)
from cronwheel.api.notifications import list_notifications, purge_notification, replay_notification
from cronwheel.api.problems import answer_problems, refuse_unknown_query
from cronwheel.api.workers import claim, complete, heartbeat, record_effect
from cronwheel.core.limits import MAX_BODY_BYTES
from cronwheel.engine.service import SchedulerService
from cronwheel.obs.events import EventLog
from cronwheel.obs.metrics import NodeMetrics

#: (method, path, handler): the whole API; the OpenAPI document is tested against this table
ROUTES: tuple[tuple[str, str, Callable[[web.Request], Awaitable[web.StreamResponse]]], ...] = (
    ("POST", "/v1/jobs", create_job),
    ("POST", "/v1/jobs/batch", create_jobs),
    ("GET", "/v1/jobs", list_jobs),
    ("GET", "/v1/jobs/{jobId}", get_job),
    ("PATCH", "/v1/jobs/{jobId}", update_job),
    ("DELETE", "/v1/jobs/{jobId}", cancel_job),
    ("POST", "/v1/jobs/{jobId}/pause", pause_job),
    ("POST", "/v1/jobs/{jobId}/resume", resume_job),
    ("POST", "/v1/jobs/{jobId}/trigger", trigger_job),
    ("GET", "/v1/jobs/{jobId}/executions", list_executions),
    ("POST", "/v1/jobs/{jobId}/ping", ping_job),
    ("GET", "/v1/notifications", list_notifications),
    ("POST", "/v1/notifications/{notificationId}/replay", replay_notification),
    ("DELETE", "/v1/notifications/{notificationId}", purge_notification),
    ("POST", "/v1/jobs/{jobId}/backfill", backfill_job),
    ("DELETE", "/v1/jobs/{jobId}/backfill", cancel_backfill),
    ("PUT", "/v1/jobs/{jobId}/chain", set_chain),
    ("GET", "/v1/jobs/{jobId}/upcoming", upcoming),
    ("GET", "/v1/calendars", list_calendars),
    ("GET", "/v1/calendars/{name}", get_calendar),
    ("PUT", "/v1/calendars/{name}", put_calendar),
    ("DELETE", "/v1/calendars/{name}", delete_calendar),
    ("GET", "/v1/executions/{executionId}", get_execution),
    ("GET", "/v1/executions/{executionId}/output", execution_output),
    ("POST", "/v1/workers/claim", claim),
    ("POST", "/v1/executions/{executionId}/heartbeat", heartbeat),
    ("POST", "/v1/executions/{executionId}/complete", complete),
    ("POST", "/v1/executions/{executionId}/effects", record_effect),
    ("GET", "/v1/dlq", list_dead),
    ("POST", "/v1/dlq/{executionId}/replay", replay_dead),
    ("DELETE", "/v1/dlq/{executionId}", purge_dead),
    ("GET", "/v1/status", status),
    ("GET", "/v1/config", node_config),
    ("GET", "/v1/herd", herd),
    ("GET", "/v1/whoami", whoami),
    ("GET", "/v1/status/activity", ops.activity),
    ("GET", "/healthz", healthz),
    ("GET", "/v1/openapi.json", openapi),
    ("GET", "/v1/events", ops.events),
    ("GET", "/metrics", ops.metrics),
    ("GET", "/v1/tenants", list_tenants),
    ("POST", "/v1/tenants", create_tenant),
    ("GET", "/v1/tenants/{name}", get_tenant),
    ("PATCH", "/v1/tenants/{name}", update_tenant),
    ("DELETE", "/v1/tenants/{name}", delete_tenant),
    ("GET", "/v1/tenants/{name}/notify", get_tenant_notify),
    ("PUT", "/v1/tenants/{name}/notify", set_tenant_notify),
    ("POST", "/v1/tokens", create_token),
    ("GET", "/v1/tokens", list_tokens),
    ("DELETE", "/v1/tokens/{tokenId}", revoke_token),
    ("GET", "/", dashboard.index),
    ("GET", "/ui/{asset}", dashboard.asset),
)


#: a route not listed here is admin-only (a remote workers' claim route belongs to WORK)
ACCESS: dict[Callable[..., Any], Access] = {
    healthz: Access.OPEN,
    ops.metrics: Access.METRICS,
    # the dashboard's page and assets hold no data; its API calls are authenticated as usual
    dashboard.index: Access.OPEN,
    dashboard.asset: Access.OPEN,
    openapi: Access.ANY,
    whoami: Access.ANY,
    claim: Access.WORK,
    heartbeat: Access.WORK,
    complete: Access.WORK,
    record_effect: Access.WORK,
    ping_job: Access.WORK,  # a crontab line elsewhere needs no more than a worker token
    **dict.fromkeys(
        (create_job, create_jobs, list_jobs, get_job, update_job, cancel_job, pause_job, resume_job, trigger_job,
         list_executions, get_execution, execution_output, list_dead, replay_dead, purge_dead, herd,
         list_notifications, replay_notification, purge_notification, backfill_job, cancel_backfill, set_chain, upcoming,
         list_calendars, get_calendar, put_calendar, delete_calendar, get_tenant),
        Access.MANAGE,
    ),
}


def make_app(
    service: SchedulerService,
    *,
    tenant_resolver: TenantResolver | None = None,
    metrics: NodeMetrics | None = None,
    events: EventLog | None = None,
    mail_transport: bool | None = None,
    config: Callable[[], dict[str, Any]] | None = None,
) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[answer_problems, identify_client, authorize, refuse_unknown_query])
    app[SERVICE] = service
    app[MAIL_TRANSPORT] = mail_transport
    app[CONFIG] = config
    app[TENANT_RESOLVER] = tenant_resolver
    app[OPENAPI_DOC] = OPENAPI_PATH.read_bytes()
    app[QUERY_PARAMETERS] = routing.query_parameters(json.loads(app[OPENAPI_DOC]))
    ops.install(app, metrics=metrics, events=events)
    access = app[ROUTE_ACCESS] = dict(ACCESS)
    paths = [path for _, path, _ in ROUTES]
    allow = routing.allowed_methods((method, path) for method, path, _ in ROUTES)
    for path in dict.fromkeys(paths):  # in the table's order: the router tries them in turn
        routed = routing.exclusive_path(path, paths)
        handlers = [(m, h) for m, p, h in ROUTES if p == path]
        for method, handler in handlers:
            for answered in routing.with_head(method):
                app.router.add_route(answered, routed, handler)
        options = routing.options_handler(allow[path])
        app.router.add_route("OPTIONS", routed, options)
        # OPTIONS asks for the credentials the path's routes ask for (an open path stays open)
        access[options] = Access.OPEN if all(ACCESS.get(h) is Access.OPEN for _, h in handlers) else Access.ANY
    return app
