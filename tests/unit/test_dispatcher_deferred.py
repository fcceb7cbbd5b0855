"""A local worker's result that the store cannot take (a restart, a failover) is kept and
committed once the store is back, instead of being dropped (which would run the job again
when its lease expired). Fake store with injected outages, real asyncio, no bare sleeps."""

from __future__ import annotations

import asyncio
from typing import Any

from cronwheel.core.model import ExecStatus
from cronwheel.core.records import Completion, CompletionResult, LeaseVerdict, Outcome
from cronwheel.store.base import StoreUnavailable
from tests.unit.test_dispatcher_tenants import events, ex, make


async def until(condition: Any, what: str, limit_sec: float = 10.0) -> None:
    """Yield to the loop until ``condition()`` holds; fail after ``limit_sec`` seconds."""
    deadline = asyncio.get_running_loop().time() + limit_sec
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


class FlakyCompletions:
    """complete_executions fails ``outages`` times, then applies (and records) each call."""

    def __init__(self, outages: int) -> None:
        self.outages = outages
        self.applied: list[str] = []

    def __call__(self, completions: list[Completion], now_ms: int, rand01: Any = None) -> list[CompletionResult]:
        if self.outages > 0:
            self.outages -= 1
            raise StoreUnavailable("connection refused (injected)")
        self.applied += [c.execution_id for c in completions]
        return [CompletionResult(c.execution_id, LeaseVerdict.OK, ExecStatus.SUCCEEDED) for c in completions]


def test_a_result_the_store_cannot_take_is_committed_once_it_is_back() -> None:
    async def main() -> None:
        d, pool, out = make({}, {})
        d.completion_retry_ms = (10, 40)
        flaky = FlakyCompletions(outages=3)
        d.writer.store.complete_executions = flaky  # type: ignore[attr-defined]
        d.add([ex("t", 1)])
        await d._dispatch(0)
        (xid,) = pool.granted
        await d.on_results("w1", [Completion(xid, "w1", 1, Outcome.SUCCEEDED)])
        assert d.running_by_tenant == {}, "the slot is free at once: the worker is done"
        assert flaky.applied == [] and len(events(out, "completion.deferred")) == 1
        await until(lambda: flaky.applied == [xid], "the deferred result to commit")
        await until(lambda: len(events(out, "completion.recovered")) == 1, "the recovery event")
        assert len(events(out, "execution.succeeded")) == 1
        await d.stop()

    asyncio.run(main())


def test_deferred_results_are_given_up_when_the_node_stops() -> None:
    async def main() -> None:
        d, pool, _ = make({}, {})
        d.completion_retry_ms = (10, 40)
        flaky = FlakyCompletions(outages=10**9)
        d.writer.store.complete_executions = flaky  # type: ignore[attr-defined]
        d.add([ex("t", 1)])
        await d._dispatch(0)
        await d.on_results("w1", [Completion(pool.granted[0], "w1", 1, Outcome.SUCCEEDED)])
        assert len(d._deferred) == 1
        await d.stop()  # the lease will expire and the reaper retries it: at least once
        await asyncio.sleep(0)
        assert all(t.done() for t in d._deferred) or not d._deferred
        assert flaky.applied == []

    asyncio.run(main())
