"""The PostgreSQL store's cluster membership, on the database's clock (``now_ms`` is ignored),
over ``cluster.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from cronwheel.core.records import BucketGrants
from cronwheel.store.postgres import cluster
from cronwheel.store.postgres.connection import PostgresBase, translated


class MembershipMethods(PostgresBase):
    """``store.roles.cluster.ClusterStore`` on PostgreSQL."""

    @translated
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        with self._write() as conn:
            if not bucket_ids:
                return BucketGrants([], cluster.db_now(conn))
            return cluster.acquire(conn, node_id, bucket_ids, ttl_ms)
