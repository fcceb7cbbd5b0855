"""The ops routes in process (aiohttp TestServer, no daemon): the follower's bounded queue
and what an app without metrics or events answers."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from cronwheel.api import ops
from cronwheel.api.app import make_app
from cronwheel.obs.events import EventLog


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_slow_follower_loses_events_not_memory_and_is_told() -> None:
    log = EventLog("n1", stream=io.StringIO(), fmt="json")

    async def main() -> None:
        app = make_app(object(), events=log)  # type: ignore[arg-type]
        async with TestClient(TestServer(app)) as client:
            resp = await client.get("/v1/events", params={"follow": "1", "n": "0"})
            assert resp.status == 200
            (follower_closing,) = app[ops._FOLLOWERS]
            # a burst with no await in between: the stream cannot write, its queue fills
            for i in range(ops.FOLLOW_QUEUE * 5):
                log.emit("test.burst", i=i)
            await asyncio.sleep(0)  # let the stream take its queue
            lines: list[dict[str, Any]] = []

            async def read_until(pred) -> None:  # type: ignore[no-untyped-def]
                async with asyncio.timeout(10):
                    while not pred():
                        line = await resp.content.readline()
                        assert line, "stream ended"
                        lines.append(json.loads(line))

            await read_until(lambda: len(lines) >= ops.FOLLOW_QUEUE)
            assert [r["i"] for r in lines] == list(range(ops.FOLLOW_QUEUE))
            log.emit("test.after")
            await read_until(lambda: lines[-1]["event"] == "test.after")
            marker = lines[-2]
            assert marker["event"] == "stream.dropped" and marker["dropped"] == 4 * ops.FOLLOW_QUEUE
            follower_closing.set()  # what server shutdown does
            assert await resp.content.read() == b""

    run(main())


def test_without_metrics_or_events_the_routes_are_absent() -> None:
    async def main() -> None:
        async with TestClient(TestServer(make_app(object()))) as client:  # type: ignore[arg-type]
            for path in ("/metrics", "/v1/events"):
                resp = await client.get(path)
                assert resp.status == 404
                assert resp.headers["Content-Type"].startswith("application/problem+json")

    run(main())


def test_events_are_admin_only_once_tenants_resolve() -> None:
    log = EventLog("n1", stream=io.StringIO(), fmt="json")

    async def main() -> None:
        app = make_app(object(), events=log, tenant_resolver=lambda request: "acme")  # type: ignore[arg-type]
        async with TestClient(TestServer(app)) as client:
            resp = await client.get("/v1/events")
            assert resp.status == 403

    run(main())
