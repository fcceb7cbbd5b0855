"""The notification routes: list, replay and purge the notifications of jobs (their JSON:
``api.notifying``)."""

from __future__ import annotations

from aiohttp import web

from cronwheel.api import answers
from cronwheel.api import notifying as nv
from cronwheel.api.context import cut_page, json_response, no_body, service_of, tenant_of
from cronwheel.api.problems import Problem
from cronwheel.api.queries import parse_limit


async def list_notifications(request: web.Request) -> web.Response:
    q = request.query
    limit = parse_limit(q.get("limit"), 100)
    status = nv.parse_notification_status(q.get("status"))
    job_id = q.get("jobId") or None
    if job_id is not None and len(job_id) > 200:
        raise Problem(400, "invalid_query", "jobId must be a job id", field="jobId")
    found = await service_of(request).list_notifications(
        await tenant_of(request), job_id, status, limit + 1, nv.parse_before(q.get("before"))
    )
    page, nxt = cut_page(found, limit, nv.cursor_of)
    return json_response(answers.NotificationPage([nv.notification_answer(n) for n in page], nxt))


async def replay_notification(request: web.Request) -> web.Response:
    await no_body(request)
    n = await service_of(request).replay_notification(request.match_info["notificationId"], await tenant_of(request))
    return json_response(nv.notification_answer(n))


async def purge_notification(request: web.Request) -> web.Response:
    notification_id = request.match_info["notificationId"]
    await service_of(request).purge_notification(notification_id, await tenant_of(request))
    return json_response(answers.NotificationPurged(notification_id=notification_id, purged=True))
