"""Walks over many ticks (a herd preview, a job's upcoming ticks, a backfill's plan), computed
off the event loop in threads of their own, one at a time for each asker.

On the event loop, a tenant's request for the upcoming ticks of a job observing 8 calendars
of 5,000 days held it 3 s: the node answered nobody and started nothing meanwhile. So a walk
runs in a thread. The threads are the walks' own, not asyncio's default pool: that pool also
sends the notifications' email and, at a start, ends the runs a killed node left behind, and
a few tenants' long walks filled it (2 cores: 6 threads) so that those waited behind them. One at a
time for each asker (a tenant; None: an admin): a tenant asking many at once waits its own
turn while the others' walks run beside its own, and with each asker holding at most one
thread, the pool's first-come order is a round among the askers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: threads computing walks at once, whoever asked; more askers wait in arrival order
WALK_THREADS = 2


class Walks:
    def __init__(self, threads: int = WALK_THREADS) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="walks")
        #: each asker's turn while it has a walk under way or waiting; dropped when it has none,
        #: so the map holds the askers of the moment, not every tenant that ever asked
        self._turns: dict[str | None, tuple[asyncio.Lock, list[int]]] = {}

    @property
    def askers(self) -> int:
        """Askers with a walk under way or waiting."""
        return len(self._turns)

    async def run(self, asker: str | None, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a walk thread, after ``asker``'s earlier walks."""
        turn = self._turns.get(asker)
        if turn is None:
            turn = self._turns[asker] = (asyncio.Lock(), [0])
        lock, users = turn
        users[0] += 1
        try:
            async with lock:
                return await asyncio.get_running_loop().run_in_executor(self._executor, lambda: fn(*args))
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._turns[asker]

    def close(self) -> None:
        """Walks not yet started are dropped (their askers get ``CancelledError``); one under way
        ends in its thread, unwaited: the node is stopping and nobody reads its answer."""
        self._executor.shutdown(wait=False, cancel_futures=True)
