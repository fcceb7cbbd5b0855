"""A big tenant's forced deletion on one node (SQLite or PostgreSQL): how long
`DELETE /v1/tenants/{name}?force=true`
takes to answer, how long until its live jobs are all cancelled, and what a neighbour's calls
wait meanwhile.

Registers N recurring jobs of tenant `big` straight into the store (SQLite file or database)
before the daemon starts (bulk registration: the bench measures the deletion, not HTTP), starts
a real `cronwheel serve` with no worker, asks for the forced deletion, and polls the store
until no live job of `big` is left, timing a neighbour's job creation every 50 ms meanwhile.

    .venv/bin/python bench/bench_tenant_rm.py --n 20000
    .venv/bin/python bench/bench_tenant_rm.py --n 100000
    .venv/bin/python bench/bench_tenant_rm.py --n 100000 --store postgres   # a throwaway durable cluster
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import durable_postgres, pct

from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec
from cronwheel.core.records import NewJob
from cronwheel.core.tenants import Tenant
from cronwheel.store.postgres import PostgresStore
from cronwheel.store.sqlite import SqliteStore
from tests.support.daemon import Daemon

FAR = 4_102_444_800_000  # 2100-01-01: never due while the bench runs


LIVE = "SELECT count(*) FROM jobs WHERE tenant = 'big' AND status IN ('ACTIVE', 'PAUSED')"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        data = Path(tmp) / "node"
        data.mkdir()
        daemon_args: tuple[str, ...] = ()
        store: Any
        if args.store == "postgres":
            cluster = stack.enter_context(durable_postgres())
            if cluster is None:
                print("postgres: skipped (no initdb/pg_ctl)")
                return 0
            with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
                admin.execute("CREATE DATABASE bench_tenant_rm")
            dsn = cluster.dsn("bench_tenant_rm")
            store, daemon_args = PostgresStore.open(dsn), ("--store", dsn)
        else:
            store = SqliteStore.open(data / "cronwheel.db")
        now = int(time.time() * 1000)
        for name in ("big", "small"):
            store.create_tenant(Tenant(name, allow_shell=True), now)
        jobs = [NewJob(new_job_id(), JobSpec(target={"command": "true"}, schedule="0 0 1 1 *", tenant="big"), FAR)
                for _ in range(args.n)]  # fmt: skip
        for i in range(0, len(jobs), 5000):
            store.create_jobs(jobs[i : i + 5000], now)
        store.close()
        d = Daemon(data, workers=0, args=daemon_args).start(timeout=120)

        def live() -> int:
            if args.store == "postgres":
                with psycopg.connect(dsn, autocommit=True) as conn:
                    return int(conn.execute(LIVE).fetchone()[0])  # type: ignore[index]
            with contextlib.closing(sqlite3.connect(data / "cronwheel.db", timeout=30)) as db:
                return int(db.execute(LIVE).fetchone()[0])

        try:
            small = d.post("/v1/tokens", {"tenant": "small"}).json()["token"]
            waits: list[float] = []
            done_at: list[float] = []

            def neighbour() -> None:  # a neighbour's job creations, from the request until the end
                while not done_at:
                    t = time.perf_counter()
                    made = d.request("POST", "/v1/jobs", {"schedule": "0 0 1 1 *", "command": "true"}, token=small,
                                     timeout=600)  # fmt: skip
                    waits.append(time.perf_counter() - t)
                    assert made.status == 201, made
                    time.sleep(0.05)  # a benchmark polls a long process; tests never do this

            beside = threading.Thread(target=neighbour)
            t0 = time.perf_counter()
            beside.start()
            r = d.request("DELETE", "/v1/tenants/big?force=true", timeout=600)
            answered = time.perf_counter() - t0
            print(f"DELETE answered {r.status} in {answered:.2f} s: {r.body[:80]!r}")
            while live():
                time.sleep(0.05)
            done = time.perf_counter() - t0
            done_at.append(done)
            beside.join()
        finally:
            d.stop(timeout=120)
    print(f"{args.store}, n={args.n}: answered in {answered:.2f} s; every live job cancelled {done:.2f} s after the request")
    waits.sort()
    if waits:
        print(f"a neighbour's job creation meanwhile ({len(waits)}): p50 {pct(waits, .5) * 1000:.0f} ms, "
              f"p99 {pct(waits, .99) * 1000:.0f} ms, max {waits[-1] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
