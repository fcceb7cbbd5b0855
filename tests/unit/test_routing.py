"""The route table's paths become router patterns where a static segment wins over a variable one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from cronwheel.api.app import ROUTES
from cronwheel.api.routing import allowed_methods, exclusive_path


def _matcher(routed: str) -> Callable[[str], bool]:
    """Whether aiohttp's router sends a GET of a path to the resource ``routed``."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response()

    app = web.Application()
    app.router.add_get(routed, handler)

    def matches(path: str) -> bool:
        info = asyncio.run(app.router.resolve(make_mocked_request("GET", path, app=app)))
        return info.http_exception is None

    return matches


def test_a_variable_segment_refuses_its_static_siblings() -> None:
    paths = ["/v1/jobs", "/v1/jobs/batch", "/v1/jobs/{jobId}", "/v1/jobs/{jobId}/pause", "/v1/jobs/import/{kind}"]
    job = _matcher(exclusive_path("/v1/jobs/{jobId}", paths))
    assert job("/v1/jobs/j123") and job("/v1/jobs/batchy") and job("/v1/jobs/abatch")
    assert not job("/v1/jobs/batch") and not job("/v1/jobs/import")
    pause = _matcher(exclusive_path("/v1/jobs/{jobId}/pause", paths))
    assert pause("/v1/jobs/j1/pause") and not pause("/v1/jobs/batch/pause")
    assert exclusive_path("/v1/jobs/batch", paths) == "/v1/jobs/batch"
    assert exclusive_path("/v1/tenants/{name}", ["/v1/tenants", "/v1/tenants/{name}"]) == "/v1/tenants/{name}"


def test_allow_lists_every_method_of_a_path_and_options() -> None:
    allow = allowed_methods((m, p) for m, p, _ in ROUTES)
    assert allow["/v1/jobs/batch"] == ("OPTIONS", "POST")
    assert {"DELETE", "GET", "OPTIONS"} <= set(allow["/v1/jobs/{jobId}"])
    assert allow["/healthz"] == ("GET", "HEAD", "OPTIONS")  # a GET answers HEAD too
