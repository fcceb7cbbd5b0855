"""The SQLite store keeps a herd's writes local: jobs side by side by bucket, the ready queue in
the order a claim returns its executions (schema version 14, docs/benchmarks.md).

A herd's claim reads its due jobs bucket by bucket, the dispatcher starts the executions in
the order the claim returned them, and completions follow. When the scheduling table, the
ready index and the executions table all agree with that order, a batch of starts or
completions rewrites a few pages one after another; when they do not, each execution of a
batch costs a page of its own in the WAL (what the store did before version 14).
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw

from cronwheel.core.ids import bucket_of, new_job_id
from cronwheel.core.limits import MAX_WAITING_RUNS
from cronwheel.core.model import OverlapPolicy
from cronwheel.core.records import Completion, Outcome, StartRequest
from cronwheel.store.sqlite import SqliteStore
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.jobs import BUCKET_ROWID_SHIFT
from cronwheel.store.sqlite.migrate import apply_migrations
from tests.contract.conftest import ALL_BUCKETS, MIN, SEC, T0, create, new_job, one_off


def _conn(store: SqliteStore) -> apsw.Connection:
    return store._conn


def test_jobs_are_placed_side_by_side_by_bucket(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "s.db")
    try:
        for _ in range(4):  # batches after the first go after each bucket's last job
            create(store, *(one_off(T0, jid=new_job_id()) for _ in range(300)))
        rows = (
            _conn(store).execute("SELECT rowid, id, bucket_id FROM jobs ORDER BY rowid").fetchall()
        )
        assert len(rows) == 1200 and len({b for _, _, b in rows}) > 32
        assert all(
            rowid >> BUCKET_ROWID_SHIFT == bucket == bucket_of(jid) for rowid, jid, bucket in rows
        )
    finally:
        store.close()


def test_a_claim_returns_its_executions_in_the_ready_queue_order(tmp_path: Path) -> None:
    """Jitter moves available_at away from the tick the claim reads jobs by, so only a claim
    that orders what it returns by the ready index keeps the two in step."""
    store = SqliteStore.open(tmp_path / "s.db")
    try:
        jobs = [
            new_job(jid=new_job_id(), next_run_at=T0 + (i % 7) * SEC, jitter_sec=5)
            for i in range(200)
        ]
        create(store, *jobs)
        claimed = store.claim_due(ALL_BUCKETS, T0 + 10 * SEC, 1000)
        assert len(claimed.executions) == 200
        assert len({e.available_at for e in claimed.executions}) > 7  # the jitter did move them
        ready = store.ready_executions(T0 + MIN, 1000)
        assert [e.execution_id for e in claimed.executions] == [e.execution_id for e in ready]
    finally:
        store.close()


def _wal_frames(conn: apsw.Connection, wal: Path) -> int:
    """Frames the WAL holds since the last call (which empties it)."""
    page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    frames = max(0, wal.stat().st_size - 32) // (24 + page_size) if wal.exists() else 0
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    return frames


def test_a_herd_started_and_completed_in_claim_order_writes_few_pages(tmp_path: Path) -> None:
    """10,000 one-offs with random ids (as made by the API), started and completed 64 at a
    time in the claim's order: before version 14 every start wrote ~0.9 pages (its ready
    entry's and its row's) and every completion ~1.2 (its job's row and due entry)."""
    path = tmp_path / "s.db"
    store = SqliteStore.open(path)
    try:
        conn, wal = _conn(store), Path(f"{path}-wal")
        for _ in range(10):
            create(
                store,
                *(one_off(T0, jid=new_job_id(), target={"python": "m:f"}) for _ in range(1000)),
            )
        order = []
        while claimed := store.claim_due(ALL_BUCKETS, T0, 2500).executions:
            order += [e.execution_id for e in claimed]
        assert len(order) == 10_000
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the WAL keeps every frame of a phase
        _wal_frames(conn, wal)
        started = completed = 0
        for i in range(0, len(order), 64):
            grants = store.start_executions(
                [StartRequest(x, "w1") for x in order[i : i + 64]], T0 + SEC
            )
            started += _wal_frames(conn, wal)
            store.complete_executions(
                [
                    Completion(g.execution_id, "w1", g.lease_epoch, Outcome.SUCCEEDED, exit_code=0)
                    for g in grants
                ],
                T0 + 2 * SEC,
            )
            completed += _wal_frames(conn, wal)
        assert started / len(order) < 0.3, f"{started / len(order):.2f} pages per start"
        assert completed / len(order) < 0.4, f"{completed / len(order):.2f} pages per completion"
    finally:
        store.close()


def test_version_14_gives_ready_executions_their_jobs_place(tmp_path: Path) -> None:
    """A version-13 file's ready executions get their job's rowid as job_order; finished ones
    keep 0; the ready queue reads the same before and after."""
    path = tmp_path / "v13.db"
    conn = apsw.Connection(str(path))
    apply_migrations(conn, 0, until=13)
    for rowid, jid in ((7, "ja"), (3, "jb")):
        conn.execute(
            "INSERT INTO jobs (rowid, id, bucket_id, status, next_run_at, timezone, misfire, overlap, tenant, priority,"
            " max_attempts) VALUES (?, ?, 0, 'ACTIVE', NULL, 'UTC', 'run_once', 'allow', 'default', 1, 1)",
            (rowid, jid),
        )
    for eid, jid, status in (
        ("ja:1", "ja", "PENDING"),
        ("jb:1", "jb", "RETRY_WAIT"),
        ("jb:0", "jb", "SUCCEEDED"),
    ):
        conn.execute(
            "INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status, available_at,"
            " created_at, max_attempts) VALUES (?, ?, 'default', 1, ?, ?, 0, 0, 1)",
            (eid, jid, int(eid[-1]), status),
        )
    conn.close()
    store = SqliteStore.open(path)
    try:
        rows = dict(
            _conn(store).execute("SELECT execution_id, job_order FROM executions").fetchall()
        )
        assert rows == {"ja:1": 7, "jb:1": 3, "jb:0": 0}
        assert [e.execution_id for e in store.ready_executions(T0, 10)] == ["jb:1", "ja:1"]
        assert [e.execution_id for e in store.ready_executions(T0, 10, after=(0, "jb:1"))] == [
            "ja:1"
        ]
        create(store, one_off(T0, jid="jc"))  # a new job after a file of small rowids
        [(rowid, bucket)] = (
            _conn(store).execute("SELECT rowid, bucket_id FROM jobs WHERE id = 'jc'").fetchall()
        )
        assert rowid >> BUCKET_ROWID_SHIFT == bucket or (bucket == 0 and rowid == 8)
    finally:
        store.close()


def test_the_backlog_count_by_job_order_is_checked_by_job_id_before_it_holds_a_job_back(tmp_path: Path) -> None:
    """The claim counts a job's waiting runs by its job_order alone (index only, no row read);
    a VACUUM may renumber rowids, so before that count holds a job back the claim counts
    again by job id. Here a held job's rows carry another job's job_order."""
    store = SqliteStore.open(tmp_path / "s.db")
    try:
        held = new_job(overlap=OverlapPolicy.ALLOW, schedule="* * * * *")
        other = new_job(overlap=OverlapPolicy.ALLOW, schedule="* * * * *", next_run_at=T0 + MAX_WAITING_RUNS * MIN)
        create(store, held)
        for k in range(MAX_WAITING_RUNS):
            store.claim_due(ALL_BUCKETS, T0 + k * MIN, 1000)
        create(store, other, now=T0 + MAX_WAITING_RUNS * MIN - 1)
        conn = _conn(store)
        [(other_order,)] = conn.execute("SELECT rowid FROM jobs WHERE id = ?", (other.job_id,)).fetchall()
        conn.execute("UPDATE executions SET job_order = ? WHERE job_id = ?", (other_order, held.job_id))
        res = store.claim_due(ALL_BUCKETS, T0 + MAX_WAITING_RUNS * MIN, 1000)
        assert other.job_id in [e.job_id for e in res.executions]  # not held back by held's runs
        assert not [e for e in res.skipped if e.job_id == other.job_id]
    finally:
        store.close()


def test_the_backlog_probe_reads_the_index_alone(tmp_path: Path) -> None:
    """Every claim of a recurring allow job counts its waiting runs (up to 100). Read row by
    row for each entry's job id, 50 jobs at the bound cost ~15,000 page fetches a claim, and a
    tenant's 3,800 every-second jobs most of the writer's every second; from the index alone,
    a few pages per job."""
    store = SqliteStore.open(tmp_path / "s.db")
    try:
        jobs = [new_job(overlap=OverlapPolicy.ALLOW, schedule="* * * * * *") for _ in range(50)]
        create(store, *jobs)
        for k in range(MAX_WAITING_RUNS):
            store.claim_due(ALL_BUCKETS, T0 + k * SEC, 1000)
        conn = _conn(store)
        orders = [r[0] for r in conn.execute("SELECT rowid FROM jobs")]
        for counter in (apsw.SQLITE_DBSTATUS_CACHE_HIT, apsw.SQLITE_DBSTATUS_CACHE_MISS):
            conn.status(counter, True)  # reset
        counts = conn.execute(q.WAITING_RUNS, (json.dumps(orders), T0 + MAX_WAITING_RUNS * SEC, MAX_WAITING_RUNS)).fetchall()
        pages = sum(conn.status(c, True)[0] for c in (apsw.SQLITE_DBSTATUS_CACHE_HIT, apsw.SQLITE_DBSTATUS_CACHE_MISS))
        assert sorted(n for _, n in counts) == [MAX_WAITING_RUNS] * 50
        assert pages < 50 * 10, f"{pages} page fetches to count 5,000 waiting runs"
    finally:
        store.close()
