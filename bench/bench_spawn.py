"""Spawns per second of ``true``: which way should a worker start job processes?

Compares, in a small parent and in one holding ~1 GiB of touched memory (a daemon with a
big heap; fork() must copy its page tables, vfork()/posix_spawn() do not):

* ``uvloop subprocess``      asyncio.create_subprocess_exec under uvloop (fork + exec)
* ``asyncio thread watcher`` the default loop with 3.11's default ThreadedChildWatcher
* ``asyncio pidfd watcher``  the default loop with asyncio.PidfdChildWatcher (what the
                             worker uses on Python 3.11; 3.12+ does this by default)
* ``posix_spawn + pidfd``    os.posix_spawn(setsid) + os.pidfd_open + loop.add_reader
* ``posix_spawn + waitpid``  os.posix_spawn, then a blocking waitpid, one at a time

The asyncio variants keep ``--concurrency`` spawns in flight. Each cell runs for about
``--seconds`` (at least 20 spawns). Usage::

    .venv/bin/python bench/bench_spawn.py [--seconds 2] [--concurrency 8] [--mib 1024]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Awaitable, Callable

TRUE = shutil.which("true") or "/bin/true"
MIN_SPAWNS = 20


def _time_box(seconds: float, one_batch: Callable[[], int]) -> float:
    """Run batches until ``seconds`` have passed (and MIN_SPAWNS done); spawns per second."""
    done = 0
    t0 = time.perf_counter()
    while True:
        done += one_batch()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds and done >= MIN_SPAWNS:
            return done / elapsed


async def _async_rate(seconds: float, concurrency: int, spawn_one: Callable[[], Awaitable[None]]) -> float:
    done = 0
    stop_at = time.perf_counter() + seconds

    async def lane() -> None:
        nonlocal done
        while time.perf_counter() < stop_at or done < MIN_SPAWNS:
            await spawn_one()
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return done / (time.perf_counter() - t0)


async def _create_subprocess() -> None:
    proc = await asyncio.create_subprocess_exec(
        TRUE, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
    await proc.wait()


async def _posix_spawn_pidfd() -> None:
    loop = asyncio.get_running_loop()
    pid = os.posix_spawn(TRUE, [TRUE], os.environ, setsid=True)  # noqa: ASYNC221 - the spawn is what is measured
    pidfd = os.pidfd_open(pid)
    done: asyncio.Future[None] = loop.create_future()
    loop.add_reader(pidfd, done.set_result, None)
    try:
        await done
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    os.waitpid(pid, 0)  # noqa: ASYNC222 - the pidfd said it exited: this reaps, it never waits


def bench_uvloop(seconds: float, concurrency: int) -> float | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.run(_async_rate(seconds, concurrency, _create_subprocess))


def bench_asyncio_threaded(seconds: float, concurrency: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
        if sys.version_info < (3, 12):
            asyncio.set_child_watcher(asyncio.ThreadedChildWatcher())
    return asyncio.run(_async_rate(seconds, concurrency, _create_subprocess))


def bench_asyncio_pidfd(seconds: float, concurrency: int) -> float | None:
    if not hasattr(os, "pidfd_open") or not hasattr(asyncio, "PidfdChildWatcher"):
        return None

    async def run() -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            watcher = asyncio.PidfdChildWatcher()
            watcher.attach_loop(asyncio.get_running_loop())
            asyncio.set_child_watcher(watcher)
        try:
            return await _async_rate(seconds, concurrency, _create_subprocess)
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                asyncio.set_child_watcher(None)

    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    return asyncio.run(run())


def bench_posix_spawn_pidfd(seconds: float, concurrency: int) -> float | None:
    if not hasattr(os, "pidfd_open"):
        return None
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    return asyncio.run(_async_rate(seconds, concurrency, _posix_spawn_pidfd))


def bench_posix_spawn_waitpid(seconds: float, concurrency: int) -> float:
    def one() -> int:
        pid = os.posix_spawn(TRUE, [TRUE], os.environ, setsid=True)
        os.waitpid(pid, 0)
        return 1

    return _time_box(seconds, one)


METHODS: list[tuple[str, Callable[[float, int], float | None]]] = [
    ("uvloop subprocess", bench_uvloop),
    ("asyncio thread watcher", bench_asyncio_threaded),
    ("asyncio pidfd watcher", bench_asyncio_pidfd),
    ("posix_spawn + pidfd", bench_posix_spawn_pidfd),
    ("posix_spawn + waitpid", bench_posix_spawn_waitpid),
]


def _ballast(mib: int) -> bytearray:
    block = bytearray(mib * 1024 * 1024)
    for i in range(0, len(block), 4096):  # touch every page so it is really mapped
        block[i] = 1
    return block


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0, help="time per cell")
    ap.add_argument("--concurrency", type=int, default=8, help="spawns in flight (asyncio variants)")
    ap.add_argument("--mib", type=int, default=1024, help="ballast held by the 'big parent' column")
    args = ap.parse_args(argv)

    results: dict[str, dict[str, float | None]] = {name: {} for name, _ in METHODS}
    columns = ["small parent", f"{args.mib} MiB parent"]
    ballast: bytearray | None = None
    for column in columns:
        if column != columns[0]:
            ballast = _ballast(args.mib)
        for name, fn in METHODS:
            results[name][column] = fn(args.seconds, args.concurrency)
    del ballast

    print(f"spawns/s of {TRUE} (python {sys.version.split()[0]}, {os.uname().sysname} "
          f"{os.uname().release}, {os.cpu_count()} CPUs, concurrency {args.concurrency})")
    print(f"| {'method':<24} | " + " | ".join(f"{c:>15}" for c in columns) + " |")
    print(f"|{'-' * 26}|" + "|".join("-" * 17 for _ in columns) + "|")
    for name, _ in METHODS:
        cells = [results[name][c] for c in columns]
        print(f"| {name:<24} | " + " | ".join(
            f"{'n/a':>15}" if v is None else f"{v:>15,.0f}" for v in cells) + " |")


if __name__ == "__main__":
    main()
