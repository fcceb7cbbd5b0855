"""Delayed-job throughput: submit + execute N one-off no-op jobs — cronwheel vs Procrastinate.

* cronwheel, on SQLite (a data dir on local disk) and on PostgreSQL (its own database on the
  same throwaway server as Procrastinate): a real ``cronwheel serve`` (WORKERS × SLOTS)
  runs, then N jobs ``{"runAt": <now>, "python": "cronwheel.worker.noop:noop"}`` are
  submitted with ``POST /v1/jobs/batch``, BATCH jobs per request (default 1,000, like
  Procrastinate's batch), over CONNECTIONS concurrent keep-alive HTTP connections;
  ``--batch 0`` sends one ``POST /v1/jobs`` per job instead (the daemon group-commits
  concurrent submissions).
  Time: from the first submission until the last execution has finished.
* Procrastinate (``procrastinate>=3``) on the same PostgreSQL server, another database: PROCS
  worker processes with ``--concurrency`` async slots each start first, then N jobs of an
  ``async def`` no-op task are deferred with ``batch_defer_async`` in batches of 1,000 (its
  fastest path; ``--single`` adds a run with one ``defer_async`` per job over CONNECTIONS
  connections, the shape of cronwheel's ``--batch 0`` path). Same clock: first defer → last job
  ``succeeded``.

The PostgreSQL server is a throwaway cluster started like the tests' (tests/support/postgres.py,
as the ``postgres`` OS user when root), but durable (fsync, synchronous_commit and
full_page_writes on) and on local disk (``--pg-dir``, default the system temp dir).

    .venv/bin/python bench/bench_delayed.py --n 5000
    .venv/bin/python bench/bench_delayed.py --n 50000 --single
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (
    DURABLE,
    REPO,
    BenchError,
    count_done_sqlite,
    emit,
    guard,
    machine_line,
    rate,
    ratio,
    run_json,
    secs,
    table,
    wait_until,
)

from tests.support.daemon import Daemon

PEER = str(Path(__file__).with_name("peer_procrastinate.py"))


async def submit_http(url: str, token: str, n: int, connections: int, batch: int = 0) -> float:
    """POST n one-off jobs over ``connections`` keep-alive connections, one per request
    (``batch`` 0) or ``batch`` per ``POST /v1/jobs/batch``; seconds taken."""
    import aiohttp

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    failures: list[str] = []
    size = max(1, batch)
    next_chunk = iter(range(0, n, size))

    def job() -> dict[str, Any]:
        return {"runAt": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "python": "cronwheel.worker.noop:noop", "retryPolicy": {"maxAttempts": 1}}

    async def lane(session: aiohttp.ClientSession) -> None:
        for start in next_chunk:
            count = min(size, n - start)
            if batch:
                async with session.post(f"{url}/v1/jobs/batch", json={"jobs": [job() for _ in range(count)]}, headers=headers) as resp:
                    answer = await resp.json() if resp.status == 200 else None
                    if answer is None or any(r["status"] != 201 for r in answer["results"]):
                        failures.append(f"{resp.status} {str(answer)[:300] if answer else await resp.text()}")
                        return
                continue
            async with session.post(f"{url}/v1/jobs", json=job(), headers=headers) as resp:
                if resp.status != 201:
                    failures.append(f"{resp.status} {await resp.text()}")
                    return

    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(lane(session) for _ in range(connections)))
        dt = time.perf_counter() - t0
    if failures:
        raise BenchError(f"submission refused: {failures[0]}")
    return dt


def cronwheel_run(n: int, workers: int, slots: int, connections: int, store_url: str | None,
                  count_pg: str | None, timeout: float, batch: int = 0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cw-delayed-") as tmp:
        data = Path(tmp) / "node"
        args = ("--grace-sec", "5") + (("--store", store_url) if store_url else ())
        d = Daemon(data, workers=workers, slots=slots, args=args).start(timeout=120)
        try:
            if count_pg:
                import psycopg

                con = psycopg.connect(count_pg, autocommit=True)

                def count() -> int:
                    row = con.execute("SELECT count(*) FROM executions WHERE status IN ('SUCCEEDED','DEAD','FAILED')").fetchone()
                    return int(row[0]) if row else 0
            else:
                db = data / "cronwheel.db"

                def count() -> int:
                    return count_done_sqlite(db)

            t0 = time.perf_counter()
            submit_s = asyncio.run(submit_http(d.url, d.admin_token, n, connections, batch))
            done = wait_until(count, n, timeout, every=0.1)
            total_s = time.perf_counter() - t0
            if count_pg:
                con.close()
            if done < n:
                raise BenchError(f"cronwheel: {done} of {n} executions finished within {timeout:.0f} s")
        finally:
            d.stop(timeout=60)
    return {"n": n, "submit_s": submit_s, "submit_rate": n / submit_s, "total_s": total_s, "rate": n / total_s,
            "path": f"POST /v1/jobs/batch of {batch} over {connections} connections" if batch
            else f"POST /v1/jobs over {connections} connections"}


def procrastinate_run(dsn: str, n: int, procs: int, concurrency: int, single: bool, connections: int,
                      timeout: float) -> dict[str, Any]:
    import psycopg

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workers = [subprocess.Popen([sys.executable, PEER, "worker", "--dsn", dsn, "--concurrency", str(concurrency)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
               for _ in range(procs)]
    try:
        with psycopg.connect(dsn, autocommit=True) as con:
            wait_until(lambda: int(con.execute("SELECT count(*) FROM procrastinate_workers").fetchone()[0]),
                       procs, 30, every=0.1)
            t0 = time.perf_counter()
            defer_args = ["--single", "--connections", str(connections)] if single else ["--batch", "1000"]
            deferred = run_json([sys.executable, PEER, "defer", "--dsn", dsn, "--n", str(n), *defer_args], timeout=timeout)
            done = wait_until(lambda: int(con.execute(
                "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('succeeded','failed')").fetchone()[0]),
                n, timeout, every=0.1)
            total_s = time.perf_counter() - t0
            failed = int(con.execute("SELECT count(*) FROM procrastinate_jobs WHERE status = 'failed'").fetchone()[0])
        if done < n:
            raise BenchError(f"procrastinate: {done} of {n} jobs finished within {timeout:.0f} s")
        if failed:
            raise BenchError(f"procrastinate: {failed} jobs failed")
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(30)
            except subprocess.TimeoutExpired:
                w.kill()
    path = f"defer_async × {n} over {connections} connections" if single else "batch_defer_async, batches of 1,000"
    return {"n": n, "submit_s": deferred["defer_s"], "submit_rate": n / deferred["defer_s"], "total_s": total_s,
            "rate": n / total_s, "path": path, "procs": procs, "concurrency": concurrency}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=2, help="cronwheel local workers")
    ap.add_argument("--slots", type=int, default=256, help="cronwheel slots per worker")
    ap.add_argument("--connections", type=int, default=8, help="concurrent HTTP connections (and single defers)")
    ap.add_argument("--procs", type=int, default=2, help="Procrastinate worker processes")
    ap.add_argument("--concurrency", type=int, default=32, help="Procrastinate async slots per worker process")
    ap.add_argument("--single", action="store_true", help="also run Procrastinate with one defer per job")
    ap.add_argument("--pg-dir", default=None, help="where the PostgreSQL cluster lives (default: the temp dir)")
    ap.add_argument("--skip-postgres", action="store_true", help="cronwheel on SQLite only")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--batch", type=int, default=1000,
                    help="cronwheel jobs per POST /v1/jobs/batch (0: one POST /v1/jobs per job, as before the batch API)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not 0 <= args.batch <= 1000:
        raise BenchError("--batch must be between 0 and 1000 (the API takes up to 1,000 jobs per request)")

    results: dict[str, Any] = {"row": "delayed", "n": args.n, "machine": machine_line()}
    results["cronwheel_sqlite"] = cronwheel_run(args.n, args.workers, args.slots, args.connections, None, None,
                                                args.timeout, args.batch)
    if not args.skip_postgres:
        import psycopg

        from tests.support.postgres import Cluster, find_bindir, url_of

        bindir = find_bindir()
        if bindir is None:
            raise BenchError("no PostgreSQL binaries (initdb, pg_ctl): install postgresql or pass --skip-postgres")
        os.environ.setdefault("CRONWHEEL_TEST_PG_DIR", args.pg_dir or tempfile.gettempdir())
        cluster = Cluster.create(bindir)
        try:
            with open(cluster.data / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write(DURABLE)
            cluster.start()
            with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
                for db in ("cronwheel", "procrastinate"):
                    admin.execute(f"CREATE DATABASE {db}")
            cw_dsn = url_of({"host": "127.0.0.1", "port": cluster.port, "user": "postgres", "dbname": "cronwheel"})
            results["cronwheel_postgres"] = cronwheel_run(args.n, args.workers, args.slots, args.connections,
                                                          cw_dsn, cw_dsn, args.timeout, args.batch)
            pr_dsn = cluster.dsn("procrastinate")
            run_json([sys.executable, PEER, "schema", "--dsn", pr_dsn], timeout=120)
            results["procrastinate"] = procrastinate_run(pr_dsn, args.n, args.procs, args.concurrency, False,
                                                         args.connections, args.timeout)
            if args.single:
                with psycopg.connect(pr_dsn, autocommit=True) as con:
                    con.execute("TRUNCATE procrastinate_jobs CASCADE")
                results["procrastinate_single"] = procrastinate_run(pr_dsn, args.n, args.procs, args.concurrency, True,
                                                                    args.connections, args.timeout)
        finally:
            cluster.destroy()

    labels = [("cronwheel_sqlite", "cronwheel, SQLite"), ("cronwheel_postgres", "cronwheel, PostgreSQL"),
              ("procrastinate", "Procrastinate, PostgreSQL"), ("procrastinate_single", "Procrastinate, PostgreSQL, one defer per job")]
    rows = [[label, results[k]["path"], secs(results[k]["submit_s"]), rate(results[k]["submit_rate"]),
             secs(results[k]["total_s"]), rate(results[k]["rate"])] for k, label in labels if k in results]
    peer = results.get("procrastinate")
    ratios = []
    if peer:
        for k, label in labels[:2]:
            ratios.append([f"{label} ÷ Procrastinate (batch)", ratio(results[k]["rate"], peer["rate"]),
                           ratio(results[k]["submit_rate"], peer["submit_rate"])])
        if "procrastinate_single" in results:
            single = results["procrastinate_single"]
            ratios.append(["cronwheel, PostgreSQL ÷ Procrastinate (one defer per job)",
                           ratio(results["cronwheel_postgres"]["rate"], single["rate"]),
                           ratio(results["cronwheel_postgres"]["submit_rate"], single["submit_rate"])])
    text = "\n\n".join([
        machine_line(),
        table(f"Delayed jobs: submit + execute {args.n:,} one-off no-op jobs", ["run", "submission path", "submit",
              "submit rate", "submit + execute", "end-to-end rate"], rows),
        table("", ["ratio (above 1: cronwheel faster)", "end-to-end", "submission"], ratios) if ratios else "",
    ])
    emit(results, args.json, text)
    return 0


if __name__ == "__main__":
    guard(main)
