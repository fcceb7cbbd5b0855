"""The threads that run a worker's sync callables: values and exceptions come back to the
loop, quick calls are run by the thread already running rather than a thread each, up to
``size`` blocking calls run at once (each in its own thread, started when the queue stalls), a
call given up on drops its late result, and ``close`` cancels what was still queued."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cronwheel.worker.callthreads import CallThreads, threads_to_add


@contextlib.asynccontextmanager
async def call_threads(size: int, **kwargs: Any) -> AsyncIterator[CallThreads]:
    """A ``CallThreads`` closed whatever happens: its threads are not daemons, so one left open
    by a failing assertion would keep the test process from exiting (a hang, not a failure)."""
    threads = CallThreads(size, **kwargs)
    try:
        yield threads
    finally:
        threads.close()


def test_values_and_exceptions_come_back() -> None:
    def boom() -> None:
        raise ValueError("no")

    async def main() -> None:
        async with call_threads(4) as threads:
            results = await asyncio.gather(*(threads.call(lambda i=i: i * i) for i in range(100)))
            assert results == [i * i for i in range(100)]
            with pytest.raises(ValueError, match="no"):
                await threads.call(boom)
            assert threading.current_thread() is threading.main_thread()
            assert await threads.call(lambda: threading.current_thread().name) != threading.main_thread().name

    asyncio.run(main())


def test_size_calls_run_at_once_and_one_more_waits_for_a_thread() -> None:
    gate = threading.Event()
    started = threading.Semaphore(0)

    def blocked() -> str:
        started.release()
        gate.wait(10)
        return threading.current_thread().name

    async def main() -> None:
        async with call_threads(3) as threads:
            try:
                first = [threads.call(blocked) for _ in range(3)]
                for _ in range(3):  # all three run at once, each in a thread of its own
                    assert await asyncio.to_thread(started.acquire, True, 10)
                extra = threads.call(lambda: "extra")
                await asyncio.sleep(0.05)
                assert not extra.done(), "no fourth thread"
            finally:
                gate.set()  # (the blocked calls return however the test ends)
            names = await asyncio.gather(*first)
            assert len(set(names)) == 3 and await extra == "extra"
            assert len(threads._threads) == 3

    asyncio.run(main())


def test_a_call_given_up_on_drops_its_late_result_and_close_cancels_the_queued() -> None:
    gate = threading.Event()

    async def main() -> None:
        async with call_threads(1) as threads:
            try:
                slow = threads.call(lambda: gate.wait(10))
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.05):
                        await slow
                assert slow.cancelled()
                queued = threads.call(lambda: "never")
                threads.close()
                assert queued.cancelled()
            finally:
                gate.set()
            await asyncio.sleep(0.05)  # the late result arrives and is dropped quietly
            with pytest.raises(RuntimeError):
                threads.call(lambda: None)

    asyncio.run(main())


def test_a_burst_of_quick_calls_is_run_by_one_thread() -> None:
    async def main() -> None:
        async with call_threads(64, stall_s=3600) as threads:  # no stall check within the test: only the wake on a call
            results = await asyncio.gather(*(threads.call(lambda i=i: i + 1) for i in range(500)))
            assert results == list(range(1, 501))
            # an executor would have woken or started a thread per call queued while others ran
            assert threads.started == 1
            assert await threads.call(lambda: 7) == 7 and threads.started == 1  # the idle one is woken again

    asyncio.run(main())


@pytest.mark.parametrize(
    ("stalled", "progressed", "running", "size", "expected"),
    [
        (0, False, 1, 8, 0),  # nothing has waited long enough
        (5, True, 1, 8, 0),  # calls are finishing: the running thread will come to them
        (5, False, 1, 8, 1),  # stuck: as many again as are running
        (5, False, 2, 8, 2),
        (5, False, 4, 8, 4),
        (3, False, 4, 8, 3),  # never more than are waiting
        (5, False, 7, 8, 1),  # never beyond size
        (5, False, 8, 8, 0),
        (5, False, 0, 8, 1),  # (a thread is always woken for a call when none runs)
    ],
)
def test_threads_to_add_when_the_queue_stalls(stalled: int, progressed: bool, running: int, size: int,
                                              expected: int) -> None:
    assert threads_to_add(stalled, progressed, running, size) == expected
