"""The SQLite store's cluster membership (one node: ``now_ms`` is the clock), over ``cluster.py``."""

from __future__ import annotations

from collections.abc import Sequence

from cronwheel.core.records import BucketGrants
from cronwheel.store.sqlite import cluster
from cronwheel.store.sqlite.connection import SqliteBase, translated


class MembershipMethods(SqliteBase):
    """``store.roles.cluster.ClusterStore`` on the SQLite file."""

    @translated
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        with self._write() as conn:
            return cluster.acquire(conn, node_id, bucket_ids, ttl_ms, now_ms)
