"""Reads the contract tests make of a store that no production code needs.

They were methods of the ``Store`` interface that only the tests called (a running count,
one worker's leases, an execution's recorded effects, the next retry's time, one tenant).
They run the backend's own statements through the backend's connection, so the tests still
read what the store wrote, without the interface carrying calls nobody else makes.
"""

from __future__ import annotations

import importlib
from typing import Any

from cronwheel.core.model import Execution
from cronwheel.core.tenants import Tenant
from cronwheel.store.base import Store


def _backend(store: Store) -> tuple[str, bool]:
    """The store's backend package, and whether it is SQLite (psycopg loads only when used)."""
    from cronwheel.store.sqlite import SqliteStore

    return ("cronwheel.store.sqlite", True) if isinstance(store, SqliteStore) else ("cronwheel.store.postgres", False)


def _rows(store: Store, name: str, sqlite_args: tuple[Any, ...], pg_args: dict[str, Any]) -> list[Any]:
    """The rows of the backend catalogue's statement ``name``, on the store's connection."""
    package, sqlite = _backend(store)
    sql = getattr(importlib.import_module(f"{package}.queries"), name)
    if sqlite:
        return list(store._conn.execute(sql, sqlite_args).fetchall())  # type: ignore[attr-defined]
    return list(store._rows(sql, pg_args))  # type: ignore[attr-defined]


def _row_reader(store: Store, what: str) -> Any:
    """The backend's ``<what>_from_row``."""
    return getattr(importlib.import_module(f"{_backend(store)[0]}.rows"), f"{what}_from_row")


def running_count(store: Store) -> int:
    """How many executions are RUNNING."""
    rows = _rows(store, "RUNNING_COUNT", (), {})
    return int(rows[0][0])


def running_for_worker(store: Store, worker_id: str) -> list[Execution]:
    """RUNNING executions leased to ``worker_id``, by execution id."""
    rows = _rows(store, "RUNNING_FOR_WORKER", (worker_id,), {"worker": worker_id})
    read = _row_reader(store, "execution")
    return [read(r) for r in rows]


def list_effects(store: Store, execution_id: str) -> list[tuple[str, int, int]]:
    """``(key, lease_epoch, recorded_at)`` of an execution's recorded effects."""
    rows = _rows(store, "LIST_EFFECTS", (execution_id,), {"id": execution_id})
    return [(r[0], r[1], r[2]) for r in rows]


def next_available_at(store: Store) -> int | None:
    """Earliest available_at among PENDING/RETRY_WAIT executions."""
    rows = _rows(store, "NEXT_AVAILABLE_AT", (), {})
    return None if not rows or rows[0][0] is None else int(rows[0][0])


def get_tenant(store: Store, name: str) -> Tenant | None:
    """The tenant of that name, as stored."""
    rows = _rows(store, "GET_TENANT", (name,), {"name": name})
    if not rows:
        return None
    tenant: Tenant = _row_reader(store, "tenant")(rows[0])
    return tenant
