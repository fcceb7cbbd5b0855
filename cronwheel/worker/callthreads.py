"""The threads that run plain (sync) Python callables for a worker, handing their results back
to the event loop in batches.

``loop.run_in_executor`` with a ``ThreadPoolExecutor`` costs, per call, a concurrent future
(a condition variable and its lock), a work item, an idle-semaphore probe, and a
``call_soon_threadsafe`` that writes to the loop's self-pipe: in a herd of no-op callables that
was most of a worker's CPU. Here a call is one put on a ``SimpleQueue`` (C); a finished call
is appended to a list, and the loop is woken once for every call that finished before it got
round to looking. Semantics are the executor's: up to ``size`` threads, started as needed; a
callable that never returns keeps its thread (it cannot be killed) and the awaiting side may
give up on it (its future cancelled, or failed by a timeout: its late result is dropped);
``close`` lets running calls run and cancels the queued ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

_Done = tuple["asyncio.Future[Any]", Any, BaseException | None]


class CallThreads:
    def __init__(self, size: int, name: str = "cronwheel-job") -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size = size
        self.name = name
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.Future[Any]] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._idle = 0  #: threads waiting for a call that no queued call claimed yet (under _lock)
        self._done: list[_Done] = []  #: finished calls not yet handed to the loop (under _lock)
        self._wake_pending = False  #: a drain is scheduled on the loop (under _lock)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def call(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Run ``fn()`` in one of the threads; the future (of the running loop) gets its value
        or its exception."""
        if self._closed:
            raise RuntimeError("the call threads are closed")
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        with self._lock:  # a call claims an idle thread, or starts one (as ThreadPoolExecutor does)
            if self._idle:
                self._idle -= 1
                spawn = False
            else:
                spawn = len(self._threads) < self.size
        self._queue.put((fn, fut))
        if spawn:
            t = threading.Thread(target=self._serve, name=f"{self.name}_{len(self._threads)}")
            self._threads.append(t)
            t.start()
        return fut

    def close(self) -> None:
        """Queued calls are cancelled; running ones finish in their threads, which then exit."""
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
        for _ in self._threads:
            self._queue.put(None)

    def _serve(self) -> None:
        lock, q = self._lock, self._queue
        while True:
            item = q.get()  # a new thread was started for a call: its first is in the queue
            if item is None:
                return
            fn, fut = item
            del item
            try:
                done: _Done = (fut, fn(), None)
            except BaseException as exc:  # the executor's contract: the awaiting side gets it
                done = (fut, None, exc)
            del fn
            with lock:
                self._done.append(done)
                self._idle += 1  # free for the next call
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
