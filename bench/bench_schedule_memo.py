"""The schedule memos: what a claim's ``next_fire`` costs, and what the memos hold.

``core.schedule.next_fire(text, job_id, zone, after_ms)`` runs for every tick a claim takes
(and every walk: ``upcoming``, ``herd``). It parses through one memo and evaluates cron through
another. Timed in CPU time of this process (``time.process_time``), the cyclic GC off as
``timeit`` does, best of ``--repeat``:

* ``shared hit``  N jobs of ``0 * * * *``, memo warm                          ns / call
* ``H hit``       N jobs of ``H H * * *``, memo warm                          ns / call
* ``every hit``   N jobs of ``@every 5m``, memo warm                          ns / call
* ``H miss``      a job id never seen (parse, expand H, evaluate)             ns / call

Then, untimed, what the memos hold (``tracemalloc``, ids made before tracing, so only the
memos' own objects count): JOBS jobs of ``0 * * * *``, of ``H H * * *``, and the evaluation
memo filled with distinct seconds. ::

    .venv/bin/python bench/bench_schedule_memo.py [--n 20000] [--jobs 200000]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit, guard, machine_line, table

from cronwheel.core import schedule as sched
from cronwheel.core.ids import new_job_id

T0 = 1_790_000_000_000  # 2026-09-21, a Monday


def best_ns(call: Callable[[], list[str]], text: str, repeat: int) -> float:
    """Best CPU ns of ``next_fire(text, id, ...)`` over the ids ``call()`` gives each round."""
    nf = sched.next_fire
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repeat):
            ids = call()
            t0 = time.process_time_ns()
            for j in ids:
                nf(text, j, "UTC", T0)
            best = min(best, (time.process_time_ns() - t0) / len(ids))
    finally:
        gc.enable()
    return best


def held(fill: Callable[[], None]) -> tuple[int, int]:
    """Bytes the memos hold after ``fill()`` (traced, from empty memos), and their entries."""
    sched.cache_clear()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    fill()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    info = sched.cache_info()
    sched.cache_clear()
    return after - before, info["parse_size"] + info["eval_size"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000, help="jobs in the timed passes")
    ap.add_argument("--jobs", type=int, default=200_000, help="jobs for the memory figures")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    ids = [new_job_id() for _ in range(args.n)]
    timed: dict[str, float] = {}
    for label, text in (("shared hit", "0 * * * *"), ("H hit", "H H * * *"), ("every hit", "@every 5m")):
        sched.cache_clear()
        for j in ids:  # warm the memos: the timed rounds hit
            sched.next_fire(text, j, "UTC", T0)
        timed[label] = best_ns(lambda: ids, text, args.repeat)
    sched.cache_clear()
    timed["H miss"] = best_ns(lambda: [new_job_id() for _ in range(args.n)], "H H * * *", args.repeat)

    many = [new_job_id() for _ in range(args.jobs)]

    def fill(text: str) -> Callable[[], None]:
        return lambda: [sched.next_fire(text, j, "UTC", T0) for j in many] and None

    def seconds() -> None:
        s = sched.parse_schedule("* * * * * *", "j")
        for k in range(args.jobs):
            s.next_after(T0 + k * 1000)

    memory: dict[str, Any] = {}
    for label, call in (("0 * * * *", fill("0 * * * *")), ("H H * * *", fill("H H * * *")),
                        ("evaluations", seconds)):
        call()  # anything made once (zone files, compiled expressions) outside the figure
        total, entries = held(call)
        memory[label] = {"bytes": total, "entries": entries, "per_entry": total / max(1, entries)}
    result = {"row": "schedule_memo", "machine": machine_line(), "n": args.n, "jobs": args.jobs,
              "ns_per_call": timed, "memory": memory, "cache_info": sched.cache_info()}
    text = "\n\n".join([
        machine_line(),
        table(f"next_fire, {args.n:,} jobs (CPU ns a call, best of {args.repeat})", ["case", "ns"],
              [[k, f"{v:,.0f}"] for k, v in timed.items()]),
        table(f"held by the memos after {args.jobs:,} jobs (or seconds)", ["fill", "MiB", "entries", "bytes an entry"],
              [[k, f"{v['bytes'] / 2**20:.1f}", f"{v['entries']:,}", f"{v['per_entry']:.0f}"]
               for k, v in memory.items()]),
    ])
    emit(result, args.json, text)
    return 0


if __name__ == "__main__":
    guard(main)
