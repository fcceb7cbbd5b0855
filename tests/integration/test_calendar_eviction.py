"""A calendar deleted or replaced leaves every cache of the node that did it: the claims'
indexes, the readers' parsed calendars, the writer's. Before, only the caches' 16 MiB bounds
let go of it (the revision checks kept a stale one from being used, not from being held)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from cronwheel.core.calendar import build_calendar
from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec
from cronwheel.core.records import NewJob
from cronwheel.engine.node import Node, NodeConfig
from cronwheel.obs.events import EventLog
from cronwheel.store.calendars import calendars_held, indexes_of, parsed_of
from cronwheel.store.sqlite import SqliteStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR = 3_600_000
ALL_BUCKETS = list(range(64))


def test_a_deleted_or_replaced_calendar_leaves_every_cache_of_its_node(tmp_path: Path) -> None:
    path = tmp_path / "cronwheel.db"
    writer, reader, claimer = SqliteStore.open(path), SqliteStore.open(path), SqliteStore.open(path)
    node = Node(NodeConfig(tmp_path, "n1"), writer, reader, EventLog("n1", stream=io.StringIO()), claim_store=claimer)
    job = new_job_id()
    spec = JobSpec(target={"command": "true"}, schedule="0 * * * *", tenant="acme", calendars=("hol",))

    async def scenario() -> None:
        first = await node.put_calendar(build_calendar("hol", ["2026-01-02"], tenant="acme"))
        writer.create_jobs([NewJob(job, spec, T0)], T0 - HOUR)
        # held by each: the writer's (its write), the reader's (a read), the claims' (a claim)
        assert await node.get_calendar("hol", "acme") == first
        assert [e.job_id for e in claimer.claim_due(ALL_BUCKETS, T0, 100).executions] == [job]
        assert indexes_of(claimer).held("acme") == ["hol"] and parsed_of(reader).held("acme") == ["hol"]

        second = await node.put_calendar(build_calendar("hol", ["2026-01-03"], tenant="acme"))
        assert indexes_of(claimer).held("acme") == [] and parsed_of(reader).held("acme") == []
        assert parsed_of(writer).get("acme", "hol", second.revision) is second  # the new one, kept
        assert parsed_of(writer).get("acme", "hol", first.revision) is None

        assert await node.get_calendar("hol", "acme") == second
        assert [e.job_id for e in claimer.claim_due(ALL_BUCKETS, T0 + HOUR, 100).executions] == [job]
        assert indexes_of(claimer).held("acme") == ["hol"]
        await node.cancel_job(job, "acme")
        await node.delete_calendar("hol", "acme")
        assert [calendars_held(s) for s in (writer, reader, claimer)] == [0, 0, 0]

    try:
        asyncio.run(scenario())
    finally:
        for runner in (node.writer, node.reader, node.claimer):
            if runner is not None:
                runner.close()
