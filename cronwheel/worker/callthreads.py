"""The threads that run plain (sync) Python callables for a worker, handing their results back
to the event loop in batches.

``loop.run_in_executor`` with a ``ThreadPoolExecutor`` costs, per call, a concurrent future
(a condition variable and its lock), a work item, an idle-semaphore probe, and a
``call_soon_threadsafe`` that writes to the loop's self-pipe: in a herd of no-op callables that
was most of a worker's CPU. Here a call is an append to a queue under one lock; a finished call
is appended to a list, and the loop is woken once for every call that finished before it got
round to looking.

Threads are woken as the calls need them, not one per call. A thread that finishes a call takes
the next queued one itself, so a burst of quick calls is run by the one thread that was woken
for it (an executor wakes or starts a thread for every call, and in a herd of 256 no-op calls
per worker those ~150 threads fought over the GIL: about half the worker's CPU,
docs/benchmarks.md). When calls are queued and none has finished for ``stall_s``, the running
ones are taken to be blocking, and more threads are woken or started (``threads_to_add``): up
to ``size`` calls still run at once, each in its own thread; a blocking call delays the calls
queued behind it by about ``stall_s``.

Otherwise the semantics are the executor's: a callable that never returns keeps its thread (it
cannot be killed) and the awaiting side may give up on it (its future cancelled, or failed by a
timeout: its late result is dropped); ``close`` lets running calls run and cancels the queued
ones.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

_Done = tuple["asyncio.Future[Any]", Any, BaseException | None]
_Call = tuple[Callable[[], Any], "asyncio.Future[Any]", float]  #: fn, its future, when it was queued

#: how long queued calls wait with no call finishing before more threads are started for them
STALL_S = 0.002


def threads_to_add(stalled: int, progressed: bool, running: int, size: int) -> int:
    """How many more threads to wake or start, ``stalled`` calls having waited ``stall_s`` in
    the queue while ``running`` threads ran calls (of at most ``size``). None while calls are
    finishing (``progressed``): the running threads will come to the queued ones. Otherwise
    at most as many again as are running, so that a thread the machine merely descheduled does
    not start a crowd, and a herd of blocking calls still has a thread each within a few
    stalls (1, 2, 4, … threads)."""
    if progressed or stalled <= 0:
        return 0
    return max(0, min(stalled, max(1, running), size - running))


class CallThreads:
    def __init__(self, size: int, name: str = "cronwheel-job", stall_s: float = STALL_S) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size = size
        self.name = name
        self.stall_s = stall_s
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  #: idle threads wait here for calls
        self._queue: collections.deque[_Call] = collections.deque()  #: calls no thread took yet (under _lock)
        self._threads: list[threading.Thread] = []
        self._running = 0  #: threads not waiting for work, or woken to take some (under _lock)
        self._idle = 0  #: threads waiting on _work and not yet woken (under _lock)
        self._finished = 0  #: calls finished so far: the stall check's measure of progress (under _lock)
        self._done: list[_Done] = []  #: finished calls not yet handed to the loop (under _lock)
        self._wake_pending = False  #: a drain is scheduled on the loop (under _lock)
        self._check: asyncio.TimerHandle | None = None  #: the stall check, while calls are queued
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def started(self) -> int:
        """Threads started so far (each keeps running until ``close``)."""
        return len(self._threads)

    def call(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Run ``fn()`` in one of the threads; the future (of the running loop) gets its value
        or its exception."""
        if self._closed:
            raise RuntimeError("the call threads are closed")
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            self._queue.append((fn, fut, time.monotonic()))
            if self._running == 0:
                self._add_threads(1)
            elif self._check is None:  # the running threads may be blocked: look again soon
                self._check = loop.call_later(self.stall_s, self._check_stall, self._finished)
        return fut

    def close(self) -> None:
        """Queued calls are cancelled; running ones finish in their threads, which then exit."""
        with self._lock:
            self._closed = True
            queued, self._queue = self._queue, collections.deque()
            self._running += self._idle  # every idle thread wakes, to exit
            self._idle = 0
            self._work.notify_all()
            if self._check is not None:
                self._check.cancel()
                self._check = None
        for _, fut, _ in queued:
            fut.cancel()

    def _add_threads(self, n: int) -> None:
        """Wake ``n`` idle threads, starting new ones (up to ``size``) when too few are idle.
        Under _lock."""
        for _ in range(n):
            if self._idle:
                self._idle -= 1
                self._work.notify()  # one waiter, which counts as running from now on
            elif len(self._threads) < self.size:
                t = threading.Thread(target=self._serve, name=f"{self.name}_{len(self._threads)}")
                self._threads.append(t)
                t.start()
            else:
                return
            self._running += 1

    def _check_stall(self, finished_before: int) -> None:
        """On the loop, ``stall_s`` after calls were queued behind running threads."""
        with self._lock:
            self._check = None
            if self._closed or not self._queue:
                return
            now = time.monotonic()
            stalled = 0
            for _, _, queued_at in self._queue:  # oldest first: stop at the first young one
                if now - queued_at < self.stall_s:
                    break
                stalled += 1
            self._add_threads(threads_to_add(stalled, self._finished != finished_before, self._running, self.size))
            assert self._loop is not None
            self._check = self._loop.call_later(self.stall_s, self._check_stall, self._finished)

    def _serve(self) -> None:
        lock, work = self._lock, self._work
        while True:
            with lock:
                while not self._queue:
                    self._running -= 1
                    if self._closed:
                        return
                    self._idle += 1
                    work.wait()  # whoever woke us moved us from _idle to _running
                fn, fut, _ = self._queue.popleft()
            try:
                done: _Done = (fut, fn(), None)
            except BaseException as exc:  # the executor's contract: the awaiting side gets it
                done = (fut, None, exc)
            del fn
            with lock:
                self._done.append(done)
                self._finished += 1
                wake = not self._wake_pending
                self._wake_pending = True
            del done
            if wake and self._loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody awaits it
                    self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            done, self._done = self._done, []
            self._wake_pending = False
        for fut, value, exc in done:
            if fut.done():  # given up on (cancelled, timed out): its late result goes nowhere
                continue
            if exc is None:
                fut.set_result(value)
            else:
                fut.set_exception(exc)
