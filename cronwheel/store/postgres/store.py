"""The cluster store: PostgreSQL through psycopg 3 (the design notes are in ``connection.py``).

The class is assembled from one class per role of the contract (``store.roles``), each in
its own module over the connection machinery of ``connection.py``; the methods both
backends share are written once (``store/shared.py``) over this backend's ``dialect.py``.
"""

from __future__ import annotations

from cronwheel.store.base import Store
from cronwheel.store.notifying import NotificationMethods
from cronwheel.store.postgres.connection import PostgresBase
from cronwheel.store.postgres.dialect import DIALECT
from cronwheel.store.postgres.executions import ExecutionMethods
from cronwheel.store.postgres.jobs import JobMethods
from cronwheel.store.postgres.membership import MembershipMethods
from cronwheel.store.postgres.scheduling import SchedulingMethods
from cronwheel.store.postgres.tenants import TenantMethods
from cronwheel.store.shared import SharedMethods


class PostgresStore(
    JobMethods, SchedulingMethods, ExecutionMethods, TenantMethods, MembershipMethods, PostgresBase,
    SharedMethods, NotificationMethods, Store,
):  # fmt: skip
    """``Store`` on a PostgreSQL database. Open it with :meth:`open`."""

    _dialect = DIALECT





    # The database's clock decides (``now_ms`` is ignored), see ``cluster.py``.
