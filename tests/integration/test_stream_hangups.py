"""A client that follows a stream and hangs up is let go, whether more comes for it (the next
write fails) or nothing does (the idle check sees the closed connection): the event stream's
subscription to the event log ends, and an execution's output follower leaves the node's live
output. A follower left behind would be handed every event of the node, or every chunk of a
long run's output, for as long as the daemon runs: a leak a client could repeat at will.

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
from cronwheel.core.model import ExecStatus, JobSpec
from cronwheel.engine.liveoutput import Follower, LiveOutput
from cronwheel.obs.events import EventLog
from tests.integration.test_api_app import FakeService


class LiveService(FakeService):
    """The fake service with a real ``LiveOutput``: what the dispatcher feeds as workers
    forward a running execution's output."""

    def __init__(self) -> None:
        super().__init__()
        self.live = LiveOutput()

    def live_output(self, execution_id: str) -> bytes | None:
        return self.live.tail(execution_id)

    def follow_output(self, execution_id: str) -> Follower:
        return self.live.follow(execution_id)


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
        log, service = EventLog("n1", stream=io.StringIO()), LiveService()
        runner = web.AppRunner(make_app(service, events=log), handle_signals=False)  # as the daemon's
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            async with aiohttp.ClientSession() as client:
                await hang_ups(client, url, log)
                await output_hang_ups(client, url, service)
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


async def keep_printing(live: LiveOutput, execution_id: str, stop: asyncio.Event) -> None:
    """Output of a run still going, forwarded as a worker forwards it."""
    while not stop.is_set():
        live.append(execution_id, 1, b"more\n")
        await asyncio.sleep(0.05)


async def output_hang_ups(client: aiohttp.ClientSession, url: str, service: LiveService) -> None:
    created = await service.create_job(JobSpec(target={"command": "sleep 3600"}, schedule="0 0 * * *"))
    assert created.job_id is not None
    for n, output_flows in enumerate((True, False)):
        ex = service.add_execution(created.job_id, 1_767_225_600_000 + n, ExecStatus.RUNNING, lease_epoch=1)
        service.live.append(ex.execution_id, 1, b"started\n")
        resp = await client.get(f"{url}/v1/executions/{ex.execution_id}/output?follow=1")
        assert resp.status == 200
        assert await asyncio.wait_for(resp.content.readline(), 10) == b"started\n"
        assert len(service.live._followers.get(ex.execution_id, ())) == 1
        resp.close()  # the client hangs up while the run goes on
        stop = asyncio.Event()
        printer = asyncio.create_task(keep_printing(service.live, ex.execution_id, stop)) if output_flows else None
        try:
            await until(lambda xid=ex.execution_id: xid not in service.live._followers,
                        f"the output follower let go ({'output flowing' if output_flows else 'a quiet run'})")
        finally:
            stop.set()
            if printer is not None:
                await printer
