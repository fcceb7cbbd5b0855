"""Cluster membership and bucket leases for the SQLite store. One node owns an SQLite file,
so it trivially holds every lease; the same compare-and-set rules as PostgreSQL's apply
(so the one contract suite passes), with the caller's ``now_ms`` as the clock."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from cronwheel.core.records import BucketGrants, BucketLease, Fence, NodeInfo

DEREGISTER_NODE = "DELETE FROM cluster_nodes WHERE node_id = :node AND incarnation = :incarnation"

#: the compare-and-set of a node id: free, this incarnation's, dead, or the row watched
REGISTER_NODE = """
INSERT INTO cluster_nodes (node_id, address, started_at, last_seen, incarnation) VALUES (?1, ?2, ?4, ?4, ?3)
ON CONFLICT (node_id) DO UPDATE SET
    address = excluded.address,
    started_at = CASE WHEN cluster_nodes.incarnation = excluded.incarnation
                      THEN cluster_nodes.started_at ELSE excluded.started_at END,
    last_seen = max(excluded.last_seen, CASE WHEN cluster_nodes.incarnation = excluded.incarnation
                                             THEN cluster_nodes.last_seen ELSE 0 END),
    incarnation = excluded.incarnation
WHERE cluster_nodes.incarnation = excluded.incarnation OR cluster_nodes.last_seen <= ?4 - ?5
   OR cluster_nodes.last_seen = ?6
"""
NODE = "SELECT node_id, address, started_at, last_seen, incarnation FROM cluster_nodes WHERE node_id = ?1"
#: retention: rows nobody heartbeated for ``unseen`` (?2) ms, the condition checked again by
#: the DELETE itself, so a heartbeat that lands first keeps its row
PRUNE_NODES = """
DELETE FROM cluster_nodes WHERE last_seen <= ?1 - ?2 AND node_id IN (
    SELECT node_id FROM cluster_nodes WHERE last_seen <= ?1 - ?2 ORDER BY last_seen LIMIT ?3)
RETURNING node_id
"""
LIVE_NODES = """
SELECT node_id, address, started_at, last_seen, incarnation FROM cluster_nodes
WHERE last_seen > ?1 - ?2 ORDER BY node_id
"""
ACQUIRE = """
INSERT INTO bucket_leases AS l (bucket_id, owner, epoch, lease_until) VALUES (?1, ?2, 1, ?3)
ON CONFLICT (bucket_id) DO UPDATE SET
    owner = excluded.owner,
    epoch = CASE WHEN l.owner = excluded.owner AND l.lease_until > ?4 THEN l.epoch ELSE l.epoch + 1 END,
    lease_until = excluded.lease_until
WHERE l.owner IS NULL OR l.owner = excluded.owner OR l.lease_until <= ?4
RETURNING bucket_id, epoch, lease_until
"""
RELEASE = """
UPDATE bucket_leases SET owner = NULL, lease_until = 0
WHERE owner = ?1 AND bucket_id IN (SELECT value FROM json_each(?2))
RETURNING bucket_id
"""
BUCKET_LEASES = "SELECT bucket_id, owner, epoch, lease_until FROM bucket_leases ORDER BY bucket_id"
FENCE_CHECK = """
SELECT bucket_id, epoch FROM bucket_leases
WHERE owner = ?1 AND bucket_id IN (SELECT value FROM json_each(?2)) AND lease_until > ?3
"""


def _json(buckets: Sequence[int]) -> str:
    return "[" + ",".join(str(int(b)) for b in sorted(set(buckets))) + "]"


def register(conn: apsw.Connection, node_id: str, address: str, incarnation: str, ttl_ms: int, now_ms: int,
             take_from: int | None) -> NodeInfo:  # fmt: skip
    conn.execute(REGISTER_NODE, (node_id, address, incarnation, now_ms, ttl_ms, take_from))
    r: Any = conn.execute(NODE, (node_id,)).fetchone()
    return NodeInfo(str(r[0]), str(r[1]), int(r[2]), int(r[3]), str(r[4]))


def live(conn: apsw.Connection, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
    rows: list[Any] = conn.execute(LIVE_NODES, (now_ms, ttl_ms)).fetchall()
    return [NodeInfo(str(r[0]), str(r[1]), int(r[2]), int(r[3]), str(r[4])) for r in rows]


def prune(conn: apsw.Connection, unseen_ms: int, now_ms: int, limit: int) -> int:
    return len(conn.execute(PRUNE_NODES, (now_ms, unseen_ms, limit)).fetchall())


def acquire(conn: apsw.Connection, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
    granted: list[tuple[int, int, int]] = []
    for b in sorted({int(b) for b in bucket_ids}):
        row: Any = conn.execute(ACQUIRE, (b, node_id, now_ms + ttl_ms, now_ms)).fetchone()
        if row is not None:
            granted.append((int(row[0]), int(row[1]), int(row[2])))
    return BucketGrants(granted, now_ms)


def release(conn: apsw.Connection, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
    rows: list[Any] = conn.execute(RELEASE, (node_id, _json(bucket_ids))).fetchall()
    return sorted(int(r[0]) for r in rows)


def leases(conn: apsw.Connection) -> list[BucketLease]:
    rows: list[Any] = conn.execute(BUCKET_LEASES).fetchall()
    return [BucketLease(int(b), o, int(e), int(u)) for b, o, e, u in rows]


def fenced_buckets(conn: apsw.Connection, buckets: Sequence[int], fence: Fence, now_ms: int) -> list[int]:
    node_id, epochs = fence
    wanted = [int(b) for b in buckets if int(b) in epochs]
    if not wanted:
        return []
    rows: list[Any] = conn.execute(FENCE_CHECK, (node_id, _json(wanted), now_ms)).fetchall()
    return sorted(int(b) for b, epoch in rows if epochs.get(int(b)) == int(epoch))
