"""Real commands: executions/s of ``true`` through the daemon's local workers vs the machine's
posix_spawn ceiling, both measured in the same run.

* ceiling: bench_spawn.py's ``posix_spawn + pidfd`` loop (8 spawns in flight) for SECONDS,
  in one process, and in WORKERS processes at once (summed: what the whole machine does
  when nothing but spawning happens); also the ``asyncio pidfd watcher`` loop that
  ``cronwheel worker`` uses to start job processes.
* cronwheel: N one-off jobs ``{"command": "true"}`` all due at T, bulk-registered into the
  store, run by a real ``cronwheel serve`` (WORKERS × SLOTS); executions/s = N / (last
  finishedAt − first startedAt), each execution a full cycle (claim, lease, grant frame,
  spawn in its own process group, wait, result frame, completion committed).

    .venv/bin/python bench/bench_commands.py --n 5000 --seconds 3
    .venv/bin/python bench/bench_commands.py --n 20000 --seconds 5
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (
    BenchError,
    count_done_sqlite,
    emit,
    execution_rows_sqlite,
    guard,
    machine_line,
    rate,
    ratio,
    register_oneoffs,
    table,
    wait_until,
)
from bench_spawn import TRUE, bench_asyncio_pidfd, bench_posix_spawn_pidfd

from tests.support.daemon import Daemon


def _spawn_rate(seconds: float) -> float:
    return bench_posix_spawn_pidfd(seconds, 8) or float("nan")


def ceiling(seconds: float, procs: int) -> dict[str, float]:
    one = _spawn_rate(seconds)
    watcher = bench_asyncio_pidfd(seconds, 8) or float("nan")
    with mp.get_context("spawn").Pool(procs) as pool:
        parallel = sum(pool.map(_spawn_rate, [seconds] * procs))
    return {"posix_spawn_1proc": one, "posix_spawn_all": parallel, "asyncio_pidfd_1proc": watcher}


def cronwheel_true(n: int, workers: int, slots: int, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cw-true-") as tmp:
        data = Path(tmp) / "node"
        data.mkdir()
        db = data / "cronwheel.db"
        t_due = (int(time.time()) + 6 + n // 20_000) * 1000
        register_oneoffs(db, n, t_due, target={"command": TRUE})
        d = Daemon(data, workers=workers, slots=slots, args=("--grace-sec", "5")).start(timeout=120)
        try:
            if time.time() * 1000 >= t_due:
                raise BenchError("the daemon came up after the due time")
            done = wait_until(lambda: count_done_sqlite(db), n, t_due / 1000 - time.time() + timeout)
            if done < n:
                raise BenchError(f"cronwheel: {done} of {n} executions of {TRUE} finished within {timeout:.0f} s")
            rows = execution_rows_sqlite(db)
        finally:
            d.stop(timeout=60)
    ok = [r for r in rows if r[3] == "SUCCEEDED"]
    first = min(r[1] for r in ok)
    last = max(r[2] for r in ok)
    span = (last - first) / 1000
    return {"n": n, "succeeded": len(ok), "span_s": span, "rate": len(ok) / span if span else float("nan"),
            "workers": workers, "slots": slots}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="executions of `true`")
    ap.add_argument("--seconds", type=float, default=3.0, help="time per ceiling measurement")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=32)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    before = ceiling(args.seconds, args.workers)
    cw = cronwheel_true(args.n, args.workers, args.slots, args.timeout)
    after = ceiling(args.seconds, args.workers)
    ceil = {k: max(before[k], after[k]) for k in before}
    result = {"row": "commands", "machine": machine_line(), "cronwheel": cw, "ceiling": ceil,
              "ceiling_before": before, "ceiling_after": after}
    rows = [
        [f"cronwheel: {args.n:,} × `true`, {args.workers} workers × {args.slots} slots", rate(cw["rate"]), "1.00×"],
        ["posix_spawn + pidfd, 1 process, 8 in flight", rate(ceil["posix_spawn_1proc"]),
         ratio(cw["rate"], ceil["posix_spawn_1proc"])],
        [f"posix_spawn + pidfd, {args.workers} processes at once (machine ceiling)", rate(ceil["posix_spawn_all"]),
         ratio(cw["rate"], ceil["posix_spawn_all"])],
        ["asyncio pidfd watcher (the worker's spawn), 1 process", rate(ceil["asyncio_pidfd_1proc"]),
         ratio(cw["rate"], ceil["asyncio_pidfd_1proc"])],
    ]
    text = "\n\n".join([machine_line(), table("Executions/s of `true` vs spawns/s (ceilings: best of before/after)",
                                              ["what", "per second", "cronwheel ÷ this"], rows)])
    emit(result, args.json, text)
    return 0


if __name__ == "__main__":
    guard(main)
