"""The SQLite store's hot paths, through the ``Store`` interface (synchronous=FULL throughout).

Phases:

* ``submit``  create_jobs in group-committed batches of 1, 100 and 1000 jobs: rows/s and
              the latency of one durable commit.
* ``load``    registers ``--jobs`` jobs (default 1,000,000; ``--due`` of them, default
              100,000, due at the top of the minute, the rest spread over the next 24 h), in
              batches of 10,000. Timed, but only as set-up.
* ``claim``   claim_due over all 64 buckets in batches of ``--batch`` (default 5000) until the
              due slice is drained: claims/s (one execution inserted and one next_run_at
              advanced per job, each batch one durable transaction).
* ``list``    list_jobs, 1,000 jobs a page, paging through the first 20 pages of the loaded
              store: the CPU of one page (median), what a tenant's listing costs the reader
              thread every other tenant's reads share.
* ``dispatch`` ready_executions → start_executions → complete_executions(SUCCEEDED) in
              batches of 1000 over the claimed executions: executions/s through the ready queue.

Reference points measured on the development machine with raw apsw (see docs/benchmarks.md):
~160 µs per single-row FULL commit, ~100,000 rows/s in 100-row batches, ~225,000 rows/s in
1000-row batches, ~200,000 claims/s for a 100k due slice among 1M narrow rows.

Usage::

    .venv/bin/python bench/bench_store.py            # the full run (a few minutes)
    .venv/bin/python bench/bench_store.py --quick    # 100k jobs, 10k due: seconds
    .venv/bin/python bench/bench_store.py --dir /var/tmp --keep   # choose the disk
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec
from cronwheel.core.records import Completion, NewJob, Outcome, StartRequest
from cronwheel.store.sqlite import SqliteStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a whole minute
MIN = 60_000
BUCKETS = list(range(64))
REFERENCE = {
    "submit_1_commit_us": 160.0,
    "submit_100_rows_s": 100_000.0,
    "submit_1000_rows_s": 225_000.0,
    "claim_rows_s": 200_000.0,
}


def make_job(next_run_at: int, payload_bytes: int = 0) -> NewJob:
    spec = JobSpec(
        target={"command": "/usr/local/bin/report --daily"},
        schedule="* * * * *",
        payload={"blob": "x" * payload_bytes} if payload_bytes else {"n": 1},
    )
    return NewJob(new_job_id(), spec, next_run_at)


def bench_submit(store: SqliteStore, quick: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    plan = [(1, 200 if quick else 1000), (100, 20 if quick else 200), (1000, 5 if quick else 50)]
    for size, rounds in plan:
        batches = [[make_job(T0 + 10 * MIN) for _ in range(size)] for _ in range(rounds)]
        t0 = time.perf_counter()
        for batch in batches:
            store.create_jobs(batch, T0)
        dt = time.perf_counter() - t0
        out[f"submit_{size}_rows_s"] = size * rounds / dt
        out[f"submit_{size}_commit_us"] = dt / rounds * 1e6
    return out


def load(store: SqliteStore, n_jobs: int, n_due: int, seed: int) -> float:
    rng = random.Random(seed)
    due = set(rng.sample(range(n_jobs), n_due))
    t0 = time.perf_counter()
    batch: list[NewJob] = []
    for i in range(n_jobs):
        at = T0 if i in due else T0 + MIN * rng.randrange(1, 24 * 60)
        batch.append(make_job(at))
        if len(batch) == 10_000:
            store.create_jobs(batch, T0 - MIN)
            batch = []
    if batch:
        store.create_jobs(batch, T0 - MIN)
    return time.perf_counter() - t0


def bench_claim(store: SqliteStore, batch: int) -> tuple[float, int, list[float]]:
    now = T0 + 500
    claimed = 0
    per_batch: list[float] = []
    t0 = time.perf_counter()
    while True:
        t1 = time.perf_counter()
        res = store.claim_due(BUCKETS, now, batch)
        per_batch.append(time.perf_counter() - t1)
        claimed += len(res.executions)
        if res.jobs_claimed < batch:
            break
    return time.perf_counter() - t0, claimed, per_batch


def bench_list(store: SqliteStore, pages: int = 20, page: int = 1000) -> float:
    """The median CPU milliseconds of listing one page of ``page`` jobs."""
    after: str | None = None
    cpu_ms: list[float] = []
    for _ in range(pages):
        t0 = time.process_time()
        jobs = store.list_jobs(None, None, page, after)
        cpu_ms.append((time.process_time() - t0) * 1000)
        assert len(jobs) == page, len(jobs)
        after = jobs[-1].id
    return statistics.median(cpu_ms)


def bench_dispatch(store: SqliteStore, batch: int = 1000) -> tuple[float, int]:
    now = T0 + 1000
    done = 0
    t0 = time.perf_counter()
    while True:
        ready = store.ready_executions(now, batch)
        if not ready:
            break
        grants = store.start_executions([StartRequest(e.execution_id, "w1") for e in ready], now)
        store.complete_executions(
            [Completion(g.execution_id, "w1", g.lease_epoch, Outcome.SUCCEEDED, exit_code=0) for g in grants], now
        )
        done += len(grants)
    return time.perf_counter() - t0, done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100k jobs / 10k due, fewer submit rounds")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--due", type=int, default=None)
    ap.add_argument("--batch", type=int, default=5000, help="claim_due limit")
    ap.add_argument("--dir", default=None, help="where to put the database (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the database afterwards")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args()
    n_jobs = args.jobs or (100_000 if args.quick else 1_000_000)
    n_due = args.due or (10_000 if args.quick else 100_000)

    workdir = Path(tempfile.mkdtemp(prefix="cronwheel-bench-", dir=args.dir))
    results: dict[str, float] = {}
    try:
        store = SqliteStore.open(workdir / "submit.db")
        results.update(bench_submit(store, args.quick))
        store.close()

        store = SqliteStore.open(workdir / "claim.db")
        results["load_s"] = load(store, n_jobs, n_due, args.seed)
        dt, claimed, per_batch = bench_claim(store, args.batch)
        assert claimed == n_due, (claimed, n_due)
        results["claim_s"] = dt
        results["claim_rows_s"] = claimed / dt
        results["claim_batch_ms_max"] = max(per_batch) * 1000
        results["list_1000_cpu_ms"] = bench_list(store)
        dt, done = bench_dispatch(store)
        assert done == n_due, (done, n_due)
        results["dispatch_s"] = dt
        results["dispatch_rows_s"] = done / dt
        store.close()
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in results.items()}))
        return
    print(f"SQLite store, synchronous=FULL, {n_jobs:,} jobs / {n_due:,} due, claim batch {args.batch}")
    for size in (1, 100, 1000):
        rate, us = results[f"submit_{size}_rows_s"], results[f"submit_{size}_commit_us"]
        print(f"  submit  batch {size:>4}: {rate:>10,.0f} jobs/s   {us:>9,.0f} µs per commit")
    print(f"  load    {n_jobs:,} jobs: {results['load_s']:.1f} s")
    print(f"  claim   {n_due:,} due: {results['claim_rows_s']:>10,.0f} claims/s  ({results['claim_s']:.2f} s, "
          f"slowest batch {results['claim_batch_ms_max']:.0f} ms)")  # fmt: skip
    print(f"  list    1,000 jobs a page: {results['list_1000_cpu_ms']:.1f} ms of CPU (median of 20 pages)")
    print(f"  dispatch start+complete: {results['dispatch_rows_s']:>10,.0f} executions/s")
    print("  vs raw-apsw reference (store / reference):")
    print(f"    single-row commit latency  {results['submit_1_commit_us'] / REFERENCE['submit_1_commit_us']:.2f}x")
    for key in ("submit_100_rows_s", "submit_1000_rows_s", "claim_rows_s"):
        print(f"    {key:<26} {results[key] / REFERENCE[key]:.2f}x")


if __name__ == "__main__":
    main()
