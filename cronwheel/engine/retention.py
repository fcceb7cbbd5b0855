"""History retention: finished executions (and the notifications that tell about them) older
than the retention period, beyond the newest ``keep_last`` of each job, are pruned in the
background. Settled jobs (a one-off that ran, a cancelled job) go too, with their history,
once the retention period has passed them by (``store/settled.py``): ``keep_last`` is per job
while the job is there. API tokens revoked longer ago than the retention period go as well, and
so do the rows of cluster nodes not seen for as long (at least a day): a cluster whose node ids
are pods' names adds a row at every deploy.

The dead-letter queues are not aged out: a dead letter waits to be looked at. But a job that
fails every second with no retries left adds 86,400 a day for ever, and its rule's dead
receiver up to ``maxPerHour`` dead notifications an hour, so each job keeps its newest
``dlq_keep_last`` of each, and the older ones go, each job's with a ``dlq.pruned`` warning
(``queue`` says which). The bound is per job, so one tenant's failing job never takes a
neighbour's dead letters.

That bound holds while the job is there. A job that left the store (settled and pruned) leaves
its dead notifications behind (they name it by id only), and a tenant that creates and deletes
jobs with failing receivers piled them up without bound: once their job is gone, they go when
older than the retention period, as the job's history did (a human had as long to look).

A tenant being deleted (engine/tenantrm.py) has every row that carries its name removed here,
in transactions of at most ``PRUNE_TENANT_ROWS``, then the tenant row itself
(``tenant.deleted``), no sooner than ``TENANT_DROP_GRACE_MS`` after its deletion was asked. A
deletion asked on this node wakes the loop for that at once; while a deletion waits for a run
still in flight, it is tried again every ``TENANT_RETRY_S``, not only at the next pass.

The settings are read from the node's configuration at each pass, so a SIGHUP that changes
them (daemon/reload.py) takes effect from the next pass. Composed into the node
(``Node.retention``), which runs its loop.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Literal

from cronwheel.core.clock import Clock
from cronwheel.core.records import DeadLettersPruned
from cronwheel.engine.config import NodeConfig
from cronwheel.engine.runner import StoreRunner
from cronwheel.obs.events import EventLog
from cronwheel.store.base import Store

#: per transaction: jobs looked at and executions deleted, notifications deleted; small
#: transactions let the hot path (claims, starts, completions) in between
PRUNE_JOBS_PER_CALL = 200
PRUNE_EXECUTIONS = 1000
PRUNE_NOTIFICATIONS = 1000
PRUNE_TOKENS = 1000  #: revoked tokens deleted per transaction
#: jobs read per call for settled ones (outside any write transaction), and the rows their
#: deletion may take at most in one call
PRUNE_SETTLED_JOBS = 1000
PRUNE_SETTLED_ROWS = 500
#: per call: dead letters read (from their index: ~250 ns each) and deleted at most
PRUNE_DEAD_LETTERS_READ = 20_000
PRUNE_DEAD_LETTERS = 1000
#: per call: jobs with dead notifications looked at for being gone (one index probe each)
PRUNE_GONE_JOBS = 1000
PRUNE_NODES = 1000  #: rows of gone nodes deleted per transaction
#: a node's row is deleted once nobody heartbeated it for the retention period, and never
#: sooner than this: a day is far beyond any bucket lease TTL (10 minutes at most), so the row
#: is one ``register_node`` would give to any process anyway (a short --retention, in tests
#: or on a laptop, must not come near a TTL), and ``cronwheel status`` shows live nodes only
NODE_UNSEEN_MIN_MS = 86_400_000
#: seconds between looks at ``retention_interval_ms`` while waiting for the next pass
RECHECK_S = 1.0
PRUNE_TENANT_ROWS = 1000  #: rows of a tenant being deleted, per transaction
TENANT_RETRY_S = 2.0  #: while a deleted tenant's rows wait for a run in flight to end
#: a deleted tenant's row outlives its deletion by this long: a node that trusted one of its
#: tokens just before (for up to engine/tenancy.py's TOKEN_CACHE_SEC, 5 s, plus the skew the
#: nodes' clocks may have) gets its late job refused by the store, not made the first job of
#: a new tenant of that name
TENANT_DROP_GRACE_MS = 10_000


class Retention:
    def __init__(self, writer: StoreRunner, clock: Clock, events: EventLog, config: NodeConfig) -> None:
        self.writer = writer
        self.clock = clock
        self.events = events
        self.config = config
        #: when (loop time) to look at deleted tenants again: at once on start, so that a
        #: deletion asked before a stop goes on without waiting for the first pass
        self._tenants_due: float | None = 0.0
        self._purged: dict[str, int] = {}  #: rows removed so far, by tenant being deleted
        #: cancels a deleting tenant's live jobs (the node's, as a forced deletion does); a
        #: deletion whose node stopped or crashed before it had cancelled them all would
        #: otherwise keep its jobs running, its row never purged
        self.cancel_live: Callable[[str], Awaitable[int]] | None = None

    def tenant_deleting(self) -> None:
        """A tenant's deletion was asked: its rows go from the next look (within RECHECK_S)."""
        self._tenants_due = 0.0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            # the interval is read again at least every RECHECK_S: a SIGHUP that shortens it
            # from an hour to a minute is not first waited out for the rest of the hour
            left = last + self.config.retention_interval_ms / 1000 - loop.time()
            if left > 0:
                if self._tenants_due is not None and self._tenants_due <= loop.time():
                    await self._guarded(self.purge_tenants())
                    continue
                await asyncio.sleep(min(left, RECHECK_S))
                continue
            await self._guarded(self.prune())
            last = loop.time()

    async def _guarded(self, work: Awaitable[object]) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # retention must never take the node down
            self.events.emit("retention.error", error=repr(exc))

    async def purge_tenants(self) -> int:
        """Remove the rows of every tenant being deleted, then the tenant; how many tenants went."""
        self._tenants_due = None
        deleting = [t.name for t in await self.writer.run(lambda s: s.list_tenants()) if t.deleting]
        drop_before = self.clock.now_ms() - TENANT_DROP_GRACE_MS
        self._purged = {name: self._purged.get(name, 0) for name in deleting}
        gone = 0
        for name in deleting:
            if self.cancel_live is not None:  # none, unless a forced deletion was cut short
                await self.cancel_live(name)
            while True:
                deleted, done = await self.writer.run(functools.partial(_purge, name=name, drop_before_ms=drop_before))
                self._purged[name] += deleted
                if done:
                    self.events.emit("tenant.deleted", tenant=name, rows=self._purged.pop(name))
                    gone += 1
                    break
                if deleted < PRUNE_TENANT_ROWS:  # a run in flight, or the grace, holds the rest: soon again
                    self._tenants_due = asyncio.get_running_loop().time() + TENANT_RETRY_S
                    break
                await asyncio.sleep(0.01)
        return gone

    async def prune(self) -> None:
        """One pass over every job's history, its dead letters, then the settled jobs, the dead
        notifications of jobs gone, told notifications, revoked tokens and gone nodes, in small
        transactions that let the hot path (claims, starts, completions) in between, then a
        WAL checkpoint."""
        cutoff = self.clock.now_ms() - self.config.retention_ms
        keep_last, dlq_keep_last = self.config.keep_last, self.config.dlq_keep_last
        total = await self._pass(
            lambda cursor, s: s.prune_executions(cutoff, keep_last, cursor, PRUNE_JOBS_PER_CALL, PRUNE_EXECUTIONS)
        )
        dead = await self._dead_letters("executions", dlq_keep_last)
        dead_notifications = await self._dead_letters("notifications", dlq_keep_last)
        jobs = await self._pass(
            lambda cursor, s: s.prune_settled_jobs(cutoff, cursor, PRUNE_SETTLED_JOBS, PRUNE_SETTLED_ROWS)
        )
        gone = await self._pass(lambda cursor, s: s.prune_dead_notifications_of_gone_jobs(
            cutoff, cursor, PRUNE_GONE_JOBS, PRUNE_DEAD_LETTERS))
        # told notifications age out with the history they tell about
        total += await self._batches(lambda s: s.prune_notifications(cutoff, PRUNE_NOTIFICATIONS), PRUNE_NOTIFICATIONS)
        # revoked tokens are history too: tokens made per deploy would pile up
        tokens = await self._batches(lambda s: s.prune_revoked_tokens(cutoff, PRUNE_TOKENS), PRUNE_TOKENS)
        # on the store's clock (PostgreSQL's: the one the heartbeats are written with)
        unseen, now = max(self.config.retention_ms, NODE_UNSEEN_MIN_MS), self.clock.now_ms()
        nodes = await self._batches(lambda s: s.prune_nodes(unseen, now, PRUNE_NODES), PRUNE_NODES)
        await self.purge_tenants()
        await self.writer.run(lambda s: s.checkpoint())
        if total or jobs or dead or dead_notifications or gone or tokens or nodes:
            self.events.emit("retention.pruned", executions=total, jobs=jobs, deadLetters=dead,
                             deadNotifications=dead_notifications, deadNotificationsOfGoneJobs=gone,
                             tokens=tokens, nodes=nodes)

    async def _dead_letters(self, queue: Literal["executions", "notifications"], keep: int) -> int:
        """One pass over a dead-letter queue (``executions`` or ``notifications``), each job's
        loss said (``dlq.pruned``) once the pass is over, so nothing leaves it unannounced."""
        found: list[DeadLettersPruned] = []

        def page(cursor: str | None, store: Store) -> tuple[int, str | None]:  # on the store's thread
            prune = store.prune_dead_letters if queue == "executions" else store.prune_dead_notifications
            pruned, cursor = prune(keep, cursor, PRUNE_DEAD_LETTERS_READ, PRUNE_DEAD_LETTERS)
            found.extend(pruned)
            return sum(job.pruned for job in pruned), cursor

        total = await self._pass(page)
        for job in found:  # on the loop: the event log is not the store thread's
            self.events.emit("dlq.pruned", queue=queue, jobId=job.job_id, tenant=job.tenant, count=job.pruned,
                             kept=job.kept)
        return total

    async def _batches(self, batch: Callable[[Store], int], size: int) -> int:
        """Call ``batch(store)`` until it deletes fewer than ``size``, pausing between calls;
        the sum of what it deleted."""
        total = 0
        while True:
            deleted = await self.writer.run(batch)
            total += deleted
            if deleted < size:
                return total
            await asyncio.sleep(0.01)

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


def _purge(store: Store, name: str, drop_before_ms: int) -> tuple[int, bool]:
    return store.purge_tenant(name, PRUNE_TENANT_ROWS, drop_before_ms)
