"""Procrastinate, the PostgreSQL peer (used by bench_delayed.py). Prints one JSON line.

    peer_procrastinate.py schema --dsn DSN                  # apply Procrastinate's schema
    peer_procrastinate.py worker --dsn DSN --concurrency 32 # run a worker until SIGTERM
    peer_procrastinate.py defer  --dsn DSN --n 50000 [--batch 1000 | --single --connections 8]

The task is an ``async def`` no-op (a sync task would run in a thread through asgiref).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

import procrastinate


def make_app(dsn: str, pool_size: int = 10) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn, min_size=1, max_size=pool_size))

    @app.task(name="noop", queue="bench")
    async def noop(**_: object) -> None:
        """Does nothing, successfully."""

    return app


async def defer(args: argparse.Namespace) -> dict[str, float]:
    app = make_app(args.dsn, max(2, args.connections))
    async with app.open_async():
        task = app.tasks["noop"]
        t0 = time.perf_counter()
        if args.single:
            sem = asyncio.Semaphore(args.connections)

            async def one(i: int) -> None:
                async with sem:
                    await task.defer_async(i=i)

            await asyncio.gather(*(one(i) for i in range(args.n)))
        else:
            for start in range(0, args.n, args.batch):
                await task.batch_defer_async(*({"i": i} for i in range(start, min(args.n, start + args.batch))))
        return {"deferred": args.n, "defer_s": time.perf_counter() - t0}


async def worker(args: argparse.Namespace) -> dict[str, float]:
    app = make_app(args.dsn, args.concurrency + 2)
    async with app.open_async():
        await app.run_worker_async(queues=["bench"], concurrency=args.concurrency, wait=True,
                                   fetch_job_polling_interval=0.5, install_signal_handlers=True,
                                   delete_jobs="never")
    return {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["schema", "worker", "defer"])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--single", action="store_true", help="one defer_async per job over --connections")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    if args.mode == "schema":
        async def apply() -> None:
            app = make_app(args.dsn)
            async with app.open_async():
                await app.schema_manager.apply_schema_async()

        asyncio.run(apply())
        print(json.dumps({"schema": "applied"}))
        return 0
    result = asyncio.run(defer(args) if args.mode == "defer" else worker(args))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
