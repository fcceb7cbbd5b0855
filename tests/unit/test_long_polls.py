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


def test_an_execution_wakes_one_waiting_poll_the_longest_waiting_not_all_of_them() -> None:
    """Woken all at once, a tenant's 250 idle polls made 250 claims for one execution, 249 in
    vain, and their re-polls stayed in step: a burst of store writes every second ahead of
    every neighbour's (acme's claims went from 22 ms to ~300-570 ms at p99 on PostgreSQL)."""

    async def main() -> None:
        polls = QueuePolls()
        takes: list[int] = []

        def poll(i: int) -> asyncio.Future[object]:
            async def take() -> list[object]:
                takes.append(i)
                return []

            return asyncio.ensure_future(polls.poll(["default"], take, 30, None, "evil"))  # type: ignore[arg-type]

        waiting = []
        for i in range(20):
            waiting.append(poll(i))
            await turns()
        assert takes == list(range(20))
        del takes[:]
        polls.wake([replace(ex("evil", 1), queue="default")])
        await turns()
        assert takes == [0]  # one execution, one claim: the poll that waited longest
        polls.wake([replace(ex("evil", n), queue="default") for n in (2, 3, 4)])
        await turns()
        assert takes == [0, 1, 2, 3]  # three more; the first re-waits, last in line now
        polls.close()
        await asyncio.gather(*waiting)

    asyncio.run(main())


def test_a_woken_poll_whose_caller_is_gone_hands_its_wake_up_to_the_next() -> None:
    """Woken alone now, a poll that returns without claiming (its worker hung up) must not
    leave the execution waiting for the others' re-poll."""

    async def main() -> None:
        polls = QueuePolls()
        takes: list[str] = []
        gone = {"dead": False}

        def poll(name: str) -> asyncio.Future[object]:
            async def take() -> list[object]:
                takes.append(name)
                return []

            alive = (lambda: not gone["dead"]) if name == "dead" else None
            return asyncio.ensure_future(polls.poll(["default"], take, 30, alive, "evil"))  # type: ignore[arg-type]

        dead = poll("dead")
        await turns()
        live = poll("live")
        await turns()
        del takes[:]
        gone["dead"] = True
        polls.wake([replace(ex("evil", 1), queue="default")])
        await turns()
        assert dead.done() and takes == ["live"]
        polls.close()
        await live

    asyncio.run(main())
