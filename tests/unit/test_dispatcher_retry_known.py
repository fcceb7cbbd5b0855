"""A retry the reaper (or a result) scheduled for an execution this node already holds in its
queue: in cluster mode the shared ready queue's refill may take a RETRY_WAIT execution in
before the reaper's own follow-up (``_after_completions``) reads it back. Queued twice, it was
popped twice: two starts of one execution in one batch, or, once the first had been
dispatched, a KeyError in the dispatch loop (seen in a cluster with a node's clock 30 s ahead).
Fake pool and store, as tests/unit/test_dispatcher_tenants.py."""

from __future__ import annotations

import asyncio

from cronwheel.core.model import ExecStatus, Execution, Priority
from cronwheel.core.records import CompletionResult, LeaseVerdict
from tests.unit.test_dispatcher_tenants import T0, make


def test_a_retry_already_queued_here_is_queued_once() -> None:
    async def main() -> None:
        d, pool, _ = make({}, {})
        retry = Execution(f"jr:{T0}", "jr", "t", Priority.DEFAULT, T0, ExecStatus.RETRY_WAIT, available_at=T0)
        d.reader.store.get_execution = lambda xid: retry  # type: ignore[attr-defined]
        d.add([retry])  # the shared refill took it in
        await d._after_completions([CompletionResult(retry.execution_id, LeaseVerdict.OK, ExecStatus.RETRY_WAIT)])
        await d._dispatch(T0)
        await d._dispatch(T0)
        assert pool.granted == [retry.execution_id]
        assert len(d.queue) == 0

    asyncio.run(main())


def test_a_delayed_retry_already_held_here_is_held_once() -> None:
    async def main() -> None:
        d, pool, _ = make({}, {})
        later = T0 + 5_000
        retry = Execution(f"jr:{T0}", "jr", "t", Priority.DEFAULT, T0, ExecStatus.RETRY_WAIT, available_at=later)
        d.reader.store.get_execution = lambda xid: retry  # type: ignore[attr-defined]
        d.add([retry])
        await d._after_completions([CompletionResult(retry.execution_id, LeaseVerdict.OK, ExecStatus.RETRY_WAIT)])
        d.clock.advance(5_000)  # type: ignore[attr-defined]
        await d._dispatch_pass()
        await d._dispatch_pass()
        assert pool.granted == [retry.execution_id]

    asyncio.run(main())
