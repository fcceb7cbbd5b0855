"""The SQLite store's retention of settled jobs, alone: what deleting them costs.

Registers N one-off no-op jobs, runs each once through the ``Store`` interface (claim, start,
complete: each settles SUCCEEDED), then deletes them all with ``prune_settled_jobs`` as the
daemon's retention does (1,000 jobs read per call, at most ``--rows`` rows deleted per write
transaction), and prints the time per job and the longest call (reads included).

``--recent-runs R`` measures the other case instead: N every-minute jobs run R minutes, then
cancelled, so that none is prunable yet; one call then only checks them (outside any write
transaction) and deletes nothing.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_retention.py --n 20000
    PYTHONPATH=$PWD .venv/bin/python bench/bench_retention.py --n 1000 --recent-runs 100
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import create_jobs_in_batches, run_due_once, timed_pass

from cronwheel.core.ids import N_BUCKETS
from cronwheel.core.model import JobSpec
from cronwheel.core.records import Completion, Outcome, StartRequest
from cronwheel.engine.retention import PRUNE_SETTLED_JOBS, PRUNE_SETTLED_ROWS
from cronwheel.store.sqlite import SqliteStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
BATCH = 5000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="settled one-offs to delete")
    ap.add_argument("--rows", type=int, default=PRUNE_SETTLED_ROWS, help="rows one write transaction may delete")
    ap.add_argument("--recent-runs", type=int, default=0, help="cancelled recurring jobs with this many recent runs")
    args = ap.parse_args()
    if args.recent_runs:
        recent(args.n, args.recent_runs)
        return
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "s.db")
        spec = JobSpec(target={"python": "m:f"}, run_at=T0)
        create_jobs_in_batches(store, spec, args.n, T0, T0 - 1000, BATCH)
        run_due_once(store, T0, Outcome.SUCCEEDED, BATCH)
        elapsed, calls, longest, deleted = timed_pass(
            lambda cursor: store.prune_settled_jobs(T0 + 10_000, cursor, PRUNE_SETTLED_JOBS, args.rows))
        store.close()
    print(f"{deleted} settled one-offs deleted in {elapsed:.2f} s ({elapsed / max(1, deleted) * 1e6:.0f} µs a job), "
          f"{calls} calls, the longest {longest * 1000:.0f} ms")


def recent(n: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "s.db")
        spec = JobSpec(target={"python": "m:f"}, schedule="* * * * *")
        ids = create_jobs_in_batches(store, spec, n, T0, T0 - 1000, BATCH)
        for minute in range(runs):
            now, claimed = T0 + minute * MINUTE, []
            while batch := store.claim_due(list(range(N_BUCKETS)), now, BATCH).executions:
                claimed += batch
            grants = store.start_executions([StartRequest(e.execution_id, "w") for e in claimed], now)
            store.complete_executions([Completion(g.execution_id, "w", g.lease_epoch, Outcome.SUCCEEDED) for g in grants], now + 1)
        for job_id in ids:
            store.cancel_job(job_id, T0 + runs * MINUTE)
        began = time.perf_counter()
        gone, _ = store.prune_settled_jobs(T0 + (runs - 10) * MINUTE, None, PRUNE_SETTLED_JOBS, PRUNE_SETTLED_ROWS)
        elapsed = time.perf_counter() - began
        store.close()
    print(f"{n} cancelled jobs of {runs} recent runs each, none prunable yet: one call {elapsed * 1000:.0f} ms, {gone} deleted")


if __name__ == "__main__":
    main()
