"""The threads that run a worker's sync callables: values and exceptions come back to the
loop, quick calls are run by the thread already running rather than a thread each, up to
``size`` blocking calls run at once (each in its own thread, started when the queue stalls), a
call given up on drops its late result, and ``close`` cancels what was still queued."""

from __future__ import annotations

import asyncio
import threading

import pytest

from cronwheel.worker.callthreads import CallThreads, threads_to_add


def test_values_and_exceptions_come_back() -> None:
    async def main() -> None:
        threads = CallThreads(4)

        def boom() -> None:
            raise ValueError("no")

        results = await asyncio.gather(*(threads.call(lambda i=i: i * i) for i in range(100)))
        assert results == [i * i for i in range(100)]
        with pytest.raises(ValueError, match="no"):
            await threads.call(boom)
        assert threading.current_thread() is threading.main_thread()
        assert await threads.call(lambda: threading.current_thread().name) != threading.main_thread().name
        threads.close()

    asyncio.run(main())


def test_size_calls_run_at_once_and_one_more_waits_for_a_thread() -> None:
    async def main() -> None:
        threads = CallThreads(3)
        gate = threading.Event()
        started = threading.Semaphore(0)

        def blocked() -> str:
            started.release()
            gate.wait(10)
            return threading.current_thread().name

        first = [threads.call(blocked) for _ in range(3)]
        for _ in range(3):  # all three run at once, each in a thread of its own
            assert await asyncio.to_thread(started.acquire, True, 10)
        extra = threads.call(lambda: "extra")
        await asyncio.sleep(0.05)
        assert not extra.done(), "no fourth thread"
        gate.set()
        names = await asyncio.gather(*first)
        assert len(set(names)) == 3 and await extra == "extra"
        assert len(threads._threads) == 3
        threads.close()

    asyncio.run(main())


def test_a_call_given_up_on_drops_its_late_result_and_close_cancels_the_queued() -> None:
    async def main() -> None:
        threads = CallThreads(1)
        gate = threading.Event()
        slow = threads.call(lambda: gate.wait(10))
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await slow
        assert slow.cancelled()
        queued = threads.call(lambda: "never")
        threads.close()
        assert queued.cancelled()
        gate.set()
        await asyncio.sleep(0.05)  # the late result arrives and is dropped quietly
        with pytest.raises(RuntimeError):
            threads.call(lambda: None)

    asyncio.run(main())


def test_a_burst_of_quick_calls_is_run_by_one_thread() -> None:
    async def main() -> None:
        threads = CallThreads(64, stall_s=3600)  # no stall check within the test: only the wake on a call
        try:  # (closed whatever happens: its threads would keep the test process from exiting)
            results = await asyncio.gather(*(threads.call(lambda i=i: i + 1) for i in range(500)))
            assert results == list(range(1, 501))
            # an executor would have woken or started a thread per call queued while others ran
            assert threads.started == 1
            assert await threads.call(lambda: 7) == 7 and threads.started == 1  # the idle one is woken again
        finally:
            threads.close()

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
