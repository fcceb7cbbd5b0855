"""Claims/s with 1, 2 and 3 scheduler nodes on one PostgreSQL.

Starts a throwaway PostgreSQL (durable settings: fsync and synchronous_commit on), and for
each node count N registers JOBS one-off jobs all due now in a fresh database, then runs N
processes that each own their rendezvous share of the 64 buckets and call the store's
batched `claim_due` until their slice is drained, all starting together. Reports the
wall time from the start to the last process done, and claims/s.

    .venv/bin/python bench/bench_cluster_claims.py --jobs 100000
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from _common import durable_postgres

from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec
from cronwheel.core.records import NewJob
from cronwheel.core.rendezvous import buckets_of
from cronwheel.store.postgres import PostgresStore


def claimer(dsn: str, buckets: list[int], now_ms: int, batch: int, start, out) -> None:  # type: ignore[no-untyped-def]
    store = PostgresStore.open(dsn)
    start.wait()
    claimed = 0
    while True:
        n = store.claim_due(buckets, now_ms, batch).jobs_claimed
        claimed += n
        if n == 0:
            break
    out.put((claimed, time.perf_counter()))
    store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--nodes", default="1,2,3")
    args = ap.parse_args()
    with durable_postgres() as cluster:
        if cluster is None:
            print("no PostgreSQL binaries found (initdb, pg_ctl)")
            return 1
        return run(cluster, args)


def run(cluster: Any, args: argparse.Namespace) -> int:
    ctx = mp.get_context("spawn")
    rows = []
    for n in (int(x) for x in args.nodes.split(",")):
        db = f"bench_{n}"
        with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db}")
            admin.execute(f"CREATE DATABASE {db}")
        dsn = cluster.dsn(db)
        store = PostgresStore.open(dsn)
        now = int(time.time() * 1000)
        jobs = [NewJob(new_job_id(), JobSpec(target={"command": "true"}, run_at=now - 1000), now - 1000)
                for _ in range(args.jobs)]
        for i in range(0, len(jobs), 5000):
            store.create_jobs(jobs[i : i + 5000], now - 2000)
        store.close()
        nodes = [f"node{i}" for i in range(n)]
        start, out = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=claimer, args=(dsn, buckets_of(node, nodes), now,
                                                   args.batch, start, out)) for node in nodes]
        for p in procs:
            p.start()
        time.sleep(2.0)  # let every process connect before the start line
        t0 = time.perf_counter()
        start.set()
        results = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join()
        total = sum(c for c, _ in results)
        elapsed = max(t for _, t in results) - t0
        rows.append((n, total, elapsed))
        print(f"{n} node(s): {total} claims in {elapsed:.2f} s = {total / elapsed:,.0f} claims/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
