"""Two OS processes claim from one SQLite file at once: every (job, tick) exactly once
(``tests/support/claimrace.py`` runs the race). Each retries a busy lock at once, so the two
keep taking the write lock from each other.
"""

from __future__ import annotations

from pathlib import Path

from cronwheel.core.model import JobSpec, MisfirePolicy
from cronwheel.core.records import NewJob
from cronwheel.store.sqlite import SqliteStore
from tests.support.claimrace import assert_each_tick_once, race

T0 = 1_767_225_600_000
STEP_MS = 1_000
STEPS = 30
N_JOBS = 200
LIMIT = 16  # small batches: many transactions, much interleaving

OPENING = """
from cronwheel.store.sqlite import SqliteStore
store = SqliteStore.open(target)
# SQLite's busy timeout sleeps (1, 2, 5 … 100 ms) between retries, so a waiting process
# almost never catches the lock between the other's back-to-back transactions; retrying
# at once instead makes the two contend on every transaction, which is what we test.
store._conn.set_busy_handler(lambda tries: tries < 100_000_000)
"""


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

    results = race(OPENING, str(db), tmp_path, T0, STEP_MS, STEPS, LIMIT)
    end = T0 + (STEPS - 1) * STEP_MS
    expected = assert_each_tick_once(results, jobs, text, end)

    store = SqliteStore.open(db)
    try:
        assert store.count_executions() == len(expected)
        for job in jobs[:10]:
            stored = store.get_job(job.job_id)
            assert stored is not None and stored.next_run_at == end + STEP_MS
    finally:
        store.close()
