"""Blocking store calls, moved off the event loop.

A ``Store`` is synchronous and used by one thread at a time, so each store object gets its
own single-thread executor: the writer's calls are serialised in submission order (which is
what a SQLite writer needs anyway), and the API's reads go through a second store object so
they never queue behind a long claim.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from cronwheel.store.base import Store, StoreUnavailable

T = TypeVar("T")
ItemT = TypeVar("ItemT")  # what a GroupCommitter is given (a submission, a completion)
ResultT = TypeVar("ResultT")  # what the store answers for one of them


#: what a call made after ``close`` hears: the API answers 503 with Retry-After, as for an outage
STOPPING = "the node is stopping"


class StoreRunner:
    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{name}")
        self.closed = False

    async def run(self, fn: Callable[[Store], T]) -> T:
        if self.closed:  # a request still served while the node stops (the API closes last)
            raise StoreUnavailable(STOPPING)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, self.store)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._executor.submit(self.store.close).result()
        self._executor.shutdown(wait=True)


async def bisect_failures(
    items: list[ItemT],
    attempt: Callable[[list[ItemT]], Awaitable[T]],
    merge: Callable[[T, T], T],
    alone: Callable[[ItemT, Exception], T],
) -> T:
    """``attempt(items)`` as one write; when it fails for anything but an unreachable store,
    the items are split in halves and each half tried again, down to single items, and an
    item that fails alone is given to ``alone`` (which answers for it). The halves' answers
    are ``merge``d. A bad neighbour costs the others a retry, never their write (the same rule
    the GroupCommitter keeps for submissions and completions). StoreUnavailable is raised."""
    try:
        return await attempt(items)
    except StoreUnavailable:
        raise
    except Exception as exc:
        if len(items) == 1:
            return alone(items[0], exc)
        mid = len(items) // 2
        first = await bisect_failures(items[:mid], attempt, merge, alone)
        return merge(first, await bisect_failures(items[mid:], attempt, merge, alone))


class GroupCommitter(Generic[ItemT, ResultT]):
    """Batches concurrent calls into one store call (one transaction, one fsync).

    ``submit(item)`` resolves once the batch holding ``item`` committed. While one batch is
    being written, new items pile up and go together in the next one, so under load the cost
    of the fsync is shared, and when idle a single item commits at once (no timer to wait on).

    A bad neighbour costs a retry, never an error: when a batch fails for any reason but an
    unreachable store, it is split in halves and each half tried again, down to single items,
    so that only the items that make a transaction fail get an error and every other item
    commits. Submissions are split only along their own edges first (a batch submission stays
    one transaction unless it holds the failing item itself). ``StoreUnavailable`` is a fault
    of the store, not of an item: every caller not yet committed hears it and may retry.
    ``on_isolated(error, items)`` hears of each item that failed alone (for the log).
    """

    def __init__(
        self,
        runner: StoreRunner,
        apply: Callable[[Store, list[ItemT]], list[ResultT]],
        max_batch: int = 1000,
        on_isolated: Callable[[BaseException, ItemT], None] | None = None,
    ) -> None:
        self._runner = runner
        self._apply = apply
        self._max_batch = max_batch
        self._on_isolated = on_isolated
        self._pending: deque[tuple[list[ItemT], asyncio.Future[list[ResultT | Exception]]]] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="group-commit")

    async def submit_many(self, items: list[ItemT], item_errors: bool = False) -> list[ResultT | Exception]:
        """Several items that commit in the same batch (one future for all of them).
        ``item_errors``: an item that failed alone comes back as its exception, in its place,
        while the others' results stand; otherwise the first such error is raised."""
        if self._closed:
            raise StoreUnavailable("shutting down")
        if not items:
            return []
        fut: asyncio.Future[list[ResultT | Exception]] = asyncio.get_running_loop().create_future()
        self._pending.append((items, fut))
        self._wake.set()
        results = await fut
        if not item_errors:
            for result in results:
                if isinstance(result, BaseException):
                    raise result
        return results

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                # take whole submissions until the batch is full (a submission is never split)
                batch: list[tuple[list[ItemT], asyncio.Future[list[ResultT | Exception]]]] = []
                size = 0
                while self._pending and (not batch or size + len(self._pending[0][0]) <= self._max_batch):
                    entry = self._pending.popleft()
                    batch.append(entry)
                    size += len(entry[0])
                outcomes = await self._commit_groups([group for group, _ in batch])
                for (_, fut), outcome in zip(batch, outcomes, strict=True):
                    if fut.done():
                        continue
                    if isinstance(outcome, BaseException):
                        fut.set_exception(outcome)
                    else:
                        fut.set_result(outcome)
            if self._closed:
                return

    async def _run(self, items: list[ItemT]) -> list[ResultT | Exception]:
        results: list[ResultT | Exception] = list(await self._runner.run(lambda store: self._apply(store, items)))
        return results

    async def _commit_groups(self, groups: list[list[ItemT]]) -> list[list[ResultT | Exception] | StoreUnavailable]:
        """Each group's results (a list, holding the exception of any item that failed alone)
        or the StoreUnavailable that stopped it."""
        try:
            results = await self._run([item for group in groups for item in group])
        except StoreUnavailable as exc:
            return [exc] * len(groups)
        except Exception as exc:
            if len(groups) > 1:
                mid = len(groups) // 2
                return await self._commit_groups(groups[:mid]) + await self._commit_groups(groups[mid:])
            if len(groups[0]) == 1:  # the item alone failed: it is the one
                return [[self._isolated(exc, groups[0][0])]]
            try:
                return [await self._isolate(groups[0])]
            except StoreUnavailable as exc:
                return [exc]
        out: list[list[ResultT | Exception] | StoreUnavailable] = []
        offset = 0
        for group in groups:
            out.append(results[offset : offset + len(group)])
            offset += len(group)
        return out

    async def _isolate(self, items: list[ItemT]) -> list[ResultT | Exception]:
        """Results of ``items``, halving on failure; a single failing item yields its error."""
        try:
            return await self._run(items)
        except StoreUnavailable:
            raise
        except Exception as exc:
            if len(items) == 1:
                return [self._isolated(exc, items[0])]
            mid = len(items) // 2
            return await self._isolate(items[:mid]) + await self._isolate(items[mid:])

    def _isolated(self, exc: Exception, item: ItemT) -> Exception:
        if self._on_isolated is not None:
            self._on_isolated(exc, item)
        return exc

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            await self._task
