"""A client that follows the event stream and hangs up is let go: its subscription to the
event log ends, whether events keep coming (the next write fails) or none ever matches its
filter (the idle check sees the closed connection). A follower left behind would be handed
every event of the node for as long as the daemon runs: a leak a client could repeat at will.

aiohttp's real server on a socket, run as the daemon runs it: a handler is not cancelled when
its client goes away (aiohttp's TestServer would cancel it, and hide the path under test)."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable

import aiohttp
from aiohttp import web

from cronwheel.api.app import make_app
from cronwheel.obs.events import EventLog
from tests.integration.test_api_app import FakeService


async def until(condition: Callable[[], bool], what: str, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.02)


def subscribers(log: EventLog) -> int:
    return len(log._subscribers)


def test_a_follower_that_hangs_up_is_let_go() -> None:
    async def main() -> None:
        log = EventLog("n1", stream=io.StringIO())
        runner = web.AppRunner(make_app(FakeService(), events=log), handle_signals=False)  # as the daemon's
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            async with aiohttp.ClientSession() as client:
                await hang_ups(client, url, log)
        finally:
            await runner.cleanup()

    asyncio.run(main())


async def keep_emitting(log: EventLog, stop: asyncio.Event) -> None:
    """Events for a follower to be written (and fail to be, once its client is gone)."""
    while not stop.is_set():
        log.emit("test.after", n=2)
        await asyncio.sleep(0.05)


async def hang_ups(client: aiohttp.ClientSession, url: str, log: EventLog) -> None:
    base = subscribers(log)
    for query, events_flow in (("", True), ("&job=jnothingmatchesthis", False)):
        resp = await client.get(f"{url}/v1/events?follow=1&n=0{query}")
        assert resp.status == 200
        await until(lambda: subscribers(log) == base + 1, "the follower subscribed")
        log.emit("test.before", n=1)
        if events_flow:  # it is delivered while the client listens
            assert b"test.before" in await asyncio.wait_for(resp.content.readline(), 10)
        resp.close()  # the client hangs up, the server is not told otherwise
        stop = asyncio.Event()
        emitter = asyncio.create_task(keep_emitting(log, stop)) if events_flow else None
        try:
            await until(lambda: subscribers(log) == base, f"the follower let go ({query or 'no filter'})")
        finally:
            stop.set()
            if emitter is not None:
                await emitter
