"""What only the SQLite backend has: migrations, PRAGMAs, WAL, locking, query plans."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from cronwheel.store import open_store
from cronwheel.store.base import StoreError, StoreUnavailable
from cronwheel.store.calendars import calendar_spec_json
from cronwheel.store.outbox import delivery
from cronwheel.store.sqlite import SqliteStore
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.migrate import SCHEMA_FILE, apply_migrations, migrations
from tests.contract.calendar_upgrade import check_indexed_at_first_claim, old_calendar
from tests.contract.conftest import ALL_BUCKETS, T0, claim_all, create, new_job
from tests.contract.tenant_upgrade import OLD_TENANT, OLD_TOKEN, check_upgraded


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open(tmp_path / "s.db")
    yield s
    s.close()


def conn_of(store: SqliteStore) -> apsw.Connection:
    return store._conn


def pragma(conn: apsw.Connection, name: str) -> Any:
    return conn.execute(f"PRAGMA {name}").fetchall()[0][0]


# ---------------------------------------------------------------- migrations


def _normalise(sql: str | None) -> str:
    if sql is None:
        return ""
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"\s+", " ", sql).strip()
    return re.sub(r"\s*([(),])\s*", r"\1", sql).lower()


def _schema(conn: apsw.Connection) -> dict[str, Any]:
    master = {
        (t, n): (tbl, _normalise(sql))
        for t, n, tbl, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
    }
    tables = [n for (t, n) in master if t == "table" and not n.startswith("sqlite_")]
    structure = {
        n: (
            conn.execute(f"PRAGMA table_xinfo('{n}')").fetchall(),
            conn.execute(f"PRAGMA foreign_key_list('{n}')").fetchall(),
            sorted(conn.execute(f"PRAGMA index_list('{n}')").fetchall()),
        )
        for n in tables
    }
    return {"master": master, "structure": structure}


def test_schema_sql_equals_all_migrations_applied(tmp_path: Path) -> None:
    migrated = SqliteStore.open(tmp_path / "migrated.db")
    fresh = apsw.Connection(str(tmp_path / "fresh.db"))
    fresh.execute(SCHEMA_FILE.read_text(encoding="utf-8"))
    try:
        assert _schema(conn_of(migrated)) == _schema(fresh)
        assert fresh.execute("SELECT * FROM tenants").fetchall() == conn_of(migrated).execute(
            "SELECT * FROM tenants"
        ).fetchall()
    finally:
        migrated.close()
        fresh.close()


def test_calendars_of_a_file_before_version_25_get_their_index_at_their_first_claim(tmp_path: Path) -> None:
    """Migration 25 builds no index (that would parse every calendar of every tenant inside the
    migration): a calendar of an older file gets it at its first claim (calendar_upgrade.py)."""
    path = tmp_path / "v24.db"
    conn = apsw.Connection(str(path))
    apply_migrations(conn, 0, until=next(m.version for m in migrations() if m.name == "calendar_index") - 1)
    cal = old_calendar()
    conn.execute("INSERT INTO calendars (tenant, name, spec, created_at, updated_at) VALUES ('acme', 'maint', ?, 5, 6)",
                 (calendar_spec_json(cal),))  # fmt: skip
    conn.close()
    store = SqliteStore.open(path)
    try:
        check_indexed_at_first_claim(store, lambda query: conn_of(store).execute(query).fetchall(), cal)
    finally:
        store.close()


def test_the_token_table_rebuild_keeps_every_token(tmp_path: Path) -> None:
    """Migration 5 rebuilds api_tokens (SQLite cannot change a CHECK in place): tokens of a
    version-4 file keep their ids, hashes and roles, and metrics tokens become possible."""
    path = tmp_path / "v4.db"
    conn = apsw.Connection(str(path))
    apply_migrations(conn, 0, until=4)
    conn.execute("INSERT INTO tenants (name, weight, created_at, updated_at) VALUES ('acme', 1, 0, 0)")
    rows = [("tk_a", "h1", "admin", None, "root", 1, None), ("tk_t", "h2", "tenant", "acme", None, 2, 5)]
    conn.executemany("INSERT INTO api_tokens VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()

    store = SqliteStore.open(path)
    try:
        migrated = conn_of(store)
        assert pragma(migrated, "user_version") == len(migrations()) >= 5
        assert sorted(migrated.execute("SELECT * FROM api_tokens").fetchall()) == rows
        assert migrated.execute("SELECT count(*) FROM sqlite_master WHERE name = 'api_tokens_v4'").fetchall() == [(0,)]
        migrated.execute("INSERT INTO api_tokens VALUES ('tk_m', 'h3', 'metrics', NULL, 'prometheus', 3, NULL)")
        with pytest.raises(apsw.ConstraintError):
            migrated.execute("INSERT INTO api_tokens VALUES ('tk_x', 'h4', 'metrics', 'acme', NULL, 4, NULL)")
    finally:
        store.close()


def test_the_jobs_table_rebuild_keeps_every_job_and_settles_completed_ones(tmp_path: Path) -> None:
    """Migration job_outcomes rebuilds jobs (COMPLETED gives way to SUCCEEDED/FAILED): a file
    from before it keeps every job, its references, and gets each COMPLETED job's state from
    its executions."""
    path = tmp_path / "v7.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA foreign_keys = ON")
    apply_migrations(conn, 0, until=next(m.version for m in migrations() if m.name == "job_outcomes") - 1)
    jobs = {"jok": "COMPLETED", "jdead": "COMPLETED", "jlive": "COMPLETED", "jpurged": "COMPLETED", "jcron": "ACTIVE"}
    for job_id, st in jobs.items():
        conn.execute("INSERT INTO jobs (id, bucket_id, status, next_run_at, schedule, timezone, misfire, overlap, jitter_sec, tenant, priority, max_attempts, queue)"
                     " VALUES (?, 1, ?, NULL, NULL, 'UTC', 'run_once', 'allow', 0, 'default', 1, 3, NULL)", (job_id, st))
        conn.execute("INSERT INTO job_definitions (job_id, name, run_at, target, payload, retry, timeout_sec, lease_sec,"
                     " created_at, updated_at) VALUES (?, ?, NULL, '{}', 'null', '{}', 1, 1, 0, 0)", (job_id, job_id))
    for job_id, tick, st in (("jok", 1, "DEAD"), ("jok", 2, "SUCCEEDED"), ("jdead", 1, "DEAD"), ("jlive", 1, "RETRY_WAIT"), ("jcron", 1, "DEAD")):
        conn.execute(
            "INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status, available_at,"
            " created_at, finished_at, max_attempts) VALUES (?, ?, 'default', 1, ?, ?, 0, 0, ?, 3)",
            (f"{job_id}:{tick}", job_id, tick, st, tick),
        )
    conn.close()

    store = SqliteStore.open(path)
    try:
        migrated = conn_of(store)
        got = dict(migrated.execute("SELECT id, status FROM jobs").fetchall())
        assert got == {"jok": "SUCCEEDED", "jdead": "FAILED", "jlive": "ACTIVE", "jpurged": "FAILED", "jcron": "ACTIVE"}
        assert migrated.execute("PRAGMA foreign_key_check").fetchall() == []
        for child in ("job_definitions", "executions", "idempotency_keys", "job_names"):
            assert {r[2] for r in migrated.execute(f"PRAGMA foreign_key_list('{child}')")} == {"jobs"}, child
        assert pragma(migrated, "foreign_keys") == 1
        assert store.get_job("jok") is not None and store.find_jobs_by_name("jdead")[0].id == "jdead"
    finally:
        store.close()


def test_an_empty_tenant_http_allow_of_a_file_before_version_21_becomes_not_set(tmp_path: Path) -> None:
    """Until version 21 a tenant's empty httpAllow meant "none of its own" (the daemon's list
    applies): the upgrade keeps that meaning (NULL), and every other setting and token, while an
    empty list stored from then on means no host at all."""
    path = tmp_path / "v20.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA foreign_keys = ON")
    apply_migrations(conn, 0, until=next(m.version for m in migrations() if m.name == "tenant_http_allow_unset") - 1)
    conn.execute("INSERT INTO tenants (name, weight, max_running, created_at, max_jobs, submit_rate, submit_burst,"
                 " allow_shell, http_allow, updated_at, notify) VALUES"
                 " ('acme', 3, 2, 5, 10, 2.5, 4, 1, '[]', 6, '[{\"via\":\"webhook\"}]'),"
                 " ('listed', 1, NULL, 7, NULL, NULL, NULL, 0, '[\"api.example.com\",\"*.acme.test\"]', 8, '[]')")
    conn.execute("INSERT INTO api_tokens VALUES ('tk_t', 'h1', 'tenant', 'acme', NULL, 1, NULL)")
    before = conn.execute("SELECT name, weight, max_running, created_at, max_jobs, submit_rate, submit_burst,"
                          " allow_shell, updated_at, notify FROM tenants ORDER BY name").fetchall()
    conn.close()

    store = SqliteStore.open(path)
    try:
        migrated = conn_of(store)
        assert migrated.execute("SELECT name, weight, max_running, created_at, max_jobs, submit_rate, submit_burst,"
                                " allow_shell, updated_at, notify FROM tenants ORDER BY name").fetchall() == before
        assert {t.name: t.http_allow for t in store.list_tenants()} == {
            "acme": None, "default": None, "listed": ("api.example.com", "*.acme.test")}
        assert migrated.execute("PRAGMA foreign_key_check").fetchall() == []
        assert {r[2] for r in migrated.execute("PRAGMA foreign_key_list('api_tokens')")} == {"tenants"}
        assert migrated.execute("SELECT count(*) FROM sqlite_master WHERE name = 'tenants_v20'").fetchall() == [(0,)]
        with pytest.raises(apsw.ConstraintError):  # the reference still holds
            migrated.execute("INSERT INTO api_tokens VALUES ('tk_x', 'h2', 'tenant', 'ghost', NULL, 2, NULL)")
        assert store.update_tenant("acme", {"http_allow": ()}, T0).http_allow == ()  # type: ignore[union-attr]
    finally:
        store.close()


def test_the_tenants_of_a_file_before_version_28_are_live_and_can_be_deleted(tmp_path: Path) -> None:
    path = tmp_path / "v27.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA foreign_keys = ON")
    apply_migrations(conn, 0, until=next(m.version for m in migrations() if m.name == "tenant_deleting") - 1)
    conn.execute(OLD_TENANT)
    conn.execute(OLD_TOKEN)
    conn.close()
    store = SqliteStore.open(path)
    try:
        check_upgraded(store)
    finally:
        store.close()


def test_migrations_are_numbered_and_recorded(sqlite_store: SqliteStore) -> None:
    found = migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    conn = conn_of(sqlite_store)
    assert sqlite_store.schema_version() == len(found) == pragma(conn, "user_version")
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert rows == [(m.version, m.name) for m in found]


def test_reopening_applies_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "re.db"
    SqliteStore.open(path).close()
    s = SqliteStore.open(path)
    try:
        assert conn_of(s).execute("SELECT COUNT(*) FROM schema_migrations").fetchall()[0][0] == len(migrations())
        assert conn_of(s).execute("SELECT name FROM tenants").fetchall() == [("default",)]
    finally:
        s.close()


def test_concurrent_first_opens_migrate_once(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []
    stores: list[SqliteStore] = []
    lock = threading.Lock()

    def opener() -> None:
        barrier.wait()
        try:
            s = SqliteStore.open(path)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            return
        with lock:
            stores.append(s)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        count = conn_of(stores[0]).execute("SELECT COUNT(*) FROM schema_migrations").fetchall()[0][0]
        assert count == len(migrations())
    finally:
        for s in stores:
            s.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SqliteStore.open(path).close()
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SqliteStore.open(path)


# ---------------------------------------------------------------- durability settings


def test_pragmas_wal_full_sync_foreign_keys_busy_timeout(sqlite_store: SqliteStore) -> None:
    conn = conn_of(sqlite_store)
    assert pragma(conn, "journal_mode") == "wal"
    assert pragma(conn, "synchronous") == 2  # FULL: every commit is fsynced
    assert pragma(conn, "foreign_keys") == 1
    assert pragma(conn, "busy_timeout") == 10_000
    create(sqlite_store, new_job())
    assert Path(conn.filename_wal).exists()
    meta = sqlite_store.meta()
    assert (meta["kind"], meta["journalMode"], meta["synchronous"]) == ("sqlite", "wal", "full")


def test_writes_commit_before_returning(sqlite_store: SqliteStore, tmp_path: Path) -> None:
    conn = conn_of(sqlite_store)
    [jid] = create(sqlite_store, new_job())
    assert not conn.in_transaction
    other = apsw.Connection(str(tmp_path / "s.db"))  # another connection sees it at once
    try:
        assert other.execute("SELECT COUNT(*) FROM jobs WHERE id = ?", (jid,)).fetchall() == [(1,)]
    finally:
        other.close()


def test_a_held_write_lock_makes_the_store_unavailable_not_broken(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    s = SqliteStore.open(path, busy_timeout_ms=50)
    blocker = apsw.Connection(str(path))
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreUnavailable):
            s.create_jobs([new_job()], T0)
        with pytest.raises(StoreUnavailable):
            s.claim_due(ALL_BUCKETS, T0, 10)
        assert s.count_jobs() == 0  # readers are not blocked in WAL mode
        blocker.execute("ROLLBACK")
        create(s, new_job())
        assert s.count_jobs() == 1
    finally:
        blocker.close()
        s.close()


def test_meta_answers_while_another_thread_is_mid_statement(sqlite_store: SqliteStore) -> None:
    """The daemon logs node.started with the store's meta() on its event loop while the store's
    own thread may be running a statement; meta() read the schema version from the connection
    then, and apsw refused the second thread: a start that died of ThreadingViolationError
    (about one start in seven of a busy store)."""
    inside, release = threading.Event(), threading.Event()

    def hold() -> int:
        inside.set()
        release.wait(10)
        return 1

    conn_of(sqlite_store).create_scalar_function("hold", hold, 0)
    busy = threading.Thread(target=lambda: conn_of(sqlite_store).execute("SELECT hold()").fetchall())
    busy.start()
    try:
        assert inside.wait(10)
        meta = sqlite_store.meta()
        assert meta["kind"] == "sqlite" and meta["version"] == len(migrations()), meta
    finally:
        release.set()
        busy.join(10)


def test_using_a_closed_store_raises_store_error(tmp_path: Path) -> None:
    s = SqliteStore.open(tmp_path / "c.db")
    s.close()
    with pytest.raises(StoreError):
        s.count_jobs()


def test_open_in_a_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        SqliteStore.open(tmp_path / "no" / "such" / "dir.db")


# ---------------------------------------------------------------- open_store


def test_open_store_accepts_paths_and_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for target in (tmp_path / "a.db", str(tmp_path / "b.db"), f"sqlite:///{tmp_path / 'c.db'}"):
        s = open_store(target)
        try:
            assert isinstance(s, SqliteStore)
        finally:
            s.close()
    monkeypatch.chdir(tmp_path)
    s = open_store("sqlite:///rel.db")
    s.close()
    assert (tmp_path / "rel.db").exists()
    assert (tmp_path / "c.db").exists()


@pytest.mark.parametrize("url", ["mysql://x", "sqlite://x.db", "sqlite:///"])
def test_open_store_refuses_what_it_cannot_open(url: str) -> None:
    with pytest.raises(StoreError):
        open_store(url)


# ---------------------------------------------------------------- query plans of hot paths


def _plan(conn: apsw.Connection, sql: str, args: tuple[Any, ...]) -> str:
    return " | ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, args))


def test_hot_queries_use_their_indexes(sqlite_store: SqliteStore) -> None:
    conn = conn_of(sqlite_store)
    buckets = "[1,2,3]"
    assert "COVERING INDEX jobs_due" in _plan(conn, q.CLAIM_SELECT, (buckets, T0, 10, T0))
    assert "COVERING INDEX jobs_due" in _plan(conn, q.DUE_JOBS, (buckets, T0, 10))
    assert "INDEX jobs_due" in _plan(conn, q.NEXT_DUE_AT, (buckets,))
    ready = _plan(conn, q.READY_EXECUTIONS, (T0, 0, "", 10))
    assert "INDEX executions_ready" in ready and "TEMP B-TREE" not in ready
    assert "INDEX executions_ready" in _plan(conn, q.NEXT_AVAILABLE_AT, ())
    assert "INDEX executions_running" in _plan(conn, q.EXPIRED_LEASES, (T0, 10))
    assert "INDEX executions_worker" in _plan(conn, q.RUNNING_FOR_WORKER, ("w",))
    assert "INDEX executions_guarded" in _plan(conn, q.GUARDED_LIVE, ('["j"]',))
    waiting = _plan(conn, q.WAITING_RUNS, ("[[1, \"j\"]]", T0, 100))
    assert "INDEX executions_waiting_of_job (job_order=? AND available_at<?)" in waiting, waiting
    assert "INDEX executions_tick" in _plan(conn, q.LIST_EXECUTIONS, ("j", T0, 10, None))
    assert "INDEX executions_dead" in _plan(conn, q.LIST_DEAD, ("", None, 10))
    # the deliverer's claim: tenants in turn, each probe and each tenant's oldest due from one index
    tenants = _plan(conn, delivery.PENDING_TENANTS, {"cap": 10})
    assert "COVERING INDEX notifications_pending_of_tenant" in tenants and "SCAN notifications" not in tenants, tenants
    due = _plan(conn, delivery.DUE_OF_TENANT, {"tenant": "t", "now": T0, "limit": 10})
    assert "INDEX notifications_pending_of_tenant (tenant=? AND available_at<?)" in due and "TEMP B-TREE" not in due, due
    assert "SCAN jobs" not in _plan(conn, q.CLAIM_SELECT, (buckets, T0, 10, T0))
    # a shared worker's claim: the tenants with queued rows by a loose scan, then each one's first rows
    tenants = _plan(conn, q.QUEUED_TENANTS, ())
    assert "INDEX executions_tenant_queue_ready (tenant>?)" in tenants and "SCAN executions" not in tenants, tenants
    firsts = _plan(conn, q.QUEUE_CANDIDATES_OF_TENANT, ("q", T0, "t", 10))
    range_up_to_now = "INDEX executions_tenant_queue_ready (tenant=? AND queue=? AND priority=? AND available_at<?)"
    assert range_up_to_now in firsts and "TEMP B-TREE" not in firsts, firsts
    # whether a claim would find anything: the same ranges, never the local ready rows of a herd
    for statement, args in ((q.QUEUE_HAS_READY, ('["q"]', T0)), (q.QUEUE_HAS_READY_OF_TENANT, ('["q"]', T0, "t"))):
        plan = _plan(conn, statement, args)
        assert range_up_to_now in plan and "executions_ready" not in plan and "SCAN executions" not in plan, plan


def test_a_tenants_queue_claim_reads_only_its_own_tenants_rows(sqlite_store: SqliteStore) -> None:
    # queue names are shared between tenants: a claim that read the queue's rows of every tenant
    # and filtered them held the write lock for ~50 ms behind a neighbour's 100,000 ready rows
    plan = _plan(conn_of(sqlite_store), q.QUEUE_READY_OF_TENANT, ('["q"]', T0, "b", 10))
    assert "INDEX executions_tenant_queue_ready (tenant=? AND queue=?)" in plan


# ---------------------------------------------------------------- a stored schedule that broke


def test_a_schedule_that_no_longer_parses_pauses_its_job(sqlite_store: SqliteStore) -> None:
    good, bad = new_job(), new_job()
    create(sqlite_store, good, bad)
    conn_of(sqlite_store).execute("UPDATE jobs SET schedule = 'not a cron' WHERE id = ?", (bad.job_id,))
    res = claim_all(sqlite_store, T0)
    assert [e.job_id for e in res.executions] == [good.job_id]
    [skip] = res.skipped
    assert skip.job_id == bad.job_id and skip.reason is not None and skip.reason.startswith("schedule error")
    job = sqlite_store.get_job(bad.job_id)
    assert job is not None and job.status.value == "PAUSED"
    assert claim_all(sqlite_store, T0 + 60_000).jobs_claimed == 1  # the good job goes on


def test_tenants_table_has_the_default_and_learns_new_tenants(sqlite_store: SqliteStore) -> None:
    conn = conn_of(sqlite_store)
    assert conn.execute("SELECT name, weight FROM tenants").fetchall() == [("default", 1)]
    create(sqlite_store, new_job(tenant="acme"), new_job(tenant="acme"), new_job())
    create(sqlite_store, new_job(tenant="zeta"))
    assert [r[0] for r in conn.execute("SELECT name FROM tenants ORDER BY name")] == ["acme", "default", "zeta"]


def test_json_is_stored_compact(sqlite_store: SqliteStore) -> None:
    nj = new_job(payload={"a": [1, 2], "b": "ü"})
    create(sqlite_store, nj)
    row = conn_of(sqlite_store).execute(
        "SELECT payload, target FROM job_definitions WHERE job_id = ?", (nj.job_id,)
    ).fetchall()
    assert row == [('{"a":[1,2],"b":"ü"}', '{"command":"echo hi"}')]


def test_a_damaged_store_file_is_named_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "cronwheel.db"
    path.write_bytes(b"not a database, " * 4096)
    with pytest.raises(StoreError) as refused:
        SqliteStore.open(path)
    words = str(refused.value)
    assert str(path) in words and "damaged" in words and "restore it from a backup" in words and ".recover" in words
