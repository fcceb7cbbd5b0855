"""APScheduler 3.x, the in-process peer, measured in a process of its own (one per
configuration, so that its peak RSS is its own). Prints one JSON line. Used by
bench_spike.py, bench_register.py and bench_dispatch_lag.py; by hand::

    .venv/bin/python bench/peer_apscheduler.py spike --n 10000 --store memory
    .venv/bin/python bench/peer_apscheduler.py spike --n 10000 --store sqlite --threads 20
    .venv/bin/python bench/peer_apscheduler.py spike --n 10000 --defaults   # as shipped
    .venv/bin/python bench/peer_apscheduler.py register --n 100000 --store memory
    .venv/bin/python bench/peer_apscheduler.py lag --seconds 30 --jobs 10

Fairness: every job gets ``misfire_grace_time=None`` and ``coalesce=False`` so that every
one runs however late (APScheduler's defaults are a 1 s grace time, after which a run is
skipped as "missed", and a 10-thread pool: ``--defaults`` shows what they do to a spike).
The SQLite store is SQLAlchemyJobStore on a file (SQLite's defaults: rollback journal,
synchronous=FULL). For the spike its rows are bulk-inserted in one transaction, as
cronwheel's are; ``register`` times the public ``add_job`` instead.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import threading
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STARTS: list[float] = []
_lock = threading.Lock()


def noop() -> None:
    """The no-op job: records when it started (list.append is atomic under the GIL)."""
    STARTS.append(time.time())


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pct(values: list[float], q: float) -> float:
    return float(values[min(len(values) - 1, int(q * len(values)))]) if values else float("nan")


def _scheduler(store: str, path: Path, threads: int, defaults: bool) -> Any:
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.jobstores.memory import MemoryJobStore
    from apscheduler.schedulers.background import BackgroundScheduler

    stores: dict[str, Any] = {"default": MemoryJobStore()}
    if store == "sqlite":
        from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

        stores["default"] = SQLAlchemyJobStore(url=f"sqlite:///{path}")
    if defaults:
        return BackgroundScheduler(jobstores=stores, timezone=UTC)
    return BackgroundScheduler(
        jobstores=stores,
        executors={"default": ThreadPoolExecutor(threads)},
        job_defaults={"misfire_grace_time": None, "coalesce": False, "max_instances": 1},
        timezone=UTC,
    )


def spike(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from apscheduler.events import EVENT_JOB_MISSED
    from apscheduler.jobstores.memory import MemoryJobStore
    from apscheduler.triggers.date import DateTrigger
    from apscheduler.util import datetime_to_utc_timestamp

    t_due = float(int(time.time()) + int(args.lead) + 1)
    due = datetime.fromtimestamp(t_due, UTC)
    sched = _scheduler(args.store, tmp / "jobs.sqlite", args.threads, args.defaults)
    missed = [0]

    def on_missed(_: Any) -> None:
        missed[0] += 1

    sched.add_listener(on_missed, EVENT_JOB_MISSED)
    t0 = time.perf_counter()
    if args.store == "memory":
        sched.start(paused=True)
        for i in range(args.n):  # ids in order: each insert lands at the end of the sorted list
            sched.add_job(noop, DateTrigger(due), id=f"j{i:07d}")
    else:
        # stage the Job objects in memory, then one INSERT ... executemany into the SQL store
        sched.add_jobstore(MemoryJobStore(), "staging")
        sched.start(paused=True)
        for i in range(args.n):
            sched.add_job(noop, DateTrigger(due), id=f"j{i:07d}", jobstore="staging")
        staging = sched._lookup_jobstore("staging")
        sql = sched._lookup_jobstore("default")
        rows = [{"id": j.id, "next_run_time": datetime_to_utc_timestamp(j.next_run_time),
                 "job_state": pickle.dumps(j.__getstate__(), sql.pickle_protocol)} for j in staging.get_all_jobs()]
        with sql.engine.begin() as conn:
            conn.execute(sql.jobs_t.insert(), rows)
        del rows
        sched.remove_jobstore("staging")
    registered_s = time.perf_counter() - t0
    if time.time() >= t_due - 0.5:
        raise SystemExit(f"registration took {registered_s:.1f} s, past the due time: raise --lead")
    sched.resume()
    deadline = t_due + args.timeout
    while time.time() < deadline and len(STARTS) + missed[0] < args.n:
        time.sleep(0.05)
    done_at = time.time()
    sched.shutdown(wait=True)
    lags = sorted((s - t_due) * 1000 for s in STARTS)
    return {
        "peer": "apscheduler", "store": args.store, "defaults": args.defaults, "n": args.n,
        "threads": 10 if args.defaults else args.threads,
        "register_s": registered_s, "executed": len(STARTS), "missed": missed[0],
        "timed_out": len(STARTS) + missed[0] < args.n,
        "last_started_s": (max(STARTS) - t_due) if STARTS else float("nan"),
        "lag_p50_ms": _pct(lags, 0.5), "lag_p99_ms": _pct(lags, 0.99),
        "lag_max_ms": lags[-1] if lags else float("nan"),
        "wait_s": done_at - t_due, "peak_rss_mib": _peak_mib(),
    }


def register(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """add_job of N cron jobs (spread over the day, like cronwheel's ``H H * * *``), then
    the scheduler's start-up and RSS with them registered."""
    from apscheduler.triggers.cron import CronTrigger

    base_rss = _rss_mib()
    sched = _scheduler(args.store, tmp / "jobs.sqlite", args.threads, False)
    sched.start(paused=True)
    t0 = time.perf_counter()
    stopped_early = False
    added = 0
    for i in range(args.n):
        h = zlib.crc32(b"j%d" % i)
        sched.add_job(noop, CronTrigger(hour=h % 24, minute=(h >> 8) % 60, timezone=UTC), id=f"j{i:07d}")
        added += 1
        if args.max_seconds and time.perf_counter() - t0 > args.max_seconds:
            stopped_early = True
            break
    add_s = time.perf_counter() - t0
    rss_after_add = _rss_mib()
    sched.shutdown(wait=False)
    start_s = float("nan")
    rss_started = float("nan")
    if args.store == "sqlite" and not stopped_early:
        # a fresh process's view: a scheduler on the populated store, started and resumed
        sched = _scheduler(args.store, tmp / "jobs.sqlite", args.threads, False)
        t1 = time.perf_counter()
        sched.start()
        sched.get_jobs()  # what a restarted scheduler reads to know its jobs
        start_s = time.perf_counter() - t1
        rss_started = _rss_mib()
        sched.shutdown(wait=False)
    return {
        "peer": "apscheduler", "store": args.store, "n": args.n, "added": added, "stopped_early": stopped_early,
        "add_s": add_s, "add_rate": added / add_s if add_s else float("nan"),
        "rss_base_mib": base_rss, "rss_mib": rss_after_add, "start_s": start_s, "rss_started_mib": rss_started,
        "peak_rss_mib": _peak_mib(),
    }


def lag(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """JOBS every-second cron jobs for SECONDS; lateness = start − the whole second it was due."""
    from apscheduler.triggers.cron import CronTrigger

    sched = _scheduler("memory", tmp / "jobs.sqlite", args.threads, False)
    sched.start()
    for i in range(args.jobs):
        sched.add_job(noop, CronTrigger(second="*", timezone=UTC), id=f"lag{i}")
    t0 = time.time()
    time.sleep(args.seconds)  # a benchmark measures a period of time
    sched.shutdown(wait=True)
    lags = sorted((s - int(s)) * 1000 for s in STARTS if s >= int(t0) + 1)
    return {"peer": "apscheduler", "jobs": args.jobs, "seconds": args.seconds, "executions": len(lags),
            "lag_p50_ms": _pct(lags, 0.5), "lag_p99_ms": _pct(lags, 0.99),
            "lag_max_ms": lags[-1] if lags else float("nan"), "peak_rss_mib": _peak_mib()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["spike", "register", "lag"])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--store", choices=["memory", "sqlite"], default="memory")
    ap.add_argument("--threads", type=int, default=20, help="ThreadPoolExecutor size")
    ap.add_argument("--defaults", action="store_true", help="APScheduler's own defaults (grace 1 s, 10 threads)")
    ap.add_argument("--lead", type=float, default=None, help="spike: seconds from start to the due time")
    ap.add_argument("--timeout", type=float, default=900, help="spike: give up this long after the due time")
    ap.add_argument("--max-seconds", type=float, default=0, help="register: stop adding after this long")
    ap.add_argument("--seconds", type=float, default=30, help="lag: how long")
    ap.add_argument("--jobs", type=int, default=10, help="lag: every-second jobs")
    ap.add_argument("--dir", default=None, help="where the SQLite file goes (default: a temp dir)")
    args = ap.parse_args()
    if args.lead is None:
        args.lead = 3 + args.n * (0.0001 if args.store == "memory" else 0.0002)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        result = {"spike": spike, "register": register, "lag": lag}[args.mode](args, Path(tmp))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
