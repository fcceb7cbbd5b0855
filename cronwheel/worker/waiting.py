"""Waiting for an ``asyncio.Event`` with a timeout, without ever swallowing a cancel.

``asyncio.wait_for(event.wait(), timeout)`` is the obvious form, and on Python 3.11 it loses
a cancel that arrives in the loop turn the event is set: ``wait_for`` sees its inner wait
done and returns its result instead of raising ``CancelledError``. A loop that relies on
being cancelled then goes on, and one that waits again can hang for ever (a worker's
heartbeat loop did). ``asyncio.timeout`` delivers the cancel into the awaited wait itself
and tells its own timeout from a cancel from outside, so nothing is lost.

It lives in the worker layer because the worker hit the bug first and the engine, the only
other layer with an event loop, sits above it and may import it.
"""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, seconds: float | None) -> bool:
    """Wait until ``event`` is set (True) or ``seconds`` have passed (False; None: no
    time limit). A cancel of the waiting task is always raised, even one that comes in the
    loop turn the event is set."""
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True
