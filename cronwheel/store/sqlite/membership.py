"""The SQLite store's cluster membership (one node: ``now_ms`` is the clock), over ``cluster.py``."""

from __future__ import annotations

from collections.abc import Sequence

from cronwheel.core.records import BucketGrants, BucketLease, NodeInfo
from cronwheel.store.sqlite import cluster
from cronwheel.store.sqlite.connection import SqliteBase, translated


class MembershipMethods(SqliteBase):
    """``store.roles.cluster.ClusterStore`` on the SQLite file."""

    @translated
    def register_node(self, node_id: str, address: str, now_ms: int) -> int:
        with self._write() as conn:
            return cluster.register(conn, node_id, address, now_ms)

    @translated
    def deregister_node(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM cluster_nodes WHERE node_id = ?", (node_id,))

    @translated
    def live_nodes(self, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
        return cluster.live(self._conn, ttl_ms, now_ms)

    @translated
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        with self._write() as conn:
            return cluster.acquire(conn, node_id, bucket_ids, ttl_ms, now_ms)

    @translated
    def release_buckets(self, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
        if not bucket_ids:
            return []
        with self._write() as conn:
            return cluster.release(conn, node_id, bucket_ids)

    @translated
    def bucket_leases(self) -> list[BucketLease]:
        return cluster.leases(self._conn)
