"""History retention: finished executions (and the notifications that tell about them) older
than the retention period, beyond the newest ``keep_last`` of each job, are pruned in the
background. The dead-letter queue never is.

Composed into the node (``Node.retention``), which runs its loop.
"""

from __future__ import annotations

import asyncio

from cronwheel.core.clock import Clock
from cronwheel.engine.runner import StoreRunner
from cronwheel.obs.events import EventLog
from cronwheel.store.base import Store

#: per transaction: jobs looked at and executions deleted, notifications deleted; small
#: transactions let the hot path (claims, starts, completions) in between
PRUNE_JOBS_PER_CALL = 200
PRUNE_EXECUTIONS = 1000
PRUNE_NOTIFICATIONS = 1000


class Retention:
    def __init__(
        self, writer: StoreRunner, clock: Clock, events: EventLog, retention_ms: int, keep_last: int, interval_ms: int
    ) -> None:
        self.writer = writer
        self.clock = clock
        self.events = events
        self.retention_ms = retention_ms
        self.keep_last = keep_last
        self.interval_ms = interval_ms

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_ms / 1000)
            try:
                await self.prune()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # retention must never take the node down
                self.events.emit("retention.error", error=repr(exc))

    async def prune(self) -> int:
        """One pass over every job's history, in small transactions that let the hot path
        (claims, starts, completions) in between, then a WAL checkpoint."""
        cutoff = self.clock.now_ms() - self.retention_ms
        total, cursor = 0, None
        while True:
            deleted, cursor = await self._prune_page(cutoff, cursor)
            total += deleted
            if cursor is None:
                break
            await asyncio.sleep(0.01)
        while True:  # told notifications age out with the history they tell about
            pruned = await self.writer.run(lambda s: s.prune_notifications(cutoff, PRUNE_NOTIFICATIONS))
            total += pruned
            if pruned < PRUNE_NOTIFICATIONS:
                break
            await asyncio.sleep(0.01)
        await self.writer.run(lambda s: s.checkpoint())
        if total:
            self.events.emit("retention.pruned", executions=total)
        return total

    async def _prune_page(self, cutoff: int, cursor: str | None) -> tuple[int, str | None]:
        def prune(s: Store) -> tuple[int, str | None]:
            return s.prune_executions(cutoff, self.keep_last, cursor, PRUNE_JOBS_PER_CALL, PRUNE_EXECUTIONS)

        return await self.writer.run(prune)
