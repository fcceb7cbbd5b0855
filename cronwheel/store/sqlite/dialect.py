"""The SQLite store's part of the methods written once for both backends (``store/shared.py``)."""

from __future__ import annotations

from cronwheel.store.shared import Dialect
from cronwheel.store.sqlite import cluster, leases, triggers
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.rows import READER, outbox_sql

DIALECT = Dialect(
    reader=READER,
    outbox_sql=outbox_sql,
    register_node=cluster.register,
    live_nodes=cluster.live,
    prune_nodes=cluster.prune,
    release_buckets=cluster.release,
    bucket_leases=cluster.leases,
    heartbeat=leases.heartbeat,
    start=leases.start,
    complete=leases.complete,
    backfill=triggers.backfill,
    deregister_node=cluster.DEREGISTER_NODE,
    sql=q,
)
