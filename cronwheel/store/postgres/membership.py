"""The PostgreSQL store's cluster membership, on the database's clock (``now_ms`` is ignored),
over ``cluster.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from cronwheel.core.records import BucketGrants, BucketLease, NodeInfo
from cronwheel.store.postgres import cluster
from cronwheel.store.postgres.connection import PostgresBase, translated


class MembershipMethods(PostgresBase):
    """``store.roles.cluster.ClusterStore`` on PostgreSQL."""

    @translated
    def register_node(self, node_id: str, address: str, now_ms: int) -> int:
        with self._write() as conn:
            return cluster.register(conn, node_id, address)

    @translated
    def deregister_node(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM cluster_nodes WHERE node_id = %s", (node_id,))

    @translated
    def live_nodes(self, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
        return self._read(lambda conn: cluster.live(conn, ttl_ms))

    @translated
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        with self._write() as conn:
            if not bucket_ids:
                return BucketGrants([], cluster.db_now(conn))
            return cluster.acquire(conn, node_id, bucket_ids, ttl_ms)

    @translated
    def release_buckets(self, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
        if not bucket_ids:
            return []
        with self._write() as conn:
            return cluster.release(conn, node_id, bucket_ids)

    @translated
    def bucket_leases(self) -> list[BucketLease]:
        return self._read(cluster.leases)
