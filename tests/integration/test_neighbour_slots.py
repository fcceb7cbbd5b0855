"""A neighbour's slow HTTP runs must not hold every slot of a shared node: a real daemon (one
worker of 4 slots), real HTTP targets on a local server. Tenant evil's every-second jobs call
an endpoint that answers only when the test lets it; tenant acme's every-second job must run
meanwhile, in the slot the node keeps for tenants running nothing there
(``core.fairness.neighbour_reserve``). A running execution is never preempted: without the
reserve evil held all 4 slots and acme's ticks waited for evil's calls to end."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator

from aiohttp import web

from tests.integration.test_auth import tenant_token
from tests.support.daemon import Daemon
from tests.support.threadserver import app_in_a_thread
from tests.support.wait import wait_for

EVERY_SECOND = {"schedule": "* * * * * *", "retryPolicy": {"maxAttempts": 1}}


@contextlib.contextmanager
def holding_endpoint() -> Iterator[tuple[str, list[str], threading.Event]]:
    """``/hold`` answers once the event is set, anything else at once: (base URL, the paths
    called so far, the event). The event is set on leaving, so held calls end."""
    calls: list[str] = []
    release = threading.Event()
    held: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []  # made on the server's loop

    async def answer(request: web.Request) -> web.Response:
        calls.append(request.path)
        if request.path == "/hold" and not release.is_set():
            if not held:
                held.append((asyncio.get_running_loop(), asyncio.Event()))
            await held[0][1].wait()  # the slow webhook itself, not a wait of the test
        return web.Response(text="ok")

    def make() -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        return app

    with app_in_a_thread(make) as base:
        try:
            yield base, calls, release
        finally:
            release.set()
            for loop, event in held:
                loop.call_soon_threadsafe(event.set)


def test_a_neighbours_every_second_job_runs_while_slow_http_runs_hold_the_other_slots(
        make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(workers=1, slots=4)
    allow = {"httpAllow": ["127.0.0.1"]}
    evil, acme = tenant_token(d, "evil", **allow), tenant_token(d, "acme", **allow)
    with holding_endpoint() as (base, calls, _release):
        for _ in range(6):
            r = d.post("/v1/jobs", {**EVERY_SECOND, "timeoutSec": 600, "http": {"url": f"{base}/hold", "method": "GET"}},
                       token=evil)  # fmt: skip
            assert r.status == 201, r
        wait_for(lambda: calls.count("/hold") >= 3, 30, what="evil's calls to hold 3 slots")
        r = d.post("/v1/jobs", {**EVERY_SECOND, "http": {"url": f"{base}/quick", "method": "GET"}}, token=acme)
        assert r.status == 201, r
        wait_for(lambda: calls.count("/quick") >= 8, 60, what="acme's job to run 8 times while evil's calls hang")
        assert calls.count("/hold") == 3, "evil never takes the slot kept for its neighbours"
        status = d.get("/v1/status").json()
        assert status["queue"]["default"] > 0, status["queue"]  # evil's ticks wait, none dropped
