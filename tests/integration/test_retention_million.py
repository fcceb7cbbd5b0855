"""Retention at scale: a million finished executions are pruned in small batches while a
reader keeps reading, and the SQLite WAL stays bounded."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import pytest

from cronwheel.core.ids import execution_id
from cronwheel.store.sqlite import SqliteStore
from tests.contract.conftest import T0, create, new_job

JOBS = 10
PER_JOB = 100_000
KEEP = 100


@pytest.mark.slow
def test_pruning_a_million_executions_keeps_the_newest_and_bounds_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "cronwheel.db"
    store = SqliteStore.open(path)
    jobs = [new_job(next_run_at=None, schedule="* * * * * *") for _ in range(JOBS)]
    create(store, *jobs)
    # a million finished executions, written straight into the table (the claim path is
    # tested elsewhere; here the point is the volume). apsw, not the sqlite3 module: two SQLite
    # libraries in one process do not see each other's POSIX locks on the file, so a reader of
    # the other library can rebuild the WAL index under the store's writer and lose its commits
    # (seen here as one pruned batch coming back and being counted twice).
    db = apsw.Connection(str(path))
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status, attempt,"
        " lease_epoch, available_at, created_at, started_at, finished_at, max_attempts)"
        " VALUES (?, ?, 'default', 1, ?, 'SUCCEEDED', 1, 1, ?, ?, ?, ?, 3)",
        (
            (execution_id(nj.job_id, T0 + i * 1000), nj.job_id, T0 + i * 1000, T0 + i * 1000,
             T0 + i * 1000, T0 + i * 1000, T0 + i * 1000 + 5)
            for nj in jobs for i in range(PER_JOB)
        ),
    )
    db.execute("COMMIT")
    assert db.execute("SELECT count(*) FROM executions").fetchall() == [(JOBS * PER_JOB,)]
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # the setup's bulk insert is not under test

    stop = threading.Event()
    reads = 0

    def reader() -> None:  # a busy API: short read transactions all the time
        nonlocal reads
        conn = apsw.Connection(str(path))
        while not stop.is_set():
            conn.execute("SELECT count(*) FROM jobs").fetchall()  # to the end: no open read
            reads += 1
        conn.close()

    wal = Path(str(path) + "-wal")
    wal_max = 0
    t = threading.Thread(target=reader)
    t.start()
    try:
        now = T0 + PER_JOB * 1000 + 86_400_000
        total, cursor, calls = 0, None, 0
        while True:
            deleted, cursor = store.prune_executions(now - 3_600_000, KEEP, cursor, 200, 5000)
            total += deleted
            calls += 1
            wal_max = max(wal_max, wal.stat().st_size if wal.exists() else 0)
            assert deleted <= 5000  # small batches: the hot path gets the writer in between
            if cursor is None:
                break
        store.checkpoint()
    finally:
        stop.set()
        t.join()
    assert reads > 0
    assert total == JOBS * (PER_JOB - KEEP)
    assert calls >= total // 5000
    counts = db.execute("SELECT job_id, count(*), min(scheduled_at) FROM executions GROUP BY job_id").fetchall()
    assert len(counts) == JOBS
    assert all(n == KEEP and first == T0 + (PER_JOB - KEEP) * 1000 for _, n, first in counts)
    # the WAL never grew past the checkpoint threshold (10,000 pages) plus a batch, although a
    # reader was active the whole time: it did not pin the WAL and block checkpoints
    assert 0 < wal_max <= 10_000 * 4096 + 16 * 1024 * 1024, f"WAL grew to {wal_max} bytes"
    db.close()
    store.close()
