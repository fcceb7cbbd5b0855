"""Spike: N no-op jobs all due in the same second — cronwheel vs APScheduler 3.x.

* cronwheel: N one-off jobs with the in-process Python no-op target, registered straight
  into the SQLite store before the daemon starts (the bulk path of bench_herd.py), then a
  real ``cronwheel serve`` (WORKERS × SLOTS). Lateness is ``startedAt − scheduledAt`` from
  the execution records; "last ran" is the last ``finishedAt`` after T. Peak RSS is the
  daemon's VmHWM (and, separately, daemon + workers).
* APScheduler 3.x in-process (bench/peer_apscheduler.py, a process per configuration, its
  own ru_maxrss): MemoryJobStore, and SQLAlchemyJobStore on an SQLite file, each with a
  THREADS thread pool, ``misfire_grace_time=None`` and ``coalesce=False`` so that every job
  runs. A third run keeps APScheduler's defaults (1 s misfire grace, 10 threads) on SQLite
  and reports how many runs it skipped as missed.

    .venv/bin/python bench/bench_spike.py --n 10000
    .venv/bin/python bench/bench_spike.py --n 100000
    .venv/bin/python bench/bench_spike.py --n 100000 --skip-defaults --skip-sqlite   # the in-memory peer only

cronwheel's CPU per execution (daemon, workers) comes from /proc, from just before T (the claim
ahead of it included) until the last execution finished: it moves far less with the machine's
other load than the wall-clock figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (
    BenchError,
    count_done_sqlite,
    emit,
    execution_rows_sqlite,
    guard,
    lag_summary,
    machine_line,
    mib,
    ms,
    ratio,
    register_oneoffs,
    run_json,
    secs,
    table,
    tree_cpu,
    tree_memory,
    wait_until,
)

from tests.support.daemon import Daemon


def cronwheel_spike(n: int, workers: int, slots: int, lead: float | None, timeout: float) -> dict:
    lead = lead if lead is not None else 8 + n * 0.0001
    with tempfile.TemporaryDirectory(prefix="cw-spike-") as tmp:
        data = Path(tmp) / "node"
        data.mkdir()
        db = data / "cronwheel.db"
        t_due = (int(time.time()) + int(lead) + 1) * 1000
        reg = register_oneoffs(db, n, t_due)
        d = Daemon(data, workers=workers, slots=slots, args=("--grace-sec", "5")).start(timeout=120)
        peak = {"hwm": 0.0, "tree_hwm": 0.0}

        def sample() -> None:
            m = tree_memory(d.pid)
            peak["hwm"] = max(peak["hwm"], m["hwm"])
            peak["tree_hwm"] = max(peak["tree_hwm"], m["tree_hwm"])

        try:
            if time.time() * 1000 >= t_due:
                raise BenchError(f"the daemon came up after the due time: raise --lead (now {lead:.0f} s)")
            cpu_before = tree_cpu(d.pid)  # the claim ahead of T included, as in bench_herd.py
            done = wait_until(lambda: count_done_sqlite(db), n, (t_due / 1000 - time.time()) + timeout, on_tick=sample)
            cpu_after = tree_cpu(d.pid)
            sample()
            if done < n:
                raise BenchError(f"cronwheel: only {done} of {n} executions finished within {timeout:.0f} s")
            rows = execution_rows_sqlite(db)
        finally:
            d.stop(timeout=60)
    out = lag_summary(rows, t_due)
    daemon_cpu, workers_cpu = (a - b for a, b in zip(cpu_after, cpu_before, strict=True))
    out.update({"peer": "cronwheel", "n": n, "register_s": reg, "peak_rss_mib": peak["hwm"],
                "peak_tree_rss_mib": peak["tree_hwm"], "workers": workers, "slots": slots,
                "daemon_cpu_us": daemon_cpu / n * 1e6, "workers_cpu_us": workers_cpu / n * 1e6})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="jobs due in the same second")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=256)
    ap.add_argument("--threads", type=int, default=20, help="APScheduler's thread pool")
    ap.add_argument("--lead", type=float, default=None, help="seconds from start to the due time (cronwheel)")
    ap.add_argument("--timeout", type=float, default=900, help="give up this long after the due time")
    ap.add_argument("--skip-defaults", action="store_true", help="skip the APScheduler-defaults run")
    ap.add_argument("--skip-sqlite", action="store_true", help="skip APScheduler on SQLite (minutes at 100k)")
    ap.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    args = ap.parse_args()

    cw = cronwheel_spike(args.n, args.workers, args.slots, args.lead, args.timeout)
    peer = [sys.executable, str(Path(__file__).with_name("peer_apscheduler.py")), "spike", "--n", str(args.n),
            "--threads", str(args.threads), "--timeout", str(args.timeout)]
    mem = run_json([*peer, "--store", "memory"], timeout=args.timeout + 600)
    runs = [("cronwheel (SQLite, daemon)", cw), ("APScheduler MemoryJobStore", mem)]
    sql: dict = {}
    if not args.skip_sqlite:
        sql = run_json([*peer, "--store", "sqlite"], timeout=args.timeout + 600)
        runs.append(("APScheduler SQLAlchemy/SQLite", sql))
    if not args.skip_defaults and not args.skip_sqlite:
        dflt = run_json([*peer, "--store", "sqlite", "--defaults"], timeout=args.timeout + 600)
        runs.append(("APScheduler SQLAlchemy/SQLite, defaults", dflt))
    result = {"row": "spike", "n": args.n, "machine": machine_line(), "cronwheel": cw, "apscheduler_memory": mem,
              **({"apscheduler_sqlite": sql} if sql else {}),
              **({"apscheduler_defaults": runs[3][1]} if len(runs) > 3 else {})}

    rows = []
    for name, r in runs:
        ran = r.get("succeeded", r.get("executed"))
        rows.append([name, f"{ran:,}" + (f" ({r['missed']:,} missed)" if r.get("missed") else ""),
                     secs(r.get("last_finished_s", r.get("last_started_s"))), ms(r["lag_p50_ms"]), ms(r["lag_p99_ms"]),
                     mib(r["peak_rss_mib"])])
    ratios = []
    for name, r in runs[1:3]:
        ratios.append([f"cronwheel ÷ {name}",
                       ratio(cw["last_finished_s"], r["last_started_s"]), ratio(cw["lag_p50_ms"], r["lag_p50_ms"]),
                       ratio(cw["lag_p99_ms"], r["lag_p99_ms"]), ratio(cw["peak_rss_mib"], r["peak_rss_mib"])])
    text = "\n\n".join([
        machine_line(),
        table(f"Spike: {args.n:,} no-op jobs due in the same second", ["run", "ran", "last ran after T", "lateness p50",
              "lateness p99", "peak RSS"], rows),
        f"cronwheel daemon + {cw['workers']} workers peak RSS: {mib(cw['peak_tree_rss_mib'])}; "
        f"registration (bulk into the store): {cw['register_s']:.1f} s; CPU per execution (from /proc): "
        f"daemon {cw['daemon_cpu_us']:.0f} µs, workers {cw['workers_cpu_us']:.0f} µs",
        table("", ["ratio (below 1: cronwheel lower)", "last ran", "p50", "p99", "peak RSS"], ratios),
    ])
    emit(result, args.json, text)
    return 0


if __name__ == "__main__":
    guard(main)
