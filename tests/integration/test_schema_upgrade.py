"""An upgrade's schema migration is in the log: one ``store.migrated`` line with the versions
and the time it took, from a real daemon on a store an older cronwheel left (SQLite) and on
an empty PostgreSQL database; a start with nothing to migrate says nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from cronwheel.store.sqlite.migrate import apply_migrations, latest_version
from tests.support.daemon import Daemon
from tests.support.postgres import PostgresServer
from tests.support.wait import wait_for


@pytest.mark.runs_no_jobs
def test_a_daemon_that_migrates_an_older_sqlite_store_logs_from_and_to(
    tmp_path: Path, make_daemon: Callable[..., Daemon]
) -> None:
    data = tmp_path / "node"
    data.mkdir()
    conn = apsw.Connection(str(data / "cronwheel.db"))
    apply_migrations(conn, 0, until=4)  # the store as a cronwheel of schema 4 left it
    conn.close()
    d = make_daemon("node")
    (migrated,) = d.events("store.migrated")
    assert (migrated["store"], migrated["fromVersion"], migrated["toVersion"]) == ("sqlite", 4, latest_version())
    assert isinstance(migrated["durationMs"], int) and migrated["durationMs"] >= 0
    assert migrated["level"] == "info" and migrated["seq"] < d.events("node.started")[0]["seq"]
    d.stop()
    seen = len(d.events("store.migrated"))
    d.start()  # up to date: nothing to say
    assert len(d.events("store.migrated")) == seen


@pytest.mark.postgres
def test_a_daemon_that_migrates_an_empty_postgres_database_logs_it(
    make_daemon: Callable[..., Daemon], postgres_server: PostgresServer
) -> None:
    from cronwheel.store.postgres.migrate import latest_version as pg_latest

    with postgres_server.database(migrated=False) as dsn:
        d = make_daemon(args=("--store", dsn))
        (migrated,) = d.events("store.migrated")
        assert (migrated["store"], migrated["fromVersion"], migrated["toVersion"]) == ("postgresql", 0, pg_latest())
        assert migrated["durationMs"] >= 0
        d.stop()


@pytest.mark.postgres
def test_a_daemon_does_not_migrate_a_postgres_database_an_older_node_runs_on(
    tmp_path: Path, make_daemon: Callable[..., Daemon], postgres_server: PostgresServer
) -> None:
    """A rolling upgrade: the first upgraded node finds a 0.1.0 node (schema 6) still running,
    and exits 75 naming it, the database untouched; once it has stopped, the node starts."""
    import psycopg

    from cronwheel.store.postgres.migrate import apply_migrations as pg_apply
    from cronwheel.store.postgres.migrate import latest_version as pg_latest

    with postgres_server.database(migrated=False) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        pg_apply(conn, 0, until=6)
        now = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"  # a 0.1.0 node's heartbeat
        conn.execute(f"INSERT INTO cluster_nodes VALUES ('node-b', 'b:7878', {now}, {now})")
        first = Daemon(tmp_path / "a", args=("--store", dsn, "--node-id", "node-a"))
        try:
            first.launch()
            assert first.proc is not None
            code = wait_for(lambda: first.proc.poll() is not None and (first.proc.returncode,), 30,  # type: ignore[union-attr]
                            what="the node to refuse to start")[0]
        finally:
            first.kill()
        out = first.log_path.read_text()
        assert code == 75, out  # EX_TEMPFAIL: its unit starts it again, until node-b has stopped
        assert "node-b (last heartbeat" in out and "schema version 6" in out, out
        assert "store.migrated" not in out and "node.started" not in out, out
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (6,)
        conn.execute("DELETE FROM cluster_nodes WHERE node_id = 'node-b'")  # its clean stop
        d = make_daemon("a", args=("--store", dsn, "--node-id", "node-a"))
        (migrated,) = d.events("store.migrated")
        assert (migrated["fromVersion"], migrated["toVersion"]) == (6, pg_latest())
        d.stop()
