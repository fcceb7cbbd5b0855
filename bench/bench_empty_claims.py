"""What a neighbour's idle remote workers cost a tenant's claims: a real daemon, SQLite and
PostgreSQL. Tenant ``acme`` has ``--jobs`` one-off executions ready in its queue; its one
worker claims one, completes it, and claims again, ``--claims`` times alone, then as many
again while tenant ``noisy`` keeps ``--flood`` connections claiming from its empty queue in a
loop (``waitSec`` 0: the worst an idle worker can do), as fast as they go or ``--rate`` a
second in all (the same flood then whatever a claim costs). Reported: p50 and p99 of acme's claims
(the ones that got an execution), alone and under the flood, and noisy's empty claims a
second meanwhile.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_empty_claims.py
    PYTHONPATH=$PWD .venv/bin/python bench/bench_empty_claims.py --skip-postgres --flood 64 --rate 300

Alternate it with a ``git worktree`` of another commit (``--tree that/tree``) for a before and
after: the daemon runs from that tree, this script from this one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import BenchError, emit, guard, machine_line, pct, table

from tests.support.daemon import Daemon

DURABLE = "\n# bench: durable, like production\nfsync = on\nsynchronous_commit = on\nfull_page_writes = on\n"


async def measure(url: str, acme: str, noisy: str, args: argparse.Namespace) -> dict[str, float]:
    import aiohttp  # the API's own HTTP library

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        async def call(token: str, path: str, body: object) -> Any:
            async with http.post(url + path, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
                if r.status >= 300:
                    raise BenchError(f"{path}: {r.status} {await r.text()}")
                return await r.json()

        for start in range(0, args.jobs, 1000):
            jobs = [{"schedule": "+0s", "queue": "acme"}] * min(1000, args.jobs - start)
            await call(acme, "/v1/jobs/batch", {"jobs": jobs})

        async def acme_claims(n: int) -> list[float]:
            """ms of each of n claims that got an execution (each completed before the next)."""
            took: list[float] = []
            deadline = time.monotonic() + 120
            while len(took) < n:
                if time.monotonic() > deadline:
                    raise BenchError(f"acme's queue ran dry after {len(took)} claims: raise --jobs")
                t0 = time.perf_counter()
                got = (await call(acme, "/v1/workers/claim", {"workerId": "acme-w", "queues": ["acme"], "waitSec": 0}))["executions"]
                elapsed = (time.perf_counter() - t0) * 1000
                if not got:  # not yet dispatched: not a claim of work
                    await asyncio.sleep(0.01)
                    continue
                took.append(elapsed)
                for g in got:
                    await call(acme, f"/v1/executions/{g['executionId']}/complete",
                               {"workerId": "acme-w", "leaseEpoch": g["leaseEpoch"], "outcome": "succeeded"})
            return sorted(took)

        alone = await acme_claims(args.claims)
        stop, empty = asyncio.Event(), [0]

        async def noisy_claims() -> None:
            loop = asyncio.get_running_loop()
            at = loop.time()
            while not stop.is_set():
                await call(noisy, "/v1/workers/claim", {"workerId": "noisy-w", "queues": ["noisy"], "waitSec": 0})
                empty[0] += 1
                if args.rate:  # paced: the same flood before and after, however cheap a claim is
                    at += args.flood / args.rate
                    await asyncio.sleep(max(0.0, at - loop.time()))

        floods = [asyncio.create_task(noisy_claims()) for _ in range(args.flood)]
        await asyncio.sleep(1)  # the flood under way
        t0, before = time.perf_counter(), empty[0]
        loaded = await acme_claims(args.claims)
        rate = (empty[0] - before) / (time.perf_counter() - t0)
        stop.set()
        await asyncio.gather(*floods)
    return {"alone_p50_ms": pct(alone, 0.5), "alone_p99_ms": pct(alone, 0.99),
            "flood_p50_ms": pct(loaded, 0.5), "flood_p99_ms": pct(loaded, 0.99), "noisy_empty_claims_per_s": rate}


def run(store_args: tuple[str, ...], args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="cw-empty-claims-") as tmp:
        env = {"PYTHONPATH": str(args.tree)} if args.tree else None
        d = Daemon(Path(tmp) / "data", args=store_args, env=env).start(timeout=60)
        try:
            tokens = []
            for tenant in ("acme", "noisy"):
                assert d.post("/v1/tenants", {"name": tenant}).status == 201
                tokens.append(str(d.post("/v1/tokens", {"tenant": tenant}).json()["token"]))
            return asyncio.run(measure(d.url, tokens[0], tokens[1], args))
        finally:
            d.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=3000, help="acme's ready executions")
    ap.add_argument("--claims", type=int, default=1000, help="acme's claims measured, alone and under the flood")
    ap.add_argument("--flood", type=int, default=32, help="noisy's connections claiming from its empty queue")
    ap.add_argument("--rate", type=float, default=0, help="noisy's empty claims a second in all (0: as fast as they go)")
    ap.add_argument("--skip-postgres", action="store_true", help="SQLite only")
    ap.add_argument("--skip-sqlite", action="store_true", help="PostgreSQL only")
    ap.add_argument("--tree", type=Path, help="run the daemon from this source tree (another commit's worktree)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.jobs < 2 * args.claims:
        raise BenchError("--jobs must be at least twice --claims (acme's work for both phases)")
    results: dict[str, Any] = {} if args.skip_sqlite else {"sqlite": run((), args)}
    if not args.skip_postgres:
        from tests.support.postgres import Cluster, find_bindir, url_of

        bindir = find_bindir()
        if bindir is None:
            raise BenchError("no PostgreSQL binaries (initdb, pg_ctl): install postgresql or pass --skip-postgres")
        os.environ.setdefault("CRONWHEEL_TEST_PG_DIR", tempfile.gettempdir())
        cluster = Cluster.create(bindir)
        try:
            with open(cluster.data / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write(DURABLE)
            cluster.start()
            cluster.sql("CREATE DATABASE cronwheel")
            dsn = url_of({"host": "127.0.0.1", "port": cluster.port, "user": "postgres", "dbname": "cronwheel"})
            results["postgres"] = run(("--store", dsn), args)
        finally:
            cluster.destroy()
    rows = [
        (store, f"{r['alone_p50_ms']:.1f} / {r['alone_p99_ms']:.1f} ms", f"{r['flood_p50_ms']:.1f} / {r['flood_p99_ms']:.1f} ms",
         f"{r['noisy_empty_claims_per_s']:,.0f}/s")
        for store, r in results.items()
    ]  # fmt: skip
    text = "\n".join([machine_line(), table(
        f"acme's claims (p50 / p99), alone and with noisy's {args.flood} connections claiming nothing"
        + (f" ({args.rate:g}/s)" if args.rate else ""),
        ("store", "alone", "under the flood", "noisy's empty claims"), rows)])  # fmt: skip
    emit(results, args.json, text)
    return 0


if __name__ == "__main__":
    guard(main)
