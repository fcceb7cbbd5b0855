"""What a node publishes about itself for metrics and health: plain values, read by obs.

The engine builds a ``NodeSnapshot`` from its memory on demand (cheap: no store access) and
``StoreCounts`` from a few COUNT queries; obs turns them into Prometheus series and systemd's
status line without knowing how the engine is put together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    """The node's state at one moment, from memory."""

    node_id: str
    now_ms: int
    #: executionId -> (workerId, leaseEpoch) for the executions in this node's local workers
    running: Mapping[str, tuple[str, int]]
    queue_depth_by_tier: tuple[int, ...]
    delayed: int  #: executions waiting for their backoff or jitter before they queue
    workers: int  #: live local worker processes
    slots_total: int
    slots_free: int
    buckets_owned: int
    wheel_jobs: int
    last_loop_ms: int  #: when the scheduler loop last turned
    healthy: bool
    lag_p99_ms: int | None
    disk_free_bytes: int | None = None
    wal_bytes: int | None = None
    reads_waiting: int = 0  #: store reads waiting for their turn at the reader thread


@dataclass(frozen=True, slots=True)
class StoreCounts:
    """Store-wide numbers (a few COUNT queries)."""

    jobs: Mapping[str, int] = field(default_factory=dict)  #: by JobStatus value
    dead: int = 0
    next_run_at_ms: int | None = None
    notifications: Mapping[str, int] = field(default_factory=dict)  #: by status, and ``overdueJobs``


def lag_percentile(sorted_lags: list[int], p: float) -> int | None:
    """The ``p`` quantile (0..1) of lags already sorted; None without samples."""
    if not sorted_lags:
        return None
    return sorted_lags[min(len(sorted_lags) - 1, int(p * len(sorted_lags)))]


class StatsSource(Protocol):
    """What a node offers its metrics: the snapshot, and the store counts (which may raise
    while the store is unavailable)."""

    def now_ms(self) -> int: ...

    def snapshot(self) -> NodeSnapshot: ...

    async def store_counts(self) -> StoreCounts: ...
