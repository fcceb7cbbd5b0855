"""Versioned schema migrations for the PostgreSQL store.

``migrations/NNNN_name.sql`` are applied in order on open. All pending migrations run in ONE
transaction that first takes ``pg_advisory_xact_lock(MIGRATION_LOCK)``: when several nodes
start at once, one migrates and the others wait for its commit, then find nothing left to do
(the version is re-read under the lock). PostgreSQL's DDL is transactional, so a failed
migration leaves the database at the version it had. ``schema_migrations`` (created by 0001)
is the source of truth for the version and the log of what was applied when.

Nodes of two versions never share the database: the node that would migrate it first looks,
under the lock, for nodes still running there (an older cronwheel, whose statements the new
schema may refuse or misread), and refuses to start while there are any (``OlderNodesRunning``).

A future migration that cannot run in a transaction (``CREATE INDEX CONCURRENTLY``) needs its
own step; none does yet.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg

from cronwheel.core.records import Migrated
from cronwheel.store.base import StoreError
from cronwheel.store.migrations import Migration, discover

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
SCHEMA_FILE = Path(__file__).with_name("schema.sql")
MIGRATIONS_TABLE_EXISTS = """
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class
               WHERE relname = 'schema_migrations' AND relnamespace = current_schema()::regnamespace)
"""
#: the advisory lock (its one-bigint key space) that serialises migrations: b"cronwh" + 1
MIGRATION_LOCK = 0x63726F6E7768_0001
#: the version that brought cluster_nodes and bucket_leases: an older database has no nodes
CLUSTER_VERSION = 3
#: how recent a heartbeat says a node runs: a node heartbeats every third of its bucket lease
#: TTL (10 s unless its --bucket-lease-ms says more); one with a longer TTL still holds leases
#: that have not expired, which say it too (both in the database's clock, as the nodes write them)
LIVE_WINDOW_MS = 10_000
NODES_RUNNING = """
WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
SELECT live.node_id, max(live.seen_ms_ago) FROM (
    SELECT n.node_id, now.ms - n.last_seen AS seen_ms_ago FROM cluster_nodes AS n, now
    WHERE n.last_seen > now.ms - %(window)s
    UNION ALL
    SELECT l.owner, NULL FROM bucket_leases AS l, now WHERE l.owner IS NOT NULL AND l.lease_until > now.ms
) AS live GROUP BY live.node_id ORDER BY live.node_id
"""


class OlderNodesRunning(StoreError):
    """The database is at an older schema version and nodes still run on it: migrating it
    under them would leave them running on a schema they do not know. A start refused for it
    may pass once they have stopped (``cronwheel serve`` exits 75)."""

    transient = True


def migrations() -> list[Migration]:
    """Every migration shipped, in version order."""
    return discover(MIGRATIONS_DIR)


def latest_version() -> int:
    return len(migrations())


def current_version(conn: psycopg.Connection[Any]) -> int:
    """The version the database is at: 0 when it has no cronwheel schema yet."""
    # An MVCC read of pg_class, not to_regclass(): to_regclass looks names up in the session's
    # catalog cache, whose "no such table" entry from before the lock was taken can outlive
    # the other node's commit of the table (seen: six concurrent openers, five failures).
    row = conn.execute(MIGRATIONS_TABLE_EXISTS).fetchone()
    if row is None or not row[0]:
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return 0 if row is None else int(row[0])


def apply_migrations(conn: psycopg.Connection[Any], now_ms: int, until: int | None = None) -> Migrated | None:
    """Bring the database up to the latest version (or to ``until``: a database as an older
    cronwheel left it, for the migration tests); returns what this call applied, None if
    nothing (another node may have done it). ``conn`` is in autocommit mode (no transaction
    open)."""
    found = migrations()[:until]
    started, applied_from = time.monotonic(), None
    version = current_version(conn)  # cheap check without the lock: the usual case
    if version < len(found):
        with conn.transaction():
            conn.execute("SET LOCAL lock_timeout = 0")  # wait for another node's migration, however long
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            version = current_version(conn)  # re-read under the lock: another node may be done
            if version < len(found):
                refuse_while_nodes_run(conn, version, len(found))
                applied_from = version
            for mig in found[version:]:
                conn.execute(mig.sql.encode())  # without parameters, several statements at once
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                    (mig.version, mig.name, now_ms),
                )
            version = current_version(conn)
    if version > len(found):
        raise RuntimeError(
            f"database schema version {version} is newer than this cronwheel knows ({len(found)})"
        )
    if applied_from is None:
        return None
    # the lock's wait is in the time: what the start spent on the schema
    return Migrated(applied_from, version, round((time.monotonic() - started) * 1000))


def refuse_while_nodes_run(conn: psycopg.Connection[Any], version: int, latest: int) -> None:
    """Raise ``OlderNodesRunning`` when nodes run on a database at ``version`` (older than this
    cronwheel's ``latest``). This node's own id counts too: a previous incarnation killed less
    than a TTL ago waits as long as a stopped node's heartbeat takes to expire, and a live twin
    of an older version must not be migrated under either."""
    if version < CLUSTER_VERSION:
        return
    nodes = conn.execute(NODES_RUNNING, {"window": LIVE_WINDOW_MS}).fetchall()
    if not nodes:
        return
    named = ", ".join(
        f"{node_id} (" + (f"last heartbeat {ago / 1000:.1f}s ago" if ago is not None else "holding bucket leases") + ")"
        for node_id, ago in nodes
    )
    raise OlderNodesRunning(
        f"the database is at schema version {version} and nodes of an older cronwheel still run on it: {named}. "
        f"Stop every one of them before a node of this version migrates it to {latest}; this node starts once "
        f"they have stopped (a node that crashed counts until its heartbeat and bucket leases expire, "
        f"10 s unless its --bucket-lease-ms is longer). See 'Upgrading' in docs/operations.md"
    )
