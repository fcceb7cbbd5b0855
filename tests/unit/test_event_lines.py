"""Above a rate, a herd's per-execution event lines become one line per batch: the events
are still counted, kept in the ring (what ``logs -f JOB`` streams) and logged at debug level;
below the rate every line is as before. Fake store and pool, real asyncio."""

from __future__ import annotations

import asyncio
from typing import Any

from cronwheel.core.model import ExecStatus
from cronwheel.core.ratelimit import PerSecond
from cronwheel.core.records import Completion, CompletionResult, LeaseVerdict, Outcome
from tests.unit.test_dispatcher_tenants import events, ex, make


def test_per_second_counts_each_whole_second() -> None:
    gate = PerSecond(10)
    assert not gate.over(6, 100.1) and not gate.over(4, 100.9)
    assert gate.over(1, 100.95)
    assert not gate.over(10, 101.0), "a new second starts from zero"


def test_below_the_rate_every_execution_has_its_lines() -> None:
    async def main() -> None:
        d, pool, out = make({}, {})
        d.add([ex("t", i) for i in range(10)])
        await d._dispatch(0)
        await d.on_results("w1", [Completion(x, "w1", 1, Outcome.SUCCEEDED) for x in pool.granted])
        assert len(events(out, "execution.started")) == 10 and len(events(out, "execution.succeeded")) == 10
        assert not events(out, "executions.started") and not events(out, "executions.succeeded")
        await d.stop()

    asyncio.run(main())


def test_above_the_rate_a_batch_is_one_line_and_nothing_is_lost() -> None:
    async def main() -> None:
        d, pool, out = make({}, {})
        d.started_lines, d.finished_lines = PerSecond(5), PerSecond(5)
        d.add([ex("t", i) for i in range(20)])
        await d._dispatch(0)
        await d.on_results("w1", [Completion(x, "w1", 1, Outcome.SUCCEEDED) for x in pool.granted[:2]])
        await d.on_results("w1", [Completion(x, "w1", 1, Outcome.SUCCEEDED) for x in pool.granted[2:]])
        (started,) = events(out, "executions.started")
        assert started["count"] == 20 and started["lagMsMin"] <= started["lagMsMax"]
        assert not events(out, "execution.started")
        assert len(events(out, "execution.succeeded")) == 2, "the first results of the second are lines of their own"
        assert [e["count"] for e in events(out, "executions.succeeded")] == [18]
        # every event is still there: counted (metrics), in the ring, at debug level
        log = d.events
        assert log.counts["execution.started"] == 20 and log.counts["execution.succeeded"] == 20
        ring = [r for r in log.ring if r["event"] == "execution.started"]
        assert len(ring) == 20 and {r["level"] for r in ring} == {"debug"}
        assert {r["executionId"] for r in ring} == set(pool.granted)
        await d.stop()

    asyncio.run(main())


def test_failures_are_never_summed_up() -> None:
    async def main() -> None:
        d, pool, out = make({}, {})
        d.finished_lines = PerSecond(0)

        def dead(cs: list[Completion], now_ms: int, rand01: Any = None) -> list[CompletionResult]:
            return [CompletionResult(c.execution_id, LeaseVerdict.OK, ExecStatus.DEAD) for c in cs]

        d.writer.store.complete_executions = dead  # type: ignore[attr-defined]
        d.add([ex("t", i) for i in range(3)])
        await d._dispatch(0)
        await d.on_results("w1", [Completion(x, "w1", 1, Outcome.FAILED) for x in pool.granted])
        assert len(events(out, "execution.dead_lettered")) == 3 and not events(out, "executions.succeeded")
        await d.stop()

    asyncio.run(main())


def test_a_batch_of_events_is_what_one_emit_each_would_be() -> None:
    """emit_many: the same records (seq, jobId from the execution id, no None fields), counts,
    ring and lines; per-record subscribers get each, batch subscribers the list once."""
    import io
    import json

    from cronwheel.obs.events import EventLog

    out = io.StringIO()
    log = EventLog("n", stream=out, fmt="json")
    each: list[dict[str, Any]] = []
    batches: list[list[dict[str, Any]]] = []
    log.subscribe(each.append)
    log.subscribe_many(batches.append)
    log.emit("job.created", jobId="j0")
    log.emit_many("execution.started", [{"executionId": "j1:5", "lagMs": 3, "error": None}, {"executionId": "j2:6"}])
    log.emit_many("execution.started", [])
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [r["seq"] for r in lines] == [1, 2, 3] and [r["jobId"] for r in lines] == ["j0", "j1", "j2"]
    assert "error" not in lines[1] and lines[1]["lagMs"] == 3 and lines[2]["level"] == "info"
    assert log.counts["execution.started"] == 2 and list(log.ring) == lines == each
    assert [len(b) for b in batches] == [1, 2]
