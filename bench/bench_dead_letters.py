"""The SQLite store's bound on each job's dead letters (``dlq_keep_last``), alone: what the
retention's pass over the dead-letter queue costs the store's one writer.

Makes ``--jobs`` every-minute jobs whose first run fails with no retries left (a dead letter
each, through the ``Store`` interface), copies each job's dead letter into ``--dead`` of them
(older ticks, in SQL: the queue of a store that has been failing for a while), then runs the
pass as the daemon's retention does (``PRUNE_DEAD_LETTERS_READ`` index entries read and at most
``PRUNE_DEAD_LETTERS`` deleted a call) and prints the calls, the longest one, and what it
deleted. With ``--dead`` under ``--keep`` the pass only reads: the cost a store pays every
pass for a queue within its bound.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_dead_letters.py --jobs 2000 --dead 500 --keep 1000
    PYTHONPATH=$PWD .venv/bin/python bench/bench_dead_letters.py --jobs 2000 --dead 500 --keep 100
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import apsw
from _common import create_jobs_in_batches, run_due_once, timed_pass

from cronwheel.core.model import JobSpec, RetryPolicy
from cronwheel.core.records import Outcome
from cronwheel.engine.retention import PRUNE_DEAD_LETTERS, PRUNE_DEAD_LETTERS_READ
from cronwheel.store.sqlite import SqliteStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
BATCH = 5000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000, help="jobs with dead letters")
    ap.add_argument("--dead", type=int, default=500, help="dead letters of each job")
    ap.add_argument("--keep", type=int, default=1000, help="dlq_keep_last: each job's newest kept")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.db"
        store = SqliteStore.open(path)
        spec = JobSpec(target={"python": "m:f"}, schedule="* * * * *", retry=RetryPolicy(max_attempts=1))
        create_jobs_in_batches(store, spec, args.jobs, T0, T0 - 1000, BATCH)
        run_due_once(store, T0, Outcome.FAILED, BATCH)
        copy_dead_letters(path, args.dead)

        def call(cursor: str | None) -> tuple[int, str | None]:
            pruned, cursor = store.prune_dead_letters(args.keep, cursor, PRUNE_DEAD_LETTERS_READ, PRUNE_DEAD_LETTERS)
            return sum(p.pruned for p in pruned), cursor

        elapsed, calls, longest, deleted = timed_pass(call)
        store.close()
    print(f"{args.jobs} jobs x {args.dead} dead letters, keep {args.keep}: the pass {elapsed * 1000:.0f} ms in {calls} "
          f"calls, the longest {longest * 1000:.1f} ms, {deleted} deleted")


def copy_dead_letters(path: Path, per_job: int) -> None:
    """Each job's one dead letter copied into ``per_job`` of them, a minute apart before it."""
    conn = apsw.Connection(str(path))
    columns = [row[1] for row in conn.execute("PRAGMA table_info(executions)")]
    shifted = {"execution_id": "job_id || ':' || (scheduled_at - k * 60000)", "scheduled_at": "scheduled_at - k * 60000"}
    select = ", ".join(shifted.get(c, c) for c in columns)
    with conn:
        conn.execute(f"""
            WITH RECURSIVE copies(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM copies WHERE k < {per_job - 1})
            INSERT INTO executions ({", ".join(columns)})
            SELECT {select} FROM executions, copies WHERE status = 'DEAD'""")
    conn.close()


if __name__ == "__main__":
    main()
