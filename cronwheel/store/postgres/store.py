"""The cluster store: PostgreSQL through psycopg 3.

Why psycopg 3 and not asyncpg: the ``Store`` contract is synchronous and each store object
is called from one thread at a time (the engine gives it a dedicated thread), so an async
driver would buy nothing and cost an event loop per store. psycopg 3 is the maintained
successor of psycopg2, speaks libpq, so it takes any libpq conninfo, including multi-host
URLs with ``target_session_attrs=read-write`` (``postgresql://h1:5432,h2:5433/db?…``) that
find the primary after a failover; it has a maintained connection pool (``psycopg_pool``)
for when the engine grows several threads per store, server-side prepared statements, and
binary COPY and pipelined ``executemany`` for bulk work.

Connections: one per store object, in autocommit mode; a method that writes runs in one
explicit transaction (``BEGIN … COMMIT``) at READ COMMITTED. Row locks do the concurrency
control (``FOR NO KEY UPDATE SKIP LOCKED`` in the claim, ``FOR UPDATE`` on the rows a fenced
write changes, in a fixed order; see ``queries.py``), so nothing needs a retry loop on
serialisation failures, though a deadlock or serialisation failure, should one happen, is
retried a few times from the start of the method. A statement that waits longer than
``lock_timeout`` (10 s unless the server or role sets one) fails with StoreUnavailable, as
the SQLite store's busy timeout does. Why one connection rather than a pool: a store object
is used by one thread at a time, so a pool of one would add a thread and hand-offs for
nothing; the engine opens one store per thread (writer, reader).

Failures: any connection-level error (refused, reset, server shut down, failover, the
primary turned read-only) raises ``StoreUnavailable`` (the API answers 503 + Retry-After)
and drops the connection; the next call connects again, through the whole host list.
A read, or a write whose ``BEGIN`` failed (so nothing was sent), on a connection that had
gone stale while idle is retried once on a new connection, so one restart of the server
costs no error at all to a store that was idle meanwhile.

Durability: every write commits before it returns, with ``synchronous_commit`` at least
``on`` (a server or role configured with ``off`` is raised to ``on`` for our sessions;
``remote_write``/``remote_apply`` are kept), so an acknowledged write is flushed to the
primary's WAL, and to a synchronous standby when the operator runs one.

Time: everything the contract pins uses the ``now_ms`` the caller passes; the database
clock is reserved for bucket leases between nodes (cluster mode).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import psycopg
from psycopg import errors as pgerr
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus

from cronwheel.core import schedule
from cronwheel.core.calendar import Calendar
from cronwheel.core.ids import bucket_of, execution_id, stable_hash
from cronwheel.core.model import (
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
from cronwheel.store.common import PRIORITY, SUPERSEDED, dumps, process_text, retry_to_json, short
from cronwheel.store.notifying import NotificationMethods
from cronwheel.store.outbox import Sql, after_create, after_update
from cronwheel.store.postgres import claim as claiming
from cronwheel.store.postgres import cluster, jobstate, leases, triggers
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.migrate import apply_migrations, current_version
from cronwheel.store.postgres.rows import (
    execution_from_row,
    job_from_row,
    outbox_sql,
    parsed,
    tenant_from_row,
    token_from_row,
)

_MAX_MS = 2**63 - 1
#: a statement waiting this long for a lock gives up (StoreUnavailable), as SQLite's busy timeout
DEFAULT_LOCK_TIMEOUT_MS = 10_000
#: libpq settings added to the conninfo unless it names them: fail fast on an unreachable
#: host (then try the next one), and notice a silently dead peer within about a minute
CONNINFO_DEFAULTS = {
    "connect_timeout": "5",
    "application_name": "cronwheel",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}
#: advisory-lock key spaces (the first int4 of the two-int4 form): idempotency keys, and
#: tenants whose registered-jobs quota a submission checks
IDEMPOTENCY_LOCK_SPACE = 0x63770001
QUOTA_LOCK_SPACE = 0x63770002
NAME_LOCK_SPACE = 0x63770003
#: transient conflicts worth running the method again for (the transaction rolled back)
_RETRY_CONFLICTS: tuple[type[BaseException], ...] = (pgerr.DeadlockDetected, pgerr.SerializationFailure)
_CONFLICT_ATTEMPTS = 4

P = ParamSpec("P")
R = TypeVar("R")


def normalise_conninfo(conninfo: str) -> str:
    """A libpq conninfo (URL or key=value) with ``CONNINFO_DEFAULTS`` filled in."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise StoreError(f"not a PostgreSQL conninfo: {exc}") from None
    for key, value in CONNINFO_DEFAULTS.items():
        params.setdefault(key, value)
    return make_conninfo("", **params)


def redacted(conninfo: str) -> dict[str, Any]:
    """Where a conninfo points, without secrets (for ``meta`` and error messages)."""
    params = conninfo_to_dict(conninfo)
    return {k: params[k] for k in ("host", "hostaddr", "port", "dbname", "user", "target_session_attrs") if k in params}


def _translated(fn: Callable[Concatenate[PostgresStore, P], R]) -> Callable[Concatenate[PostgresStore, P], R]:
    """psycopg errors never leave the store: they become StoreUnavailable or StoreError."""

    @functools.wraps(fn)
    def wrapper(self: PostgresStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn(self, *args, **kwargs)
            except _RETRY_CONFLICTS as exc:
                if attempt < _CONFLICT_ATTEMPTS:
                    time.sleep(0.005 * attempt)  # the other transaction is finishing
                    continue
                raise StoreUnavailable(f"{self.where}: {exc}") from exc
            except StoreError:
                raise
            except (psycopg.OperationalError, pgerr.ReadOnlySqlTransaction) as exc:
                # refused, reset, shut down, timed out, or a demoted primary: reconnect next time
                self._discard()
                raise StoreUnavailable(f"{self.where} unavailable: {_first_line(exc)}") from exc
            except psycopg.InterfaceError as exc:
                self._discard()
                if self._closed:
                    raise StoreError("the store is closed") from exc
                raise StoreUnavailable(f"{self.where} unavailable: {_first_line(exc)}") from exc
            except psycopg.Error as exc:
                raise StoreError(f"{self.where}: {_first_line(exc)}") from exc

    return wrapper


def _lock_keys(texts: set[str]) -> list[int]:
    """int4 advisory-lock keys for some strings, sorted (the lock order)."""
    return sorted({stable_hash(t) % 2**32 - 2**31 for t in texts})


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _stale(exc: BaseException, conn: psycopg.Connection[Any]) -> bool:
    """Did ``exc`` come from a connection that is dead (so a new one may succeed)?"""
    return isinstance(exc, psycopg.OperationalError) and (conn.broken or conn.closed)


class PostgresStore(NotificationMethods, Store):
    """``Store`` on a PostgreSQL database. Open it with :meth:`open`."""

    def __init__(self, conninfo: str, *, lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS) -> None:
        self._conninfo = normalise_conninfo(conninfo)
        self._lock_timeout_ms = lock_timeout_ms
        self._target = redacted(self._conninfo)
        self.where = "postgresql store " + " ".join(f"{k}={v}" for k, v in self._target.items())
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        self._synchronous_commit = "?"
        self._known_tenants: set[str] = set()  #: tenants whose row this handle has seen committed

    @classmethod
    def open(cls, conninfo: str, *, lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS) -> PostgresStore:
        """Connect and migrate. ``conninfo`` is any libpq conninfo: ``postgresql://`` or
        ``postgres://`` URL (several ``host:port`` pairs separated by commas for failover)
        or ``key=value`` pairs. ``lock_timeout_ms``: how long a statement may wait for a row
        lock before the call fails with StoreUnavailable (when the server or role sets no
        lock_timeout of its own), like the SQLite store's busy timeout."""
        store = cls(conninfo, lock_timeout_ms=lock_timeout_ms)
        try:
            store._migrate()
        except BaseException:
            store.close()
            raise
        return store

    @_translated
    def _migrate(self) -> None:
        conn, _ = self._connection()
        try:
            apply_migrations(conn, time.time_ns() // 1_000_000)
        except RuntimeError as exc:
            raise StoreError(f"{self.where}: {exc}") from exc

    # ------------------------------------------------------------ the connection

    def _connection(self) -> tuple[psycopg.Connection[Any], bool]:
        """The connection, opened if need be; True when it is new."""
        if self._closed:
            raise StoreError("the store is closed")
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn, False
        self._discard()
        conn = psycopg.connect(self._conninfo, autocommit=True)
        try:
            row = conn.execute(q.SESSION_SETTINGS).fetchone()
            current, lock_timeout = (str(row[0]), str(row[1])) if row else ("off", "0")
            if current == "off":  # acknowledged means durable: never below "on"
                conn.execute(q.SET_SYNCHRONOUS_COMMIT_ON)
                current = "on"
            if lock_timeout == "0" and self._lock_timeout_ms > 0:
                conn.execute(q.SET_LOCK_TIMEOUT, {"value": f"{self._lock_timeout_ms}ms"})
        except BaseException:
            conn.close()
            raise
        self._synchronous_commit = current
        self._conn = conn
        return conn, True

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _read(self, fn: Callable[[psycopg.Connection[Any]], R]) -> R:
        """Run a read (autocommit statements); once more on a new connection if the one we
        had turned out to be dead (reads are safe to repeat)."""
        conn, fresh = self._connection()
        try:
            return fn(conn)
        except psycopg.OperationalError as exc:
            if fresh or not _stale(exc, conn):
                raise
        self._discard()
        conn, _ = self._connection()
        return fn(conn)

    @contextlib.contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Any]]:
        """One durable write transaction: BEGIN … COMMIT, else ROLLBACK."""
        conn, fresh = self._connection()
        try:
            conn.execute("BEGIN")
        except psycopg.OperationalError as exc:
            if fresh or not _stale(exc, conn):
                raise
            self._discard()  # nothing was sent: safe to start over on a new connection
            conn, _ = self._connection()
            conn.execute("BEGIN")
        try:
            yield conn
        except BaseException:
            if not conn.broken and conn.info.transaction_status != TransactionStatus.IDLE:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _scalar(self, sql: str, args: dict[str, Any] | None = None) -> Any:
        def run(conn: psycopg.Connection[Any]) -> Any:
            row = conn.execute(sql, args).fetchone()
            return None if row is None else row[0]

        return self._read(run)

    def _rows(self, sql: str, args: dict[str, Any] | None = None) -> list[Any]:
        return self._read(lambda conn: conn.execute(sql, args).fetchall())

    @_translated
    def _outbox_write(self, fn: Callable[[Sql], R]) -> R:
        with self._write() as conn:
            return fn(outbox_sql(conn))

    @_translated
    def _outbox_read(self, fn: Callable[[Sql], R]) -> R:
        return self._read(lambda conn: fn(outbox_sql(conn)))

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._discard()

    @_translated
    def schema_version(self) -> int:
        return self._read(current_version)

    def meta(self) -> dict[str, Any]:
        version: int | None = None
        server: str | None = None
        if not self._closed:
            with contextlib.suppress(StoreError):
                version = self.schema_version()
            if self._conn is not None and not self._conn.closed:
                server = self._conn.info.parameter_status("server_version")
        return {
            "kind": "postgresql",
            **self._target,
            "version": version,
            "server": server,
            "synchronousCommit": self._synchronous_commit,
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
        keyed = sorted({(nj.spec.tenant, nj.idempotency_key) for nj in jobs if nj.idempotency_key is not None})
        capped = {nj.spec.tenant for nj in jobs if nj.max_jobs is not None}
        registered: dict[str, int] = {}  # tenant -> ACTIVE/PAUSED jobs committed before this batch
        created: dict[str, int] = {}  # tenant -> jobs created in this batch so far
        name_rows: list[tuple[str, str, str]] = []
        with self._write() as conn:
            known: dict[tuple[str, str], tuple[str | None, str, int | None]] = {}
            if keyed:
                # Serialise with concurrent submissions of the same keys, then read them.
                hashes = _lock_keys({f"{t}\n{k}" for t, k in keyed})
                conn.execute(q.ADVISORY_XACT_LOCKS, {"space": IDEMPOTENCY_LOCK_SPACE, "hashes": hashes})
                args = {"tenants": [t for t, _ in keyed], "keys": [k for _, k in keyed]}
                for t, k, request_hash, job_id, next_run_at in conn.execute(q.SELECT_IDEMPOTENCY_KEYS, args):
                    known[(t, k)] = (request_hash, job_id, next_run_at)
            holders: dict[tuple[str, str], str] = {}  # (tenant, name) -> the job holding it
            named = sorted({(nj.spec.tenant, nj.spec.name) for nj in jobs if nj.spec.name is not None})
            if named:
                # Serialise with concurrent submissions and renames to the same names, then read
                # their holders (the primary key of job_names would refuse a second one anyway).
                conn.execute(q.ADVISORY_XACT_LOCKS, {"space": NAME_LOCK_SPACE, "hashes": _lock_keys({f"{t}\n{n}" for t, n in named})})
                args = {"tenants": [t for t, _ in named], "names": [n for _, n in named]}
                holders = {(t, n): job_id for t, n, job_id in conn.execute(q.NAME_HOLDERS, args)}
            if capped:
                # Serialise with concurrent submissions for the same tenants: counts stay exact.
                conn.execute(q.ADVISORY_XACT_LOCKS, {"space": QUOTA_LOCK_SPACE, "hashes": _lock_keys(capped)})
            for nj in jobs:
                spec = nj.spec
                tenant = spec.tenant
                key = None
                if nj.idempotency_key is not None:
                    key = (tenant, nj.idempotency_key)
                    seen = known.get(key)
                    if seen is not None:
                        outcome = CreateOutcome.REPLAYED if seen[0] == nj.request_hash else CreateOutcome.CONFLICT
                        results.append(CreateResult(outcome, seen[1], seen[2]))
                        continue
                name_key = None if spec.name is None else (tenant, spec.name)
                if name_key is not None and name_key in holders:
                    results.append(CreateResult(CreateOutcome.NAME_TAKEN, holders[name_key], None))
                    continue
                if nj.max_jobs is not None:
                    if tenant not in registered:
                        count = conn.execute(q.COUNT_REGISTERED_JOBS, {"tenant": tenant}).fetchone()
                        registered[tenant] = int(count[0]) if count else 0
                    if registered[tenant] + created.get(tenant, 0) >= nj.max_jobs:
                        results.append(CreateResult(CreateOutcome.QUOTA_EXCEEDED, None, None))
                        continue
                created[tenant] = created.get(tenant, 0) + 1
                if name_key is not None:
                    holders[name_key] = nj.job_id  # later ones in this batch
                    name_rows.append((tenant, spec.name, nj.job_id))
                if key is not None:
                    known[key] = (nj.request_hash, nj.job_id, nj.next_run_at)  # later ones in this batch
                    key_rows.append((tenant, nj.idempotency_key, nj.request_hash, nj.job_id, nj.next_run_at))
                tenants.add(tenant)
                retry = spec.retry
                job_rows.append((
                    nj.job_id, bucket_of(nj.job_id), "ACTIVE", nj.next_run_at, spec.schedule,
                    spec.timezone, spec.misfire.value, spec.overlap.value, spec.jitter_sec, tenant,
                    int(spec.priority), retry.max_attempts, spec.target.get("queue"),
                    _json_list(spec.calendars), spec.active_until, spec.misfire_grace_sec,
                ))  # fmt: skip
                def_rows.append((
                    nj.job_id, spec.name, spec.run_at, dumps(spec.target), dumps(spec.payload),
                    retry_to_json(retry), float(spec.timeout_sec), float(spec.lease_sec),
                    process_text(spec), spec.active_from, _json_list(spec.on_success), _json_list(spec.on_failure),
                    spec.managed_by,
                    dumps(rules_to_json(spec.notify)), spec.expect_success_within_ms,
                ))  # fmt: skip
                if spec.notify or spec.expect_success_within_ms is not None:
                    watched.append((nj.job_id, spec.expect_success_within_ms))
                results.append(CreateResult(CreateOutcome.CREATED, nj.job_id, nj.next_run_at))
            new_tenants = sorted(tenants - self._known_tenants)
            if new_tenants:
                conn.execute(q.INSERT_TENANTS, {"names": new_tenants, "now": now_ms})
            if job_rows:
                try:
                    conn.execute(q.INSERT_JOBS, claiming.columns(job_rows, _JOB_FIELDS))
                except pgerr.UniqueViolation as exc:
                    raise StoreError(f"cannot create jobs (duplicate job id?): {_first_line(exc)}") from exc
                conn.execute(q.INSERT_JOB_DEFINITIONS, {**claiming.columns(def_rows, _DEF_FIELDS), "now": now_ms})
                after_create(outbox_sql(conn), watched, now_ms)
            if name_rows:
                conn.execute(q.INSERT_JOB_NAMES, claiming.columns(name_rows, _NAME_FIELDS))
            if key_rows:
                conn.execute(q.INSERT_IDEMPOTENCY_KEYS, {**claiming.columns(key_rows, _KEY_FIELDS), "now": now_ms})
        self._known_tenants.update(new_tenants)  # tenant rows are never deleted
        return results

    @_translated
    def get_job(self, job_id: str, tenant: str | None = None) -> Job | None:
        rows = self._rows(q.GET_JOB, {"id": job_id, "tenant": tenant})
        return job_from_row(rows[0]) if rows else None

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
        args: dict[str, Any] = {"id": job_id, "tenant": tenant, "now": now_ms}
        with self._write() as conn:
            locked = conn.execute(q.LOCK_JOB, args).fetchone()  # waits for a claim of the job
            if locked is None:
                return UpdateResult(UpdateOutcome.NOT_FOUND)
            job = job_from_row(conn.execute(q.GET_JOB, args).fetchone())
            if job.status is JobStatus.CANCELLED:
                return UpdateResult(UpdateOutcome.CANCELLED, job)
            if spec.name != job.spec.name:
                if spec.name is not None:
                    conn.execute(q.ADVISORY_XACT_LOCKS, {"space": NAME_LOCK_SPACE, "hashes": _lock_keys({f"{job.tenant}\n{spec.name}"})})
                    held = conn.execute(q.NAME_HOLDERS, {"tenants": [job.tenant], "names": [spec.name]}).fetchone()
                    if held is not None and held[2] != job_id:
                        return UpdateResult(UpdateOutcome.NAME_TAKEN, job, held[2])
                conn.execute(q.RELEASE_JOB_NAME, args)
                if spec.name is not None:
                    conn.execute(q.INSERT_JOB_NAMES, {"tenant": [job.tenant], "name": [spec.name], "job_id": [job_id]})
            retry = spec.retry
            conn.execute(q.UPDATE_JOB, {
                **args, "schedule": spec.schedule, "timezone": spec.timezone, "misfire": spec.misfire.value,
                "overlap": spec.overlap.value, "jitter_sec": spec.jitter_sec, "priority": int(spec.priority),
                "max_attempts": retry.max_attempts, "queue": spec.target.get("queue"),
                "next_run_at": next_run_at, "reschedule": reschedule,
                "calendars": _json_list(spec.calendars), "active_until": spec.active_until,
                "misfire_grace_sec": spec.misfire_grace_sec,
            })  # fmt: skip
            conn.execute(q.UPDATE_JOB_DEFINITION, {
                **args, "name": spec.name, "run_at": spec.run_at, "target": dumps(spec.target),
                "payload": dumps(spec.payload), "retry": retry_to_json(retry),
                "timeout_sec": float(spec.timeout_sec), "lease_sec": float(spec.lease_sec),
                "process": process_text(spec), "active_from": spec.active_from, "managed_by": spec.managed_by,
            })  # fmt: skip
            if (spec.on_success, spec.on_failure) != (job.spec.on_success, job.spec.on_failure):
                # the cycle check of a chain change, in this transaction (ChainError: nothing changes)
                triggers.set_chain(conn, job_id, spec.on_success, spec.on_failure, now_ms, tenant)
            after_update(outbox_sql(conn), job_id, job.spec, spec, now_ms)
            superseded: list[str] = []
            if reschedule:
                superseded = [r[0] for r in conn.execute(q.CLAIMED_AHEAD_OF_JOB, args)]
                if superseded:
                    conn.execute(q.CANCEL_EXECUTIONS, {"ids": superseded, "reasons": [SUPERSEDED] * len(superseded), "now": now_ms})
            updated = job_from_row(conn.execute(q.GET_JOB, args).fetchone())
        return UpdateResult(UpdateOutcome.UPDATED, updated, superseded=superseded)

    @_translated
    def find_jobs_by_name(self, name: str, tenant: str | None = None) -> list[Job]:
        return [job_from_row(r) for r in self._rows(q.FIND_JOBS_BY_NAME, {"name": name, "tenant": tenant})]

    @_translated
    def list_jobs(
        self,
        tenant: str | None = None,
        status: JobStatus | None = None,
        limit: int = 100,
        after_id: str | None = None,
    ) -> list[Job]:
        args = {"after": after_id or "", "status": None if status is None else JobStatus(status).value,
                "limit": max(0, limit), "tenant": tenant}  # fmt: skip
        sql = q.LIST_JOBS if tenant is None else q.LIST_JOBS_OF_TENANT
        return [job_from_row(r) for r in self._rows(sql, args)]

    @_translated
    def count_jobs(self, tenant: str | None = None, status: JobStatus | None = None) -> int:
        terms: list[str] = []
        if tenant is not None:
            terms.append("tenant = %(tenant)s")
        if status is not None:
            terms.append("status = %(status)s")
        sql = q.COUNT_JOBS.format(where=" AND ".join(terms) or "TRUE")
        args = {"tenant": tenant, "status": None if status is None else JobStatus(status).value}
        return int(self._scalar(sql, args))

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
        args = {"id": job_id, "status": JobStatus(status).value, "next_run_at": next_run_at,
                "expect": [JobStatus(s).value for s in expect], "tenant": tenant, "now": now_ms}  # fmt: skip
        with self._write() as conn:
            if conn.execute(q.SET_JOB_STATUS, args).fetchone() is None:
                return None
            conn.execute(q.TOUCH_JOB_DEFINITION, args)
            row = conn.execute(q.GET_JOB, {"id": job_id, "tenant": None}).fetchone()
        return job_from_row(row)

    @_translated
    def cancel_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> tuple[Job, list[str]] | None:
        args = {"id": job_id, "tenant": tenant, "now": now_ms}
        with self._write() as conn:
            locked = conn.execute(q.LOCK_JOB, args).fetchone()
            if locked is None:
                return None
            if locked[0] == JobStatus.CANCELLED.value:
                row = conn.execute(q.GET_JOB, args).fetchone()
                return job_from_row(row), []
            conn.execute(q.CANCEL_JOB, args)
            conn.execute(q.RELEASE_JOB_NAME, args)
            conn.execute(q.TOUCH_JOB_DEFINITION, args)
            live = conn.execute(q.LIVE_EXECUTIONS_OF_JOB, args).fetchall()
            if live:
                ids = [eid for eid, _ in live]
                conn.execute(q.CANCEL_EXECUTIONS, {"ids": ids, "reasons": ["job cancelled"] * len(ids), "now": now_ms})
            row = conn.execute(q.GET_JOB, args).fetchone()
        return job_from_row(row), sorted(eid for eid, status in live if status == "RUNNING")

    # ------------------------------------------------------------ scheduling

    @_translated
    def due_jobs(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[str, int]]:
        if not buckets or limit <= 0:
            return []
        rows = self._rows(q.DUE_JOBS, {"buckets": [int(b) for b in buckets], "until": until_ms, "limit": limit})
        return [(r[0], r[1]) for r in rows]

    @_translated
    def next_due_at(self, buckets: Sequence[int]) -> int | None:
        if not buckets:
            return None
        value = self._scalar(q.NEXT_DUE_AT, {"buckets": sorted({int(b) for b in buckets})})
        return None if value is None else int(value)

    @_translated
    def claim_due(
        self, buckets: Sequence[int], now_ms: int, limit: int, ahead_ms: int = 0, fence: Fence | None = None
    ) -> ClaimResult:
        result = ClaimResult()
        if not buckets or limit <= 0:
            return result
        with self._write() as conn:
            if fence is not None:
                # the fence holds the lease rows FOR SHARE: a node paused mid-claim must not
                # keep a takeover waiting for longer than this
                conn.execute(cluster.FENCED_CLAIM_IDLE_TIMEOUT)
            owned = [int(b) for b in buckets] if fence is None else cluster.fenced_buckets(conn, buckets, fence)
            if owned:
                claiming.claim(conn, owned, now_ms, limit, result, ahead_ms)
        return result

    # ------------------------------------------------------------ cluster membership
    # The database's clock decides (``now_ms`` is ignored), see ``cluster.py``.

    @_translated
    def register_node(self, node_id: str, address: str, now_ms: int) -> int:
        with self._write() as conn:
            return cluster.register(conn, node_id, address)

    @_translated
    def deregister_node(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM cluster_nodes WHERE node_id = %s", (node_id,))

    @_translated
    def live_nodes(self, ttl_ms: int, now_ms: int) -> list[NodeInfo]:
        return self._read(lambda conn: cluster.live(conn, ttl_ms))

    @_translated
    def acquire_buckets(self, node_id: str, bucket_ids: Sequence[int], ttl_ms: int, now_ms: int) -> BucketGrants:
        with self._write() as conn:
            if not bucket_ids:
                return BucketGrants([], cluster.db_now(conn))
            return cluster.acquire(conn, node_id, bucket_ids, ttl_ms)

    @_translated
    def release_buckets(self, node_id: str, bucket_ids: Sequence[int]) -> list[int]:
        if not bucket_ids:
            return []
        with self._write() as conn:
            return cluster.release(conn, node_id, bucket_ids)

    @_translated
    def bucket_leases(self) -> list[BucketLease]:
        return self._read(cluster.leases)

    @_translated
    def trigger_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            row = conn.execute(q.TRIGGER_SELECT_JOB, {"id": job_id, "tenant": tenant}).fetchone()
            if row is None or row[0] == JobStatus.CANCELLED.value:
                return None
            _, job_tenant, prio, max_att, overlap, queue = row
            guard = overlap != OverlapPolicy.ALLOW.value
            while True:  # the first free millisecond; a concurrent trigger may take it first
                tick = int(conn.execute(q.FIRST_FREE_TICK, {"id": job_id, "now": now_ms}).fetchone()[0])  # type: ignore[index]
                eid = execution_id(job_id, tick)
                new = (eid, job_id, job_tenant, prio, tick, "PENDING", now_ms, now_ms, None, "triggered", max_att, guard,
                       ExecOrigin.MANUAL.value)  # fmt: skip
                if claiming.insert_executions(conn, [new]):
                    break
            if queue is not None:
                conn.execute(q.SET_EXECUTIONS_QUEUE, {"ids": [eid], "queues": [queue]})
            jobstate.reopen(conn, job_id)
        return Execution(eid, job_id, job_tenant, PRIORITY[prio], tick, ExecStatus.PENDING,
                         available_at=now_ms, created_at=now_ms, reason="triggered", max_attempts=max_att,
                         queue=queue, origin=ExecOrigin.MANUAL)  # fmt: skip

    # ------------------------------------------------------------ calendars, backfill, chains

    @_translated
    def put_calendar(self, calendar: Calendar, now_ms: int) -> Calendar:
        args = {"tenant": calendar.tenant, "name": calendar.name, "spec": calendar_spec_json(calendar), "now": now_ms}
        with self._write() as conn:
            row = conn.execute(q.UPSERT_CALENDAR, args).fetchone()
        return calendar_row(row, parsed)

    @_translated
    def get_calendar(self, tenant: str, name: str) -> Calendar | None:
        rows = self._rows(q.GET_CALENDAR, {"tenant": tenant, "name": name})
        return calendar_row(rows[0], parsed) if rows else None

    @_translated
    def list_calendars(self, tenant: str | None = None) -> list[Calendar]:
        return [calendar_row(r, parsed) for r in self._rows(q.LIST_CALENDARS, {"tenant": tenant})]

    @_translated
    def delete_calendar(self, tenant: str, name: str) -> tuple[bool, list[str]]:
        args = {"tenant": tenant, "name": name}
        with self._write() as conn:
            users = [r[0] for r in conn.execute(q.CALENDAR_USERS, args)]
            if users:
                return False, users
            return conn.execute(q.DELETE_CALENDAR, args).rowcount > 0, []

    @_translated
    def backfill(self, job_id: str, ticks: Sequence[int], now_ms: int, tenant: str | None = None) -> list[Execution] | None:
        with self._write() as conn:
            return triggers.backfill(conn, job_id, ticks, now_ms, tenant)

    @_translated
    def cancel_backfill(self, job_id: str, now_ms: int, tenant: str | None = None) -> int | None:
        with self._write() as conn:
            if conn.execute(q.TRIGGER_SELECT_JOB, {"id": job_id, "tenant": tenant}).fetchone() is None:
                return None
            return conn.execute(q.CANCEL_BACKFILL, {"id": job_id, "now": now_ms, "tenant": tenant}).rowcount

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
        args = {"now": now_ms, "after_at": after_at, "after_id": after_id, "limit": limit}
        return [execution_from_row(r) for r in self._rows(q.READY_EXECUTIONS, args)]

    @_translated
    def start_executions(self, starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
        if not starts:
            return []
        with self._write() as conn:
            return leases.start(conn, starts, now_ms)

    @_translated
    def claim_for_worker(
        self, queues: Sequence[str], worker_id: str, max: int, now_ms: int, tenant: str | None = None
    ) -> list[Grant]:
        if max <= 0 or not queues:
            return []
        with self._write() as conn:
            return leases.claim_for_worker(conn, queues, worker_id, max, now_ms, tenant)

    @_translated
    def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int, now_ms: int) -> HeartbeatResult:
        with self._write() as conn:
            return leases.heartbeat(conn, [(execution_id, lease_epoch)], now_ms)[0]

    @_translated
    def heartbeat_many(self, beats: Sequence[tuple[str, str, int]], now_ms: int) -> list[HeartbeatResult]:
        if not beats:
            return []
        with self._write() as conn:
            return leases.heartbeat(conn, [(eid, epoch) for eid, _worker, epoch in beats], now_ms)

    @_translated
    def complete_executions(
        self, completions: Sequence[Completion], now_ms: int, rand01: Sequence[float] | None = None
    ) -> list[CompletionResult]:
        if not completions:
            return []
        with self._write() as conn:
            return leases.complete(conn, completions, now_ms, rand01)

    @_translated
    def expire_leases(self, now_ms: int, limit: int) -> list[CompletionResult]:
        if limit <= 0:
            return []
        with self._write() as conn:
            rows = conn.execute(q.EXPIRED_LEASES, {"now": now_ms, "limit": limit}).fetchall()
            if not rows:
                return []
            comps = [Completion(eid, None, epoch, Outcome.LOST, error="lease expired") for eid, epoch in rows]
            # A deterministic draw per lease spreads the retries of a crashed worker's executions.
            rands = [stable_hash(f"{eid}:{epoch}") / 2**64 for eid, epoch in rows]
            return leases.complete(conn, comps, now_ms, rands)

    @_translated
    def running_with_worker_prefix(self, prefix: str) -> list[Execution]:
        return [execution_from_row(r) for r in self._rows(q.RUNNING_WITH_WORKER_PREFIX, {"prefix": prefix})]

    # ------------------------------------------------------------ executions: reads

    @_translated
    def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None:
        rows = self._rows(q.GET_EXECUTION, {"id": execution_id, "tenant": tenant})
        return execution_from_row(rows[0]) if rows else None

    @_translated
    def list_executions(
        self, job_id: str, limit: int = 50, before: int | None = None, tenant: str | None = None
    ) -> list[Execution]:
        if limit <= 0:
            return []
        args = {"job_id": job_id, "before": _MAX_MS if before is None else before, "limit": limit, "tenant": tenant}
        return [execution_from_row(r) for r in self._rows(q.LIST_EXECUTIONS, args)]

    @_translated
    def last_runs(self, job_ids: Sequence[str], tenant: str | None = None) -> dict[str, Execution]:
        if not job_ids:
            return {}
        rows = self._rows(q.LAST_RUNS, {"ids": list(job_ids), "tenant": tenant})
        return {ex.job_id: ex for ex in map(execution_from_row, rows)}

    @_translated
    def count_executions(self, status: ExecStatus | None = None, tenant: str | None = None) -> int:
        where = "TRUE" if status is None else f"status = '{ExecStatus(status).value}'"
        return int(self._scalar(q.COUNT_EXECUTIONS.format(where=where), {"tenant": tenant}))

    # ------------------------------------------------------------ side effects

    @_translated
    def record_effect(self, execution_id: str, lease_epoch: int, key: str, now_ms: int) -> EffectVerdict:
        args = {"id": execution_id, "key": key, "epoch": lease_epoch, "now": now_ms}
        with self._write() as conn:
            row = conn.execute(q.EXECUTION_LEASE, args).fetchone()
            if row is None:
                return EffectVerdict.NOT_FOUND
            if conn.execute(q.EFFECT_EXISTS, args).fetchone() is not None:
                return EffectVerdict.DUPLICATE
            if row[0] != "RUNNING" or row[1] != lease_epoch:
                return EffectVerdict.FENCED
            if conn.execute(q.INSERT_EFFECT, args).fetchone() is None:
                return EffectVerdict.DUPLICATE  # recorded by a concurrent call a moment ago
        return EffectVerdict.RECORDED

    # ------------------------------------------------------------ dead-letter queue

    @_translated
    def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]:
        if limit <= 0:
            return []
        args = {"after": after or "", "tenant": tenant, "limit": limit}
        return [execution_from_row(r) for r in self._rows(q.LIST_DEAD, args)]

    @_translated
    def replay_dead(self, execution_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            row = conn.execute(q.GET_DEAD, {"id": execution_id, "tenant": tenant}).fetchone()
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
            row = conn.execute(q.REPLAY_DEAD, {"id": execution_id, "now": now_ms, "reason": reason}).fetchone()
            jobstate.reopen(conn, dead.job_id)
        return execution_from_row(row)

    @_translated
    def purge_dead(self, execution_id: str, tenant: str | None = None) -> bool:
        with self._write() as conn:
            return conn.execute(q.PURGE_DEAD, {"id": execution_id, "tenant": tenant}).rowcount > 0

    # ------------------------------------------------------------ retention

    @_translated
    def prune_executions(
        self, older_than_ms: int, keep_last: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        jobs = [r[0] for r in self._rows(q.PRUNE_JOBS_PAGE, {"after": after_job or "", "n": jobs_per_call})]
        if not jobs:
            return 0, None
        deleted = 0
        with self._write() as conn:
            for index, job_id in enumerate(jobs):
                args = {"job_id": job_id, "older_than": older_than_ms, "skip": max(1, keep_last) - 1,
                        "limit": limit - deleted}  # fmt: skip
                deleted += conn.execute(q.PRUNE_JOB_EXECUTIONS, args).rowcount
                if deleted >= limit:
                    # this job may have more: come back to it (the cursor is the job before it)
                    return deleted, (jobs[index - 1] if index else after_job) or ""
        return deleted, jobs[-1] if len(jobs) == jobs_per_call else None

    def checkpoint(self) -> None:
        """Nothing to do: the server bounds its own WAL (checkpoints, max_wal_size)."""

    # ------------------------------------------------------------ tenants

    @_translated
    def list_tenants(self) -> list[Tenant]:
        return [tenant_from_row(r) for r in self._rows(q.LIST_TENANTS)]

    @_translated
    def create_tenant(self, tenant: Tenant, now_ms: int) -> Tenant | None:
        t = tenant
        args = {"name": t.name, "weight": t.weight, "max_running": t.max_running, "max_jobs": t.max_jobs,
                "submit_rate": t.submit_rate, "submit_burst": t.submit_burst, "allow_shell": bool(t.allow_shell),
                "http_allow": list(t.http_allow), "now": now_ms}  # fmt: skip
        with self._write() as conn:
            row = conn.execute(q.CREATE_TENANT, args).fetchone()
        if row is None:
            return None
        self._known_tenants.add(t.name)
        return tenant_from_row(row)

    @_translated
    def update_tenant(self, name: str, changes: dict[str, Any], now_ms: int) -> Tenant | None:
        unknown = set(changes) - set(TENANT_SETTINGS)
        if unknown:
            raise ValueError(f"not tenant settings: {', '.join(sorted(unknown))}")
        with self._write() as conn:
            row = conn.execute(q.LOCK_TENANT, {"name": name}).fetchone()
            if row is None:
                return None
            cur = tenant_from_row(row)
            new = {f: changes.get(f, getattr(cur, f)) for f in TENANT_SETTINGS}
            new["allow_shell"] = bool(new["allow_shell"])
            new["http_allow"] = list(new["http_allow"] or ())
            row = conn.execute(q.UPDATE_TENANT, {**new, "name": name, "now": now_ms}).fetchone()
        return tenant_from_row(row)

    # ------------------------------------------------------------ API tokens

    @_translated
    def create_token(self, token: ApiToken, now_ms: int) -> bool:
        if (token.role in TENANTLESS_ROLES) != (token.tenant is None):
            raise ValueError("admin and metrics tokens name no tenant; tenant and worker tokens name one")
        args = {"token_id": token.token_id, "token_hash": token.token_hash, "role": token.role.value,
                "tenant": token.tenant, "name": token.name, "now": now_ms}  # fmt: skip
        with self._write() as conn:
            if token.tenant is not None and conn.execute(q.TENANT_EXISTS, {"name": token.tenant}).fetchone() is None:
                return False
            try:
                conn.execute(q.INSERT_TOKEN, args)
            except pgerr.UniqueViolation as exc:
                raise StoreError(f"cannot store the token (id or hash reused?): {_first_line(exc)}") from exc
        return True

    @_translated
    def get_token_by_hash(self, token_hash: str) -> ApiToken | None:
        rows = self._rows(q.GET_TOKEN_BY_HASH, {"hash": token_hash})
        return token_from_row(rows[0]) if rows else None

    @_translated
    def list_tokens(self, tenant: str | None = None) -> list[ApiToken]:
        return [token_from_row(r) for r in self._rows(q.LIST_TOKENS, {"tenant": tenant})]

    @_translated
    def revoke_token(self, token_id: str, now_ms: int) -> ApiToken | None:
        with self._write() as conn:
            conn.execute(q.LOCK_ACTIVE_ADMIN_TOKENS)
            row = conn.execute(q.REVOKE_TOKEN, {"id": token_id, "now": now_ms}).fetchone()
            if row is None:  # no such token, or the last active admin one (left as it is)
                row = conn.execute(q.GET_TOKEN, {"id": token_id}).fetchone()
        return None if row is None else token_from_row(row)


_JOB_FIELDS = ("id", "bucket_id", "status", "next_run_at", "schedule", "timezone", "misfire", "overlap",
               "jitter_sec", "tenant", "priority", "max_attempts", "queue", "calendars", "active_until",
               "misfire_grace_sec")  # fmt: skip
_DEF_FIELDS = ("job_id", "name", "run_at", "target", "payload", "retry", "timeout_sec", "lease_sec", "process",
               "active_from", "on_success", "on_failure", "managed_by", "notify", "expect_ms")  # fmt: skip


def _json_list(values: Sequence[str]) -> str | None:
    """A JSON array column; an empty list is stored as NULL (the claim skips NULL cheaply)."""
    return dumps(list(values)) if values else None
_KEY_FIELDS = ("tenant", "key", "request_hash", "job_id", "next_run_at")
_NAME_FIELDS = ("tenant", "name", "job_id")
