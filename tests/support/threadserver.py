"""An aiohttp application served in a thread of its own (its own event loop), for tests that
talk to it from blocking code: the CLI's client, a daemon's HTTP targets."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from aiohttp import web


@contextlib.contextmanager
def app_in_a_thread(make: Callable[[], web.Application], unix: Path | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``make()`` on the socket ``unix`` or on a free TCP port of ``host`` (another
    loopback address, 127.0.0.2, is another host to an allow-list); yield its URL (``unix:PATH``
    or ``http://HOST:PORT``), and stop it on leaving."""
    started = threading.Event()
    url: list[str] = []
    stop: list[Callable[[], None]] = []

    def serve() -> None:
        async def main() -> None:
            runner = web.AppRunner(make())  # made on this thread's loop
            await runner.setup()
            if unix is not None:
                await web.UnixSite(runner, str(unix)).start()
                url.append(f"unix:{unix}")
            else:
                site = web.TCPSite(runner, host, 0)
                await site.start()
                port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
                url.append(f"http://{host}:{port}")
            done = asyncio.Event()
            loop = asyncio.get_running_loop()
            stop.append(lambda: loop.call_soon_threadsafe(done.set))
            started.set()
            await done.wait()
            await runner.cleanup()

        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(10), "the app did not start"
    try:
        yield url[0]
    finally:
        stop[0]()
        thread.join(10)


@contextlib.contextmanager
def recording_endpoint() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local HTTP endpoint that answers every request ``{"ok": true}``: ``(base url, the
    requests received)``, each as its path, method, headers and JSON body (None for none)."""
    got: list[dict[str, Any]] = []

    async def hook(request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        got.append({"path": request.path, "method": request.method, "headers": dict(request.headers), "body": body})
        return web.json_response({"ok": True})

    def make() -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", hook)
        return app

    with app_in_a_thread(make) as base:
        yield base, got


@contextlib.contextmanager
def redirecting_endpoint(host: str = "127.0.0.1") -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local HTTP endpoint on ``host`` that redirects where it is told: ``?to=URL`` answers
    with ``Location: URL`` (and the status ``&status=``, 302 by default), ``/loop`` with
    ``Location: /loop``, anything else ``{"ok": true}``; ``cookie=NAME=VALUE`` in the query adds
    that cookie to the answer. Yields ``(base url, the requests received)``, each as its path
    and query, method, headers and body (text, "" for none)."""
    got: list[dict[str, Any]] = []

    async def hook(request: web.Request) -> web.Response:
        got.append({"path": request.path_qs, "method": request.method, "headers": dict(request.headers),
                    "body": await request.text()})  # fmt: skip
        headers = {"Set-Cookie": f"{request.query['cookie']}; Path=/"} if "cookie" in request.query else {}
        if "to" in request.query:
            return web.Response(status=int(request.query.get("status", "302")), headers={**headers, "Location": request.query["to"]})
        if request.path == "/loop":
            return web.Response(status=302, headers={"Location": "/loop"})
        return web.json_response({"ok": True}, headers=headers)

    def make() -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", hook)
        return app

    with app_in_a_thread(make, host=host) as base:
        yield base, got
