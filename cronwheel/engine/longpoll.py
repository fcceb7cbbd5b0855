"""Remote workers' long polls (``claim_for_worker``): who waits for which queue, woken when
an execution of the queue becomes dispatchable on this node. A poll is a tenant's (its
worker token's) or an admin's (every tenant's): an execution wakes the polls of its tenant
and the admins', not its neighbours', whose claims could not take it (each woken poll asks
the store again: a read, then a write transaction when the read found something). And only as many of them as there are
executions, longest waiting first: waking all of a tenant's 250 polls for one execution made
250 claims, 249 in vain, and left their re-polls in step, a burst of writes every second
ahead of every other tenant's (a neighbour's claims went from 22 ms to ~300-570 ms at p99).
A poll not woken still claims again within ``REPOLL_SEC``.

Composed into the node (``Node.polls``): the dispatcher tells it what it queued
(``Dispatcher.on_queued``), the executions part runs each poll through it, and the node
closes it when it stops, so that every poll answers at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from cronwheel.core.model import Execution, Grant
from cronwheel.worker.waiting import wait_event

#: while nothing wakes a long poll, it asks the store again this often (seconds), for what
#: other nodes (or time, for retries and jitter) made dispatchable
REPOLL_SEC = 1.0


#: whose polls wait on which queue: (tenant, queue name), the tenant None for an admin's
_Key = tuple[str | None, str]


class QueuePolls:
    def __init__(self) -> None:
        #: the waiting polls' events per key, in the order they began to wait (a dict as an ordered set)
        self._waiters: dict[_Key, dict[asyncio.Event, None]] = {}
        self.open = True

    def wake(self, executions: Sequence[Execution]) -> None:
        """Queue executions became dispatchable on this node: wake the long polls of their
        queues that may take them (their tenant's and the admins'), one poll per execution."""
        wanted: dict[_Key, int] = {}
        for ex in executions:
            keys: tuple[_Key, _Key] = ((ex.tenant, ex.queue or ""), (None, ex.queue or ""))
            for key in keys:
                wanted[key] = wanted.get(key, 0) + 1
        for key, n in wanted.items():
            self._wake([key], n)

    def _wake(self, keys: list[_Key], n: int, but: asyncio.Event | None = None) -> None:
        """Wake up to ``n`` polls waiting on each of ``keys``, the longest waiting first."""
        for key in keys:
            left = n
            for ev in self._waiters.get(key, ()):
                if left <= 0:
                    break
                if ev is not but and not ev.is_set():  # one already woken claims anyway: wake another
                    ev.set()
                    left -= 1

    def close(self) -> None:
        """The node stops: every long poll answers now, and new ones at once."""
        self.open = False
        for waiters in self._waiters.values():
            for ev in waiters:
                ev.set()

    async def poll(
        self, queues: list[str], take: Callable[[], Awaitable[list[Grant]]], wait_sec: float,
        alive: Callable[[], bool] | None, tenant: str | None = None,
    ) -> list[Grant]:
        """``take()`` until it grants something, ``wait_sec`` has passed, the caller no
        longer waits (``alive``) or the node stops; woken early by ``wake`` for one of
        ``queues`` of ``tenant`` (None: an admin's poll, any tenant's)."""
        deadline = time.monotonic() + wait_sec
        wake = asyncio.Event()
        keys = [(tenant, name) for name in queues]
        for key in keys:
            self._waiters.setdefault(key, {})[wake] = None
        woken = False
        try:
            while True:
                wake.clear()  # a wake-up during the claim below makes the next poll immediate
                if alive is not None and not alive():
                    if woken:  # its caller is gone: another poll takes the execution it was woken for
                        self._wake(keys, 1, but=wake)
                    return []
                grants = await take()
                left = deadline - time.monotonic()
                if grants or left <= 0 or not self.open:
                    return grants
                if woken:  # in vain (another poll took it): to the back of the line
                    for key in keys:
                        self._waiters[key][wake] = self._waiters[key].pop(wake)
                woken = await wait_event(wake, min(REPOLL_SEC, left))
        finally:
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.pop(wake, None)
                    if not waiters:
                        del self._waiters[key]
