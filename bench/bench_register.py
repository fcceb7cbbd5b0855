"""Registration: adding 10k / 100k / 1M cron jobs, then daemon start-up and RSS with them.

cronwheel, for each size, on a fresh data dir:

* register N cron jobs ``H H * * *`` (daily, each at its own hashed minute; ``--schedule``
  for another) with the no-op
  Python target through the bulk path the other benches use: ``Store.create_jobs`` in
  group-committed batches of 10,000, the next run computed exactly as the daemon does on
  ``POST /v1/jobs`` (``core.schedule.next_fire``), written before the daemon starts. (The
  HTTP API has no bulk endpoint and ``cronwheel import`` posts one job at a time.) What the
  schedule memos then hold (``memo_entries``) and this process's peak RSS are reported too: a
  daemon's memos fill the same way, over the day, as the jobs' ticks are claimed.
* start ``cronwheel serve``: start-up = spawn → ``READY=1`` on ``$NOTIFY_SOCKET`` (the store
  open, the API bound, the first 60 s horizon loaded into the wheel); also spawn → ``/healthz``.
* RSS: the daemon's VmRSS SETTLE seconds after READY, and its VmHWM, from /proc/PID/status
  (workers are listed separately: their size does not depend on the number of jobs).

The wheel holds only the 60 s horizon (~N/1440 of daily jobs), so the daemon's RSS should
stay flat as N grows.

APScheduler 3.x (bench/peer_apscheduler.py, a process per size): ``add_job`` of N
``CronTrigger(hour, minute)`` jobs into MemoryJobStore (all held in memory) and
SQLAlchemyJobStore on SQLite (one commit per add_job: sizes above ``--sqlite-max`` are
skipped), each capped at ``--peer-max-seconds``; RSS after adding, and for SQLite the time to
start a scheduler on the populated store.

    .venv/bin/python bench/bench_register.py --sizes 10000,100000
    .venv/bin/python bench/bench_register.py --sizes 10000,100000,1000000 --sqlite-max 100000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (
    NOOP,
    BenchError,
    ReadyListener,
    children,
    emit,
    guard,
    machine_line,
    mib,
    proc_status,
    rate,
    ratio,
    run_json,
    secs,
    self_peak_mib,
    table,
)

from tests.support.daemon import Daemon

SCHEDULE = "H H * * *"


def register_cron(db: Path, n: int, batch: int = 10_000, schedule: str = SCHEDULE) -> tuple[float, dict[str, int]]:
    from cronwheel.core import schedule as sched
    from cronwheel.core.ids import new_job_id
    from cronwheel.core.model import JobSpec
    from cronwheel.core.records import NewJob
    from cronwheel.store.sqlite import SqliteStore

    store = SqliteStore.open(db)
    t0 = time.perf_counter()
    try:
        now = int(time.time() * 1000)
        jobs: list[NewJob] = []
        for _ in range(n):
            job_id = new_job_id()
            spec = JobSpec(target=NOOP, schedule=schedule, timezone="UTC")
            nxt = sched.next_fire(schedule, job_id, "UTC", now)
            jobs.append(NewJob(job_id, spec, nxt))
            if len(jobs) >= batch:
                store.create_jobs(jobs, now)
                jobs = []
        if jobs:
            store.create_jobs(jobs, now)
    finally:
        store.close()
    spent = time.perf_counter() - t0
    memo = sched.cache_info()
    sched.cache_clear()
    return spent, memo


def cronwheel_size(n: int, workers: int, settle: float, schedule: str = SCHEDULE) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cw-register-") as tmp:
        data = Path(tmp) / "node"
        data.mkdir()
        db = data / "cronwheel.db"
        reg_s, memo = register_cron(db, n, schedule=schedule)
        register_peak = self_peak_mib()
        listener = ReadyListener(Path(tmp) / "notify.sock")
        ready_at: list[float | None] = [None]
        waiter = threading.Thread(target=lambda: ready_at.__setitem__(0, listener.wait_ready(300)))
        waiter.start()
        d = Daemon(data, workers=workers, slots=16, env={"NOTIFY_SOCKET": str(listener.path)})
        t0 = time.time()
        try:
            d.start(timeout=300)
            up_s = time.time() - t0
            waiter.join()
            if ready_at[0] is None:
                raise BenchError("the daemon never said READY=1")
            time.sleep(settle)  # a benchmark measures a steady state
            own = proc_status(d.pid)
            kids = [proc_status(c) for c in children(d.pid)]
            db_mib = sum(p.stat().st_size for p in data.glob("cronwheel.db*")) / 2**20
        finally:
            d.stop(timeout=60)
            listener.close()
    return {"n": n, "register_s": reg_s, "register_rate": n / reg_s, "ready_s": ready_at[0] - t0,
            "up_s": up_s, "rss_mib": own.get("VmRSS"), "hwm_mib": own.get("VmHWM"),
            "workers_rss_mib": sum(k.get("VmRSS", 0) for k in kids), "db_mib": db_mib,
            "memo_entries": memo["parse_size"] + memo["eval_size"], "register_peak_mib": register_peak}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated job counts")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--settle", type=float, default=5.0, help="seconds after READY before RSS is read")
    ap.add_argument("--sqlite-max", type=int, default=10_000, help="largest size for APScheduler's SQLite store")
    ap.add_argument("--peer-max-seconds", type=float, default=300, help="cap on one APScheduler add_job run")
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--schedule", default=SCHEDULE, help="the jobs' schedule")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]

    ours = [cronwheel_size(n, args.workers, args.settle, args.schedule) for n in sizes]
    peer_mem: list[dict[str, Any]] = []
    peer_sql: list[dict[str, Any]] = []
    if not args.skip_peer:
        base = [sys.executable, str(Path(__file__).with_name("peer_apscheduler.py")), "register",
                "--max-seconds", str(args.peer_max_seconds)]
        for n in sizes:
            peer_mem.append(run_json([*base, "--n", str(n), "--store", "memory"], timeout=args.peer_max_seconds + 300))
            if n <= args.sqlite_max:
                peer_sql.append(run_json([*base, "--n", str(n), "--store", "sqlite"], timeout=args.peer_max_seconds + 300))
    result = {"row": "register", "machine": machine_line(), "cronwheel": ours, "apscheduler_memory": peer_mem,
              "apscheduler_sqlite": peer_sql}

    rows = [[f"{r['n']:,}", secs(r["register_s"]), rate(r["register_rate"]), secs(r["ready_s"]), secs(r["up_s"]),
             mib(r["rss_mib"]), mib(r["hwm_mib"]), mib(r["workers_rss_mib"]), mib(r["db_mib"]), f"{r['memo_entries']:,}",
             mib(r["register_peak_mib"])] for r in ours]
    prow = []
    for label, runs in (("MemoryJobStore", peer_mem), ("SQLAlchemy/SQLite", peer_sql)):
        for p in runs:
            added = f"{p['added']:,}" + (" (capped)" if p["stopped_early"] else "")
            prow.append([label, f"{p['n']:,}", added, secs(p["add_s"]), rate(p["add_rate"]), secs(p["start_s"]),
                         mib(p["rss_mib"])])
    ratios = []
    for r in ours:
        mem = next((p for p in peer_mem if p["n"] == r["n"] and not p["stopped_early"]), None)
        sql = next((p for p in peer_sql if p["n"] == r["n"] and not p["stopped_early"]), None)
        ratios.append([f"{r['n']:,}", ratio(r["register_rate"], mem and mem["add_rate"]),
                       ratio(r["rss_mib"], mem and mem["rss_mib"]),
                       ratio(r["register_rate"], sql and sql["add_rate"]), ratio(r["rss_mib"], sql and sql["rss_mib"])])
    text = "\n\n".join([
        machine_line(),
        table(f"cronwheel: registering `{args.schedule}` jobs, then the daemon", ["jobs", "register", "jobs/s",
              "start → READY", "start → healthz+workers", "daemon RSS", "daemon HWM", "workers RSS", "store on disk",
              "memo entries", "registering peak RSS"], rows),
        table("APScheduler 3.x add_job", ["store", "jobs", "added", "add", "jobs/s", "start on store", "RSS after"], prow),
        table("", ["jobs", "reg. rate ÷ APS memory", "RSS ÷ APS memory", "reg. rate ÷ APS SQLite", "RSS ÷ APS SQLite"],
              ratios),
    ])
    emit(result, args.json, text)
    return 0


if __name__ == "__main__":
    guard(main)
