"""What only the PostgreSQL backend has: migrations under an advisory lock, conninfo and
failover URLs, the durability setting, row-lock concurrency between processes and
connections, and StoreUnavailable when the server goes away."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cronwheel.core.model import JobSpec, MisfirePolicy
from cronwheel.core.records import Completion, CreateOutcome, EffectVerdict, NewJob, Outcome
from cronwheel.core.tenants import ApiToken, Role, hash_token, new_token_id, new_token_secret
from cronwheel.store import completions as store_completions
from cronwheel.store import open_store
from cronwheel.store.base import StoreError, StoreUnavailable
from cronwheel.store.calendars import calendar_spec_json
from cronwheel.store.outbox import delivery
from cronwheel.store.outbox.sql import pg_statement
from cronwheel.store.postgres import PostgresStore
from cronwheel.store.postgres import migrate as pg_migrate
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.connection import normalise_conninfo
from cronwheel.store.postgres.migrate import SCHEMA_FILE, migrations
from tests.contract.calendar_upgrade import check_indexed_at_first_claim, old_calendar
from tests.contract.conftest import ALL_BUCKETS, MIN, T0, claim_all, create, new_job, one_off, start
from tests.contract.tenant_upgrade import OLD_TENANT, OLD_TOKEN, check_upgraded
from tests.support.claimrace import assert_each_tick_once, race
from tests.support.postgres import PostgresServer, dedicated_cluster, free_port
from tests.support.wait import wait_for

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pg_store(postgres_dsn: str) -> Iterator[PostgresStore]:
    s = PostgresStore.open(postgres_dsn)
    yield s
    s.close()


@pytest.fixture
def empty_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A database with no cronwheel schema at all."""
    with postgres_server.database(migrated=False) as dsn:
        yield dsn


def sql(dsn: str, query: str, args: Any = None) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, args)
        return cur.fetchall() if cur.description else []


def run_threads(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """Run ``fn(i)`` in n threads released together; results (or exceptions) in order."""
    barrier = threading.Barrier(n)
    out: list[Any] = [None] * n

    def body(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fn(i)
        except BaseException as exc:  # reported by the caller
            out[i] = exc

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


# ---------------------------------------------------------------- migrations


def catalog(dsn: str) -> dict[str, Any]:
    """Everything a schema is made of, from pg_catalog/information_schema, normalised."""
    return {
        "columns": sql(dsn, """
            SELECT table_name, ordinal_position, column_name, data_type, udt_name, is_nullable,
                   column_default, collation_name
            FROM information_schema.columns WHERE table_schema = current_schema()
            ORDER BY table_name, ordinal_position"""),
        "constraints": sql(dsn, """
            SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid)
            FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
            ORDER BY 1, 2"""),
        "indexes": sql(dsn, """
            SELECT tablename, indexname, indexdef FROM pg_indexes
            WHERE schemaname = current_schema() ORDER BY 1, 2"""),
        "relations": sql(dsn, """
            SELECT relname, relkind, reloptions FROM pg_class
            WHERE relnamespace = current_schema()::regnamespace ORDER BY 1"""),
        "functions": sql(dsn, """
            SELECT proname, pg_get_function_identity_arguments(oid) FROM pg_proc
            WHERE pronamespace = current_schema()::regnamespace ORDER BY 1, 2"""),
        "triggers": sql(dsn, "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1"),
        "tenants": sql(dsn, "SELECT * FROM tenants ORDER BY name"),
    }


def test_schema_sql_equals_all_migrations_applied(postgres_server: PostgresServer) -> None:
    with postgres_server.database(migrated=False) as migrated, postgres_server.database(migrated=False) as fresh:
        PostgresStore.open(migrated).close()
        sql(fresh, SCHEMA_FILE.read_text(encoding="utf-8"))
        a, b = catalog(migrated), catalog(fresh)
        for part in a:
            assert a[part] == b[part], part
        assert {r[0] for r in a["relations"]} >= {"jobs", "executions", "schema_migrations", "api_tokens"}


def test_migrations_are_numbered_recorded_and_on_par_with_sqlite(pg_store: PostgresStore, postgres_dsn: str) -> None:
    from cronwheel.store.sqlite import migrate as sqlite_migrate

    found = migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    # one schema version for both stores: a migration in one needs its twin in the other
    assert [m.name for m in found] == [m.name for m in sqlite_migrate.migrations()]
    assert pg_store.schema_version() == len(found)
    rows = sql(postgres_dsn, "SELECT version, name FROM schema_migrations ORDER BY version")
    assert rows == [(m.version, m.name) for m in found]


def test_an_empty_tenant_http_allow_of_a_database_before_version_21_becomes_not_set(empty_dsn: str) -> None:
    """Until version 21 a tenant's empty httpAllow meant "none of its own" (the daemon's list
    applies): the upgrade keeps that meaning (NULL), and every other setting and token, while an
    empty list stored from then on means no host at all."""
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        pg_migrate.apply_migrations(conn, 0, until=next(m.version for m in migrations() if m.name == "tenant_http_allow_unset") - 1)
    sql(empty_dsn, "INSERT INTO tenants (name, weight, max_running, created_at, max_jobs, submit_rate, submit_burst,"
                   " allow_shell, http_allow, updated_at) VALUES"
                   " ('acme', 3, 2, 5, 10, 2.5, 4, TRUE, '{}', 6), ('listed', 1, NULL, 7, NULL, NULL, NULL, FALSE,"
                   " ARRAY['api.example.com', '*.acme.test'], 8)")
    sql(empty_dsn, "INSERT INTO api_tokens (token_id, token_hash, role, tenant, created_at) VALUES ('tk_t', 'h1', 'tenant', 'acme', 1)")
    columns = "name, weight, max_running, created_at, max_jobs, submit_rate, submit_burst, allow_shell, updated_at, notify::text"
    before = sql(empty_dsn, f"SELECT {columns} FROM tenants ORDER BY name")
    store = PostgresStore.open(empty_dsn)
    try:
        assert store.schema_version() == len(migrations())
        assert sql(empty_dsn, f"SELECT {columns} FROM tenants ORDER BY name") == before
        assert {t.name: t.http_allow for t in store.list_tenants()} == {
            "acme": None, "default": None, "listed": ("api.example.com", "*.acme.test")}
        assert [t.token_id for t in store.list_tokens("acme")] == ["tk_t"]
        assert store.update_tenant("acme", {"http_allow": ()}, T0).http_allow == ()  # type: ignore[union-attr]
        assert sql(empty_dsn, "SELECT name, http_allow FROM tenants ORDER BY name") == [
            ("acme", []), ("default", None), ("listed", ["api.example.com", "*.acme.test"])]
    finally:
        store.close()


def test_the_tenants_of_a_database_before_version_28_are_live_and_can_be_deleted(empty_dsn: str) -> None:
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        pg_migrate.apply_migrations(conn, 0, until=next(m.version for m in migrations() if m.name == "tenant_deleting") - 1)
    sql(empty_dsn, OLD_TENANT)
    sql(empty_dsn, OLD_TOKEN)
    store = PostgresStore.open(empty_dsn)
    try:
        check_upgraded(store)
    finally:
        store.close()


def test_calendars_of_a_database_before_version_25_get_their_index_at_their_first_claim(empty_dsn: str) -> None:
    """Migration 25 builds no index (that would parse every calendar of every tenant inside the
    migration): a calendar of an older database gets it at its first claim (calendar_upgrade.py)."""
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        pg_migrate.apply_migrations(conn, 0, until=next(m.version for m in migrations() if m.name == "calendar_index") - 1)
    cal = old_calendar()
    sql(empty_dsn, "INSERT INTO calendars (tenant, name, spec, created_at, updated_at) VALUES ('acme', 'maint', %s, 5, 6)",
        (calendar_spec_json(cal),))  # fmt: skip
    store = PostgresStore.open(empty_dsn)
    try:
        check_indexed_at_first_claim(store, lambda query: sql(empty_dsn, query), cal)
    finally:
        store.close()


def test_reopening_applies_nothing_twice(empty_dsn: str) -> None:
    PostgresStore.open(empty_dsn).close()
    PostgresStore.open(empty_dsn).close()
    assert sql(empty_dsn, "SELECT count(*) FROM schema_migrations") == [(len(migrations()),)]
    assert sql(empty_dsn, "SELECT name FROM tenants") == [("default",)]


def test_concurrent_first_opens_migrate_once(empty_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # every opener sees an empty database before it takes the lock: the re-check under the
    # lock is what keeps the others from applying the migrations again
    applied: list[int] = []
    real_execute = psycopg.Connection.execute

    def spy(self: psycopg.Connection[Any], query: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(query, bytes) and b"CREATE TABLE schema_migrations" in query:
            applied.append(1)
        return real_execute(self, query, *args, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", spy)
    stores = run_threads(6, lambda _: PostgresStore.open(empty_dsn))
    try:
        assert [s for s in stores if not isinstance(s, PostgresStore)] == []
        assert len(applied) == 1
        assert sql(empty_dsn, "SELECT count(*) FROM schema_migrations") == [(len(migrations()),)]
        assert all(s.schema_version() == len(migrations()) for s in stores)
    finally:
        for s in stores:
            if isinstance(s, PostgresStore):
                s.close()


def test_a_newer_schema_is_refused(postgres_dsn: str) -> None:
    sql(postgres_dsn, "INSERT INTO schema_migrations VALUES (999, 'future', 0)")
    with pytest.raises(StoreError, match="newer"):
        PostgresStore.open(postgres_dsn)


def test_a_failed_migration_changes_nothing(empty_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = [*migrations(), pg_migrate.Migration(len(migrations()) + 1, "broken", "CREATE TABLE x (;")]
    monkeypatch.setattr(pg_migrate, "migrations", lambda: broken)
    with pytest.raises(StoreError):
        PostgresStore.open(empty_dsn)
    # one transaction for all pending migrations: not even 0001 is left behind
    assert sql(empty_dsn, "SELECT to_regclass('schema_migrations') IS NULL") == [(True,)]


# ---------------------------------------------------------------- connection, durability


def test_synchronous_commit_is_at_least_on(pg_store: PostgresStore) -> None:
    # the test server runs with synchronous_commit=off; the store raises it for its sessions
    conn, _ = pg_store._connection()
    assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
    assert conn.execute("SHOW lock_timeout").fetchone() == ("10s",)  # the server sets none
    meta = pg_store.meta()
    assert (meta["kind"], meta["synchronousCommit"], meta["version"]) == ("postgresql", "on", len(migrations()))
    assert "password" not in json.dumps(meta)


def test_writes_commit_before_returning(pg_store: PostgresStore, postgres_dsn: str) -> None:
    [jid] = create(pg_store, new_job())
    conn, _ = pg_store._connection()
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert sql(postgres_dsn, "SELECT count(*) FROM jobs WHERE id = %s", (jid,)) == [(1,)]
    claim_all(pg_store, T0)
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert sql(postgres_dsn, "SELECT count(*) FROM executions") == [(1,)]


def test_conninfo_defaults_do_not_override_the_callers() -> None:
    text = normalise_conninfo("postgresql://u:pw@h1:5432,h2:5433/db?target_session_attrs=read-write&connect_timeout=2")
    params = psycopg.conninfo.conninfo_to_dict(text)
    assert (params["host"], params["port"], params["dbname"]) == ("h1,h2", "5432,5433", "db")
    assert (params["target_session_attrs"], params["connect_timeout"]) == ("read-write", "2")
    assert params["application_name"] == "cronwheel" and params["keepalives"] == "1"
    with pytest.raises(StoreError):
        normalise_conninfo("postgresql://h/db?no_such_option=1")


def test_open_store_takes_postgres_urls_and_multi_host_failover(postgres_dsn: str) -> None:
    params = psycopg.conninfo.conninfo_to_dict(postgres_dsn)
    host, port, db, user = params["host"], params["port"], params["dbname"], params["user"]
    dead = free_port()  # nothing listens there: the first host is "down"
    urls = [
        f"postgresql://{user}@{host}:{port}/{db}",
        f"postgres://{user}@{host}:{port}/{db}",
        f"postgresql://{user}@{host}:{dead},{host}:{port}/{db}?target_session_attrs=read-write",
    ]
    for url in urls:
        s = open_store(url)
        try:
            assert isinstance(s, PostgresStore)
            assert s.count_jobs() == 0
            assert s.meta()["dbname"] == db
        finally:
            s.close()


def test_a_closed_store_raises_store_error(postgres_dsn: str) -> None:
    s = PostgresStore.open(postgres_dsn)
    s.close()
    s.close()
    with pytest.raises(StoreError) as info:
        s.count_jobs()
    assert not isinstance(info.value, StoreUnavailable)


def test_a_killed_session_costs_one_error_at_most(pg_store: PostgresStore, postgres_dsn: str) -> None:
    create(pg_store, new_job())
    pid = pg_store._connection()[0].info.backend_pid
    sql(postgres_dsn, "SELECT pg_terminate_backend(%s)", (pid,))
    # a read on the dead (idle) connection is retried once on a new one: no error at all
    assert pg_store.count_jobs() == 1
    pid = pg_store._connection()[0].info.backend_pid
    sql(postgres_dsn, "SELECT pg_terminate_backend(%s)", (pid,))
    # so is a write whose BEGIN found the connection dead (nothing was sent)
    create(pg_store, new_job())
    assert pg_store.count_jobs() == 2


def test_store_unavailable_while_the_server_is_down_then_back() -> None:
    with dedicated_cluster() as cluster:
        dsn = cluster.dsn()
        s = PostgresStore.open(dsn)
        try:
            [jid] = create(s, new_job())
            cluster.stop("fast")
            began = time.monotonic()
            with pytest.raises(StoreUnavailable):
                s.count_jobs()
            with pytest.raises(StoreUnavailable):
                s.create_jobs([new_job()], T0)
            with pytest.raises(StoreUnavailable):
                s.claim_due(ALL_BUCKETS, T0, 10)
            with pytest.raises(StoreUnavailable):
                PostgresStore.open(dsn)
            assert time.monotonic() - began < 5, "a refused connection must fail fast"
            cluster.start()  # same port: the store reconnects on its next call
            assert s.get_job(jid) is not None
            assert [e.job_id for e in claim_all(s, T0).executions] == [jid]
        finally:
            s.close()


# ---------------------------------------------------------------- concurrency between connections


def test_concurrent_submissions_of_one_key_create_one_job(postgres_dsn: str) -> None:
    stores = [PostgresStore.open(postgres_dsn) for _ in range(4)]
    try:
        out = run_threads(4, lambda i: stores[i].create_jobs([new_job(key="k", request_hash="h")], T0)[0])
        assert not [r for r in out if isinstance(r, BaseException)], out
        assert sorted(r.outcome for r in out) == sorted([CreateOutcome.CREATED] + [CreateOutcome.REPLAYED] * 3)
        assert len({r.job_id for r in out}) == 1
        assert stores[0].count_jobs() == 1
    finally:
        for s in stores:
            s.close()


def test_concurrent_submissions_never_overshoot_the_quota(postgres_dsn: str) -> None:
    stores = [PostgresStore.open(postgres_dsn) for _ in range(4)]

    def submit(i: int) -> list[CreateOutcome]:
        jobs = [new_job(tenant="acme") for _ in range(3)]
        for nj in jobs:
            nj.max_jobs = 5
        return [r.outcome for r in stores[i].create_jobs(jobs, T0)]

    try:
        out = run_threads(4, submit)
        assert not [r for r in out if isinstance(r, BaseException)], out
        outcomes = [o for batch in out for o in batch]
        assert outcomes.count(CreateOutcome.CREATED) == 5
        assert stores[0].count_jobs(tenant="acme") == 5
    finally:
        for s in stores:
            s.close()


def test_two_connections_claim_disjoint_rows_without_waiting(postgres_dsn: str) -> None:
    a, b = PostgresStore.open(postgres_dsn), PostgresStore.open(postgres_dsn)
    try:
        create(a, *(new_job() for _ in range(10)))
        # a claim transaction held open on connection A: B skips its rows instead of waiting
        conn, _ = a._connection()
        conn.execute("BEGIN")
        held = conn.execute(q.CLAIM_SELECT, {"buckets": ALL_BUCKETS, "now": T0, "until": T0, "limit": 4}).fetchall()
        began = time.monotonic()
        res_b = claim_all(b, T0)
        assert time.monotonic() - began < 2
        assert res_b.jobs_claimed == 6
        assert not {e.job_id for e in res_b.executions} & {r[0] for r in held}
        conn.execute("ROLLBACK")
        assert claim_all(b, T0).jobs_claimed == 4  # rolled back: still due, nothing lost
        assert b.count_executions() == 10
    finally:
        a.close()
        b.close()


def test_a_completion_waits_for_an_effect_being_recorded(postgres_dsn: str) -> None:
    """record_effect holds the execution row (FOR NO KEY UPDATE) until it commits, so an effect is
    never recorded under a lease that a concurrent completion has already ended."""
    a, b = PostgresStore.open(postgres_dsn), PostgresStore.open(postgres_dsn)
    try:
        nj = one_off(T0)
        create(a, nj)
        [ex] = claim_all(a, T0).executions
        g = start(a, ex.execution_id, T0)
        conn, _ = a._connection()
        conn.execute("BEGIN")
        conn.execute(q.EXECUTION_LEASE, {"id": g.execution_id})
        done: list[Any] = []
        t = threading.Thread(target=lambda: done.append(
            b.complete_executions([Completion(g.execution_id, "w1", g.lease_epoch, Outcome.SUCCEEDED)], T0 + 1)))
        t.start()
        t.join(0.3)
        assert t.is_alive() and done == []  # waiting for the row
        conn.execute("COMMIT")
        t.join(10)
        assert done and done[0][0].status.value == "SUCCEEDED"
    finally:
        a.close()
        b.close()


def test_two_effects_racing_for_the_last_place_take_turns(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The effect count is read under the row lock it is then written with: a second caller
    waits for the first to commit and sees its count, rather than both taking the last place
    (or deadlocking, as two FOR SHARE holders updating one row would)."""
    monkeypatch.setattr(store_completions, "MAX_EFFECTS_PER_EXECUTION", 1)
    a, b = PostgresStore.open(postgres_dsn), PostgresStore.open(postgres_dsn)
    try:
        create(a, one_off(T0))
        [ex] = claim_all(a, T0).executions
        g = start(a, ex.execution_id, T0)
        conn, _ = a._connection()
        deadlocks = "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        before = conn.execute(deadlocks).fetchone()
        conn.commit()
        conn.execute("BEGIN")
        args = {"id": g.execution_id, "key": "first", "epoch": g.lease_epoch, "now": T0}
        assert conn.execute(q.EXECUTION_LEASE, args).fetchone() == ("RUNNING", g.lease_epoch, "w1", 0)
        verdicts: list[EffectVerdict] = []
        t = threading.Thread(target=lambda: verdicts.append(b.record_effect(g.execution_id, "w1", g.lease_epoch, "second", T0)))
        t.start()
        t.join(0.3)
        assert t.is_alive() and verdicts == []  # waiting for the row
        conn.execute(q.INSERT_EFFECT, args)
        conn.execute(q.COUNT_EFFECT, args)
        conn.execute("COMMIT")
        t.join(10)
        assert verdicts == [EffectVerdict.TOO_MANY]
        conn.execute("SELECT pg_stat_clear_snapshot()")
        assert conn.execute(deadlocks).fetchone() == before, "the two took turns by deadlocking"
        conn.commit()
    finally:
        a.close()
        b.close()


def test_racing_revocations_of_the_last_two_admin_tokens_leave_one(postgres_dsn: str) -> None:
    """Each revocation locks the active admin tokens first: the second waits for the first to
    commit, then sees it (READ COMMITTED) and keeps its own token. Without the lock both
    would see the other still active and revoke, leaving no admin token."""
    store = PostgresStore.open(postgres_dsn)
    try:
        first, second = (ApiToken(new_token_id(), hash_token(new_token_secret()), Role.ADMIN, None) for _ in range(2))
        for token in (first, second):
            store.create_token(token, T0)
        with psycopg.connect(postgres_dsn, autocommit=True) as other:
            other.execute("BEGIN")
            other.execute(q.LOCK_ACTIVE_ADMIN_TOKENS)
            other.execute(q.REVOKE_TOKEN, {"id": first.token_id, "now": T0 + 1})
            done: list[Any] = []
            t = threading.Thread(target=lambda: done.append(store.revoke_token(second.token_id, T0 + 2)))
            t.start()
            wait_for(lambda: sql(postgres_dsn, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")[0][0] > 0,
                     10, what="the second revocation to wait for the first one's lock")
            other.execute("COMMIT")
            t.join(10)
        assert done and done[0] is not None and done[0].active, "the last admin token was revoked"
        assert [t.token_id for t in store.list_tokens() if t.active] == [second.token_id]
    finally:
        store.close()


# ---------------------------------------------------------------- stored data


def test_json_comes_back_as_submitted(pg_store: PostgresStore) -> None:
    nj = new_job(payload={"z": 1, "a": [1.5, None, "ü"], "m": {"y": True, "b": 2}})
    create(pg_store, nj)
    job = pg_store.get_job(nj.job_id)
    assert job is not None and json.dumps(job.spec.payload) == json.dumps(nj.spec.payload)  # key order too


def test_nul_characters_in_output_are_stored_not_refused(pg_store: PostgresStore) -> None:
    nj = one_off(T0)
    create(pg_store, nj)
    [ex] = claim_all(pg_store, T0).executions
    g = start(pg_store, ex.execution_id, T0)
    [res] = pg_store.complete_executions(
        [Completion(g.execution_id, "w1", g.lease_epoch, Outcome.FAILED, error="bad\x00byte", output="a\x00b")], T0 + 1
    )
    assert res.verdict.value == "ok"
    stored = pg_store.get_execution(g.execution_id)
    assert stored is not None and stored.output == "a\ufffdb" and stored.error == "bad\ufffdbyte"


def test_a_schedule_that_no_longer_parses_pauses_its_job(pg_store: PostgresStore, postgres_dsn: str) -> None:
    good, bad = new_job(), new_job()
    create(pg_store, good, bad)
    sql(postgres_dsn, "UPDATE jobs SET schedule = 'not a cron' WHERE id = %s", (bad.job_id,))
    res = claim_all(pg_store, T0)
    assert [e.job_id for e in res.executions] == [good.job_id]
    [skip] = res.skipped
    assert skip.job_id == bad.job_id and skip.reason is not None and skip.reason.startswith("schedule error")
    job = pg_store.get_job(bad.job_id)
    assert job is not None and job.status.value == "PAUSED"
    assert claim_all(pg_store, T0 + MIN).jobs_claimed == 1


def test_hot_queries_use_their_indexes(pg_store: PostgresStore) -> None:
    conn, _ = pg_store._connection()

    def plan(query: str, args: dict[str, Any]) -> str:
        conn.execute("BEGIN")
        try:
            conn.execute("SET LOCAL enable_seqscan = off")  # tiny tables: ask which index it would use
            return " ".join(r[0] for r in conn.execute("EXPLAIN " + query, args))
        finally:
            conn.execute("ROLLBACK")

    b = {"buckets": [1, 2, 3]}
    assert "jobs_due" in plan(q.CLAIM_SELECT, {**b, "now": T0, "until": T0, "limit": 10})
    assert "jobs_due" in plan(q.DUE_JOBS, {**b, "until": T0, "limit": 10})
    assert "jobs_due" in plan(q.NEXT_DUE_AT, b)
    assert "executions_ready" in plan(q.READY_EXECUTIONS, {"now": T0, "after_at": 0, "after_id": "", "limit": 10})
    assert "executions_ready" in plan(q.NEXT_AVAILABLE_AT, {})
    assert "executions_running" in plan(q.EXPIRED_LEASES, {"ran_out_before": T0, "limit": 10})
    assert "executions_worker" in plan(q.RUNNING_FOR_WORKER, {"worker": "w"})
    assert "executions_guarded" in plan(q.GUARDED_LIVE, {"ids": ["j"]})
    waiting = plan(q.WAITING_RUNS, {"ids": ["j"], "now": T0, "cap": 100})
    assert "executions_waiting_of_job" in waiting and "Index Cond: ((job_id = j.id) AND (available_at <=" in waiting, waiting
    assert "executions_tick" in plan(q.LIST_EXECUTIONS, {"job_id": "j", "before": T0, "limit": 10, "tenant": None})
    assert "executions_dead" in plan(q.LIST_DEAD, {"after": "", "tenant": None, "limit": 10})
    tenants = plan(pg_statement(delivery.PENDING_TENANTS), {"cap": 10})
    assert "notifications_pending_of_tenant" in tenants and "Seq Scan" not in tenants, tenants
    due = plan(pg_statement(delivery.DUE_OF_TENANT), {"tenant": "t", "now": T0, "limit": 10})
    assert "notifications_pending_of_tenant" in due and "Sort" not in due, due


def test_a_tenants_queue_claim_reads_only_its_own_tenants_rows(pg_store: PostgresStore, postgres_dsn: str) -> None:
    # queue names are shared between tenants ('default' for everyone): a claim that read every
    # tenant's ready rows of the queue and filtered them cost a tenant O(its neighbours' backlog)
    for _ in range(4):
        create(pg_store, *[one_off(T0, target={"queue": "default"}, tenant="a") for _ in range(500)])
        claim_all(pg_store, T0 + 1)
    sql(postgres_dsn, "ANALYZE executions")
    conn, _ = pg_store._connection()
    pull = {"queues": ["default"], "now": T0 + MIN, "limit": 10, "tenant": "b"}
    plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + q.QUEUE_READY_OF_TENANT, pull))
    conn.rollback()
    assert "executions_tenant_queue_ready" in plan and "Index Cond: ((tenant = 'b'" in plan, plan
    assert pg_store.claim_for_worker(["default"], "wb", 10, T0 + MIN, tenant="b") == []
    assert len(pg_store.claim_for_worker(["default"], "wa", 10, T0 + MIN, tenant="a")) == 10
    # a shared worker's (no tenant): each tenant's first rows through the same index, never all of a's
    shared = {"queues": ["default", "other"], "now": T0 + MIN, "limit": 10}
    plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + q.QUEUE_CANDIDATES, shared))
    conn.rollback()
    assert "executions_tenant_queue_ready" in plan and "Seq Scan on executions" not in plan, plan
    assert "Bitmap" not in plan, plan
    # whether a claim would find anything: a probe per tenant and queue, never the scan of every
    # ready row (a herd's local ones included) that the planner chose for one EXISTS over them;
    # here a's rows all match, so a probe may well be a scan stopped at its first row
    for statement, args in ((q.QUEUE_HAS_READY, shared), (q.QUEUE_HAS_READY_OF_TENANT, {**shared, "tenant": "b"})):
        plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + statement, args))
        conn.rollback()
        assert "executions_ready" not in plan and "Limit" in plan, plan
    plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + q.QUEUE_HAS_READY_OF_TENANT, {**shared, "tenant": "b"}))
    conn.rollback()
    assert "executions_tenant_queue_ready" in plan and "Seq Scan on executions" not in plan, plan


# ---------------------------------------------------------------- two processes racing


def test_two_processes_claim_every_tick_exactly_once(postgres_dsn: str, tmp_path: Path) -> None:
    """Like tests/integration/test_sqlite_claim_race.py, on PostgreSQL: two OS processes claim
    the same buckets at once through FOR NO KEY UPDATE SKIP LOCKED. No tick twice, none lost."""
    step, steps, n_jobs, limit = 1_000, 20, 150, 16
    text = "* * * * * *"
    jobs = [NewJob(f"race{i:04d}", JobSpec(target={"command": "true"}, schedule=text, misfire=MisfirePolicy.RUN_ALL),
                   T0 + (i % 5) * step) for i in range(n_jobs)]  # fmt: skip
    s = PostgresStore.open(postgres_dsn)
    s.create_jobs(jobs, T0 - 60_000)
    s.close()

    opening = "from cronwheel.store.postgres import PostgresStore\nstore = PostgresStore.open(target)\n"
    results = race(opening, postgres_dsn, tmp_path, T0, step, steps, limit)
    end = T0 + (steps - 1) * step
    expected = assert_each_tick_once(results, jobs, text, end)

    s = PostgresStore.open(postgres_dsn)
    try:
        assert s.count_executions() == len(expected)
        assert {j.next_run_at for j in s.list_jobs(limit=1000)} == {end + step}
    finally:
        s.close()


def test_a_held_row_lock_makes_the_store_unavailable_not_stuck(postgres_dsn: str) -> None:
    s = PostgresStore.open(postgres_dsn, lock_timeout_ms=200)
    blocker = psycopg.connect(postgres_dsn, autocommit=True)
    try:
        [jid] = create(s, new_job())
        blocker.execute("BEGIN")
        blocker.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (jid,))
        began = time.monotonic()
        with pytest.raises(StoreUnavailable):
            s.cancel_job(jid, T0)
        assert time.monotonic() - began < 5
        assert s.count_jobs() == 1  # readers are not blocked
        assert claim_all(s, T0).jobs_claimed == 0  # the claim skips the locked row, it does not wait
        blocker.execute("ROLLBACK")
        assert s.cancel_job(jid, T0) is not None  # the same store goes on
    finally:
        blocker.close()
        s.close()


def test_job_outcomes_migration_settles_completed_jobs_by_their_executions(empty_dsn: str) -> None:
    """COMPLETED (a one-off claimed, whatever happened next) gives way to SUCCEEDED/FAILED,
    or ACTIVE while an execution of the job is still live."""
    for mig in migrations():
        if mig.name == "job_outcomes":
            break
        sql(empty_dsn, mig.sql)
        sql(empty_dsn, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, 0)", (mig.version, mig.name))
    for job_id, st in (("jok", "COMPLETED"), ("jdead", "COMPLETED"), ("jlive", "COMPLETED"), ("jpurged", "COMPLETED"), ("jcron", "ACTIVE")):
        sql(empty_dsn, "INSERT INTO jobs (id, bucket_id, status, next_run_at, schedule, timezone, misfire, overlap, jitter_sec, tenant, priority, max_attempts, queue)"
                       " VALUES (%s, 1, %s, NULL, NULL, 'UTC', 'run_once', 'allow', 0, 'default', 1, 3, NULL)", (job_id, st))
    for job_id, tick, st in (("jok", 1, "DEAD"), ("jok", 2, "SUCCEEDED"), ("jdead", 1, "DEAD"), ("jlive", 1, "RETRY_WAIT")):
        sql(empty_dsn, "INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status, available_at,"
                       " created_at, finished_at, max_attempts) VALUES (%s, %s, 'default', 1, %s, %s, 0, 0, %s, 3)",
            (f"{job_id}:{tick}", job_id, tick, st, tick))
    PostgresStore.open(empty_dsn).close()
    assert dict(sql(empty_dsn, "SELECT id, status FROM jobs")) == {
        "jok": "SUCCEEDED", "jdead": "FAILED", "jlive": "ACTIVE", "jpurged": "FAILED", "jcron": "ACTIVE"}
