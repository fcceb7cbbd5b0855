"""The embedded SQLite store (apsw, WAL, synchronous=FULL)."""

from cronwheel.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
