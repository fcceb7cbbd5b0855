"""Sustained load, and "traffic triples at the top of the hour".

Registers one-off no-op jobs whose due times follow a rate profile (RATE per second for
SECONDS, multiplied by 3 for TRIPLE_FOR seconds starting at TRIPLE_AT), straight into the
store file, then runs a real `cronwheel serve` through the whole profile and reports, per
phase, executions/s actually completed and dispatch lag p50/p99, plus whether every
execution ran (nothing dropped) and how long the queue took to drain after the burst.

    .venv/bin/python bench/bench_load.py --rate 5800 --seconds 60               # sustained
    .venv/bin/python bench/bench_load.py --rate 2000 --seconds 60 --triple-at 20 --triple-for 10
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec, RetryPolicy
from cronwheel.core.records import NewJob
from cronwheel.store.sqlite import SqliteStore
from tests.support.daemon import Daemon


def pct(values: list[int], q: float) -> float:
    return float(values[min(len(values) - 1, int(q * len(values)))]) if values else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=2000, help="executions due per second")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--triple-at", type=int, default=None, help="second at which the rate triples")
    ap.add_argument("--triple-for", type=int, default=10)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=256)
    ap.add_argument("--lead", type=float, default=15.0)
    args = ap.parse_args()

    def rate_at(second: int) -> int:
        tripled = args.triple_at is not None and args.triple_at <= second < args.triple_at + args.triple_for
        return args.rate * (3 if tripled else 1)

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "node"
        data.mkdir()
        store = SqliteStore.open(data / "cronwheel.db")
        t0 = (int(time.time()) + int(args.lead) + 1) * 1000
        jobs: list[NewJob] = []
        for second in range(args.seconds):
            n = rate_at(second)
            for k in range(n):
                due = t0 + second * 1000 + (k * 1000) // n  # spread evenly inside the second
                spec = JobSpec(target={"python": "cronwheel.worker.noop:noop"}, run_at=due,
                               tenant=f"tenant-{k % args.tenants:03d}", retry=RetryPolicy(max_attempts=1))
                jobs.append(NewJob(new_job_id(), spec, due))
        for i in range(0, len(jobs), 5000):
            store.create_jobs(jobs[i : i + 5000], t0 - 60_000)
        store.close()
        total = len(jobs)
        print(f"registered {total} jobs over {args.seconds} s (rate {args.rate}/s"
              + (f", x3 from s{args.triple_at} for {args.triple_for} s" if args.triple_at is not None else "") + ")")
        d = Daemon(data, workers=args.workers, slots=args.slots, args=("--grace-sec", "5")).start(timeout=60)
        try:
            db = sqlite3.connect(data / "cronwheel.db", timeout=30)
            deadline = t0 / 1000 + args.seconds + 600
            while time.time() < deadline:
                done = db.execute("SELECT count(*) FROM executions WHERE status IN ('SUCCEEDED','DEAD')").fetchone()[0]
                if done >= total:
                    break
                time.sleep(0.5)  # a benchmark polls a long process; tests never do this
            rows = db.execute("SELECT scheduled_at, started_at, finished_at, status FROM executions").fetchall()
            db.close()
        finally:
            d.stop(timeout=60)
    ok = [r for r in rows if r[3] == "SUCCEEDED"]
    print(f"executions: {len(rows)} claimed, {len(ok)} succeeded of {total} (dropped: {total - len(ok)})")
    phases = [("steady", lambda s: True)]
    if args.triple_at is not None:
        a, b = args.triple_at, args.triple_at + args.triple_for
        phases = [("before", lambda s: s < a), ("tripled", lambda s: a <= s < b), ("after", lambda s: s >= b)]
    for name, inside in phases:
        sel = [r for r in ok if inside((r[0] - t0) // 1000)]
        if not sel:
            continue
        lags = sorted(r[1] - r[0] for r in sel)
        span = (max(r[2] for r in sel) - min(r[1] for r in sel)) / 1000 or 1
        print(f"  {name:<8} {len(sel):>7} runs  {len(sel) / span:>8.0f}/s completed  lag p50 {pct(lags, .5):.0f} ms"
              f"  p99 {pct(lags, .99):.0f} ms  max {lags[-1]} ms")
    last = max(r[2] for r in ok)
    print(f"  last finished {(last - (t0 + args.seconds * 1000)) / 1000:+.2f} s after the last due time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
