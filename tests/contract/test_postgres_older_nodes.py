"""Nodes of two versions never share a PostgreSQL database: the node that would migrate it
refuses to while nodes still run there (heartbeats within 10 s, or bucket leases not yet
expired), and migrates it once they have stopped.

Probed with real 0.1.0 nodes (schema 6) beside an upgraded one before this refusal existed:
the old node's claims of one-off jobs failed on the new jobs_status_check (it still writes
'COMPLETED'), and every tenant it created, or set to "the daemon's list" with httpAllow [], was
closed to every host on the new nodes (schema 21's meaning of []). Here the old nodes are the
rows a running 0.1.0 node keeps: its cluster_nodes heartbeat and its bucket leases, written
with the database's clock as 0.1.0's store/postgres/cluster.py writes them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from cronwheel.store.postgres import PostgresStore
from cronwheel.store.postgres import migrate as pg_migrate
from cronwheel.store.postgres.migrate import OlderNodesRunning, migrations
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.postgres

#: the schema cronwheel 0.1.0 shipped
RELEASE_0_1_0 = 6
DB_NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


@pytest.fixture
def old_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A database as cronwheel 0.1.0 left it."""
    with postgres_server.database(migrated=False) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            pg_migrate.apply_migrations(conn, 0, until=RELEASE_0_1_0)
        yield dsn


def sql(dsn: str, query: str, args: Any = None) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, args)
        return cur.fetchall() if cur.description else []


def heartbeat(dsn: str, node_id: str, seen_ms_ago: int = 0) -> None:
    """0.1.0's REGISTER_NODE: a running node's row, refreshed every third of its lease TTL."""
    sql(dsn, f"INSERT INTO cluster_nodes (node_id, address, started_at, last_seen) VALUES"
             f" (%s, 'old-host:7878', {DB_NOW_MS} - %s, {DB_NOW_MS} - %s)"
             " ON CONFLICT (node_id) DO UPDATE SET last_seen = EXCLUDED.last_seen", (node_id, seen_ms_ago, seen_ms_ago))


def hold_buckets(dsn: str, node_id: str, until_in_ms: int) -> None:
    """0.1.0's ACQUIRE of buckets 0..7 for ``until_in_ms`` from the database's now."""
    sql(dsn, f"INSERT INTO bucket_leases (bucket_id, owner, epoch, lease_until)"
             f" SELECT b, %s, 1, {DB_NOW_MS} + %s FROM generate_series(0, 7) AS b", (node_id, until_in_ms))


def version(dsn: str) -> int:
    return int(sql(dsn, "SELECT max(version) FROM schema_migrations")[0][0])


def test_a_database_with_an_older_node_running_is_not_migrated_until_it_stops(old_dsn: str) -> None:
    heartbeat(old_dsn, "old-b")
    with pytest.raises(OlderNodesRunning) as refused:
        PostgresStore.open(old_dsn)
    text = str(refused.value)
    assert "schema version 6" in text and "old-b (last heartbeat" in text and f"migrates it to {len(migrations())}" in text
    assert "docs/operations.md" in text and "postgresql store" in text
    assert refused.value.transient  # serve exits 75: the unit starts it again, and then it may pass
    assert version(old_dsn) == RELEASE_0_1_0  # nothing applied, not even the first migration
    sql(old_dsn, "DELETE FROM cluster_nodes WHERE node_id = 'old-b'")  # 0.1.0's clean stop deregisters
    store = PostgresStore.open(old_dsn)
    try:
        assert store.migrated is not None and store.migrated.from_version == RELEASE_0_1_0
        assert version(old_dsn) == len(migrations())
    finally:
        store.close()


def test_a_node_with_a_long_lease_ttl_is_seen_by_its_bucket_leases(old_dsn: str) -> None:
    # --bucket-lease-ms 300000 heartbeats every 100 s: its row may look old while it runs
    heartbeat(old_dsn, "slow", seen_ms_ago=60_000)
    hold_buckets(old_dsn, "slow", until_in_ms=240_000)
    with pytest.raises(OlderNodesRunning, match=r"slow \(holding bucket leases\)"):
        PostgresStore.open(old_dsn)
    assert version(old_dsn) == RELEASE_0_1_0


def test_nodes_that_stopped_heartbeating_long_ago_do_not_hold_the_upgrade(old_dsn: str) -> None:
    heartbeat(old_dsn, "crashed", seen_ms_ago=60_000)  # killed a minute ago: its row stays
    hold_buckets(old_dsn, "crashed", until_in_ms=-50_000)  # and its leases have expired
    PostgresStore.open(old_dsn).close()
    assert version(old_dsn) == len(migrations())


def test_nodes_of_this_version_join_a_migrated_database_as_before(postgres_dsn: str) -> None:
    heartbeat(postgres_dsn, "peer")
    hold_buckets(postgres_dsn, "peer", until_in_ms=10_000)
    store = PostgresStore.open(postgres_dsn)
    try:
        assert store.migrated is None
    finally:
        store.close()
