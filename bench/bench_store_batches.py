"""The SQLite store's start and completion transactions of a herd, alone: CPU per execution.

Registers N one-off no-op jobs over ``--tenants`` tenants (100: the shape of bench_herd.py;
1: bench_spike.py's), in batches of 5,000 as the benchmarks' bulk path does (every job has
no further tick, so every completion settles its job), claims them, then starts and
completes them in batches of ``--batch`` through the ``Store`` interface, timing each call's
thread CPU (SQLite's work included: apsw runs it in the calling thread), and the claims'
CPU too. ``--statements`` adds each statement's wall time per execution (apsw's profile
hook), by phase (claim, run), ``--profile`` a
cProfile of the Python around SQLite, ``--pages`` the pages each phase writes to the WAL per
execution, by table or index (read from the WAL's frame headers and the ``dbstat`` table: a
page written by two commits counts twice, as it is written twice). ``--fair`` starts the
executions in the order a ``FairQueue`` pops them, as the daemon does, rather than in the
ready index's order.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_store_batches.py --n 20000 --batch 256
    PYTHONPATH=$PWD .venv/bin/python bench/bench_store_batches.py --n 30000 --fair --pages
    PYTHONPATH=$PWD .venv/bin/python bench/bench_store_batches.py --n 100000 --fair --tenants 1
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cronwheel.core.fairness import FairQueue
from cronwheel.core.ids import new_job_id
from cronwheel.core.model import JobSpec, RetryPolicy
from cronwheel.core.records import Completion, NewJob, Outcome, StartRequest
from cronwheel.store.sqlite import SqliteStore

T = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class WalPages:
    """Which table or index each page a phase wrote to the WAL belongs to: the WAL is emptied
    (checkpointed) before each counted call, and after it its frame headers name the pages."""

    def __init__(self, store: SqliteStore, path: Path) -> None:
        self.conn, self.wal = store._conn, Path(f"{path}-wal")
        self.conn.execute("PRAGMA wal_autocheckpoint = 0")  # the WAL holds every frame of the phase
        self.page_size = self.conn.execute("PRAGMA page_size").fetchall()[0][0]
        self.by_phase: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def count(self, phase: str) -> None:
        names = dict(self.conn.execute("SELECT pageno, name FROM dbstat").fetchall())
        data, frame = self.wal.read_bytes(), 24 + self.page_size
        for off in range(32, len(data) - frame + 1, frame):  # 32-byte WAL header, then frames
            (page,) = struct.unpack_from(">I", data, off)
            self.by_phase[phase][names.get(page, "(freed)")] += 1
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--statements", action="store_true", help="wall time per execution of each statement")
    ap.add_argument("--profile", action="store_true", help="cProfile of the start and completion calls")
    ap.add_argument("--pages", action="store_true", help="WAL pages per execution of each phase, by table or index")
    ap.add_argument("--fair", action="store_true", help="start in FairQueue order (as the daemon), not the ready index's")
    ap.add_argument("--tenants", type=int, default=100, help="tenants the jobs are spread over")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "cronwheel.db")
        jobs = [NewJob(new_job_id(), JobSpec(target={"python": "cronwheel.worker.noop:noop"}, run_at=T,
                                             tenant=f"tenant-{i % args.tenants:03d}", retry=RetryPolicy(max_attempts=1)), T)
                for i in range(args.n)]  # fmt: skip
        for i in range(0, len(jobs), 5000):
            store.create_jobs(jobs[i : i + 5000], T - 60_000)
        pages = WalPages(store, Path(tmp) / "cronwheel.db") if args.pages else None
        stats: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        phase = "claim"

        def on_statement(sql: str, ns: int) -> None:
            s = stats[f"{phase:>5}  " + " ".join(sql.split())[:80]]
            s[0] += 1
            s[1] += ns

        if args.statements:
            store._conn.set_profile(on_statement)
        fair: FairQueue[str] = FairQueue()
        claim_cpu = 0.0
        while True:
            t0 = time.thread_time()
            claimed = store.claim_due(list(range(64)), T, 5000)
            claim_cpu += time.thread_time() - t0
            for e in claimed.executions:
                fair.push(int(e.priority), e.tenant, e.execution_id)
            if claimed.jobs_claimed < 5000:
                break
        phase = "run"
        if pages is not None:
            pages.count("claim")
        now = T + 10
        ids: list[str] = []
        after: tuple[int, str] | None = None
        while page := store.ready_executions(now, 5000, after):
            ids += [e.execution_id for e in page]
            after = (page[-1].available_at, page[-1].execution_id)
        if args.fair:
            ids = list(iter(fair.pop, None))
        prof = cProfile.Profile() if args.profile else None
        start_cpu = complete_cpu = 0.0
        for i in range(0, len(ids), args.batch):
            starts = [StartRequest(eid, "w1") for eid in ids[i : i + args.batch]]
            if prof is not None:
                prof.enable()
            t0 = time.thread_time()
            grants = store.start_executions(starts, now)
            t1 = time.thread_time()
            if pages is not None:
                pages.count("start")
            done = [Completion(g.execution_id, "w1", g.lease_epoch, Outcome.SUCCEEDED, exit_code=0) for g in grants]
            t2 = time.thread_time()
            store.complete_executions(done, now + 5)
            t3 = time.thread_time()
            if pages is not None:
                pages.count("completion")
            if prof is not None:
                prof.disable()
            start_cpu += t1 - t0
            complete_cpu += t3 - t2
        n = len(ids)
        settled = store._conn.execute("SELECT count(*) FROM jobs WHERE status = 'SUCCEEDED'").fetchall()[0][0]
        store._conn.set_profile(None)
        store.close()
    print(f"{n} executions in batches of {args.batch}: CPU per execution claim {claim_cpu / n * 1e6:.1f} µs (batches "
          f"of 5,000), start {start_cpu / n * 1e6:.1f} µs, complete {complete_cpu / n * 1e6:.1f} µs ({settled} jobs settled)")  # fmt: skip
    if pages is not None:
        for phase, by in pages.by_phase.items():
            print(f"{phase:>10}: {sum(by.values()) / n:.2f} WAL pages per execution: "
                  + ", ".join(f"{name} {k / n:.2f}" for name, k in by.most_common(6)))
    for sql, (count, ns) in sorted(stats.items(), key=lambda kv: -kv[1][1])[:16]:
        print(f"{ns / n / 1000:8.2f} µs/execution {count:7d}×  {sql}")
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    return 0 if settled == n else 1


if __name__ == "__main__":
    raise SystemExit(main())
