"""What every part of a node's service shares: the parts it is made of, and the store
access and job lookups they all start from.

``Node`` (engine/node.py) is assembled from parts, one idea each: tenancy, scheduling beyond
cron, notifications, jobs, executions, status. Each part is a mixin that derives from
``NodeParts``, so mypy checks it against the attributes declared here (precisely typed; set
once by ``Node.__init__``) instead of against ``Any``; a part that needs another part's
methods derives from that part (beyond-cron, notifications and executions from tenancy: a
backfill, a ping and a dead letter's replay are submissions; jobs from beyond-cron). Mixins rather than composition because the
parts together are the one object the API calls through the ``SchedulerService`` protocol
(engine/service.py): composition would forward each of its methods by hand. Pieces with a
state and a life of their own (submission retry, the remote workers' long polls, retention,
the status cache) are composed instead, as attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from cronwheel.core.claimturns import ClaimTurns
from cronwheel.core.clock import Clock, StoreAlignedClock
from cronwheel.core.limits import MAX_PAGE
from cronwheel.core.model import Job, JobStatus
from cronwheel.core.ratelimit import OncePer
from cronwheel.engine.cluster import ClusterMember
from cronwheel.engine.config import NodeConfig
from cronwheel.engine.disk import DiskWatch
from cronwheel.engine.dispatcher import Dispatcher
from cronwheel.engine.fairturns import FairStoreRunner
from cronwheel.engine.longpoll import QueuePolls
from cronwheel.engine.notifications import NotificationDeliverer
from cronwheel.engine.retention import Retention
from cronwheel.engine.runner import StoreRunner
from cronwheel.engine.scheduler import Scheduler
from cronwheel.engine.service import Conflict, NotFound, TenantDeleting, Unavailable
from cronwheel.engine.statuscache import StatusCache
from cronwheel.engine.submission import Submitter
from cronwheel.engine.walks import Walks
from cronwheel.obs.events import EventLog
from cronwheel.store.base import Store, StoreUnavailable, TenantIsDeleting
from cronwheel.store.calendars import forget_calendars
from cronwheel.worker.pool import WorkerPool

T = TypeVar("T")


class NodeParts:
    """The attributes every part may use; ``Node.__init__`` sets each of them."""

    config: NodeConfig
    node_id: str
    clock: Clock
    #: a cluster node's clock moved onto the database's (``clock``'s own, then); None: one node
    aligned: StoreAlignedClock | None
    events: EventLog
    writer: StoreRunner
    reader: FairStoreRunner
    completer: StoreRunner | None
    claimer: StoreRunner | None
    started_monotonic: float
    stopping: bool  #: ``stop`` has begun: no new work starts here; the running finish (status says so)
    dispatcher: Dispatcher
    scheduler: Scheduler
    cluster: ClusterMember | None
    notifications: NotificationDeliverer
    submitter: Submitter
    polls: QueuePolls
    claim_turns: ClaimTurns  #: turns across tenants for remote workers of no tenant
    disk: DiskWatch
    retention: Retention
    status_cache: StatusCache
    #: effect calls that recorded nothing (duplicate, fenced, too many): a line a minute per
    #: execution and verdict; a job calling in a loop wrote one a call, for nothing stored
    effect_log: OncePer
    pool: WorkerPool | None  #: from ``start`` on
    walks: Walks  #: walks over many ticks (``computed``), in threads of their own

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def forget_held_calendars(self, tenant: str, name: str | None = None, below: int | None = None) -> None:
        """Drop what each of this node's stores holds of a deleted tenant's calendars, or of one
        deleted or replaced (see ``forget_calendars``). Other nodes (and other engine processes)
        keep theirs until their caches' bounds push them out, never using them: every read
        compares the row's revision, and a deleted calendar has no row to read."""
        for runner in (self.writer, self.reader, self.completer, self.claimer):
            if runner is not None:
                forget_calendars(runner.store, tenant, name, below)

    # ---- the store, its unreachability a service error (503 + Retry-After)
    async def _read(self, fn: Callable[[Store], T]) -> T:
        try:
            return await self.reader.run(fn)
        except StoreUnavailable as exc:
            raise Unavailable(str(exc)) from exc

    async def _write(self, fn: Callable[[Store], T]) -> T:
        try:
            return await self.writer.run(fn)
        except StoreUnavailable as exc:
            raise Unavailable(str(exc)) from exc
        except TenantIsDeleting as exc:  # the write named a tenant being deleted, or its object
            raise TenantDeleting(f"tenant {exc.tenant!r} is being deleted: it takes no new work, setting "
                                 "or calendar (cronwheel tenant show says how far its deletion is)") from None

    async def computed(self, asker: str | None, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, a walk over many ticks, off the event loop, after ``asker``'s (a
        tenant; None: an admin) earlier walks (engine/walks.py)."""
        return await self.walks.run(asker, fn, *args)

    # ---- finding a job
    async def get_job(self, job_id: str, tenant: str | None = None) -> Job | None:
        return await self._read(lambda s: s.get_job(job_id, tenant))

    async def jobs_named(self, name: str, tenant: str | None = None, limit: int = MAX_PAGE) -> list[Job]:
        return await self._read(lambda s: s.find_jobs_by_name(name, tenant, limit))

    async def resolve_job(self, ref: str, tenant: str | None = None) -> Job:
        job = await self.get_job(ref, tenant)
        if job is not None:
            return job
        named = await self.jobs_named(ref, tenant)
        if not named:
            raise NotFound(f"no job with id or name {ref!r}")
        tenants = {j.tenant for j in named if j.status is not JobStatus.CANCELLED}
        if len(tenants) > 1:  # an admin asking for a name that several tenants use
            raise Conflict(f"name {ref!r} is used by several tenants: " + ", ".join(j.id for j in named if j.tenant in tenants))
        return named[0]  # the name's live holder, else the newest cancelled job of that name

    async def _no_such_tenant(self, name: str, hint: str = "cronwheel tenant ls lists them") -> NoReturn:
        """Why a write to tenant ``name`` changed nothing: it is being deleted
        (TenantDeleting), or there is no such tenant (NotFound, with ``hint``)."""
        found = await self._read(lambda s: s.tenant_with_jobs(name))
        if found is not None and found[0].deleting:
            raise TenantDeleting(f"tenant {name!r} is being deleted: it takes no change (cronwheel tenant show "
                                 f"{name} says how far its deletion is)")
        raise NotFound(f"no tenant {name!r} ({hint})")

    # ---- executions that will not finish here
    def _abort_all(self, execution_ids: list[str]) -> None:
        self.dispatcher.release(execution_ids)  # cancelled: no result will come for them
        if self.pool is None:
            return
        for xid in execution_ids:
            if self.pool.abort(xid, "cancelled"):
                self.events.emit("execution.aborted", executionId=xid, reason="cancelled")
