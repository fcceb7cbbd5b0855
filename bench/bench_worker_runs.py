"""A worker's own cost per command run, with no daemon: ``TargetRunner.run`` (what a local
worker does for each grant of a ``{"command": …}`` job) for N runs of ``/usr/bin/true``,
``--concurrency`` at once, in this one process on uvloop. Prints runs/s and the process's CPU
per run (user and system; the child's own exec and exit are not in it).

    .venv/bin/python bench/bench_worker_runs.py --n 4000 --concurrency 32
    strace -c -o /tmp/calls .venv/bin/python bench/bench_worker_runs.py --n 2000   # calls per run: divide by N

Alternate it with a ``git worktree`` of another commit (``PYTHONPATH=that/tree``) for an A/B:
the machine's noise moves a single run by ±10 %.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import uvloop
from bench_spawn import TRUE

from cronwheel.core.model import Grant, Priority
from cronwheel.worker.targets import TargetRunner


class _Hooks:
    def spawned(self, pgid: int) -> None:
        pass

    def output(self, data: bytes) -> None:
        pass

    def ended(self) -> None:
        pass


async def runs(n: int, concurrency: int, command: str) -> dict[str, float]:
    runner = TargetRunner("bench-w0", concurrency)
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            g = Grant(f"bench:{i}", "bench", "default", Priority.DEFAULT, i, 1, 1, 0, 60, 60, {"command": command}, None)
            result = await runner.run(g, _Hooks())
            if result.outcome != "succeeded":
                raise SystemExit(f"run {i} of {command!r}: {result}")

    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(one(i) for i in range(n)))
    t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    await runner.close()
    user, sys_ = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    return {"rate": n / (t1 - t0), "user_us": user / n * 1e6, "sys_us": sys_ / n * 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4000, help="runs")
    ap.add_argument("--concurrency", type=int, default=32, help="runs at once (a worker's slots)")
    ap.add_argument("--command", default=TRUE, help="the job's command (default: the program true)")
    args = ap.parse_args()
    r = uvloop.run(runs(args.n, args.concurrency, args.command))
    print(f"{args.n:,} runs of {args.command!r}, {args.concurrency} at once: {r['rate']:,.0f}/s; worker CPU per run "
          f"{r['user_us'] + r['sys_us']:.0f} µs (user {r['user_us']:.0f}, system {r['sys_us']:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
