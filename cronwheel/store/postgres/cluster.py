"""Cluster membership and fenced bucket leases (docs/scaling.md) for
the PostgreSQL store. Every time here is the DATABASE clock (``DB_NOW_MS``), read once per
transaction, so that nodes with skewed clocks still agree on who holds what."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from cronwheel.core.records import BucketGrants, BucketLease, Fence, NodeInfo

DB_NOW_MS = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"

DEREGISTER_NODE = "DELETE FROM cluster_nodes WHERE node_id = %(node)s AND incarnation = %(incarnation)s"

#: the compare-and-set of a node id: free, this incarnation's, dead, or the row watched
REGISTER_NODE = """
INSERT INTO cluster_nodes AS n (node_id, address, started_at, last_seen, incarnation)
VALUES (%(node)s, %(address)s, %(now)s, %(now)s, %(incarnation)s)
ON CONFLICT (node_id) DO UPDATE SET
    address = EXCLUDED.address,
    started_at = CASE WHEN n.incarnation = EXCLUDED.incarnation THEN n.started_at ELSE EXCLUDED.started_at END,
    last_seen = greatest(EXCLUDED.last_seen, CASE WHEN n.incarnation = EXCLUDED.incarnation THEN n.last_seen ELSE 0 END),
    incarnation = EXCLUDED.incarnation
WHERE n.incarnation = EXCLUDED.incarnation OR n.last_seen <= %(now)s - %(ttl)s
   OR n.last_seen = %(take_from)s::bigint
"""
#: retention: rows nobody heartbeated for ``unseen`` ms (by the database clock). A row a
#: heartbeat holds locked is skipped, and one it moved on is not deleted: the DELETE checks
#: last_seen again on the row as it is when it gets it
PRUNE_NODES = """
DELETE FROM cluster_nodes WHERE last_seen <= %(now)s - %(unseen)s AND node_id IN (
    SELECT node_id FROM cluster_nodes WHERE last_seen <= %(now)s - %(unseen)s ORDER BY last_seen
    LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING node_id
"""
NODE = "SELECT node_id, address, started_at, last_seen, incarnation FROM cluster_nodes WHERE node_id = %(node)s"
LIVE_NODES = """
SELECT node_id, address, started_at, last_seen, incarnation FROM cluster_nodes
WHERE last_seen > %(now)s - %(ttl)s ORDER BY node_id
"""
#: the compare-and-set: free, expired, or ours; a live renewal keeps the epoch
ACQUIRE = """
INSERT INTO bucket_leases AS l (bucket_id, owner, epoch, lease_until)
SELECT b, %(node)s, 1, %(until)s FROM unnest(%(buckets)s::int[]) AS b
ON CONFLICT (bucket_id) DO UPDATE SET
    owner = EXCLUDED.owner,
    epoch = CASE WHEN l.owner = EXCLUDED.owner AND l.lease_until > %(now)s THEN l.epoch ELSE l.epoch + 1 END,
    lease_until = EXCLUDED.lease_until
WHERE l.owner IS NULL OR l.owner = EXCLUDED.owner OR l.lease_until <= %(now)s
RETURNING bucket_id, epoch, lease_until
"""
RELEASE = """
UPDATE bucket_leases SET owner = NULL, lease_until = 0
WHERE owner = %(node)s AND bucket_id = ANY(%(buckets)s::int[])
RETURNING bucket_id
"""
BUCKET_LEASES = "SELECT bucket_id, owner, epoch, lease_until FROM bucket_leases ORDER BY bucket_id"
#: the fence: lease rows still ours and live, locked so that a takeover waits for our commit
FENCE_CHECK = """
SELECT bucket_id, epoch FROM bucket_leases
WHERE owner = %(node)s AND bucket_id = ANY(%(buckets)s::int[]) AND lease_until > %(now)s
ORDER BY bucket_id
FOR SHARE
"""

FENCED_CLAIM_IDLE_TIMEOUT = "SET LOCAL idle_in_transaction_session_timeout = '5s'"


def db_now(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(DB_NOW_MS).fetchone()
    assert row is not None
    return int(row[0])


def register(conn: psycopg.Connection[Any], node_id: str, address: str, incarnation: str, ttl_ms: int,
             take_from: int | None) -> NodeInfo:  # fmt: skip
    args = {"node": node_id, "address": address, "incarnation": incarnation, "now": db_now(conn), "ttl": ttl_ms,
            "take_from": take_from}  # fmt: skip
    conn.execute(REGISTER_NODE, args)
    row = conn.execute(NODE, args).fetchone()
    assert row is not None  # inserted, or held by another: there is a row
    return NodeInfo(*row)


def live(conn: psycopg.Connection[Any], ttl_ms: int) -> list[NodeInfo]:
    now = db_now(conn)
    return [NodeInfo(*r) for r in conn.execute(LIVE_NODES, {"now": now, "ttl": ttl_ms}).fetchall()]


def prune(conn: psycopg.Connection[Any], unseen_ms: int, limit: int) -> int:
    args = {"now": db_now(conn), "unseen": unseen_ms, "limit": limit}
    return len(conn.execute(PRUNE_NODES, args).fetchall())


def acquire(conn: psycopg.Connection[Any], node_id: str, bucket_ids: Sequence[int], ttl_ms: int) -> BucketGrants:
    now = db_now(conn)
    buckets = sorted({int(b) for b in bucket_ids})  # one lock order for every node
    rows = conn.execute(ACQUIRE, {"node": node_id, "buckets": buckets, "until": now + ttl_ms, "now": now}).fetchall()
    return BucketGrants(sorted((int(b), int(e), int(u)) for b, e, u in rows), now)


def release(conn: psycopg.Connection[Any], node_id: str, bucket_ids: Sequence[int]) -> list[int]:
    rows = conn.execute(RELEASE, {"node": node_id, "buckets": sorted({int(b) for b in bucket_ids})}).fetchall()
    return sorted(int(r[0]) for r in rows)


def leases(conn: psycopg.Connection[Any]) -> list[BucketLease]:
    return [BucketLease(int(b), o, int(e), int(u)) for b, o, e, u in conn.execute(BUCKET_LEASES).fetchall()]


def fenced_buckets(conn: psycopg.Connection[Any], buckets: Sequence[int], fence: Fence) -> list[int]:
    """Of ``buckets``, those the fence's node still holds at the fence's epoch (in the
    caller's transaction, by the database clock)."""
    node_id, epochs = fence
    wanted = sorted({int(b) for b in buckets if int(b) in epochs})
    if not wanted:
        return []
    rows = conn.execute(FENCE_CHECK, {"node": node_id, "buckets": wanted, "now": db_now(conn)}).fetchall()
    return [int(b) for b, epoch in rows if epochs.get(int(b)) == int(epoch)]
