"""History retention: finished executions (and the notifications that tell about them) older
than the retention period, beyond the newest ``keep_last`` of each job, are pruned in the
background. The dead-letter queue never is. Settled jobs (a one-off that ran, a cancelled
job) go too, with their history, once the retention period has passed them by
(``store/settled.py``): ``keep_last`` is per job while the job is there.

Composed into the node (``Node.retention``), which runs its loop.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

from cronwheel.core.clock import Clock
from cronwheel.engine.runner import StoreRunner
from cronwheel.obs.events import EventLog
from cronwheel.store.base import Store

#: per transaction: jobs looked at and executions deleted, notifications deleted; small
#: transactions let the hot path (claims, starts, completions) in between
PRUNE_JOBS_PER_CALL = 200
PRUNE_EXECUTIONS = 1000
PRUNE_NOTIFICATIONS = 1000
#: jobs read per call for settled ones (outside any write transaction), and the rows their
#: deletion may take at most in one call
PRUNE_SETTLED_JOBS = 1000
PRUNE_SETTLED_ROWS = 500


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
        """One pass over every job's history, then over the settled jobs, in small transactions
        that let the hot path (claims, starts, completions) in between, then a WAL checkpoint."""
        cutoff = self.clock.now_ms() - self.retention_ms
        total = await self._pass(
            lambda cursor, s: s.prune_executions(cutoff, self.keep_last, cursor, PRUNE_JOBS_PER_CALL, PRUNE_EXECUTIONS)
        )
        jobs = await self._pass(
            lambda cursor, s: s.prune_settled_jobs(cutoff, cursor, PRUNE_SETTLED_JOBS, PRUNE_SETTLED_ROWS)
        )
        while True:  # told notifications age out with the history they tell about
            pruned = await self.writer.run(lambda s: s.prune_notifications(cutoff, PRUNE_NOTIFICATIONS))
            total += pruned
            if pruned < PRUNE_NOTIFICATIONS:
                break
            await asyncio.sleep(0.01)
        await self.writer.run(lambda s: s.checkpoint())
        if total or jobs:
            self.events.emit("retention.pruned", executions=total, jobs=jobs)
        return total

    async def _pass(self, page: Callable[[str | None, Store], tuple[int, str | None]]) -> int:
        """Call ``page(cursor, store)`` from the first page to the last (its cursor None),
        pausing between them; the sum of what it deleted."""
        total, cursor = 0, None
        while True:
            deleted, cursor = await self.writer.run(functools.partial(page, cursor))
            total += deleted
            if cursor is None:
                return total
            await asyncio.sleep(0.01)

