"""One cronwheel node: the scheduler, the dispatcher, the worker pool and the service that the
HTTP API calls, over one store. ``cronwheel serve`` builds one of these (daemon/serve.py).

This module wires the node and runs its life: what it is made of (``__init__``), what it
does at start (recover what its previous incarnation left, start the loops) and at stop
(hand off, drain, stop). The service the API calls is in the parts ``Node`` derives from
(engine/parts.py says how they fit): jobs, executions, tenancy, beyond cron,
notifications, status.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from cronwheel.core.claimturns import ClaimTurns
from cronwheel.core.clock import Clock, StoreAlignedClock, SystemClock
from cronwheel.core.ids import incarnation_of
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.records import Completion, Outcome
from cronwheel.engine.cluster import ClusterMember
from cronwheel.engine.config import NodeConfig
from cronwheel.engine.disk import DiskWatch
from cronwheel.engine.dispatcher import Dispatcher
from cronwheel.engine.executions import ExecutionsMixin
from cronwheel.engine.fairturns import FairStoreRunner
from cronwheel.engine.longpoll import QueuePolls
from cronwheel.engine.nodestatus import NodeStatusMixin
from cronwheel.engine.notifications import NotificationDeliverer
from cronwheel.engine.notify_service import NotifyServiceMixin
from cronwheel.engine.retention import Retention
from cronwheel.engine.runner import StoreRunner
from cronwheel.engine.scheduler import Scheduler
from cronwheel.engine.service import Unavailable
from cronwheel.engine.statuscache import StatusCache
from cronwheel.engine.submission import Submitter
from cronwheel.engine.tenantrm import TenantRemovalMixin
from cronwheel.engine.walks import Walks
from cronwheel.obs.events import REPEAT_LOG_SEC, EventLog
from cronwheel.store.base import Store
from cronwheel.worker.orphans import kill_runs_left_behind
from cronwheel.worker.pool import WorkerPool
from cronwheel.worker.waiting import wait_event

__all__ = ["Node", "NodeConfig"]

#: cluster mode: look for other nodes' dispatchable executions while fewer are queued here
SHARED_REFILL_BELOW = 100


class Node(TenantRemovalMixin, ExecutionsMixin, NotifyServiceMixin, NodeStatusMixin):
    def __init__(
        self,
        config: NodeConfig,
        writer_store: Store,
        reader_store: Store,
        events: EventLog,
        clock: Clock | None = None,
        cluster_store: Store | None = None,
        completion_store: Store | None = None,
        claim_store: Store | None = None,
    ) -> None:
        """``cluster_store``: a third handle on a shared store turns cluster mode on (its own
        thread, so heartbeats and lease renewals never queue behind a long claim).
        ``completion_store`` and ``claim_store``: handles for committing results and claims on
        threads of their own, next to the writer's starts (PostgreSQL: its row locks let them
        commit at once, so a 5,000-job claim no longer holds up the starts queued behind it;
        SQLite has one writer, so there all three share it)."""
        self.config = config
        self.node_id = config.node_id
        self.clock: Clock = clock or SystemClock()
        #: in a cluster the wall clock is the database's (core.clock.StoreAlignedClock)
        self.aligned = StoreAlignedClock(self.clock) if cluster_store is not None else None
        if self.aligned is not None:
            self.clock = self.aligned
        self.events = events
        self.writer = FairStoreRunner(writer_store, "writer")  # writes take turns too: a flood of claims or heartbeats
        self.reader = FairStoreRunner(reader_store, "reader")  # tenants take turns (fairturns.py)
        self.completer = StoreRunner(completion_store, "completer") if completion_store is not None else None
        self.claimer = StoreRunner(claim_store, "claimer") if claim_store is not None else None
        self.started_monotonic = time.monotonic()
        self.stopping = False
        self._init_tenancy()  # tenant weights and running quotas feed the dispatcher's queue
        self.dispatcher = Dispatcher(
            self.clock,
            self.writer,
            self.reader,
            events,
            reserved_high_slots=config.reserved_high_slots,
            reaper_interval_ms=config.reaper_interval_ms,
            tenant_weight=self.tenant_weight,
            tenant_max_running=self.tenant_max_running,
            tenant_http_allow=self.tenant_http_allow,
            completer=self.completer,
        )
        self.dispatcher.neighbour_reserve = self.neighbour_slots
        self.dispatcher.tenant_may_high = self.tenant_may_high
        self.scheduler = Scheduler(
            self.clock,
            self.claimer or self.writer,
            self.reader,
            events,
            on_claimed=self.dispatcher.add,
            on_replaced=self._abort_all,
            horizon_ms=config.horizon_ms,
            claim_batch=config.claim_batch,
            claim_ahead_ms=config.claim_ahead_ms,
        )
        self.cluster = None
        if cluster_store is not None:
            self.cluster = ClusterMember(
                self.node_id, config.address, StoreRunner(cluster_store, "cluster"), self.clock, events,
                ttl_ms=config.bucket_lease_ms, on_change=self.scheduler.buckets_changed,
                refill=self._shared_refill, aligned=self.aligned,
            )
            self.scheduler.ownership = self.cluster.owned
            self.scheduler.buckets = []
        self.notifications = NotificationDeliverer(
            self.clock, self.writer, events, owner=self.node_id,
            buckets=lambda: self.scheduler.owned()[0], http_allow=self.tenant_http_allow, mail=config.mail,
        )
        self.dispatcher.on_outcomes = self.notifications.wake
        self.submitter = Submitter(self.writer, self.reader, self.clock, events, self.scheduler, config.submit_retry_ms)
        self.pool = None
        self._tasks: list[asyncio.Task[None]] = []
        self.polls = QueuePolls()  #: remote workers' long polls waiting per queue name
        #: turns across tenants for the claims of remote workers of no tenant (a shared pool)
        self.claim_turns = ClaimTurns(self.tenant_weight)
        self.dispatcher.on_queued = self.polls.wake
        self.disk = DiskWatch(config.data_dir, self.writer, events, config.disk_low_bytes)
        self.retention = Retention(self.writer, self.clock, events, config)
        self.retention.cancel_live = self._cancel_all_of
        self._cancelling = {}
        #: status parts last read from the store, with when: answered (stale) while it is down
        self.status_cache = StatusCache(self.clock)
        self.effect_log = OncePer(REPEAT_LOG_SEC)
        self.walks = Walks()

    # ---- lifecycle
    async def start(self) -> None:
        """Raises ``NodeIdInUse`` (before anything is started) when another live process
        heartbeats this node id on a cluster store."""
        if self.cluster is not None:
            await self.cluster.join()
        env = dict(self.config.worker_env)
        if self.config.api_url:
            env["CRONWHEEL_URL"] = self.config.api_url
        pool = self.pool = WorkerPool(
            self.config.data_dir / "worker.sock",
            self.dispatcher,
            n_workers=self.config.workers,
            slots=self.config.slots,
            env=env,
            log=self._worker_log,
            node_id=self.node_id,
            worker_cmd=self.config.worker_cmd,
        )
        self.submitter.start()
        await pool.start()
        self._tasks = self.dispatcher.start(pool)
        await self.load_tenants()
        await self._fail_previous_incarnation(pool)
        self.notifications.owner = f"{self.node_id}-{pool.incarnation}"
        await self.notifications.recover(f"{self.node_id}-")
        recovered = await self.dispatcher.refill()
        if recovered:
            self.events.emit("dispatch.recovered", executions=recovered)
        loop = asyncio.get_running_loop()
        if self.cluster is not None:
            self._tasks.append(loop.create_task(self.cluster.run(), name="cluster"))
            # the first leases, before the first claim
            await wait_event(self.cluster.first_turn, self.config.bucket_lease_ms / 1000)
        self._tasks.append(loop.create_task(self.scheduler.run(), name="scheduler"))
        self._tasks.append(loop.create_task(self.retention.run(), name="retention"))
        self._tasks.append(loop.create_task(self.disk.run(), name="disk"))
        self._tasks.extend(self.notifications.start())
        self._tasks.append(loop.create_task(self.tenant_refresh_loop(), name="tenants"))
        # status answers from its last read while the store is down: read it once now, so that
        # an outage before anyone asked gets that (stale) rather than 503; systemd's READY line
        # and metrics use the same read (NodeStatusMixin.store_counts)
        with contextlib.suppress(Unavailable):
            await self.status()

    def _worker_log(self, event: str, fields: dict[str, Any]) -> None:
        self.events.emit(event, **fields)

    async def _shared_refill(self) -> None:
        """Cluster mode: the ready queue is shared. When this node has room, take in the
        dispatchable executions of any bucket (another node's burst, or what a dead node had
        claimed); starting one is a conditional write, so two nodes never start it twice."""
        if self.pool is None or self.pool.free_slots() <= 0 or len(self.dispatcher.queue) >= SHARED_REFILL_BELOW:
            return
        added = await self.dispatcher.refill()
        if added:
            self.events.emit("dispatch.shared", executions=added)

    async def _fail_previous_incarnation(self, pool: WorkerPool) -> None:
        """Executions that this node's local workers held when it last stopped (or crashed)
        cannot still be running: those workers died with it (on a cluster store,
        ``ClusterMember.join`` made sure no other live process uses this node id). Fail them
        now (a retry, or the DLQ) instead of leaving them until their leases expire. Fenced by
        epoch as always."""
        candidates = await self.reader.run(lambda s: s.running_with_worker_prefix(f"{self.node_id}-"))
        orphans = [  # not those of a node whose id starts like ours: n-2 is not n's
            ex for ex in candidates
            if ex.worker_id is not None and incarnation_of(ex.worker_id, self.node_id) not in (None, pool.incarnation)
        ]
        if not orphans:
            return
        self.events.emit("node.recovered_leases", executions=len(orphans))
        # when the whole node was killed, its command runs outlived their workers: end them
        # before their retries start, so that no run goes on beside its retry
        runs = [(ex.worker_id, ex.execution_id) for ex in orphans if ex.worker_id is not None]
        for worker_id, groups in (await asyncio.to_thread(kill_runs_left_behind, runs)).items():
            self.events.emit("pool.worker_orphans_killed", worker=worker_id, groups=groups)
        await self.dispatcher.finish([
            Completion(ex.execution_id, ex.worker_id, ex.lease_epoch, Outcome.LOST,
                       error=f"worker {ex.worker_id} died with its node")
            for ex in orphans
        ])

    def hurry(self) -> None:
        """Cut a stop's grace short (a second SIGTERM): running executions are killed now."""
        if self.pool is not None:
            self.pool.hurry()

    async def stop(self) -> None:
        """Stop taking new work, let running executions finish up to the grace period, then kill
        what is left. Nothing acknowledged is lost: queued executions stay PENDING in the store.
        In a cluster, the buckets are handed off first, so other nodes schedule them at once."""
        self.stopping = True
        self.scheduler.stop()
        if self.cluster is not None:
            await self.cluster.leave()
        # the ticks claimed ahead are this node's promise for the next moments: keep it
        await self.dispatcher.start_due_before(self.clock.now_ms() + self.config.claim_ahead_ms)
        await self.dispatcher.stop_accepting()
        self.polls.close()  # remote workers' long polls answer at once
        self.submitter.stop_retrying()
        if self.pool is not None:
            await self.pool.stop(self.config.grace_sec)
        await self.dispatcher.stop()
        await self.notifications.stop()
        await self.submitter.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, *self.stop_cancelling(), return_exceptions=True)
        self.walks.close()
        self.writer.close()
        self.reader.close()
        for extra in (self.completer, self.claimer):
            if extra is not None:
                extra.close()
        if self.cluster is not None:
            self.cluster.runner.close()
