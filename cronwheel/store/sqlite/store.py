"""The embedded store: one SQLite file through apsw, in WAL mode.

Durability: ``synchronous=FULL``, so every COMMIT (and so every method that writes) is
fsynced before it returns. Concurrency: any number of connections, in any number of
processes, may open the same file; every write transaction starts with ``BEGIN IMMEDIATE``
(it takes the write lock up front, so a read-then-write never has to be retried) and
waits up to ``busy_timeout`` for another writer, then raises ``StoreUnavailable``.
The schema is migrated on open (``migrate.py``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import apsw

from cronwheel.core import schedule
from cronwheel.core.calendar import Calendar
from cronwheel.core.chains import payload_with_context
from cronwheel.core.ids import bucket_of, execution_id, stable_hash
from cronwheel.core.model import (
    DEFAULT_LEASE_SEC,
    ExecOrigin,
    ExecStatus,
    Execution,
    Grant,
    Job,
    JobSpec,
    JobStatus,
    OverlapPolicy,
)
from cronwheel.core.notify import rules_to_json
from cronwheel.core.records import (
    BucketGrants,
    BucketLease,
    ClaimResult,
    Completion,
    CompletionResult,
    CreateOutcome,
    CreateResult,
    EffectVerdict,
    Fence,
    HeartbeatResult,
    NewJob,
    NodeInfo,
    Outcome,
    StartRequest,
    UpdateOutcome,
    UpdateResult,
)
from cronwheel.core.tenants import TENANT_SETTINGS, TENANTLESS_ROLES, ApiToken, Tenant
from cronwheel.core.words import counted
from cronwheel.store.base import Store, StoreError, StoreUnavailable
from cronwheel.store.calendars import calendar_row, calendar_spec_json
from cronwheel.store.common import (
    ORIGIN,
    PRIORITY,
    SUPERSEDED,
    JsonMemo,
    dumps,
    process_text,
    retry_to_json,
    short,
)
from cronwheel.store.notifying import NotificationMethods
from cronwheel.store.outbox import Sql, after_create, after_starts, after_update
from cronwheel.store.sqlite import claim as claiming
from cronwheel.store.sqlite import cluster, jobstate, leases, triggers
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.migrate import apply_migrations, current_version
from cronwheel.store.sqlite.rows import (
    execution_from_row,
    job_from_row,
    outbox_sql,
    tenant_from_row,
    token_from_row,
)

DEFAULT_BUSY_TIMEOUT_MS = 10_000
#: the writer's page cache holds the jobs table and its due index of a million jobs, which
#: every claim batch rewrites (see queries.PRAGMAS); readers get less (daemon/serve.py)
DEFAULT_CACHE_MIB = 256
_MAX_MS = 2**63 - 1
_DEFAULT_LEASE_MS = round(DEFAULT_LEASE_SEC * 1000)
#: apsw errors that mean "not now" (locked, I/O, disk full), not "never"
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    apsw.BusyError,
    apsw.LockedError,
    apsw.IOError,
    apsw.FullError,
    apsw.CantOpenError,
    apsw.ProtocolError,
)

P = ParamSpec("P")
R = TypeVar("R")


def _translated(fn: Callable[Concatenate[SqliteStore, P], R]) -> Callable[Concatenate[SqliteStore, P], R]:
    """apsw errors never leave the store: they become StoreUnavailable or StoreError."""

    @functools.wraps(fn)
    def wrapper(self: SqliteStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(self, *args, **kwargs)
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(f"sqlite store {self.path} unavailable: {exc}") from exc
        except apsw.ConnectionClosedError as exc:
            raise StoreError("the store is closed") from exc
        except apsw.Error as exc:
            raise StoreError(f"sqlite store {self.path}: {exc}") from exc

    return wrapper


@functools.lru_cache(maxsize=256)
def _json_list(values: Sequence[str]) -> str | None:
    """A JSON array column; an empty list is stored as NULL (the claim skips NULL cheaply)."""
    return dumps(list(values)) if values else None


def _buckets_json(buckets: tuple[int, ...]) -> str:
    return json.dumps([int(b) for b in buckets])


def _enable_wal(conn: apsw.Connection, busy_timeout_ms: int) -> str:
    """``PRAGMA journal_mode = WAL``, retried: switching a fresh file to WAL needs an exclusive
    lock, and SQLite answers BUSY at once (no busy handler) while another connection opening
    the same file holds a shared lock. Returns the journal mode in force."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.001
    while True:
        try:
            row: Any = conn.execute("PRAGMA journal_mode = WAL").fetchall()[0]
            return str(row[0])
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def _count(conn: apsw.Connection, sql: str, args: tuple[Any, ...] = ()) -> int:
    row: Any = conn.execute(sql, args).fetchall()[0]
    return int(row[0])


#: the WAL policy (see ``SqliteStore.maintain_log``)
WAL_PAGES = 10_000
WAL_PAGES_LOW_DISK = 1_000
WAL_TARGET_BYTES = 16 * 1024 * 1024
WAL_TARGET_LOW_DISK_BYTES = 4 * 1024 * 1024


def _private_files(path: Path) -> None:
    """The store, its WAL and shared-memory file readable by the daemon's user only (0600):
    the database file is created 0600 before SQLite opens it (SQLite gives its -wal and -shm
    the database's mode), and a store from an older version is tightened."""
    if str(path) == ":memory:" or str(path).startswith("file:"):
        return
    with contextlib.suppress(FileExistsError, FileNotFoundError, PermissionError):  # apsw says why
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for name in (str(path), f"{path}-wal", f"{path}-shm"):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, 0o600)


class SqliteStore(NotificationMethods, Store):
    """``Store`` on one SQLite file. Open it with :meth:`open`."""

    def __init__(self, conn: apsw.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._closed = False
        self._known_tenants: set[str] = set()  #: tenants whose row this handle has seen committed

    @classmethod
    def open(
        cls, path: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS, cache_mib: int = DEFAULT_CACHE_MIB
    ) -> SqliteStore:
        """Open (creating if needed) and migrate the store at ``path``. ``cache_mib`` caps this
        connection's page cache (allocated only as pages are read)."""
        path = Path(path)
        conn: apsw.Connection | None = None
        try:
            _private_files(path)
            conn = apsw.Connection(
                str(path),
                flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE,
                statementcachesize=256,
            )
            conn.set_busy_timeout(busy_timeout_ms)
            mode = _enable_wal(conn, busy_timeout_ms)
            if mode.lower() != "wal":
                conn.close()
                raise StoreError(f"{path}: cannot use WAL mode (journal_mode is {mode})")
            conn.execute(q.PRAGMAS)
            conn.execute(f"PRAGMA cache_size = {-1024 * max(1, int(cache_mib)):d}")
            apply_migrations(conn, time.time_ns() // 1_000_000)
        except apsw.CantOpenError as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        except _UNAVAILABLE as exc:
            if conn is not None:
                conn.close()
            raise StoreUnavailable(f"sqlite store {path} unavailable: {exc}") from exc
        except (apsw.Error, RuntimeError) as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        return cls(conn, path)

    @contextlib.contextmanager
    def _write(self, fsync: bool = True) -> Iterator[apsw.Connection]:
        """One write transaction: BEGIN IMMEDIATE … COMMIT, else ROLLBACK.

        ``fsync=True`` (the default) commits with ``synchronous=FULL``: what it wrote survives
        power loss. ``fsync=False`` commits with ``synchronous=NORMAL`` (WAL): it survives any
        crash of the process, and a power cut may lose it (see Store: completions and
        heartbeats only; the next FULL commit makes it durable too)."""
        conn = self._conn
        if not fsync:
            conn.execute("PRAGMA synchronous = NORMAL")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(apsw.Error):
                        conn.execute("ROLLBACK")
                raise
        finally:
            if not fsync:
                conn.execute("PRAGMA synchronous = FULL")

    @_translated
    def _outbox_write(self, fn: Callable[[Sql], R]) -> R:
        with self._write() as conn:
            return fn(outbox_sql(conn))

    @_translated
    def _outbox_read(self, fn: Callable[[Sql], R]) -> R:
        return fn(outbox_sql(self._conn))

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._conn.close()

    @_translated
    def schema_version(self) -> int:
        return current_version(self._conn)

    def meta(self) -> dict[str, Any]:
        return {
            "kind": "sqlite",
            "path": str(self.path),
            "version": None if self._closed else self.schema_version(),
            "sqlite": apsw.sqlite_lib_version(),
            "journalMode": "wal",
            "synchronous": "full",
        }

    # ------------------------------------------------------------ jobs

    @_translated
    def create_jobs(self, jobs: Sequence[NewJob], now_ms: int) -> list[CreateResult]:
        if not jobs:
            return []
        results: list[CreateResult] = []
        job_rows: list[tuple[Any, ...]] = []
        def_rows: list[tuple[Any, ...]] = []
        key_rows: list[tuple[Any, ...]] = []
        watched: list[tuple[str, int | None]] = []  # jobs with rules or a window: (id, window ms)
        tenants: set[str] = set()
        batch_keys: dict[tuple[str, str], tuple[str | None, str, int | None]] = {}
        registered: dict[str, int] = {}  # tenant -> ACTIVE/PAUSED jobs committed before this batch
        created: dict[str, int] = {}  # tenant -> jobs created in this batch so far
        batch_names: dict[tuple[str, str], str] = {}  # (tenant, name) -> job id, held in this batch
        name_rows: list[tuple[str, str, str]] = []
        with self._write() as conn:
            for nj in jobs:
                spec = nj.spec
                tenant = spec.tenant
                k = None
                if nj.idempotency_key is not None:
                    k = (tenant, nj.idempotency_key)
                    seen = batch_keys.get(k)
                    if seen is None:
                        row = conn.execute(q.SELECT_IDEMPOTENCY_KEY, k).fetchone()
                        seen = None if row is None else (row[0], row[1], row[2])
                    if seen is not None:
                        outcome = CreateOutcome.REPLAYED if seen[0] == nj.request_hash else CreateOutcome.CONFLICT
                        results.append(CreateResult(outcome, seen[1], seen[2]))
                        continue
                name_key = None if spec.name is None else (tenant, spec.name)
                if name_key is not None:
                    holder = batch_names.get(name_key) or self._name_holder(conn, tenant, spec.name)
                    if holder is not None:
                        results.append(CreateResult(CreateOutcome.NAME_TAKEN, holder, None))
                        continue
                if nj.max_jobs is not None:
                    if tenant not in registered:
                        registered[tenant] = _count(conn, q.COUNT_REGISTERED_JOBS, (tenant,))
                    if registered[tenant] + created.get(tenant, 0) >= nj.max_jobs:
                        results.append(CreateResult(CreateOutcome.QUOTA_EXCEEDED, None, None))
                        continue
                created[tenant] = created.get(tenant, 0) + 1
                if name_key is not None:
                    batch_names[name_key] = nj.job_id
                    name_rows.append((tenant, spec.name, nj.job_id))
                if k is not None:
                    batch_keys[k] = (nj.request_hash, nj.job_id, nj.next_run_at)
                    key_rows.append((tenant, nj.idempotency_key, nj.request_hash, nj.job_id, nj.next_run_at, now_ms))
                tenants.add(tenant)
                retry = spec.retry
                # StrEnum/IntEnum members bind as their text/integer values
                job_rows.append((
                    nj.job_id, bucket_of(nj.job_id), "ACTIVE", nj.next_run_at, spec.schedule,
                    spec.timezone, spec.misfire, spec.overlap, spec.jitter_sec, tenant,
                    spec.priority, retry.max_attempts, spec.target.get("queue"),
                    _json_list(spec.calendars), spec.active_until, spec.misfire_grace_sec,
                ))  # fmt: skip
                def_rows.append((
                    nj.job_id, spec.name, spec.run_at, dumps(spec.target), dumps(spec.payload),
                    retry_to_json(retry), float(spec.timeout_sec), float(spec.lease_sec), now_ms, now_ms,
                    process_text(spec), spec.active_from, _json_list(spec.on_success), _json_list(spec.on_failure),
                    spec.managed_by,
                    dumps(rules_to_json(spec.notify)), spec.expect_success_within_ms,
                ))  # fmt: skip
                if spec.notify or spec.expect_success_within_ms is not None:
                    watched.append((nj.job_id, spec.expect_success_within_ms))
                results.append(CreateResult(CreateOutcome.CREATED, nj.job_id, nj.next_run_at))
            new_tenants = sorted(tenants - self._known_tenants)
            if new_tenants:
                conn.executemany(q.INSERT_TENANT, [(t, now_ms) for t in new_tenants])
            if job_rows:
                try:
                    conn.executemany(q.INSERT_JOB, job_rows)
                except apsw.ConstraintError as exc:
                    raise StoreError(f"cannot create jobs (duplicate job id?): {exc}") from exc
                conn.executemany(q.INSERT_JOB_DEFINITION, def_rows)
                after_create(outbox_sql(conn), watched, now_ms)
            if name_rows:
                conn.executemany(q.INSERT_JOB_NAME, name_rows)
            if key_rows:
                conn.executemany(q.INSERT_IDEMPOTENCY_KEY, key_rows)
        self._known_tenants.update(new_tenants)  # tenant rows are never deleted
        return results

    @_translated
    def get_job(self, job_id: str, tenant: str | None = None) -> Job | None:
        row = self._conn.execute(q.GET_JOB, (job_id, tenant)).fetchone()
        return None if row is None else job_from_row(row)

    @staticmethod
    def _name_holder(conn: apsw.Connection, tenant: str, name: str) -> str | None:
        row = conn.execute(q.NAME_HOLDER, (tenant, name)).fetchone()
        return None if row is None else str(row[0])

    @_translated
    def update_job(
        self,
        job_id: str,
        spec: JobSpec,
        next_run_at: int | None,
        reschedule: bool,
        now_ms: int,
        tenant: str | None = None,
    ) -> UpdateResult:
        with self._write() as conn:
            row = conn.execute(q.GET_JOB, (job_id, tenant)).fetchone()
            if row is None:
                return UpdateResult(UpdateOutcome.NOT_FOUND)
            job = job_from_row(row)
            if job.status is JobStatus.CANCELLED:
                return UpdateResult(UpdateOutcome.CANCELLED, job)
            if spec.name != job.spec.name:
                if spec.name is not None:
                    holder = self._name_holder(conn, job.tenant, spec.name)
                    if holder is not None and holder != job_id:
                        return UpdateResult(UpdateOutcome.NAME_TAKEN, job, holder)
                conn.execute(q.RELEASE_JOB_NAME, (job_id,))
                if spec.name is not None:
                    conn.execute(q.INSERT_JOB_NAME, (job.tenant, spec.name, job_id))
            retry = spec.retry
            conn.execute(q.UPDATE_JOB, (
                job_id, spec.schedule, spec.timezone, spec.misfire, spec.overlap, spec.jitter_sec,
                spec.priority, retry.max_attempts, spec.target.get("queue"), next_run_at, reschedule,
                _json_list(spec.calendars), spec.active_until, spec.misfire_grace_sec,
            ))  # fmt: skip
            conn.execute(q.UPDATE_JOB_DEFINITION, (
                job_id, spec.name, spec.run_at, dumps(spec.target), dumps(spec.payload),
                retry_to_json(retry), float(spec.timeout_sec), float(spec.lease_sec), now_ms, process_text(spec),
                spec.active_from, spec.managed_by,
            ))  # fmt: skip
            if (spec.on_success, spec.on_failure) != (job.spec.on_success, job.spec.on_failure):
                # the cycle check of a chain change, in this transaction (ChainError: nothing changes)
                triggers.set_chain(conn, job_id, spec.on_success, spec.on_failure, now_ms, tenant)
            after_update(outbox_sql(conn), job_id, job.spec, spec, now_ms)
            superseded: list[str] = []
            if reschedule:
                ahead = conn.execute(q.CLAIMED_AHEAD_OF_JOB, (job_id, job_id + ":", job_id + ";", now_ms))
                superseded = sorted(str(r[0]) for r in ahead)
                conn.executemany(q.CANCEL_EXECUTION, [(eid, now_ms, SUPERSEDED) for eid in superseded])
            updated = job_from_row(conn.execute(q.GET_JOB, (job_id, None)).fetchone())
        return UpdateResult(UpdateOutcome.UPDATED, updated, superseded=superseded)

    @_translated
    def find_jobs_by_name(self, name: str, tenant: str | None = None) -> list[Job]:
        return [job_from_row(r) for r in self._conn.execute(q.FIND_JOBS_BY_NAME, (name, tenant))]

    @_translated
    def list_jobs(
        self,
        tenant: str | None = None,
        status: JobStatus | None = None,
        limit: int = 100,
        after_id: str | None = None,
    ) -> list[Job]:
        st = None if status is None else status.value
        args: tuple[Any, ...] = (after_id or "", st, max(0, limit))
        sql = q.LIST_JOBS if tenant is None else q.LIST_JOBS_OF_TENANT
        if tenant is not None:
            args += (tenant,)
        return [job_from_row(r) for r in self._conn.execute(sql, args)]

    @_translated
    def count_jobs(self, tenant: str | None = None, status: JobStatus | None = None) -> int:
        terms: list[str] = []
        args: list[str] = []
        if tenant is not None:
            terms.append("tenant = ?")
            args.append(tenant)
        if status is not None:
            terms.append("status = ?")
            args.append(JobStatus(status).value)
        sql = q.COUNT_JOBS.format(where=" AND ".join(terms) or "1")
        return _count(self._conn, sql, tuple(args))

    @_translated
    def set_job_status(
        self,
        job_id: str,
        expect: Sequence[JobStatus],
        status: JobStatus,
        now_ms: int,
        next_run_at: int | None = None,
        tenant: str | None = None,
    ) -> Job | None:
        expected = json.dumps([JobStatus(s).value for s in expect])
        with self._write() as conn:
            conn.execute(q.SET_JOB_STATUS, (job_id, status.value, next_run_at, expected, tenant))
            if conn.changes() == 0:
                return None
            conn.execute(q.TOUCH_JOB_DEFINITION, (job_id, now_ms))
            row = conn.execute(q.GET_JOB, (job_id, None)).fetchone()
        return job_from_row(row)

    @_translated
    def cancel_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> tuple[Job, list[str]] | None:
        with self._write() as conn:
            row = conn.execute(q.GET_JOB, (job_id, tenant)).fetchone()
            if row is None:
                return None
            job = job_from_row(row)
            if job.status is JobStatus.CANCELLED:
                return job, []
            conn.execute(q.CANCEL_JOB, (job_id,))
            conn.execute(q.RELEASE_JOB_NAME, (job_id,))
            conn.execute(q.TOUCH_JOB_DEFINITION, (job_id, now_ms))
            live: list[Any] = conn.execute(q.LIVE_EXECUTIONS_OF_JOB, (job_id, job_id + ":", job_id + ";")).fetchall()
            conn.executemany(q.CANCEL_EXECUTION, [(eid, now_ms, "job cancelled") for eid, _ in live])
        job.status = JobStatus.CANCELLED
        job.next_run_at = None
        job.updated_at = now_ms
        return job, sorted(eid for eid, status in live if status == "RUNNING")

    # ------------------------------------------------------------ scheduling

    @_translated
    def due_jobs(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[str, int]]:
        if not buckets or limit <= 0:
            return []
        rows = self._conn.execute(q.DUE_JOBS, (_buckets_json(tuple(buckets)), until_ms, limit))
        return [(r[0], r[1]) for r in rows]

    @_translated
    def next_due_at(self, buckets: Sequence[int]) -> int | None:
        if not buckets:
            return None
        row = self._conn.execute(q.NEXT_DUE_AT, (_buckets_json(tuple(buckets)),)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    @_translated
    def claim_due(
        self, buckets: Sequence[int], now_ms: int, limit: int, ahead_ms: int = 0, fence: Fence | None = None
    ) -> ClaimResult:
        result = ClaimResult()
        if not buckets or limit <= 0:
            return result
        with self._write() as conn:
            owned = list(buckets) if fence is None else cluster.fenced_buckets(conn, buckets, fence, now_ms)
            if owned:
                claiming.claim(conn, _buckets_json(tuple(owned)), now_ms, limit, result, ahead_ms)
        return result

    # ------------------------------------------------------------ cluster membership

    @_translated
    def register_node(self, node_id: str, address: str, now_ms: int) -> int:
        with self._write() as conn:
            return cluster.register(conn, node_id, address, now_ms)

    @_translated
    def deregister_node(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM cluster_nodes WHERE node_id = ?", (node_id,))

    @_translated
    def live_nodes(self, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
        return cluster.live(self._conn, ttl_ms, now_ms)

    @_translated
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        with self._write() as conn:
            return cluster.acquire(conn, node_id, bucket_ids, ttl_ms, now_ms)

    @_translated
    def release_buckets(self, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
        if not bucket_ids:
            return []
        with self._write() as conn:
            return cluster.release(conn, node_id, bucket_ids)

    @_translated
    def bucket_leases(self) -> list[BucketLease]:
        return cluster.leases(self._conn)

    @_translated
    def trigger_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            row = conn.execute(q.TRIGGER_SELECT_JOB, (job_id, tenant)).fetchone()
            if row is None or row[0] == JobStatus.CANCELLED.value:
                return None
            _, job_tenant, prio, max_att, overlap, queue = row
            tick = now_ms
            page = 256
            while True:  # the first millisecond from now on that has no execution yet
                taken = [r[0] for r in conn.execute(q.TAKEN_TICKS_FROM, (job_id, tick, page))]
                for t in taken:
                    if t != tick:
                        break
                    tick += 1
                else:
                    if len(taken) == page:
                        continue
                break
            guard = 0 if overlap == OverlapPolicy.ALLOW.value else 1
            eid = execution_id(job_id, tick)
            conn.execute(q.INSERT_EXECUTION, (
                eid, job_id, job_tenant, prio, tick, "PENDING", now_ms, now_ms, None, "triggered", max_att, guard,
                ExecOrigin.MANUAL.value,
            ))  # fmt: skip
            if queue is not None:
                conn.execute(q.SET_EXECUTION_QUEUE, (eid, queue))
            jobstate.reopen(conn, job_id)
        return Execution(eid, job_id, job_tenant, PRIORITY[prio], tick, ExecStatus.PENDING,
                         available_at=now_ms, created_at=now_ms, reason="triggered", max_attempts=max_att,
                         queue=queue, origin=ExecOrigin.MANUAL)

    # ------------------------------------------------------------ calendars, backfill, chains

    @_translated
    def put_calendar(self, calendar: Calendar, now_ms: int) -> Calendar:
        with self._write() as conn:
            row = conn.execute(q.UPSERT_CALENDAR, (calendar.tenant, calendar.name, calendar_spec_json(calendar),
                                                   now_ms)).fetchone()  # fmt: skip
        return calendar_row(row, json.loads)

    @_translated
    def get_calendar(self, tenant: str, name: str) -> Calendar | None:
        row = self._conn.execute(q.GET_CALENDAR, (tenant, name)).fetchone()
        return None if row is None else calendar_row(row, json.loads)

    @_translated
    def list_calendars(self, tenant: str | None = None) -> list[Calendar]:
        return [calendar_row(r, json.loads) for r in self._conn.execute(q.LIST_CALENDARS, (tenant,))]

    @_translated
    def delete_calendar(self, tenant: str, name: str) -> tuple[bool, list[str]]:
        with self._write() as conn:
            users = [r[0] for r in conn.execute(q.CALENDAR_USERS, (tenant, name))]
            if users:
                return False, users
            before = conn.total_changes()
            conn.execute(q.DELETE_CALENDAR, (tenant, name))
            return conn.total_changes() > before, []

    @_translated
    def backfill(self, job_id: str, ticks: Sequence[int], now_ms: int, tenant: str | None = None) -> list[Execution] | None:
        with self._write() as conn:
            return triggers.backfill(conn, job_id, ticks, now_ms, tenant)

    @_translated
    def cancel_backfill(self, job_id: str, now_ms: int, tenant: str | None = None) -> int | None:
        with self._write() as conn:
            if conn.execute(q.TRIGGER_SELECT_JOB, (job_id, tenant)).fetchone() is None:
                return None
            before = conn.total_changes()
            conn.execute(q.CANCEL_BACKFILL, (job_id, now_ms, tenant))
            return conn.total_changes() - before

    @_translated
    def set_job_chain(
        self, job_id: str, on_success: Sequence[str], on_failure: Sequence[str], now_ms: int,
        tenant: str | None = None,
    ) -> Job | None:
        with self._write() as conn:
            if not triggers.set_chain(conn, job_id, on_success, on_failure, now_ms, tenant):
                return None
        return self.get_job(job_id, tenant)

    # ------------------------------------------------------------ the ready queue

    @_translated
    def ready_executions(self, now_ms: int, limit: int, after: tuple[int, str] | None = None) -> list[Execution]:
        if limit <= 0:
            return []
        after_at, after_id = after if after is not None else (-_MAX_MS, "")
        rows = self._conn.execute(q.READY_EXECUTIONS, (now_ms, after_at, after_id, limit))
        return [execution_from_row(r) for r in rows]

    @_translated
    def start_executions(self, starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
        if not starts:
            return []
        workers: dict[str, str] = {}
        for st in starts:
            workers.setdefault(st.execution_id, st.worker_id)
        with self._write() as conn:
            return self._start_in(conn, workers, now_ms)

    @_translated
    def claim_for_worker(
        self, queues: Sequence[str], worker_id: str, max: int, now_ms: int, tenant: str | None = None
    ) -> list[Grant]:
        if max <= 0 or not queues:
            return []
        with self._write() as conn:  # BEGIN IMMEDIATE: claimers on one file are serialised
            ids = [r[0] for r in conn.execute(q.QUEUE_READY, (dumps(list(queues)), now_ms, tenant, max))]
            if not ids:
                return []
            grants = self._start_in(conn, dict.fromkeys(ids, worker_id), now_ms)
        return grants

    def _start_in(self, conn: apsw.Connection, workers: dict[str, str], now_ms: int) -> list[Grant]:
        """start_executions' work inside the caller's write transaction."""
        pairs = dumps([[eid, wid] for eid, wid in workers.items()])
        rows: list[Any] = conn.execute(q.START_EXECUTIONS, (pairs, now_ms, _DEFAULT_LEASE_MS)).fetchall()
        by_id = {r[0]: r for r in rows}
        grants: list[Grant] = []
        parsed = JsonMemo()
        for eid in workers:  # in the order asked
            r = by_id.get(eid)
            if r is None:
                continue
            lease_sec, timeout_sec, target, payload, process = r[10:15]
            if target is None:  # no definition row (cannot happen with the foreign keys on)
                lease_sec, timeout_sec, target, payload = DEFAULT_LEASE_SEC, 0.0, "{}", "null"
            context = None if r[15] is None else json.loads(r[15])
            grants.append(Grant(r[0], r[1], r[2], PRIORITY[r[3]], r[4], r[5], r[6], r[7],
                                lease_sec, timeout_sec, parsed(target),
                                payload_with_context(parsed(payload), context), r[8],
                                origin=ORIGIN[r[9]], process=None if process is None else parsed(process),
                                context=context))  # fmt: skip
        after_starts(outbox_sql(conn), [(g.execution_id, g.job_id, g.attempt, g.scheduled_at) for g in grants], now_ms)
        return grants

    @_translated
    def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int, now_ms: int) -> HeartbeatResult:
        with self._write(fsync=False) as conn:
            return leases.heartbeat(conn, execution_id, lease_epoch, now_ms)

    @_translated
    def heartbeat_many(self, beats: Sequence[tuple[str, str, int]], now_ms: int) -> list[HeartbeatResult]:
        if not beats:
            return []
        with self._write(fsync=False) as conn:
            return [leases.heartbeat(conn, eid, epoch, now_ms) for eid, _worker, epoch in beats]

    @_translated
    def complete_executions(
        self, completions: Sequence[Completion], now_ms: int, rand01: Sequence[float] | None = None
    ) -> list[CompletionResult]:
        if not completions:
            return []
        with self._write(fsync=False) as conn:
            return leases.complete(conn, completions, now_ms, rand01)

    @_translated
    def expire_leases(self, now_ms: int, limit: int) -> list[CompletionResult]:
        if limit <= 0:
            return []
        with self._write(fsync=False) as conn:
            rows: list[Any] = conn.execute(q.EXPIRED_LEASES, (now_ms, limit)).fetchall()
            if not rows:
                return []
            comps = [Completion(eid, None, epoch, Outcome.LOST, error="lease expired") for eid, epoch in rows]
            # A deterministic draw per lease spreads the retries of a crashed worker's executions.
            rands = [stable_hash(f"{eid}:{epoch}") / 2**64 for eid, epoch in rows]
            return leases.complete(conn, comps, now_ms, rands)

    @_translated
    def running_with_worker_prefix(self, prefix: str) -> list[Execution]:
        return [execution_from_row(r) for r in self._conn.execute(q.RUNNING_WITH_WORKER_PREFIX, (prefix,))]

    # ------------------------------------------------------------ executions: reads

    @_translated
    def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None:
        row = self._conn.execute(q.GET_EXECUTION, (execution_id, tenant)).fetchone()
        return None if row is None else execution_from_row(row)

    @_translated
    def list_executions(
        self, job_id: str, limit: int = 50, before: int | None = None, tenant: str | None = None
    ) -> list[Execution]:
        if limit <= 0:
            return []
        args = (job_id, _MAX_MS if before is None else before, limit, tenant)
        return [execution_from_row(r) for r in self._conn.execute(q.LIST_EXECUTIONS, args)]

    @_translated
    def last_runs(self, job_ids: Sequence[str], tenant: str | None = None) -> dict[str, Execution]:
        if not job_ids:
            return {}
        rows = self._conn.execute(q.LAST_RUNS, (dumps(list(job_ids)), tenant))
        return {ex.job_id: ex for ex in map(execution_from_row, rows)}

    @_translated
    def count_executions(self, status: ExecStatus | None = None, tenant: str | None = None) -> int:
        if status is None:
            where = "1"
        else:
            value = ExecStatus(status).value
            where = q.COUNT_EXECUTIONS_WHERE.get(value, f"status = '{value}'")
        sql = q.COUNT_EXECUTIONS.format(where=where)
        return _count(self._conn, sql, (tenant,))

    # ------------------------------------------------------------ side effects

    @_translated
    def record_effect(self, execution_id: str, lease_epoch: int, key: str, now_ms: int) -> EffectVerdict:
        with self._write() as conn:
            row = conn.execute(q.EXECUTION_LEASE, (execution_id,)).fetchone()
            if row is None:
                return EffectVerdict.NOT_FOUND
            if conn.execute(q.EFFECT_EXISTS, (execution_id, key)).fetchone() is not None:
                return EffectVerdict.DUPLICATE
            if row[0] != "RUNNING" or row[1] != lease_epoch:
                return EffectVerdict.FENCED
            conn.execute(q.INSERT_EFFECT, (execution_id, key, lease_epoch, now_ms))
        return EffectVerdict.RECORDED

    # ------------------------------------------------------------ dead-letter queue

    @_translated
    def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]:
        if limit <= 0:
            return []
        rows = self._conn.execute(q.LIST_DEAD, (after or "", tenant, limit))
        return [execution_from_row(r) for r in rows]

    @_translated
    def replay_dead(self, execution_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            row = conn.execute(q.GET_DEAD, (execution_id, tenant)).fetchone()
            if row is None:
                return None
            dead = execution_from_row(row)
            history = f"replayed at {schedule.format_instant(now_ms)} after {counted(dead.attempt, 'attempt')}"
            if dead.finished_at is not None:
                history += f", dead since {schedule.format_instant(dead.finished_at)}"
            if dead.exit_code is not None:
                history += f", exit code {dead.exit_code}"
            if dead.error:
                history += f", last error: {short(dead.error)}"
            reason = history if not dead.reason else f"{dead.reason}; {history}"
            conn.execute(q.REPLAY_DEAD, (execution_id, now_ms, reason))
            jobstate.reopen(conn, dead.job_id)
            row = conn.execute(q.GET_EXECUTION, (execution_id, None)).fetchone()
        return execution_from_row(row)

    @_translated
    def purge_dead(self, execution_id: str, tenant: str | None = None) -> bool:
        with self._write() as conn:
            conn.execute(q.PURGE_DEAD, (execution_id, tenant))
            return conn.changes() > 0

    # ------------------------------------------------------------ retention

    @_translated
    def prune_executions(
        self, older_than_ms: int, keep_last: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        jobs = [r[0] for r in self._conn.execute(q.PRUNE_JOBS_PAGE, (after_job or "", jobs_per_call))]
        if not jobs:
            return 0, None
        deleted = 0
        with self._write() as conn:
            for job_id in jobs:
                conn.execute(q.PRUNE_JOB_EXECUTIONS, (job_id, older_than_ms, max(1, keep_last), limit - deleted))
                deleted += conn.changes()
                if deleted >= limit:
                    # this job may have more: come back to it (the cursor is the job before it)
                    index = jobs.index(job_id)
                    return deleted, (jobs[index - 1] if index else after_job) or ""
        return deleted, jobs[-1] if len(jobs) == jobs_per_call else None

    def checkpoint(self) -> None:
        # PASSIVE never waits on readers; the WAL is reset once no reader holds an old snapshot,
        # and journal_size_limit then truncates the file
        with contextlib.suppress(apsw.Error):
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def maintain_log(self, disk_low: bool) -> int | None:
        """The WAL policy (docs/operations.md): normally checkpointed by SQLite every 10,000
        pages (~40 MiB, what a herd's claim batches need) and by this call once it is over
        WAL_TARGET_BYTES, then truncated to that size (journal_size_limit) when it is reset;
        while the disk is low, every 1,000 pages (~4 MiB), and truncated to nothing here."""
        wal = Path(f"{self.path}-wal")
        size = wal.stat().st_size if wal.exists() else 0
        with contextlib.suppress(apsw.Error):
            self._conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_PAGES_LOW_DISK if disk_low else WAL_PAGES}")
            if disk_low and size > WAL_TARGET_LOW_DISK_BYTES:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            elif size > WAL_TARGET_BYTES:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        return wal.stat().st_size if wal.exists() else 0

    # ------------------------------------------------------------ tenants

    @_translated
    def list_tenants(self) -> list[Tenant]:
        return [tenant_from_row(r) for r in self._conn.execute(q.LIST_TENANTS)]

    @_translated
    def create_tenant(self, tenant: Tenant, now_ms: int) -> Tenant | None:
        t = tenant
        with self._write() as conn:
            conn.execute(q.CREATE_TENANT, (
                t.name, t.weight, t.max_running, t.max_jobs, t.submit_rate, t.submit_burst,
                int(t.allow_shell), dumps(list(t.http_allow)), now_ms, now_ms,
            ))  # fmt: skip
            if conn.changes() == 0:
                return None
            row = conn.execute(q.GET_TENANT, (t.name,)).fetchone()
        self._known_tenants.add(t.name)
        return tenant_from_row(row)

    @_translated
    def update_tenant(self, name: str, changes: dict[str, Any], now_ms: int) -> Tenant | None:
        unknown = set(changes) - set(TENANT_SETTINGS)
        if unknown:
            raise ValueError(f"not tenant settings: {', '.join(sorted(unknown))}")
        with self._write() as conn:
            row = conn.execute(q.GET_TENANT, (name,)).fetchone()
            if row is None:
                return None
            cur = tenant_from_row(row)
            new = {f: changes.get(f, getattr(cur, f)) for f in TENANT_SETTINGS}
            conn.execute(q.UPDATE_TENANT, (
                name, new["weight"], new["max_running"], new["max_jobs"], new["submit_rate"],
                new["submit_burst"], int(bool(new["allow_shell"])), dumps(list(new["http_allow"] or ())), now_ms,
            ))  # fmt: skip
            row = conn.execute(q.GET_TENANT, (name,)).fetchone()
        return tenant_from_row(row)

    # ------------------------------------------------------------ API tokens

    @_translated
    def create_token(self, token: ApiToken, now_ms: int) -> bool:
        if (token.role in TENANTLESS_ROLES) != (token.tenant is None):
            raise ValueError("admin and metrics tokens name no tenant; tenant and worker tokens name one")
        with self._write() as conn:
            if token.tenant is not None and conn.execute(q.TENANT_EXISTS, (token.tenant,)).fetchone() is None:
                return False
            try:
                conn.execute(q.INSERT_TOKEN, (
                    token.token_id, token.token_hash, token.role.value, token.tenant, token.name, now_ms,
                ))  # fmt: skip
            except apsw.ConstraintError as exc:
                raise StoreError(f"cannot store the token (id or hash reused?): {exc}") from exc
        return True

    @_translated
    def get_token_by_hash(self, token_hash: str) -> ApiToken | None:
        row = self._conn.execute(q.GET_TOKEN_BY_HASH, (token_hash,)).fetchone()
        return None if row is None else token_from_row(row)

    @_translated
    def list_tokens(self, tenant: str | None = None) -> list[ApiToken]:
        return [token_from_row(r) for r in self._conn.execute(q.LIST_TOKENS, (tenant,))]

    @_translated
    def revoke_token(self, token_id: str, now_ms: int) -> ApiToken | None:
        with self._write() as conn:
            conn.execute(q.REVOKE_TOKEN, (token_id, now_ms))
            row = conn.execute(q.GET_TOKEN, (token_id,)).fetchone()
        return None if row is None else token_from_row(row)
