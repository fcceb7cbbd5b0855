"""Versioned schema migrations for the SQLite store.

``migrations/NNNN_name.sql`` are applied in order, each in its own ``BEGIN IMMEDIATE``
transaction that also sets ``PRAGMA user_version = NNNN`` (the source of truth, read inside
the transaction so two processes opening the same file at once apply each migration once)
and appends a row to ``schema_migrations`` (the human-readable log). Re-opening an
up-to-date file changes nothing.

A migration that rebuilds a table other tables refer to (SQLite cannot change a CHECK
constraint in place) starts with the line ``-- cronwheel: rebuild``: it then runs as SQLite's
documented procedure for such changes asks, with foreign keys off (outside the transaction)
and ``legacy_alter_table`` on (so renaming the old table leaves the references to its name
alone), and ``PRAGMA foreign_key_check`` must find nothing before it commits.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import apsw

from cronwheel.core.records import Migrated
from cronwheel.store.migrations import Migration, discover

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
SCHEMA_FILE = Path(__file__).with_name("schema.sql")
#: the first line of a migration that rebuilds a referenced table (see the module's docstring)
REBUILD_MARK = "-- cronwheel: rebuild"


def migrations() -> list[Migration]:
    """Every migration shipped, in version order."""
    return discover(MIGRATIONS_DIR)


def latest_version() -> int:
    return len(migrations())


def current_version(conn: apsw.Connection) -> int:
    row: Any = conn.execute("PRAGMA user_version").fetchall()[0]
    return int(row[0])


def apply_migrations(conn: apsw.Connection, now_ms: int, until: int | None = None) -> Migrated | None:
    """Bring the database up to the latest version (or to ``until``: a file as an older
    cronwheel left it, for the migration tests); returns what this call applied, None if
    nothing (``schema_migrations`` keeps the history)."""
    started, applied_from = time.monotonic(), None
    for mig in migrations():
        if until is not None and mig.version > until:
            break
        if current_version(conn) >= mig.version:  # cheap check without the write lock
            continue
        rebuild = mig.sql.startswith(REBUILD_MARK)
        if rebuild:
            conn.execute("PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON")
        conn.execute("BEGIN IMMEDIATE")
        try:
            if current_version(conn) < mig.version:  # re-checked under the write lock
                applied_from = mig.version - 1 if applied_from is None else applied_from
                conn.execute(mig.sql)
                if rebuild and conn.execute("PRAGMA foreign_key_check").fetchall():
                    raise RuntimeError(f"migration {mig.version} ({mig.name}) broke a foreign key")
                conn.execute(f"PRAGMA user_version = {mig.version:d}")
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (mig.version, mig.name, now_ms),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            if rebuild:
                conn.execute("PRAGMA legacy_alter_table = OFF; PRAGMA foreign_keys = ON")
    version = current_version(conn)
    if version > latest_version():
        raise RuntimeError(
            f"database schema version {version} is newer than this cronwheel knows ({latest_version()})"
        )
    if applied_from is None:
        return None
    return Migrated(applied_from, version, round((time.monotonic() - started) * 1000))
