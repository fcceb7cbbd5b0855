"""Stores: the ``Store`` interface (``base``, the union of the contract's roles in ``roles``)
and its backends (``sqlite``, ``postgres``), which share what they decide alike (``common``,
``completions``, ``chaining``, ``calendars``, ``rowreader``, the notification ``outbox``)."""

from __future__ import annotations

from pathlib import Path

from cronwheel.store.base import Store, StoreAccessRefused, StoreError, StoreUnavailable

__all__ = ["Store", "StoreAccessRefused", "StoreError", "StoreUnavailable", "open_store"]


def open_store(url_or_path: str | Path, *, sqlite_cache_mib: int | None = None) -> Store:
    """Open a store from ``--store``: a file path or ``sqlite:///path`` (SQLAlchemy style:
    ``sqlite:///relative.db``, ``sqlite:////absolute.db``) opens the SQLite store;
    ``postgresql://…`` or ``postgres://…`` (any libpq URL, multi-host included) opens the
    PostgreSQL cluster store. ``sqlite_cache_mib`` caps that connection's SQLite page cache
    (the store's default otherwise; PostgreSQL ignores it)."""
    text = str(url_or_path)
    if text.startswith(("postgresql://", "postgres://")):
        try:  # the driver loads only when used (an optional dependency)
            from cronwheel.store.postgres import PostgresStore
        except ImportError as exc:
            raise StoreError(f"the PostgreSQL store needs psycopg: pip install 'cronwheel[postgres]' ({exc})") from exc
        return PostgresStore.open(text)
    if text.startswith("sqlite:"):
        if not text.startswith("sqlite:///") or len(text) == len("sqlite:///"):
            raise StoreError(f"not a SQLite URL (want sqlite:///path): {text!r}")
        text = text[len("sqlite:///") :]
    elif "://" in text:
        raise StoreError(f"unknown store URL scheme: {text.split('://', 1)[0]!r}")
    from cronwheel.store.sqlite import SqliteStore  # the driver loads only when used

    if sqlite_cache_mib is None:
        return SqliteStore.open(text)
    return SqliteStore.open(text, cache_mib=sqlite_cache_mib)
