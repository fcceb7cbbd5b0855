"""A node's stop and its dispatcher: what came due before the stop is offered to the workers,
and a dispatch pass under way sends its grants before the stop goes on to tell the workers
bye (otherwise its executions, RUNNING in the store, reach no worker: run again after the
restart, or in a cluster left to their leases' expiry on another node). Fake store and pool
(tests/unit/test_dispatcher_tenants.py), a fake clock, a gate on the store's start write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from cronwheel.store.base import StoreUnavailable
from tests.unit.test_dispatcher_tenants import T0, ex, make


async def turns(n: int = 20) -> None:
    """Let the loop run ``n`` turns (no time passes)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def start_due_before_as_time_passes(d: Any, until_ms: int, advance_ms: int) -> None:
    """``d.start_due_before(until_ms)``, while the fake clock moves ``advance_ms`` on."""
    clock: Any = d.clock

    async def time_passes() -> None:
        await turns()
        clock.advance(advance_ms)

    mover = asyncio.ensure_future(time_passes())
    await asyncio.wait_for(d.start_due_before(until_ms), 5)
    await mover


def test_a_stop_waits_for_the_dispatch_pass_under_way_to_send_its_grants() -> None:
    async def main() -> None:
        d, pool, _ = make({}, {})
        runner: Any = d.writer
        gate, entered = asyncio.Event(), asyncio.Event()
        run = runner.run

        async def held(fn: Callable[[Any], Any]) -> Any:
            entered.set()
            await gate.wait()  # the start write, slow (a PostgreSQL commit under load)
            return await run(fn)

        runner.run = held
        d.pool = pool  # type: ignore[assignment]
        d.add([ex("t", 1)])
        loop = asyncio.ensure_future(d._dispatch_loop())
        await asyncio.wait_for(entered.wait(), 5)
        stopping = asyncio.ensure_future(d.stop_accepting())
        await turns()
        assert not stopping.done(), "the stop went on while a pass was writing its starts"
        gate.set()
        await asyncio.wait_for(stopping, 5)
        assert pool.granted == [ex("t", 1).execution_id], "the pass's grant was sent before the stop went on"
        d.add([ex("t", 2)])
        await turns()
        assert pool.granted == [ex("t", 1).execution_id], "nothing is granted once the stop began"
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await d.stop()

    asyncio.run(main())


def test_a_stop_offers_what_comes_due_within_its_window_itself() -> None:
    """The ticks claimed ahead wait here for their instant; the stop waits for it and makes
    the pass itself (no dispatch loop runs in this test), so they are offered before it returns."""

    async def main() -> None:
        d, pool, _ = make({}, {})
        due_soon = ex("t", 1)
        due_soon.available_at = T0 + 20
        later = ex("t", 2)
        later.available_at = T0 + 5_000
        d.add([due_soon, later])
        assert pool.granted == []
        await start_due_before_as_time_passes(d, T0 + 2_000, advance_ms=20)
        assert pool.granted == [due_soon.execution_id], "what came due within the window, and only that"
        await d.stop()

    asyncio.run(main())


def test_a_stop_whose_last_pass_finds_the_store_down_goes_on() -> None:
    """Its ticks stay PENDING in the store (they run after the restart): the stop itself must
    not fail, or the pool and the store would never be closed."""

    async def main() -> None:
        d, pool, out = make({}, {})

        def unavailable(*_: Any) -> Any:
            raise StoreUnavailable("connection refused (injected)")

        d.writer.store.start_executions = unavailable  # type: ignore[attr-defined]
        due_soon = ex("t", 1)
        due_soon.available_at = T0 + 20
        d.add([due_soon])
        await start_due_before_as_time_passes(d, T0 + 2_000, advance_ms=20)
        assert pool.granted == [] and len(d.queue) == 1, "still queued, and PENDING in the store"
        assert '"store.unavailable"' in out.getvalue()
        await d.stop()

    asyncio.run(main())
