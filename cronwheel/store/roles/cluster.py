"""Cluster membership: node rows and bucket leases, on the store's clock.

Part of the store contract (``store.base.Store`` is the union of the roles); the
conventions in ``store.base`` hold for every method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cronwheel.core.records import BucketGrants, BucketLease, NodeInfo


class ClusterStore(ABC):
    """Nodes and the bucket leases they hold (docs/scaling.md)."""

    # ---- cluster membership (docs/scaling.md: buckets leased on the store's clock)
    # Whose clock: PostgreSQL uses the DATABASE clock for ``last_seen``, ``lease_until`` and
    # every comparison with them, and ignores ``now_ms``; SQLite (one node) uses ``now_ms``.
    @abstractmethod
    def register_node(
        self, node_id: str, address: str, incarnation: str, ttl_ms: int, now_ms: int, take_from: int | None = None
    ) -> NodeInfo:
        """Insert or refresh (heartbeat) the node's row as the process ``incarnation`` (random,
        drawn when the process starts): address and last_seen = the store's now, started_at
        too when the row becomes this process's. Only when the id is free: no row, a row of
        this incarnation, a row nobody has heartbeaten within ``ttl_ms`` (a dead process's),
        or one whose last_seen is exactly ``take_from`` (a row its caller watched not move).
        Returns the row that holds the id afterwards: this incarnation's, or another live
        process's (nothing changed). One statement, so of two processes that join with one id
        at once, one gets it."""

    @abstractmethod
    def deregister_node(self, node_id: str, incarnation: str) -> None:
        """Remove a node's row (graceful leave) if it is still ``incarnation``'s. Its bucket
        leases are not touched."""

    @abstractmethod
    def live_nodes(self, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
        """Nodes whose last_seen > the store's now − ttl_ms, ordered by node_id."""

    @abstractmethod
    def prune_nodes(self, unseen_ms: int, now_ms: int, limit: int) -> int:
        """Delete up to ``limit`` node rows nobody has heartbeaten within ``unseen_ms`` (last_seen
        <= the store's now − unseen_ms), oldest first; returns how many. A row heartbeaten
        meanwhile stays (the condition is the delete's own). With ``unseen_ms`` longer than any
        TTL, only rows that ``register_node`` would give to any process are deleted, so whoever
        registers next (the process that left it, woken from a freeze, or another) gets the id
        as it would have: retention uses it for the rows of nodes that are gone (pods' ids)."""

    @abstractmethod
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        """Compare-and-set per bucket, in ONE transaction: the lease is granted (lease_until =
        the store's now + ttl_ms) only when it is free (never leased, or released), expired
        (lease_until <= now), or ours and live. Renewing our live lease keeps its epoch;
        anything else starts a new term: epoch + 1 (the first lease of a bucket has epoch 1).
        Buckets held live by another node are left out of the result."""

    @abstractmethod
    def release_buckets(self, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
        """Free the named leases that ``node_id`` owns (owner None, expired; the epoch stays,
        so the next term gets a higher one). Returns the bucket ids released."""

    @abstractmethod
    def bucket_leases(self) -> list[BucketLease]:
        """Every bucket lease row, ordered by bucket_id (buckets never leased have none)."""
