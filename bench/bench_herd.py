"""The 00:00 UTC thundering herd on one node: 100,000 jobs due in the same second.

Registers N one-off jobs (spread over TENANTS tenants) all due at the same instant T, plus
HIGH latency-sensitive jobs from another tenant at T, writing them straight into the SQLite
store file before the daemon starts (bulk registration, so the bench measures scheduling, not
HTTP). Then starts a real `cronwheel serve`, waits until every execution has finished, and
reads the store for: time from T until the last one started, dispatch lag
(startedAt - scheduledAt) p50/p99/max overall, for the high tier, and per tenant class.

    .venv/bin/python bench/bench_herd.py                 # 100,000 no-op Python jobs
    .venv/bin/python bench/bench_herd.py --n 10000 --command true
    .venv/bin/python bench/bench_herd.py --noisy         # tenant A 100,000 + B..E 100 each
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import thread_cpu, tree_cpu

from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec, Priority, RetryPolicy
from cronwheel.core.records import NewJob
from cronwheel.core.tenants import Tenant
from cronwheel.store.sqlite import SqliteStore
from tests.support.daemon import Daemon


def pct(values: list[int], q: float) -> float:
    return float(values[min(len(values) - 1, int(q * len(values)))]) if values else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--high", type=int, default=50)
    ap.add_argument("--noisy", action="store_true", help="one tenant has N, four others 100 each")
    ap.add_argument("--command", help="a shell command instead of the no-op Python callable")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=256)
    ap.add_argument("--reserved-high", type=int, default=16)
    ap.add_argument("--lead", type=float, default=15.0, help="seconds between daemon start and T")
    args = ap.parse_args()

    target = {"command": args.command} if args.command else {"python": "cronwheel.worker.noop:noop"}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "node"
        data.mkdir()
        store = SqliteStore.open(data / "cronwheel.db")
        t_due = (int(time.time()) + int(args.lead) + 1) * 1000
        jobs: list[NewJob] = []
        if args.noisy:
            plan = [("tenant-a", args.n)] + [(f"tenant-{c}", 100) for c in "bcde"]
        else:
            per = args.n // args.tenants
            plan = [(f"tenant-{i:03d}", per) for i in range(args.tenants)]
        for tenant, count in plan:
            for _ in range(count):
                spec = JobSpec(target=target, run_at=t_due, tenant=tenant, retry=RetryPolicy(max_attempts=1))
                jobs.append(NewJob(new_job_id(), spec, t_due))
        for _ in range(args.high):
            spec = JobSpec(target=target, run_at=t_due, tenant="realtime", priority=Priority.HIGH)
            jobs.append(NewJob(new_job_id(), spec, t_due))
        t0 = time.perf_counter()
        # the high tier is an admin's grant: without it the realtime jobs would queue at default
        store.create_tenant(Tenant("realtime", allow_high_priority=True), t_due - 60_000)
        for i in range(0, len(jobs), 5000):
            store.create_jobs(jobs[i : i + 5000], t_due - 60_000)
        reg = time.perf_counter() - t0
        store.close()
        total = len(jobs)
        print(f"registered {total} jobs due at T in {reg:.1f} s")

        d = Daemon(data, workers=args.workers, slots=args.slots,
                   args=("--reserved-high-slots", str(args.reserved_high), "--grace-sec", "5")).start(timeout=60)
        try:
            remaining = max(0.0, t_due / 1000 - time.time())
            print(f"daemon up; T in {remaining:.1f} s")
            db = sqlite3.connect(data / "cronwheel.db", timeout=30)
            assert d.proc is not None
            cpu_before, threads_before = tree_cpu(d.proc.pid), thread_cpu(d.proc.pid)
            time.sleep(max(0.0, t_due / 1000 - time.time()))  # wait for T: the CPU before it is the claims'
            cpu_at_t, threads_at_t = tree_cpu(d.proc.pid), thread_cpu(d.proc.pid)
            deadline = time.time() + 600
            while time.time() < deadline:
                done = db.execute(
                    "SELECT count(*) FROM executions WHERE status IN ('SUCCEEDED','DEAD','CANCELLED')"
                ).fetchone()[0]
                if done >= total:
                    break
                time.sleep(0.5)  # a benchmark polls a long process; tests never do this
            cpu_after, threads_after = tree_cpu(d.proc.pid), thread_cpu(d.proc.pid)
            rows = db.execute("SELECT tenant, priority, started_at - scheduled_at, finished_at FROM executions").fetchall()
            db.close()
        finally:
            d.stop(timeout=60)
    lags = sorted(r[2] for r in rows if r[2] is not None)
    high = sorted(r[2] for r in rows if r[1] == int(Priority.HIGH) and r[2] is not None)
    small = sorted(r[2] for r in rows if r[0] in ("tenant-b", "tenant-c", "tenant-d", "tenant-e") and r[2] is not None)
    last_finish = max(r[3] for r in rows if r[3] is not None)
    print(f"executions: {len(rows)} of {total}")
    print(f"all started within   {lags[-1] / 1000:.2f} s of T (last finished {(last_finish - t_due) / 1000:.2f} s after T)")
    print(f"dispatch lag         p50 {pct(lags, .5):.0f} ms  p99 {pct(lags, .99):.0f} ms  max {lags[-1]:.0f} ms")
    print(f"high tier ({len(high)})      p50 {pct(high, .5):.0f} ms  p99 {pct(high, .99):.0f} ms  max {high[-1] if high else float('nan'):.0f} ms")
    daemon_cpu, worker_cpu = (a - b for a, b in zip(cpu_after, cpu_before, strict=True))
    per = 1e6 / len(rows)
    print(f"CPU                  daemon {daemon_cpu:.2f} s, workers {worker_cpu:.2f} s "
          f"({(daemon_cpu + worker_cpu) * per:.0f} µs per execution: daemon {daemon_cpu * per:.0f}, "
          f"workers {worker_cpu * per:.0f})")
    main_thread = threads_after.get(d.proc.pid, 0.0) - threads_before.get(d.proc.pid, 0.0)
    others = sorted((cpu - threads_before.get(tid, 0.0) for tid, cpu in threads_after.items() if tid != d.proc.pid),
                    reverse=True)  # fmt: skip
    print(f"daemon threads       event loop {main_thread:.2f} s, busiest other thread (the store writer) "
          f"{others[0] if others else 0.0:.2f} s, over {(last_finish - t_due) / 1000 + remaining:.2f} s from start-up to "
          f"the last finish")
    def split(before: dict[int, float], after: dict[int, float]) -> str:
        loop = after.get(d.proc.pid, 0.0) - before.get(d.proc.pid, 0.0)
        rest = max((cpu - before.get(tid, 0.0) for tid, cpu in after.items() if tid != d.proc.pid), default=0.0)
        return f"event loop {loop * per:.0f} µs, writer {rest * per:.0f} µs"
    after_t = [a - b for a, b in zip(cpu_after, cpu_at_t, strict=True)]
    print(f"per execution        before T (claims): {split(threads_before, threads_at_t)}; "
          f"after T: {split(threads_at_t, threads_after)}, workers {after_t[1] * per:.0f} µs")
    if args.noisy:
        print(f"tenants B-E ({len(small)})  p50 {pct(small, .5):.0f} ms  p99 {pct(small, .99):.0f} ms  max {small[-1]:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
