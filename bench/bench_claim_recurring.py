"""The SQLite store's claim of a herd of recurring jobs, alone: CPU per execution.

Registers N every-minute ``overlap: allow`` jobs due at the same minute, then claims them in
batches of 5,000 through the ``Store`` interface, minute after minute, without starting any:
the first round finds no run of theirs waiting, each later one finds one more per job (what
the claim's backlog probe then reads). Times each round's thread CPU (SQLite's work
included: apsw runs it in the calling thread).

    PYTHONPATH=$PWD .venv/bin/python bench/bench_claim_recurring.py --n 30000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import create_jobs_in_batches

from cronwheel.core.ids import N_BUCKETS
from cronwheel.core.model import JobSpec
from cronwheel.store.sqlite import SqliteStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
BATCH = 5000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30_000, help="recurring jobs due together")
    ap.add_argument("--rounds", type=int, default=3, help="minutes claimed in a row")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "s.db")
        spec = JobSpec(target={"python": "m:f"}, schedule="* * * * *")
        create_jobs_in_batches(store, spec, args.n, T0, T0 - 1000, BATCH)
        per_round = []
        for minute in range(args.rounds):
            began, claimed = time.thread_time(), 0
            while (res := store.claim_due(list(range(N_BUCKETS)), T0 + minute * MINUTE, BATCH)).jobs_claimed:
                claimed += len(res.executions)
            per_round.append((time.thread_time() - began) / max(1, claimed) * 1e6)
        store.close()
    rounds = ", ".join(f"{us:.1f}" for us in per_round)
    print(f"{args.n} recurring jobs: claim CPU per execution by round {rounds} µs")


if __name__ == "__main__":
    main()
