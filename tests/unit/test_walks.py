"""Walks over many ticks run in threads of their own, one at a time for each asker, and do not
wait behind (or fill) asyncio's default pool, which sends email and ends runs left behind."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from cronwheel.engine.walks import Walks

DEADLINE_S = 10


def test_a_walk_does_not_wait_behind_a_full_default_pool() -> None:
    asyncio.run(_a_walk_does_not_wait_behind_a_full_default_pool())


async def _a_walk_does_not_wait_behind_a_full_default_pool() -> None:
    loop = asyncio.get_running_loop()
    default = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(default)
    release = threading.Event()
    held = loop.run_in_executor(None, release.wait)  # an email send that hangs, say
    walks = Walks()
    try:
        answer = await asyncio.wait_for(walks.run("acme", sum, range(10)), DEADLINE_S)
        assert answer == 45
    finally:
        release.set()
        await held
        walks.close()


def test_each_asker_takes_its_turn_and_neighbours_run_beside() -> None:
    asyncio.run(_each_asker_takes_its_turn_and_neighbours_run_beside())


async def _each_asker_takes_its_turn_and_neighbours_run_beside() -> None:
    walks = Walks(threads=2)
    first_in = threading.Event()
    let_go = threading.Event()

    def slow() -> str:
        first_in.set()
        let_go.wait(DEADLINE_S)
        return "slow"

    try:
        slow_walk = asyncio.ensure_future(walks.run("evil", slow))
        await asyncio.wait_for(asyncio.to_thread(first_in.wait, DEADLINE_S), DEADLINE_S)
        queued = asyncio.ensure_future(walks.run("evil", lambda: "second"))
        # acme's walk is not queued behind evil's: it has a thread while evil's first holds one
        assert await asyncio.wait_for(walks.run("acme", lambda: "acme"), DEADLINE_S) == "acme"
        assert not queued.done()  # evil's second waits for evil's first
        let_go.set()
        assert await asyncio.wait_for(slow_walk, DEADLINE_S) == "slow"
        assert await asyncio.wait_for(queued, DEADLINE_S) == "second"
        assert walks.askers == 0  # no turn kept for an asker with nothing under way
    finally:
        let_go.set()
        walks.close()


def test_a_failing_walk_gives_up_its_turn() -> None:
    asyncio.run(_a_failing_walk_gives_up_its_turn())


async def _a_failing_walk_gives_up_its_turn() -> None:
    walks = Walks()

    def fails() -> None:
        raise ValueError("bad walk")

    try:
        try:
            await walks.run("acme", fails)
        except ValueError as exc:
            assert str(exc) == "bad walk"
        else:
            raise AssertionError("the walk's error was not raised")
        assert walks.askers == 0
        assert await walks.run("acme", lambda: 1) == 1
    finally:
        walks.close()
