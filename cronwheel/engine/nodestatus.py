"""What the node says about itself: ``status`` for the API (store counts and cluster state
from the status cache while the store is down, marked stale), the ``NodeSnapshot`` that
metrics and health read (core/stats.py), and whether its loops turn (the systemd watchdog).

``NodeStatusMixin`` is a part of ``Node`` (engine/parts.py says how the parts fit).
"""

from __future__ import annotations

import time
from typing import Any

from cronwheel.core.instants import format_instant
from cronwheel.core.model import ExecStatus, JobStatus, Priority
from cronwheel.core.stats import NodeSnapshot, StoreCounts, lag_percentile
from cronwheel.engine.parts import NodeParts
from cronwheel.store.base import Store, StoreUnavailable

#: the scheduler loop has not turned for this long: the node is not healthy
HEALTHY_LOOP_MS = 10_000
#: the execution states that status counts
COUNTED_STATES = (ExecStatus.PENDING, ExecStatus.RUNNING, ExecStatus.RETRY_WAIT, ExecStatus.DEAD)
#: metrics and the READY line take a status read this recent (ms) rather than make another
SHARED_READ_MS = 2_000


class NodeStatusMixin(NodeParts):
    def healthy(self) -> bool:
        """The loops have turned recently (for the systemd watchdog)."""
        now = self.clock.now_ms()
        return now - self.scheduler.last_loop_ms < HEALTHY_LOOP_MS

    # ---- what metrics and health read (core/stats.py)
    def snapshot(self) -> NodeSnapshot:
        pool = self.pool
        disk = self.disk.state
        return NodeSnapshot(
            node_id=self.node_id, now_ms=self.clock.now_ms(),
            running=dict(pool.in_flight()) if pool else {},
            queue_depth_by_tier=tuple(self.dispatcher.queue.depth_by_tier()),
            delayed=len(self.dispatcher.delayed),
            workers=len(pool.worker_pids()) if pool else 0,
            slots_total=self.config.workers * self.config.slots,
            slots_free=pool.free_slots() if pool else 0,
            buckets_owned=len(self.scheduler.buckets), wheel_jobs=self.scheduler.horizon_jobs,
            last_loop_ms=self.scheduler.last_loop_ms, healthy=self.healthy(),
            lag_p99_ms=lag_percentile(sorted(self.dispatcher.lags_ms), 0.99),
            disk_free_bytes=disk.free_bytes, wal_bytes=disk.log_bytes, reads_waiting=self.reader.waiting(),
        )

    async def store_counts(self) -> StoreCounts:
        """Metrics' and systemd's READY line's share of the status's store read (one read
        serves them all: the node makes one as it starts, and READY follows at once)."""
        data, _, error = await self._store_part(fresh_ms=SHARED_READ_MS)
        if error is not None:
            raise StoreUnavailable(error)  # metrics keep their last numbers
        return StoreCounts(jobs=data["jobs"], dead=data["executions"][ExecStatus.DEAD.value],
                           next_run_at_ms=data["nextRunAtMs"], notifications=data["notifications"])  # fmt: skip

    async def _store_part(self, fresh_ms: int | None = None) -> tuple[dict[str, Any], int, str | None]:
        """The status's parts read from the store (``StatusCache.read``)."""
        buckets = list(self.scheduler.buckets)
        now = self.clock.now_ms()

        def counts(s: Store) -> dict[str, Any]:
            return {
                "jobs": {st.value: s.count_jobs(status=st) for st in JobStatus},
                "executions": {st.value: s.count_executions(status=st) for st in COUNTED_STATES},
                "nextRunAtMs": s.next_due_at(buckets),
                "notifications": s.notification_counts(now),
                "store": s.meta(),
            }

        async def read() -> dict[str, Any]:
            return await self.reader.run(counts)

        return await self.status_cache.read("store", read, fresh_ms)

    def tenant_state_entries(self) -> int:
        """What the node holds in memory per tenant (the tenancy part counts it)."""
        raise NotImplementedError

    # ---- what the API's status shows
    async def status(self) -> dict[str, Any]:
        data, as_of, error = await self._store_part()
        data = {("nextRunAt" if k == "nextRunAtMs" else k): format_instant(v) if k == "nextRunAtMs" else v
                for k, v in data.items()}  # fmt: skip
        lags = sorted(self.dispatcher.lags_ms)
        depth = self.dispatcher.queue.depth_by_tier()
        pool = self.pool
        data.update(
            nodeId=self.node_id,
            stopping=self.stopping,
            uptimeSec=round(time.monotonic() - self.started_monotonic, 1),
            queue={Priority(i).label: d for i, d in enumerate(depth)},
            delayed=len(self.dispatcher.delayed),
            wheel=self.scheduler.horizon_jobs,
            workers={
                "count": len(pool.worker_pids()) if pool else 0,
                "freeSlots": pool.free_slots() if pool else 0,
                "running": len(pool.in_flight()) if pool else 0,
            },
            dispatchLagMs={"p50": lag_percentile(lags, 0.5), "p99": lag_percentile(lags, 0.99), "max": lags[-1] if lags else None, "samples": len(lags)},
            disk=self._disk_status(),
            tenantStateEntries=self.tenant_state_entries(),
        )
        if self.cluster is not None:
            cluster, cluster_as_of, cluster_error = await self.status_cache.read("cluster", self.cluster.status)
            data["cluster"] = {**cluster, "owned": len(self.cluster.holdings.terms)}  # live, not cached
            if self.aligned is not None:  # live: what this node adds to its clock (clock.skewed)
                data["cluster"]["clockOffsetMs"] = self.aligned.offset_ms
            as_of, error = min(as_of, cluster_as_of), error or cluster_error
        data.update(stale=error is not None, asOf=format_instant(as_of))
        if error is not None:
            data.update(staleForMs=self.clock.now_ms() - as_of, storeError=error)
        return data

    def _disk_status(self) -> dict[str, Any]:
        self.disk.read_free()  # live: it is one statvfs
        return self.disk.state.to_json(self.disk.low_bytes)
