"""Two OS processes claim from one SQLite file at once: every (job, tick) exactly once.

Each process runs the same fake clock (``now`` steps through the same instants) and calls
``claim_due`` in small batches, retrying a busy lock at once, so the two keep taking the
write lock from each other. The
processes open the store, report ready, and block on stdin until the test tells both to go,
so they start together; the test then waits for them to exit (no sleeps anywhere).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from cronwheel.core import schedule
from cronwheel.core.model import JobSpec, MisfirePolicy
from cronwheel.core.records import NewJob
from cronwheel.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_767_225_600_000
STEP_MS = 1_000
STEPS = 30
N_JOBS = 200
LIMIT = 16  # small batches: many transactions, much interleaving

WORKER = textwrap.dedent(
    """
    import json, sys
    from cronwheel.store.sqlite import SqliteStore

    path, out, t0, step, steps, limit = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
    store = SqliteStore.open(path)
    # SQLite's busy timeout sleeps (1, 2, 5 … 100 ms) between retries, so a waiting process
    # almost never catches the lock between the other's back-to-back transactions; retrying
    # at once instead makes the two contend on every transaction, which is what we test.
    store._conn.set_busy_handler(lambda tries: tries < 100_000_000)
    print("ready", flush=True)
    assert sys.stdin.readline().strip() == "go"
    claimed, skipped, transactions = [], [], 0
    for i in range(steps):
        now = t0 + i * step
        while True:
            res = store.claim_due(range(64), now, limit)
            transactions += 1
            claimed += [e.execution_id for e in res.executions]
            skipped += [e.execution_id for e in res.skipped]
            if res.jobs_claimed < limit:
                break
    store.close()
    with open(out, "w") as f:
        json.dump({"claimed": claimed, "skipped": skipped, "transactions": transactions}, f)
    """
)


def test_two_processes_claim_every_tick_exactly_once(tmp_path: Path) -> None:
    db = tmp_path / "race.db"
    store = SqliteStore.open(db)
    text = "* * * * * *"  # every second
    jobs: list[NewJob] = []
    for i in range(N_JOBS):
        jid = f"race{i:04d}"
        # first ticks staggered over the first few seconds
        first = T0 + (i % 5) * STEP_MS
        jobs.append(NewJob(jid, JobSpec(target={"command": "true"}, schedule=text,
                                        misfire=MisfirePolicy.RUN_ALL), first))  # fmt: skip
    store.create_jobs(jobs, T0 - 60_000)
    store.close()

    outs = [tmp_path / f"out{k}.json" for k in range(2)]
    args = [str(T0), str(STEP_MS), str(STEPS), str(LIMIT)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(out), *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            p.communicate(timeout=90)
            assert p.returncode == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    results = [json.loads(out.read_text()) for out in outs]
    end = T0 + (STEPS - 1) * STEP_MS
    expected = set()
    for job in jobs:
        assert job.next_run_at is not None
        tick: int | None = job.next_run_at
        while tick is not None and tick <= end:
            expected.add(f"{job.job_id}:{tick}")
            tick = schedule.next_fire(text, job.job_id, "UTC", tick)

    a, b = (set(r["claimed"]) for r in results)
    assert len(a) == len(results[0]["claimed"]) and len(b) == len(results[1]["claimed"])
    assert not a & b, f"{len(a & b)} ticks dispatched twice, e.g. {sorted(a & b)[:3]}"
    assert a | b == expected, f"lost: {sorted(expected - (a | b))[:3]}, extra: {sorted((a | b) - expected)[:3]}"
    assert results[0]["skipped"] == results[1]["skipped"] == []
    # both processes really raced (each won some transactions)
    assert a and b, (len(a), len(b))

    store = SqliteStore.open(db)
    try:
        assert store.count_executions() == len(expected)
        for job in jobs[:10]:
            stored = store.get_job(job.job_id)
            assert stored is not None and stored.next_run_at == end + STEP_MS
    finally:
        store.close()
