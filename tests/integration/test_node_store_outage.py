"""``Node.status`` while its store cannot be reached, on a real PostgreSQL that is stopped
(the daemon-level tests are in test_daemon_postgres.py; this one needs a node that has
never read its store, which a daemon never is once it answers)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from cronwheel.engine.node import Node, NodeConfig
from cronwheel.engine.service import Unavailable
from cronwheel.obs.events import EventLog
from cronwheel.store.postgres import PostgresStore
from tests.support.postgres import dedicated_cluster

pytestmark = pytest.mark.postgres


def test_status_is_503_before_any_read_then_stale_from_the_last_read(tmp_path: Path) -> None:
    with dedicated_cluster() as cluster:
        writer, reader = PostgresStore.open(cluster.dsn()), PostgresStore.open(cluster.dsn())
        node = Node(NodeConfig(tmp_path, "n1"), writer, reader, EventLog("n1", stream=io.StringIO()))

        async def scenario() -> None:
            cluster.stop("immediate")
            with pytest.raises(Unavailable):  # nothing read yet: nothing to answer with
                await node.status()
            cluster.start()
            fresh = await node.status()
            assert fresh["stale"] is False and "storeError" not in fresh
            cluster.stop("immediate")
            stale = await node.status()
            assert stale["stale"] is True and stale["asOf"] == fresh["asOf"]
            assert stale["jobs"] == fresh["jobs"] and stale["staleForMs"] >= 0 and stale["storeError"]
            cluster.start()
            again = await node.status()
            assert again["stale"] is False and again["asOf"] >= fresh["asOf"]

        try:
            asyncio.run(scenario())
        finally:
            node.writer.close()
            node.reader.close()
