"""Remote workers' long polls (``claim_for_worker``): who waits for which queue, woken when
an execution of the queue becomes dispatchable on this node.

Composed into the node (``Node.polls``): the dispatcher tells it what it queued
(``Dispatcher.on_queued``), the executions part runs each poll through it, and the node
closes it when it stops, so that every poll answers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence

from cronwheel.core.model import Execution, Grant

#: while nothing wakes a long poll, it asks the store again this often (seconds), for what
#: other nodes (or time, for retries and jitter) made dispatchable
REPOLL_SEC = 1.0


class QueuePolls:
    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self.open = True

    def wake(self, executions: Sequence[Execution]) -> None:
        """Queue executions became dispatchable on this node: wake the long polls of their queues."""
        for ex in executions:
            for ev in self._waiters.get(ex.queue or "", ()):
                ev.set()

    def close(self) -> None:
        """The node stops: every long poll answers now, and new ones at once."""
        self.open = False
        for waiters in self._waiters.values():
            for ev in waiters:
                ev.set()

    async def poll(
        self, queues: list[str], take: Callable[[], Awaitable[list[Grant]]], wait_sec: float,
        alive: Callable[[], bool] | None,
    ) -> list[Grant]:
        """``take()`` until it grants something, ``wait_sec`` has passed, the caller no
        longer waits (``alive``) or the node stops; woken early by ``wake`` for one of
        ``queues``."""
        deadline = time.monotonic() + wait_sec
        wake = asyncio.Event()
        for name in queues:
            self._waiters.setdefault(name, set()).add(wake)
        try:
            while True:
                wake.clear()  # a wake-up during the claim below makes the next poll immediate
                if alive is not None and not alive():
                    return []
                grants = await take()
                left = deadline - time.monotonic()
                if grants or left <= 0 or not self.open:
                    return grants
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=min(REPOLL_SEC, left))
        finally:
            for name in queues:
                waiters = self._waiters.get(name)
                if waiters is not None:
                    waiters.discard(wake)
                    if not waiters:
                        del self._waiters[name]
