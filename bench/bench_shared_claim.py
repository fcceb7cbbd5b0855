"""A shared remote worker's claim (a worker of no tenant: the admin's token) with a neighbour's
flood queued: what a claim costs, and whom it serves.

Tenant ``evil`` has ``--queued`` executions ready in queue ``shared``; ``--tenants`` other
tenants have 3 each, queued after the flood. A worker of no tenant claims ``--max`` at a time
through the ``Store`` interface, with the node's turns (``ClaimTurns``) as the daemon passes
them, ``--claims`` times. Reported per store: the claim's p50 and p99 (ms) and how many of
the first ``--claims`` grants went to tenants other than evil. SQLite, and PostgreSQL when
its binaries are here (a throwaway cluster, durable settings).

    PYTHONPATH=$PWD .venv/bin/python bench/bench_shared_claim.py
    PYTHONPATH=$PWD .venv/bin/python bench/bench_shared_claim.py --queued 100000 --tenants 100
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from _common import durable_postgres

from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec, RetryPolicy
from cronwheel.core.records import NewJob
from cronwheel.store.base import Store
from cronwheel.store.postgres import PostgresStore
from cronwheel.store.sqlite import SqliteStore

T = 1_767_225_600_000  # 2026-01-01T00:00:00Z
ALL_BUCKETS = range(64)


def fill(store: Store, queued: int, tenants: int) -> None:
    def jobs(tenant: str, n: int, at: int) -> list[NewJob]:
        spec = JobSpec(target={"queue": "shared"}, run_at=at, tenant=tenant, retry=RetryPolicy(max_attempts=1))
        return [NewJob(new_job_id(), spec, at) for _ in range(n)]

    for start in range(0, queued, 5000):
        store.create_jobs(jobs("evil", min(5000, queued - start), T), T - 60_000)
        store.claim_due(ALL_BUCKETS, T + 1, 5000)
    for i in range(tenants):
        store.create_jobs(jobs(f"t{i:04d}", 3, T + 1000), T - 60_000)
    while store.claim_due(ALL_BUCKETS, T + 2000, 5000).jobs_claimed:
        pass


def measure(store: Store, claims: int, max: int) -> dict[str, float]:
    kw: dict[str, object] = {}
    if "turns" in inspect.signature(store.claim_for_worker).parameters:  # a commit before took none: oldest first
        from cronwheel.core.claimturns import ClaimTurns

        kw["turns"] = ClaimTurns()
    times, neighbours = [], 0
    for _ in range(claims):
        t0 = time.perf_counter()
        grants = store.claim_for_worker(["shared"], "pool-1", max, T + 5000, **kw)
        times.append((time.perf_counter() - t0) * 1000)
        neighbours += sum(g.tenant != "evil" for g in grants)
    times.sort()
    return {"p50": statistics.median(times), "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
            "neighbours": neighbours}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--claims", type=int, default=200)
    ap.add_argument("--max", type=int, default=1)
    args = ap.parse_args()
    print(f"evil {args.queued:,} queued, {args.tenants} neighbours with 3 each, {args.claims} claims of {args.max}")
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "cronwheel.db")
        try:
            fill(store, args.queued, args.tenants)
            r = measure(store, args.claims, args.max)
            print(f"sqlite:     p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms; neighbours' grants {r['neighbours']}")
        finally:
            store.close()
    with durable_postgres() as cluster:
        if cluster is None:
            print("postgres:   skipped (no initdb/pg_ctl)")
            return 0
        with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench_shared")
        pg = PostgresStore.open(cluster.dsn("bench_shared"))
        try:
            fill(pg, args.queued, args.tenants)
            with psycopg.connect(cluster.dsn("bench_shared"), autocommit=True) as c:
                c.execute("ANALYZE executions")
            r = measure(pg, args.claims, args.max)
            print(f"postgres:   p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms; neighbours' grants {r['neighbours']}")
        finally:
            pg.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
