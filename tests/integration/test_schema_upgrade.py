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
