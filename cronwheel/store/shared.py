"""The store methods the two backends share, written once.

Many methods of the contract are thin: run one statement and read its rows, or call one
function of the backend's own modules inside one transaction. In the SQLite and PostgreSQL
stores they were twins that differed only in placeholders (``?1`` or ``%(name)s``) and in the
driver call, so they live here, one mixin per role, over what a backend gives them:

* ``_dialect``, a :class:`Dialect`: its ``queries`` module (the statements, with named
  parameters, ``:name`` in SQLite and ``%(name)s`` in PostgreSQL, bound from the same dict),
  its row reader, and the functions of its modules (``cluster``, ``leases``, ``triggers``)
  that really differ between the two, with PostgreSQL's database clock made explicit where
  it ignores the caller's ``now_ms`` (``postgres/dialect.py``);
* ``_rows(sql, args)`` and ``_read(fn)``, reads; ``_write(fsync=…)``, one write transaction;
* ``_guarded(fn)``, ``fn()`` with the backend's error translation (and, in PostgreSQL, its
  retry of a deadlock), which every method here goes through, as the backends' own do
  through their ``translated``.

Where the SQL, the locking or the batching really differ (creating and updating jobs,
claims, starts, tenants' writes), the methods stay in the backend's modules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar, Concatenate, ParamSpec, Protocol, TypeVar

from cronwheel.core.calendar import Calendar, CalendarDocument
from cronwheel.core.limits import MAX_PAGE
from cronwheel.core.model import Execution, Grant, Job
from cronwheel.core.records import (
    BucketLease,
    Completion,
    CompletionResult,
    HeartbeatResult,
    NodeInfo,
    StartRequest,
)
from cronwheel.core.tenants import ApiToken, Tenant, TenantDeletion
from cronwheel.store import settled, tenantgone
from cronwheel.store.calendars import calendar_row, parsed_of
from cronwheel.store.common import MAX_MS, expired_completions
from cronwheel.store.outbox.sql import Sql
from cronwheel.store.rowreader import RowReader

P = ParamSpec("P")
R = TypeVar("R")
B = TypeVar("B", bound="Backend")


class Statements(Protocol):
    """The statements of a backend's ``queries`` module that the shared methods run (the
    module itself is one), each bound from the dict the method builds."""

    LIST_TENANTS: str
    TENANT_WITH_JOBS: str  #: name
    LIST_TOKENS: str  #: tenant
    FIND_JOBS_BY_NAME: str  #: name, tenant, limit
    RUNNING_WITH_WORKER_PREFIX: str  #: prefix
    LIST_EXECUTIONS: str  #: job_id, before, limit, tenant
    EXPIRED_LEASES: str  #: ran_out_before, limit
    LIST_CALENDARS: str  #: tenant
    LIST_CALENDAR_DOCUMENTS: str  #: tenant, after_tenant, after_name, limit


@dataclass(frozen=True)
class Dialect:
    """One backend's statements and functions for the shared methods (a connection is its
    driver's: ``apsw.Connection`` or ``psycopg.Connection``)."""

    reader: RowReader
    outbox_sql: Callable[[Any], Sql]
    #: (conn, node_id, address, incarnation, ttl_ms, now_ms, take_from) → the row holding the id
    register_node: Callable[[Any, str, str, str, int, int, int | None], NodeInfo]
    #: (conn, ttl_ms, now_ms) → the nodes seen within ttl_ms
    live_nodes: Callable[[Any, int, int], list[NodeInfo]]
    #: (conn, unseen_ms, now_ms, limit) → how many rows of nodes unseen for unseen_ms went
    prune_nodes: Callable[[Any, int, int, int], int]
    release_buckets: Callable[[Any, str, Sequence[int]], list[int]]
    bucket_leases: Callable[[Any], list[BucketLease]]
    #: (conn, execution_id, lease_epoch, now_ms)
    heartbeat: Callable[[Any, str, str, int, int], HeartbeatResult]
    #: (conn, starts, now_ms): ``start_executions`` inside the caller's transaction
    start: Callable[[Any, Sequence[StartRequest], int], list[Grant]]
    #: (conn, completions, now_ms, rand01)
    complete: Callable[[Any, Sequence[Completion], int, Sequence[float] | None], list[CompletionResult]]
    #: (conn, job_id, ticks, now_ms, tenant)
    backfill: Callable[[Any, str, Sequence[int], int, str | None], list[Execution] | None]
    #: its ``queries`` module
    sql: Statements
    deregister_node: str  #: node, incarnation
    #: appended to a read of a tenant row that a concurrent creation of its jobs must wait for
    #: ("" where one writer at a time makes that so)
    tenant_lock: str = ""


def guarded(fn: Callable[Concatenate[B, P], R]) -> Callable[Concatenate[B, P], R]:
    """Run the method through the backend's ``_guarded`` (its driver errors translated)."""

    @functools.wraps(fn)
    def wrapper(self: B, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._guarded(lambda: fn(self, *args, **kwargs))
        return result

    return wrapper


class Backend:
    """What a backend gives the shared methods (its connection base implements these)."""

    _dialect: ClassVar[Dialect]

    def _guarded(self, fn: Callable[[], Any]) -> Any:
        raise NotImplementedError

    def _rows(self, sql: str, args: Mapping[str, Any] | None = None) -> list[Any]:
        raise NotImplementedError

    def _read(self, fn: Callable[[Any], R]) -> R:
        raise NotImplementedError

    def _write(self, fsync: bool = True) -> AbstractContextManager[Any]:
        raise NotImplementedError

    @guarded
    def _outbox_write(self, fn: Callable[[Sql], R]) -> R:
        with self._write() as conn:
            return fn(self._dialect.outbox_sql(conn))

    @guarded
    def _outbox_read(self, fn: Callable[[Sql], R]) -> R:
        return self._read(lambda conn: fn(self._dialect.outbox_sql(conn)))


class SharedJobs(Backend):
    @guarded
    def find_jobs_by_name(self, name: str, tenant: str | None = None, limit: int = MAX_PAGE) -> list[Job]:
        rows = self._rows(self._dialect.sql.FIND_JOBS_BY_NAME, {"name": name, "tenant": tenant, "limit": limit})
        return [self._dialect.reader.job(r) for r in rows]


class SharedScheduling(Backend):
    @guarded
    def backfill(self, job_id: str, ticks: Sequence[int], now_ms: int, tenant: str | None = None) -> list[Execution] | None:
        with self._write() as conn:
            tenantgone.refuse_deleting(self._dialect.outbox_sql(conn), "job", job_id)
            return self._dialect.backfill(conn, job_id, ticks, now_ms, tenant)

    @guarded
    def list_calendars(self, tenant: str | None = None) -> list[Calendar]:
        decode, held = self._dialect.reader.decode, parsed_of(self)
        return [calendar_row(r, decode, held) for r in self._rows(self._dialect.sql.LIST_CALENDARS, {"tenant": tenant})]

    @guarded
    def list_calendar_documents(
        self, tenant: str | None = None, after: tuple[str, str] | None = None, limit: int = MAX_PAGE,
    ) -> list[CalendarDocument]:
        after_tenant, after_name = after or ("", "")
        args = {"tenant": tenant, "after_tenant": after_tenant, "after_name": after_name, "limit": limit}
        rows = self._rows(self._dialect.sql.LIST_CALENDAR_DOCUMENTS, args)
        return [CalendarDocument(r[0], r[1], str(r[2]), int(r[3]), int(r[4])) for r in rows]


class SharedExecutions(Backend):
    """Heartbeats, completions and the reaper commit without an fsync where the backend can
    (SQLite: ``synchronous=NORMAL``; see ``store/base.py`` for why that is safe); starts
    always with one (an epoch is never handed out twice)."""

    @guarded
    def start_executions(self, starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
        if not starts:
            return []
        with self._write() as conn:
            return self._dialect.start(conn, starts, now_ms)

    @guarded
    def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int, now_ms: int) -> HeartbeatResult:
        with self._write(fsync=False) as conn:
            return self._dialect.heartbeat(conn, execution_id, worker_id, lease_epoch, now_ms)

    @guarded
    def complete_executions(
        self, completions: Sequence[Completion], now_ms: int, rand01: Sequence[float] | None = None
    ) -> list[CompletionResult]:
        if not completions:
            return []
        with self._write(fsync=False) as conn:
            return self._dialect.complete(conn, completions, now_ms, rand01)

    @guarded
    def expire_leases(self, now_ms: int, limit: int, ran_out_before_ms: int | None = None) -> list[CompletionResult]:
        if limit <= 0:
            return []
        ran_out_before = now_ms if ran_out_before_ms is None else min(now_ms, ran_out_before_ms)
        with self._write(fsync=False) as conn:
            rows: list[Any] = conn.execute(self._dialect.sql.EXPIRED_LEASES,
                                           {"ran_out_before": ran_out_before, "limit": limit}).fetchall()
            if not rows:
                return []
            comps, rands = expired_completions([(eid, epoch) for eid, epoch in rows])
            return self._dialect.complete(conn, comps, now_ms, rands)

    @guarded
    def running_with_worker_prefix(self, prefix: str) -> list[Execution]:
        rows = self._rows(self._dialect.sql.RUNNING_WITH_WORKER_PREFIX, {"prefix": prefix})
        return [self._dialect.reader.execution(r) for r in rows]

    @guarded
    def list_executions(
        self, job_id: str, limit: int = 50, before: int | None = None, tenant: str | None = None
    ) -> list[Execution]:
        if limit <= 0:
            return []
        args = {"job_id": job_id, "before": MAX_MS if before is None else before, "limit": limit, "tenant": tenant}
        return [self._dialect.reader.execution(r) for r in self._rows(self._dialect.sql.LIST_EXECUTIONS, args)]


class SharedTenants(Backend):
    @guarded
    def list_tenants(self) -> list[Tenant]:
        return [self._dialect.reader.tenant(r) for r in self._rows(self._dialect.sql.LIST_TENANTS)]

    @guarded
    def tenant_with_jobs(self, name: str) -> tuple[Tenant, int] | None:
        rows = self._rows(self._dialect.sql.TENANT_WITH_JOBS, {"name": name})
        return None if not rows else (self._dialect.reader.tenant(rows[0][:-1]), int(rows[0][-1]))

    def mark_tenant_deleting(self, name: str, now_ms: int, force: bool = False) -> TenantDeletion:
        # the tenant row is locked against a creation of its jobs racing this (where rows lock)
        lock = self._dialect.tenant_lock
        return self._outbox_write(lambda s: tenantgone.mark(s, name, now_ms, force, lock))

    def purge_tenant(self, name: str, max_rows: int, drop_before_ms: int) -> tuple[int, bool]:
        return self._outbox_write(lambda s: tenantgone.purge(s, name, max_rows, drop_before_ms))

    @guarded
    def list_tokens(self, tenant: str | None = None) -> list[ApiToken]:
        return [self._dialect.reader.token(r) for r in self._rows(self._dialect.sql.LIST_TOKENS, {"tenant": tenant})]


class SharedMembership(Backend):
    @guarded
    def register_node(
        self, node_id: str, address: str, incarnation: str, ttl_ms: int, now_ms: int, take_from: int | None = None
    ) -> NodeInfo:
        with self._write() as conn:
            return self._dialect.register_node(conn, node_id, address, incarnation, ttl_ms, now_ms, take_from)

    @guarded
    def deregister_node(self, node_id: str, incarnation: str) -> None:
        with self._write() as conn:
            conn.execute(self._dialect.deregister_node, {"node": node_id, "incarnation": incarnation})

    @guarded
    def live_nodes(self, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
        return self._read(lambda conn: self._dialect.live_nodes(conn, ttl_ms, now_ms))

    @guarded
    def prune_nodes(self, unseen_ms: int, now_ms: int, limit: int) -> int:
        with self._write() as conn:
            return self._dialect.prune_nodes(conn, unseen_ms, now_ms, limit)

    @guarded
    def release_buckets(self, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
        if not bucket_ids:
            return []
        with self._write() as conn:
            return self._dialect.release_buckets(conn, node_id, bucket_ids)

    @guarded
    def bucket_leases(self) -> list[BucketLease]:
        return self._read(self._dialect.bucket_leases)


class SharedHistory(Backend):
    def prune_settled_jobs(
        self, older_than_ms: int, after_job: str | None, jobs_per_call: int, max_rows: int
    ) -> tuple[int, str | None]:
        jobs = self._outbox_read(lambda s: settled.page(s, after_job, jobs_per_call))
        settled_ids = [job_id for job_id, status in jobs if status in settled.SETTLED]
        deleted = rows = 0
        for start in range(0, len(settled_ids), settled.CHECK_CHUNK):
            chunk = settled_ids[start : start + settled.CHECK_CHUNK]
            ready = self._outbox_read(functools.partial(settled.done_with, job_ids=chunk, older_than_ms=older_than_ms))
            if not ready:
                continue
            prune = functools.partial(settled.prune, job_ids=ready, older_than_ms=older_than_ms, max_rows=max_rows - rows)
            gone, used, stopped_at = self._outbox_write(prune)
            deleted, rows = deleted + gone, rows + used
            if stopped_at is not None:
                return deleted, stopped_at
        return deleted, jobs[-1][0] if len(jobs) == jobs_per_call else None


class SharedMethods(SharedJobs, SharedScheduling, SharedExecutions, SharedHistory, SharedTenants, SharedMembership):
    """Every shared method; a backend's store class lists it after its connection base."""
