"""Blocking store calls, moved off the event loop.

A ``Store`` is synchronous and used by one thread at a time, so each store object gets its
own single-thread executor: the writer's calls are serialised in submission order (which is
what a SQLite writer needs anyway), and the API's reads go through a second store object so
they never queue behind a long claim.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from cronwheel.store.base import Store, StoreUnavailable

T = TypeVar("T")


class StoreRunner:
    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{name}")

    async def run(self, fn: Callable[[Store], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, self.store)

    def close(self) -> None:
        self._executor.submit(self.store.close).result()
        self._executor.shutdown(wait=True)


class GroupCommitter:
    """Batches concurrent calls into one store call (one transaction, one fsync).

    ``submit(item)`` resolves once the batch holding ``item`` committed. While one batch is
    being written, new items pile up and go together in the next one, so under load the cost
    of the fsync is shared, and when idle a single item commits at once (no timer to wait on).
    """

    def __init__(self, runner: StoreRunner, apply: Callable[[Store, list], list], max_batch: int = 1000):
        self._runner = runner
        self._apply = apply
        self._max_batch = max_batch
        self._pending: deque[tuple[list, asyncio.Future]] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._closed = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="group-commit")

    async def submit(self, item: object) -> object:
        (result,) = await self.submit_many([item])
        return result

    async def submit_many(self, items: list) -> list:
        """Several items that commit in the same batch (one future for all of them)."""
        if self._closed:
            raise StoreUnavailable("shutting down")
        if not items:
            return []
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending.append((items, fut))
        self._wake.set()
        return await fut

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                # take whole submissions until the batch is full (a submission is never split)
                batch: list[tuple[list, asyncio.Future]] = []
                size = 0
                while self._pending and (not batch or size + len(self._pending[0][0]) <= self._max_batch):
                    entry = self._pending.popleft()
                    batch.append(entry)
                    size += len(entry[0])
                items = [item for group, _ in batch for item in group]
                try:
                    results = await self._runner.run(lambda store, items=items: self._apply(store, items))
                except Exception as exc:  # the whole batch failed: every caller hears it
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                offset = 0
                for group, fut in batch:
                    if not fut.done():
                        fut.set_result(results[offset : offset + len(group)])
                    offset += len(group)
            if self._closed:
                return

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            await self._task
