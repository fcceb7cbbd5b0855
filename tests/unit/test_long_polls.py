"""Remote workers' long polls (engine/longpoll.py): which executions wake which polls. Polls
on a fake ``take``; the loop runs turns, and no time passes."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from cronwheel.engine.longpoll import QueuePolls
from tests.unit.test_dispatcher_stop import turns
from tests.unit.test_dispatcher_tenants import ex


def test_a_tenants_queued_execution_wakes_its_own_polls_and_an_admins_not_a_neighbours() -> None:
    """A wake makes each poll claim from the store again. Keyed by the queue's name alone, a
    tenant queueing work in a queue its neighbours also poll ('default') made every one of
    their workers' long polls claim in vain, a write transaction each, per batch it queued."""

    async def main() -> None:
        polls = QueuePolls()
        takes = {"acme": 0, "evil": 0, None: 0}

        def poll(tenant: str | None) -> asyncio.Future[object]:
            async def take() -> list[object]:
                takes[tenant] += 1
                return []

            return asyncio.ensure_future(polls.poll(["default"], take, 30, None, tenant))  # type: ignore[arg-type]

        waiting = [poll("acme"), poll("evil"), poll(None)]
        await turns()
        assert takes == {"acme": 1, "evil": 1, None: 1}
        polls.wake([replace(ex("evil", 1), queue="default")])
        await turns()
        assert takes == {"acme": 1, "evil": 2, None: 2}
        polls.wake([replace(ex("acme", 1), queue="other")])
        await turns()
        assert takes == {"acme": 1, "evil": 2, None: 2}
        polls.close()
        await asyncio.gather(*waiting)

    asyncio.run(main())
