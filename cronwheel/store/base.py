"""The store contract. Every backend (SQLite, PostgreSQL) implements ``Store`` and passes
``tests/contract``; no behaviour may exist in one backend only (clustering aside).

Conventions that hold for every method:

* Times are integer milliseconds since the epoch (UTC). ``now_ms`` is passed in by the caller
  (the engine's injectable clock) so the contract is testable with a fake clock. The PostgreSQL
  backend may use the database's clock for lease *arbitration between nodes* (bucket leases),
  never for anything the contract suite pins with ``now_ms``.
* Methods are synchronous and may block; the engine calls them from one dedicated thread.
  A ``Store`` object is used by one thread at a time.
* Every method that writes commits before it returns, and that commit is durable
  (SQLite ``synchronous=FULL``): whatever a method reported as done survives ``kill -9``
  and power loss. The exceptions are the hot, self-healing writes: ``heartbeat``,
  ``heartbeat_many``, ``complete_executions`` and ``expire_leases`` survive any crash of the
  process, but a power cut may forget the last of them; the execution then looks RUNNING
  with its old epoch, its lease expires, and it runs again (at-least-once). Submissions and
  hand-outs (``start_executions``: the epoch) are always fsynced, so an epoch is never
  handed out twice.
* Fencing lives in conditional writes: every write that concerns a running execution names
  the ``lease_epoch`` it believes current, and changes nothing unless it is.
* ``tenant=None`` in a read means "any tenant" (admin); a tenant name restricts the read
  to that tenant's rows, and another tenant's row reads as absent.
* Tenants and API tokens (``core.tenants``) live in the store too, so every node of a cluster
  sees the same ones. Tokens are stored as hashes only: the store never sees a secret.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from cronwheel.core.records import Migrated
from cronwheel.store.roles.cluster import ClusterStore
from cronwheel.store.roles.executions import ExecutionStore
from cronwheel.store.roles.history import HistoryStore
from cronwheel.store.roles.jobs import JobStore
from cronwheel.store.roles.notifications import NotificationStore
from cronwheel.store.roles.scheduling import SchedulingStore
from cronwheel.store.roles.tenants import TenantStore


class StoreError(Exception):
    """The store cannot do what was asked (not a caller mistake)."""

    #: may the same call succeed later, nothing changed? (``cronwheel serve``'s exit 75 or 2)
    transient = False


class TenantIsDeleting(StoreError):
    """A write named a tenant being deleted, or an object of one (a job, an execution, a
    notification): it takes nothing new, and nothing changed (the transaction rolled back)."""

    def __init__(self, tenant: str) -> None:
        super().__init__(f"tenant {tenant!r} is being deleted")
        self.tenant = tenant


class StoreUnavailable(StoreError):
    """The store cannot be reached right now; the caller may retry later (503)."""

    transient = True


class StoreAccessRefused(StoreUnavailable):
    """The server answered and refused this node: authentication failed, no such role or
    database. A running node treats it as an outage (503: a rotated password, a DBA at
    work); a start refused for it is lasting, since a restart would meet the same refusal."""

    transient = False


# ---------------------------------------------------------------- the interface


class Store(
    JobStore, SchedulingStore, ExecutionStore, TenantStore, ClusterStore, HistoryStore, NotificationStore, ABC
):
    """Everything a backend implements: the union of the roles (``store.roles``)."""

    # ---- lifecycle
    @abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    @abstractmethod
    def schema_version(self) -> int:
        """The migration version the store is at (all migrations are applied on open)."""

    #: the migrations this handle applied when it was opened; None when the schema was up to
    #: date already (or another process migrated it meanwhile)
    migrated: Migrated | None = None

    # ---- extra, for the engine
    def meta(self) -> dict[str, Any]:
        """Backend description for `status` (kind, path, version)."""
        return {}
