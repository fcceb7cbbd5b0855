"""A node's writes take turns by asker, as its reads do (engine/fairturns.py): a remote
worker's claims and heartbeats are single writes on the node's one writer thread, and
served in the order they came, a tenant's flood of them made every neighbour's wait behind
all of it (on PostgreSQL, evil's 64 connections claiming in a loop took acme's claims from
3 ms to 194 ms at p50, 410 ms at p99; a heartbeat flood, to 286 ms at p99). On a real SQLite
store and the node's real writer thread, held by a first write so that every other one is
queued before any is taken: nothing timed."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path

from cronwheel.engine.fairturns import asking
from cronwheel.engine.node import Node, NodeConfig
from cronwheel.obs.events import EventLog
from cronwheel.store.sqlite import SqliteStore
from tests.unit.test_dispatcher_stop import turns


def test_a_neighbours_heartbeat_goes_before_a_tenants_flood_of_them(tmp_path: Path) -> None:
    node = Node(NodeConfig(data_dir=tmp_path, node_id="n1"), SqliteStore.open(tmp_path / "cw.db"),
                SqliteStore.open(tmp_path / "cw.db"), EventLog("n1", stream=io.StringIO(), fmt="json"))  # fmt: skip
    served: list[str] = []

    async def beat(who: str) -> None:
        asking.set(who)  # this task's own context: what the API's middleware does per request
        await node.heartbeat(f"{who}-execution", "w", 1)
        served.append(who)

    async def main() -> None:
        gate = threading.Event()
        held = asyncio.ensure_future(node.writer.run(lambda s: gate.wait(30)))
        await turns()
        flood = [asyncio.ensure_future(beat("evil")) for _ in range(20)]
        await turns()
        acme = asyncio.ensure_future(beat("acme"))
        await turns()
        gate.set()
        await asyncio.gather(held, acme, *flood)

    try:
        asyncio.run(main())
    finally:
        node.writer.close()
        node.reader.close()
    # at most the evil writes already handed to the thread go first (fairturns.IN_FLIGHT)
    assert served.index("acme") <= 2, served
