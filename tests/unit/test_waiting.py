"""``wait_event``: waiting for an event with a timeout never swallows a cancel.

The race is made deterministic: the event is set and the waiting task cancelled in the same
loop turn, before the task runs again. No clock is involved except timeouts of 0 and of an
hour (never reached)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from cronwheel.worker.waiting import wait_event

Waiter = Callable[[asyncio.Event], Coroutine[Any, Any, Any]]


async def _set_and_cancel_in_one_turn(wait: Waiter) -> str:
    event = asyncio.Event()
    task = asyncio.get_running_loop().create_task(wait(event))
    for _ in range(3):  # let it reach its wait (wait_for starts an inner task: two steps)
        await asyncio.sleep(0)
    assert not task.done()
    event.set()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return "cancelled"
    return "returned"


async def _old_pattern(event: asyncio.Event) -> None:
    await asyncio.wait_for(event.wait(), timeout=3600)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 rewrote wait_for on asyncio.timeout")
def test_the_old_wait_for_form_swallows_a_cancel_that_comes_as_the_event_is_set() -> None:
    assert asyncio.run(_set_and_cancel_in_one_turn(_old_pattern)) == "returned"


def test_a_cancel_that_comes_as_the_event_is_set_is_raised() -> None:
    assert asyncio.run(_set_and_cancel_in_one_turn(lambda e: wait_event(e, 3600))) == "cancelled"
    assert asyncio.run(_set_and_cancel_in_one_turn(lambda e: wait_event(e, None))) == "cancelled"


def test_set_is_true_and_a_timeout_false() -> None:
    async def main() -> list[bool]:
        event = asyncio.Event()
        timed_out = await wait_event(event, 0)
        loop = asyncio.get_running_loop()
        loop.call_soon(event.set)
        woken = await wait_event(event, 3600)
        already = await wait_event(event, 0)
        return [timed_out, woken, already]

    assert asyncio.run(main()) == [False, True, True]


def test_a_cancel_while_waiting_is_raised() -> None:
    async def main() -> None:
        task = asyncio.get_running_loop().create_task(wait_event(asyncio.Event(), 3600))
        await asyncio.sleep(0)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
