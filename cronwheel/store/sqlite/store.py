"""The embedded store: one SQLite file through apsw, in WAL mode.

Durability: ``synchronous=FULL``, so every COMMIT (and so every method that writes) is
fsynced before it returns. Concurrency: any number of connections, in any number of
processes, may open the same file; every write transaction starts with ``BEGIN IMMEDIATE``
(it takes the write lock up front, so a read-then-write never has to be retried) and
waits up to ``busy_timeout`` for another writer, then raises ``StoreUnavailable``.
The schema is migrated on open (``migrate.py``).

The class is assembled from one class per role of the contract (``store.roles``), each in
its own module over the connection machinery of ``connection.py``; the methods both
backends share are written once (``store/shared.py``) over this backend's ``dialect.py``.
"""

from __future__ import annotations

from cronwheel.store.base import Store
from cronwheel.store.notifying import NotificationMethods
from cronwheel.store.shared import SharedMethods
from cronwheel.store.sqlite.connection import SqliteBase
from cronwheel.store.sqlite.dialect import DIALECT
from cronwheel.store.sqlite.executions import ExecutionMethods
from cronwheel.store.sqlite.jobs import JobMethods
from cronwheel.store.sqlite.membership import MembershipMethods
from cronwheel.store.sqlite.scheduling import SchedulingMethods
from cronwheel.store.sqlite.tenants import TenantMethods


class SqliteStore(
    JobMethods, SchedulingMethods, ExecutionMethods, TenantMethods, MembershipMethods, SqliteBase,
    SharedMethods, NotificationMethods, Store,
):  # fmt: skip
    """``Store`` on one SQLite file. Open it with :meth:`open`."""

    _dialect = DIALECT
