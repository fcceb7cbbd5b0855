"""A tenant's runs waiting in a node's ready queue are bounded: past ``MAX_TENANT_WAITING`` the
runs it asks for (triggers, backfills) are refused with 429, its scheduled ticks are not. On a
real SQLite store and an in-process node (no daemon: the bound is lowered to 3 here, as
queueing 100,000 runs to reach it is slow), nothing started, so everything waits."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec
from cronwheel.core.records import NewJob
from cronwheel.engine import tenancy
from cronwheel.engine.node import Node, NodeConfig
from cronwheel.engine.service import TooManyRequests
from cronwheel.obs.events import EventLog
from cronwheel.store.sqlite import SqliteStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DAY = 86_400_000


def test_a_tenants_asked_for_runs_are_refused_once_too_many_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tenancy, "MAX_TENANT_WAITING", 3)
    path = tmp_path / "cronwheel.db"
    writer = SqliteStore.open(path)
    local, remote, neighbour = new_job_id(), new_job_id(), new_job_id()
    writer.create_jobs([
        NewJob(local, JobSpec(target={"command": "true"}, schedule="0 0 * * *", tenant="a"), T0 + DAY),
        NewJob(remote, JobSpec(target={"queue": "q"}, schedule="0 0 * * *", tenant="a"), T0 + DAY),
        NewJob(neighbour, JobSpec(target={"command": "true"}, schedule="0 0 * * *", tenant="b"), T0 + DAY),
    ], T0)
    node = Node(NodeConfig(tmp_path, "n1"), writer, SqliteStore.open(path), EventLog("n1", stream=io.StringIO()))

    async def scenario() -> None:
        for _ in range(3):
            await node.trigger_job(local)
        assert node.dispatcher.queue.depth_of("a") == 3
        with pytest.raises(TooManyRequests) as refused:
            await node.trigger_job(local)
        assert "tenant 'a' has 3 runs waiting to start on this node" in str(refused.value)
        assert refused.value.extra["quota"] == "waiting" and refused.value.retry_after_sec == tenancy.WAITING_RETRY_SEC
        with pytest.raises(TooManyRequests):  # a backfill is refused whole
            await node.backfill(local, T0 - 3 * DAY, T0)
        assert len(writer.list_executions(local, 100)) == 3  # nothing more was made
        await node.trigger_job(remote)  # a queue target's runs wait for remote workers, not here
        await node.trigger_job(neighbour)  # another tenant has its own bound
        assert node.dispatcher.queue.depth_of("b") == 1

    try:
        asyncio.run(scenario())
    finally:
        node.writer.close()
        node.reader.close()
