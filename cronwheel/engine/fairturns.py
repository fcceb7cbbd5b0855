"""A node's reads and writes, shared fairly between the callers that ask for them.

One reader thread serves every read of a node: the API's, and the engine's own (the
scheduler's due reads, the dispatcher's refills). Served in the order they came, a tenant
that keeps a hundred listings in flight makes every other caller wait behind all of them:
tenant b's five-job listing went from 3 ms to 12 s under tenant a's 100 connections listing
1,000 jobs each (docs/benchmarks.md, "A neighbour's reads"), and the scheduler's reads
queued there too. So the engine's own reads go to the thread at once (every tenant's jobs
depend on them), and the callers' wait in one line per asker, taken in turns: one read from
each asker that has one waiting, round robin, ``IN_FLIGHT`` with the thread at most. A flood
then costs anyone else at most the reads already handed to the thread.

The node's writer takes its calls the same way: a remote worker's claims and heartbeats are
single writes made by the request, and a tenant's flood of them (64 connections claiming
in a loop) took a neighbour's claims from 3 ms to 410 ms at p99 on PostgreSQL, 22 ms in
turns. A write still waiting for its turn when the node closes is refused as a read is
(``STOPPING``: the API answers 503), never run half-way.

Who asks is ``asking``, a context variable: the API sets it for each request (the client's
address while its token is checked, then the tenant, or the role of a caller with none),
and the engine's own tasks leave it unset.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from cronwheel.engine.runner import STOPPING, StoreRunner
from cronwheel.store.base import Store, StoreUnavailable

T = TypeVar("T")

#: who the current task reads for (a tenant's name, or ``(admin)`` for a caller without
#: one); None: the engine itself
asking: ContextVar[str | None] = ContextVar("cronwheel_reads_asking", default=None)

#: reads handed to the thread at once: two keep it busy while the event loop is slow to hand
#: it the next one (one would leave it idle for a loop turn after each read), and bound what
#: a newcomer waits for
IN_FLIGHT = 2
#: askers whose last turn is remembered: tenants come and go for as long as the node runs
REMEMBERED = 1024

_Waiting = tuple[Callable[[Store], Any], "asyncio.Future[Any]"]


class FairStoreRunner(StoreRunner):
    """A ``StoreRunner`` whose waiting calls are taken in turns by asker (see the module)."""

    def __init__(self, store: Store, name: str, in_flight: int = IN_FLIGHT) -> None:
        super().__init__(store, name)
        self._in_flight = in_flight
        self._running = 0
        self._engine: deque[_Waiting] = deque()
        self._askers: dict[str, deque[_Waiting]] = {}
        #: the hand-over at which each asker was last served: the least recent of those waiting
        #: goes next, and one never served before any other. One number per tenant (and per
        #: role without one), the least recently served forgotten past REMEMBERED.
        self._served_at: dict[str, int] = {}
        self._handed = 0

    async def run(self, fn: Callable[[Store], T]) -> T:
        if self.closed:
            raise StoreUnavailable(STOPPING)
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        who = asking.get()
        if who is None:
            self._engine.append((fn, fut))
        else:
            self._askers.setdefault(who, deque()).append((fn, fut))
        self._hand_over()
        return await fut

    def close(self) -> None:
        super().close()
        # reads still waiting for their turn will not get one
        for _, fut in [*self._engine, *(w for line in self._askers.values() for w in line)]:
            if not fut.done():
                fut.set_exception(StoreUnavailable(STOPPING))
        self._engine.clear()
        self._askers.clear()

    def forget(self, asker: str) -> None:
        """Drop ``asker``'s last turn (a deleted tenant's); its waiting calls, if any, keep theirs."""
        if asker not in self._askers:
            self._served_at.pop(asker, None)

    def remembered_tenants(self) -> int:
        """Tenants whose last turn is remembered (askers remembered: at most REMEMBERED), not
        a role's or a client address's line, whose names are in parentheses (``(admin)``,
        ``(client 192.0.2.1)``), which no tenant's name can be."""
        return sum(1 for asker in self._served_at if not asker.startswith("("))

    def waiting(self) -> int:
        """How many reads wait for their turn (not counting those handed to the thread)."""
        return len(self._engine) + sum(len(line) for line in self._askers.values())

    def _next(self) -> _Waiting | None:
        self._handed += 1
        if not self._askers:
            return None
        who = min(self._askers, key=lambda w: self._served_at.get(w, -1))
        line = self._askers[who]
        waiting = line.popleft()
        if not line:
            del self._askers[who]
        self._served_at.pop(who, None)
        self._served_at[who] = self._handed  # re-inserted: the least recently served first
        while len(self._served_at) > REMEMBERED:
            # forgotten, the least recent counts as never served: still before all the others
            del self._served_at[next(iter(self._served_at))]
        return waiting

    def _hand_over(self) -> None:
        # the engine's own calls go to the thread at once, whatever is in flight: the writer's
        # are a herd's starts and completions, and held to two in flight the thread sat idle
        # for a loop turn after each (a 100,000-job spike took ~8 % longer)
        while self._engine:
            self._start(*self._engine.popleft())
        while self._running < self._in_flight:
            waiting = self._next()
            if waiting is None:
                return
            self._start(*waiting)

    def _start(self, fn: Callable[[Store], Any], fut: asyncio.Future[Any]) -> None:
        if fut.done():  # its caller gave up (a client that hung up) before its turn
            return
        self._running += 1
        done = asyncio.get_running_loop().run_in_executor(self._executor, fn, self.store)
        done.add_done_callback(functools.partial(self._finished, fut))

    def _finished(self, fut: asyncio.Future[Any], done: asyncio.Future[Any]) -> None:
        self._running -= 1
        if done.cancelled():
            fut.cancel()
        elif (exc := done.exception()) is not None:  # read even when nobody waits any more
            if not fut.done():
                fut.set_exception(exc)
        elif not fut.done():
            fut.set_result(done.result())
        self._hand_over()
