"""The node's reads take turns by asker (engine/fairturns.py), on a real SQLite store and the
real reader thread. The thread is held by a first read that waits on an event, so that every
other read is queued before any is taken: the order the thread serves them in is then the
runner's choice alone, with nothing timed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from cronwheel.engine import fairturns
from cronwheel.engine.fairturns import FairStoreRunner, asking
from cronwheel.engine.runner import StoreRunner
from cronwheel.store.base import Store, StoreUnavailable
from cronwheel.store.sqlite import SqliteStore


def _reader(tmp_path: Path) -> FairStoreRunner:
    return FairStoreRunner(SqliteStore.open(tmp_path / "cw.db"), "reader")


async def _held(runner: FairStoreRunner, order: list[str]) -> tuple[threading.Event, asyncio.Task[Any]]:
    """The thread busy with a read that waits for the returned event."""
    gate = threading.Event()

    def hold(s: Store) -> None:
        assert gate.wait(30), "the test never let the held read go"
        order.append("held")

    return gate, asyncio.get_running_loop().create_task(runner.run(hold))


def _ask(runner: FairStoreRunner, who: str | None, tag: str, order: list[str]) -> asyncio.Task[Any]:
    """A task reading for ``who`` (None: the engine) that records ``tag`` when it is served."""

    async def read() -> Any:
        asking.set(who)  # this task's own context: what the API's middleware does per request
        return await runner.run(lambda s: (order.append(tag), s.get_job("nope"))[1])

    return asyncio.get_running_loop().create_task(read())


async def _queued(runner: FairStoreRunner, n: int) -> None:
    """Until ``n`` reads wait their turn (each task needs one loop turn to queue its read)."""
    for _ in range(1000):
        if runner.waiting() == n:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{runner.waiting()} reads waiting, not {n}")


def _run(tmp_path: Path, scenario: Callable[[FairStoreRunner], Coroutine[Any, Any, None]]) -> None:
    runner = _reader(tmp_path)
    try:
        asyncio.run(scenario(runner))
    finally:
        runner.close()


def test_askers_take_turns_and_the_engine_goes_first(tmp_path: Path) -> None:
    order: list[str] = []

    async def scenario(runner: FairStoreRunner) -> None:
        gate, held = await _held(runner, order)
        tasks = [_ask(runner, "a", f"a{i}", order) for i in range(1, 6)]
        tasks += [_ask(runner, "b", f"b{i}", order) for i in range(1, 3)]
        tasks.append(_ask(runner, None, "engine", order))
        # the held read and a1 are with the thread (two at a time), the engine's read behind
        # them at once; the rest wait
        await _queued(runner, 6)
        gate.set()
        await asyncio.gather(held, *tasks)

    _run(tmp_path, scenario)
    # first come, first served would be held, a1..a5, b1, b2, engine: b behind all of a's flood
    assert order == ["held", "a1", "engine", "b1", "a2", "b2", "a3", "a4", "a5"]


def test_a_newcomer_goes_before_an_asker_already_served(tmp_path: Path) -> None:
    order: list[str] = []

    async def scenario(runner: FairStoreRunner) -> None:
        gate, held = await _held(runner, order)
        tasks = [_ask(runner, "a", f"a{i}", order) for i in range(1, 5)]
        await _queued(runner, 3)  # a1 is with the thread
        tasks += [_ask(runner, "c", "c1", order), _ask(runner, "b", "b1", order)]
        await _queued(runner, 5)
        gate.set()
        await asyncio.gather(held, *tasks)

    _run(tmp_path, scenario)
    assert order == ["held", "a1", "c1", "b1", "a2", "a3", "a4"]


def test_a_read_whose_caller_left_is_never_run(tmp_path: Path) -> None:
    order: list[str] = []

    async def scenario(runner: FairStoreRunner) -> None:
        gate, held = await _held(runner, order)
        first = _ask(runner, "a", "a1", order)
        gone = _ask(runner, "a", "gone", order)
        after = _ask(runner, "b", "b1", order)
        await _queued(runner, 2)
        gone.cancel()  # a client that hung up: aiohttp cancels its handler
        gate.set()
        await asyncio.gather(held, first, after)
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert runner.waiting() == 0

    _run(tmp_path, scenario)
    assert order == ["held", "a1", "b1"]


def test_a_failing_read_fails_its_caller_only(tmp_path: Path) -> None:
    async def scenario(runner: FairStoreRunner) -> None:
        asking.set("a")

        def broken(s: Store) -> None:
            raise ValueError("no such thing")

        results = await asyncio.gather(runner.run(broken), runner.run(lambda s: s.get_job("nope")), return_exceptions=True)
        assert isinstance(results[0], ValueError) and results[1] is None
        assert await runner.run(lambda s: "still serving") == "still serving"

    _run(tmp_path, scenario)


def test_reads_after_the_close_and_those_left_waiting_hear_the_node_is_stopping(tmp_path: Path) -> None:
    """While the node stops, the API answers to the end: a read it asks for after the store
    closed (or one still waiting its turn then) is a StoreUnavailable, which the API answers
    503 with Retry-After, not an executor's RuntimeError and a 500."""

    async def scenario(runner: FairStoreRunner) -> None:
        order: list[str] = []
        gate, held = await _held(runner, order)
        handed = _ask(runner, "acme", "handed", order)  # IN_FLIGHT: handed to the thread behind the held one
        waiting = [_ask(runner, "acme", "a", order)]
        engine = _ask(runner, None, "engine", order)  # the engine's: handed to the thread at once
        await _queued(runner, 1)
        gate.set()
        runner.close()  # lets the reads handed to the thread end, then closes the store
        await held
        assert await handed is None and await engine is None
        for task in waiting:
            with pytest.raises(StoreUnavailable, match="stopping"):
                await task
        with pytest.raises(StoreUnavailable, match="stopping"):
            await runner.run(lambda s: s.get_job("nope"))
        writer = StoreRunner(SqliteStore.open(tmp_path / "cw.db"), "writer")
        writer.close()
        with pytest.raises(StoreUnavailable, match="stopping"):
            await writer.run(lambda s: s.get_job("nope"))
        assert order == ["held", "handed", "engine"]

    _run(tmp_path, scenario)


def test_askers_that_came_and_went_are_forgotten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node runs for months and tenants come and go: the turns remember the most recently
    served askers only, and one forgotten is a newcomer again, which it was nearly anyway."""
    monkeypatch.setattr(fairturns, "REMEMBERED", 100, raising=False)  # raising: the old code had no bound
    order: list[str] = []

    async def scenario(runner: FairStoreRunner) -> None:
        gate, held = await _held(runner, order)
        tasks = [_ask(runner, f"tenant-{i}", f"t{i}", order) for i in range(300)]
        await _queued(runner, 299)
        gate.set()
        await asyncio.gather(held, *tasks)
        for i in range(300, 600):  # one at a time, as most tenants read
            await _ask(runner, f"tenant-{i}", f"t{i}", order)
        assert len(order) == 601
        assert list(runner._served_at) == [f"tenant-{i}" for i in range(500, 600)]

    _run(tmp_path, scenario)


def test_the_tenants_remembered_leave_out_roles_and_client_lines(tmp_path: Path) -> None:
    """Status's ``tenantStateEntries`` counts what a node holds per tenant: a role's line and a
    client address's (a token checked before anyone knows whose it is) are not a tenant's."""

    async def scenario(runner: FairStoreRunner) -> None:
        for who in ("acme", "(admin)", "(client 192.0.2.1)", "(client 2001:db8::/64)", "globex"):
            await _ask(runner, who, who, [])
        assert runner.remembered_tenants() == 2

    _run(tmp_path, scenario)
