"""The threads that run a worker's sync callables: values and exceptions come back to the
loop, up to ``size`` calls run at once (each in its own thread, started as needed), a call
given up on drops its late result, and ``close`` cancels what was still queued."""

from __future__ import annotations

import asyncio
import threading

import pytest

from cronwheel.worker.callthreads import CallThreads


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
