"""Where a listing of jobs spends its CPU, stage by stage: ``GET /v1/jobs?limit=1000``'s work
without the HTTP, on a real SQLite store of 1,000 jobs.

Stages (the CPU of one listing, the median of ``--rounds``):

* ``read``      ``Store.list_jobs``: the reader thread's part, shared by every tenant's reads.
* ``answers``   each job's answer (``api.jobjson.job_answer``, a struct): on the event loop.
* ``dicts``     the same answers as dicts (``job_to_json``), as listings built them before.
* ``encode``    the page encoded as ``api.context.json_response`` does: on the event loop.

Usage::

    .venv/bin/python bench/bench_listing.py
    .venv/bin/python bench/bench_listing.py --jobs 1000 --rounds 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _common  # noqa: F401  (puts the repository on sys.path)
from bench_store import T0, make_job

from cronwheel.api.context import json_response
from cronwheel.api.jobjson import job_answer, job_to_json
from cronwheel.store.sqlite import SqliteStore


def cpu_ms(fn: Callable[[], object], rounds: int) -> float:
    """The median CPU milliseconds of one call, after two calls to warm up."""
    fn()
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        times.append((time.process_time() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1000, help="jobs in the store and on the page")
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cronwheel-bench-") as tmp:
        store = SqliteStore.open(Path(tmp) / "listing.db")
        store.create_jobs([make_job(T0 + 60_000) for _ in range(args.jobs)], T0)
        jobs = store.list_jobs(None, None, args.jobs, None)
        answers = [job_answer(j) for j in jobs]
        dicts = [job_to_json(j) for j in jobs]
        figures = {
            "read": cpu_ms(lambda: store.list_jobs(None, None, args.jobs, None), args.rounds),
            "answers": cpu_ms(lambda: [job_answer(j) for j in jobs], args.rounds),
            "dicts": cpu_ms(lambda: [job_to_json(j) for j in jobs], args.rounds),
            "encode": cpu_ms(lambda: json_response({"jobs": answers, "next": None}), args.rounds),
            "encode dicts": cpu_ms(lambda: json_response({"jobs": dicts, "next": None}), args.rounds),
        }
        store.close()
    print(f"a listing of {args.jobs:,} jobs, CPU ms (median of {args.rounds}):")
    for name, ms in figures.items():
        print(f"  {name:<13} {ms:6.1f}")
    loop, before = figures["answers"] + figures["encode"], figures["dicts"] + figures["encode dicts"]
    print(f"  event loop    {loop:6.1f}  (as dicts: {before:.1f})")


if __name__ == "__main__":
    main()
