"""The PostgreSQL store's part of the methods written once for both backends
(``store/shared.py``). Cluster membership runs on the database's clock, so the caller's
``now_ms`` is dropped here (see ``cluster.py``); a heartbeat is a batch of one."""

from __future__ import annotations

from typing import Any

from cronwheel.core.records import HeartbeatResult, NodeInfo
from cronwheel.store.postgres import cluster, leases, triggers
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.rows import READER, outbox_sql
from cronwheel.store.shared import Dialect


def _register(conn: Any, node_id: str, address: str, incarnation: str, ttl_ms: int, now_ms: int,
              take_from: int | None) -> NodeInfo:  # fmt: skip
    return cluster.register(conn, node_id, address, incarnation, ttl_ms, take_from)  # the database's clock


def _live(conn: Any, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
    return cluster.live(conn, ttl_ms)  # the database's clock


def _prune_nodes(conn: Any, unseen_ms: int, now_ms: int, limit: int) -> int:
    return cluster.prune(conn, unseen_ms, limit)  # the database's clock


def _heartbeat(conn: Any, execution_id: str, worker_id: str, lease_epoch: int, now_ms: int) -> HeartbeatResult:
    return leases.heartbeat(conn, [(execution_id, worker_id, lease_epoch)], now_ms)[0]


DIALECT = Dialect(
    reader=READER,
    outbox_sql=outbox_sql,
    register_node=_register,
    live_nodes=_live,
    prune_nodes=_prune_nodes,
    release_buckets=cluster.release,
    bucket_leases=cluster.leases,
    heartbeat=_heartbeat,
    start=leases.start,
    complete=leases.complete,
    backfill=triggers.backfill,
    deregister_node=cluster.DEREGISTER_NODE,
    tenant_lock="FOR UPDATE",  # create_jobs holds its tenants FOR KEY SHARE
    sql=q,
)
