"""What one tenant's bulk costs another: the two paths where a neighbour's size once showed.

1. **A remote worker's claim.** Tenant A has ``--queued`` executions ready in the shared
   queue ``default``; tenant B's worker claims from the same queue and finds nothing. The
   claim runs inside the SQLite store's write transaction, so its time is time every other
   writer on the node waits. Reported: B's empty claim and A's claim of 10, p50 over
   ``--claims`` calls, through the ``Store`` interface.
2. **A job's calendars.** A job observes ``--calendars`` calendars of ``--windows`` windows
   each; ``upcoming`` for ``--count`` ticks of an every-minute schedule asks the calendars
   about each tick (as ``GET /v1/jobs/{id}/upcoming`` and a backfill do, on the event loop).
3. **A tenant's reads.** A real daemon; tenant A keeps ``--flood`` connections busy listing
   ``--listing`` of its jobs each, over and over; tenant B lists its 5 jobs 20 times, one
   after another. Reported: B's p50 and worst, alone and under A's flood, and A's listings
   per second meanwhile. (``--flood 0`` skips it.)

    PYTHONPATH=$PWD .venv/bin/python bench/bench_neighbours.py
    PYTHONPATH=$PWD .venv/bin/python bench/bench_neighbours.py --queued 100000 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit, guard, machine_line, table

from cronwheel.core import schedule
from cronwheel.core.calendar import Calendar, Exclusions, build_calendar, upcoming
from cronwheel.core.ids import new_job_id
from cronwheel.core.instants import format_instant
from cronwheel.core.model import JobSpec, RetryPolicy
from cronwheel.core.records import NewJob
from cronwheel.store.calendars import (
    PARSED_ENTRIES,
    FairCache,
    calendar_entries,
    calendar_row,
    calendar_spec_json,
)
from cronwheel.store.sqlite import SqliteStore
from tests.support.daemon import Daemon

T = 1_767_225_600_000  # 2026-01-01T00:00:00Z
ALL_BUCKETS = range(64)


def claim_timings(queued: int, claims: int) -> dict[str, float]:
    """p50 ms of B's empty claim and of A's claim of 10, with A's ``queued`` rows ready."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "cronwheel.db")
        try:
            for start in range(0, queued, 5000):
                jobs = [NewJob(new_job_id(), JobSpec(target={"queue": "default"}, run_at=T, tenant="a",
                                                     retry=RetryPolicy(max_attempts=1)), T)
                        for _ in range(min(5000, queued - start))]  # fmt: skip
                store.create_jobs(jobs, T - 60_000)
                store.claim_due(ALL_BUCKETS, T + 1, 5000)

            def p50(tenant: str, n: int) -> float:
                times = []
                for _ in range(claims):
                    t0 = time.perf_counter()
                    store.claim_for_worker(["default"], f"worker-{tenant}", n, T + 10, tenant=tenant)
                    times.append((time.perf_counter() - t0) * 1000)
                return statistics.median(times)

            return {"empty_claim_of_b_ms": p50("b", 10), "claim_of_10_of_a_ms": p50("a", 10)}
        finally:
            store.close()


def calendar_timing(calendars: int, windows: int, count: int) -> dict[str, float]:
    """Seconds for ``upcoming`` of ``count`` every-minute ticks against the calendars."""
    cals = []
    for c in range(calendars):
        # two-hour windows every day from 2030 on, none on the ticks asked about (2026)
        spans = [(format_instant(1_893_456_000_000 + (c * windows + w) * 86_400_000),
                  format_instant(1_893_456_000_000 + (c * windows + w) * 86_400_000 + 7_200_000))
                 for w in range(windows)]  # fmt: skip
        cals.append(build_calendar(f"cal-{c}", windows=spans))
    # what a read of the calendars does: build each from its row (parsed at the first read, the
    # same objects at the next while the rows' revisions are unchanged)
    rows = [("bench", cal.name, calendar_spec_json(cal), 0, 0, 1, cal.index().pack()) for cal in cals]
    held = FairCache[Calendar](PARSED_ENTRIES, calendar_entries)
    reads = []
    for _ in range(2):
        t0 = time.perf_counter()
        for row in rows:
            calendar_row(row, json.loads, held)
        reads.append(time.perf_counter() - t0)
    exclusions = Exclusions("UTC", tuple(cals))
    every_minute = schedule.parse_schedule("* * * * *", "bench", "UTC").next_after
    t0 = time.perf_counter()
    ticks, _ = upcoming(every_minute, T, count, exclusions)
    assert len(ticks) == count
    return {"upcoming_s": time.perf_counter() - t0, "lookups": count * calendars,
            "calendar_rows_first_s": reads[0], "calendar_rows_again_s": reads[1]}


def read_flood(flood: int, listing: int) -> dict[str, float]:
    """B's listing latency (ms) alone and under A's flood of ``flood`` listings of ``listing``."""
    import aiohttp  # the API's own HTTP library; only this part needs it

    hook = {"schedule": "0 0 1 1 *", "http": {"url": "https://hooks.example.com/x"}}

    async def measure(d: Daemon, a: str, b: str) -> dict[str, float]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            async def call(method: str, path: str, token: str, body: object = None) -> object:
                async with http.request(method, d.url + path, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
                    assert r.status < 300, await r.text()
                    return await r.json()

            for start in range(0, listing, 1000):
                await call("POST", "/v1/jobs/batch", a, {"jobs": [hook] * min(1000, listing - start)})
            for _ in range(5):
                await call("POST", "/v1/jobs", b, hook)

            async def b_ms() -> float:
                t0 = time.perf_counter()
                await call("GET", "/v1/jobs?limit=5", b)
                return (time.perf_counter() - t0) * 1000

            alone = [await b_ms() for _ in range(20)]
            stop, listed = asyncio.Event(), [0]

            async def a_lists() -> None:
                while not stop.is_set():
                    await call("GET", f"/v1/jobs?limit={listing}", a)
                    listed[0] += 1

            floods = [asyncio.create_task(a_lists()) for _ in range(flood)]
            await asyncio.sleep(2)  # the flood's reads queue up
            t0, before = time.perf_counter(), listed[0]
            loaded = [await b_ms() for _ in range(20)]
            a_rate = (listed[0] - before) / (time.perf_counter() - t0)
            stop.set()
            await asyncio.gather(*floods)
        return {"b_alone_p50_ms": statistics.median(alone), "b_flood_p50_ms": statistics.median(loaded),
                "b_flood_max_ms": max(loaded), "a_listings_per_s": a_rate}

    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(Path(tmp) / "data").start(timeout=60)
        try:
            tokens = []
            for tenant in ("a", "b"):
                assert d.post("/v1/tenants", {"name": tenant}).status == 201
                tokens.append(str(d.post("/v1/tokens", {"tenant": tenant}).json()["token"]))
            return asyncio.run(measure(d, *tokens))
        finally:
            d.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queued", type=int, default=100_000, help="tenant A's ready executions in the shared queue")
    ap.add_argument("--claims", type=int, default=50)
    ap.add_argument("--calendars", type=int, default=8)
    ap.add_argument("--windows", type=int, default=5000, help="windows per calendar")
    ap.add_argument("--count", type=int, default=1000, help="ticks asked of upcoming")
    ap.add_argument("--flood", type=int, default=100, help="tenant A's connections listing its jobs (0: skip)")
    ap.add_argument("--listing", type=int, default=1000, help="A's jobs, and how many each of its listings asks for")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = {**claim_timings(args.queued, args.claims), **calendar_timing(args.calendars, args.windows, args.count)}
    rows = []
    if args.flood:
        result.update(read_flood(args.flood, args.listing))
        rows = [
            ("B's listing of 5, alone (p50)", f"{result['b_alone_p50_ms']:.1f} ms"),
            (f"B's listing of 5, A's {args.flood} connections listing {args.listing:,} (p50 / worst)",
             f"{result['b_flood_p50_ms']:.0f} / {result['b_flood_max_ms']:.0f} ms"),
            ("A's listings meanwhile", f"{result['a_listings_per_s']:.0f}/s"),
        ]
    text = "\n".join([
        machine_line(),
        table("What a neighbour's bulk costs", ("path", "figure"), [
            (f"B's empty claim, {args.queued:,} of A's rows ready (p50)", f"{result['empty_claim_of_b_ms']:.2f} ms"),
            (f"A's claim of 10 from its {args.queued:,} (p50)", f"{result['claim_of_10_of_a_ms']:.2f} ms"),
            (f"upcoming of {args.count:,} ticks, {args.calendars} calendars x {args.windows:,} windows",
             f"{result['upcoming_s']:.3f} s"),
            (f"a claim batch's read of {args.calendars} calendar rows x {args.windows:,} windows: first / again",
             f"{result['calendar_rows_first_s'] * 1000:.1f} / {result['calendar_rows_again_s'] * 1000:.2f} ms"),
            *rows,
        ]),
    ])  # fmt: skip
    emit(result, args.json, text)
    return 0


if __name__ == "__main__":
    guard(main)
