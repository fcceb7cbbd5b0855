"""The PostgreSQL store's connection: conninfo, the session, transactions, retries, error translation.

The cluster store is PostgreSQL through psycopg 3.

Why psycopg 3 and not asyncpg: the ``Store`` contract is synchronous and each store object
is called from one thread at a time (the engine gives it a dedicated thread), so an async
driver would buy nothing and cost an event loop per store. psycopg 3 is the maintained
successor of psycopg2, speaks libpq, so it takes any libpq conninfo, including multi-host
URLs with ``target_session_attrs=read-write`` (``postgresql://h1:5432,h2:5433/db?…``) that
find the primary after a failover, and has server-side prepared statements and binary COPY
and pipelined ``executemany`` for bulk work.

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
and drops the connection (``StoreAccessRefused`` when the server refused the credentials,
role or database, which a start takes for a lasting refusal: ``refusals.py``); the next call connects again, through the whole host list.
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
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

import psycopg
from psycopg import errors as pgerr
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg.types.json import set_json_loads

from cronwheel.core.records import Migrated
from cronwheel.store.base import StoreAccessRefused, StoreError, StoreUnavailable
from cronwheel.store.common import loads
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.migrate import OlderNodesRunning, apply_migrations, current_version
from cronwheel.store.postgres.refusals import lasting_refusal

#: a statement waiting this long for a lock gives up (StoreUnavailable), as SQLite's busy timeout
DEFAULT_LOCK_TIMEOUT_MS = 10_000
#: libpq settings added to the conninfo unless it names them: fail fast on an unreachable
#: host (then try the next one), notice a silently dead peer within about a minute, and give
#: up on a connection whose sent bytes go unacknowledged for 5 s (a network cut drops them:
#: without it a call waited for as long as the kernel retransmits, minutes, and the node with
#: it: no stale status, no 503, no store.unavailable). The server's kernel acknowledges the
#: bytes of a slow query at once, so a long statement is not cut short by it.
CONNINFO_DEFAULTS = {
    "connect_timeout": "5",
    "tcp_user_timeout": "5000",
    "application_name": "cronwheel",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}
#: a connection attempt that failed after this long timed out (the host answers nothing: a
#: network cut, a machine off); for FAIL_FAST_SEC after it, calls fail at once instead of each
#: waiting out a timeout of its own. Without it the calls queued on a store's thread (starts,
#: heartbeats, the reaper's turns) took 5 s each, and a submission behind them was answered
#: 503 after 25-30 s rather than 3. A refused connection fails fast anyway and does not count.
SLOW_CONNECT_SEC = 1.0
FAIL_FAST_SEC = 2.0
#: transient conflicts worth running the method again for (the transaction rolled back)
_RETRY_CONFLICTS: tuple[type[BaseException], ...] = (pgerr.DeadlockDetected, pgerr.SerializationFailure)
_CONFLICT_ATTEMPTS = 4

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="PostgresBase")


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


def translated(fn: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """psycopg errors never leave the store: they become StoreUnavailable or StoreError."""

    @functools.wraps(fn)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
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
                refusal = lasting_refusal(str(exc))
                if refusal is not None:  # the server said no: a restart would hear it again
                    raise StoreAccessRefused(f"{self.where}: {refusal}") from exc
                raise StoreUnavailable(f"{self.where} unavailable: {first_line(exc)}") from exc
            except psycopg.InterfaceError as exc:
                self._discard()
                if self._closed:
                    raise StoreError("the store is closed") from exc
                raise StoreUnavailable(f"{self.where} unavailable: {first_line(exc)}") from exc
            except psycopg.Error as exc:
                raise StoreError(f"{self.where}: {first_line(exc)}") from exc

    return wrapper


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _stale(exc: BaseException, conn: psycopg.Connection[Any]) -> bool:
    """Did ``exc`` come from a connection that is dead (so a new one may succeed)?"""
    return isinstance(exc, psycopg.OperationalError) and (conn.broken or conn.closed)


class PostgresBase:
    """The connection and its transactions, shared by the PostgreSQL store's role classes."""

    def __init__(self, conninfo: str, *, lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS) -> None:
        self._conninfo = normalise_conninfo(conninfo)
        self._lock_timeout_ms = lock_timeout_ms
        self._target = redacted(self._conninfo)
        self.where = "postgresql store " + " ".join(f"{k}={v}" for k, v in self._target.items())
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        self._fail_fast_until = 0.0  #: monotonic: calls fail at once until then (SLOW_CONNECT_SEC)
        self._fail_fast_why = ""
        self._synchronous_commit = "?"
        self.migrated: Migrated | None = None  #: what opening it applied (Store.migrated)

    @classmethod
    def open(cls, conninfo: str, *, lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS) -> Self:
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

    @translated
    def _migrate(self) -> None:
        conn, _ = self._connection()
        try:
            self.migrated = apply_migrations(conn, time.time_ns() // 1_000_000)
        except OlderNodesRunning as exc:
            raise OlderNodesRunning(f"{self.where}: {exc}") from None
        except RuntimeError as exc:
            raise StoreError(f"{self.where}: {exc}") from exc

    def _connection(self) -> tuple[psycopg.Connection[Any], bool]:
        """The connection, opened if need be; True when it is new."""
        if self._closed:
            raise StoreError("the store is closed")
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn, False
        self._discard()
        conn = self._connect()
        set_json_loads(loads, conn)  # json and jsonb columns read as the SQLite store reads its text
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

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection, or at once the error of a connection attempt that timed out less
        than FAIL_FAST_SEC ago."""
        started = time.monotonic()
        if started < self._fail_fast_until:
            raise psycopg.OperationalError(self._fail_fast_why)
        try:
            return psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.OperationalError as exc:
            if time.monotonic() - started >= SLOW_CONNECT_SEC:
                self._fail_fast_until = time.monotonic() + FAIL_FAST_SEC
                self._fail_fast_why = f"{first_line(exc)} (not tried again for {FAIL_FAST_SEC:g} s)"
            raise

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
    def _write(self, fsync: bool = True) -> Iterator[psycopg.Connection[Any]]:
        """One durable write transaction: BEGIN … COMMIT, else ROLLBACK. (``fsync`` is
        SQLite's choice for its hot writes; every PostgreSQL commit is the server's durable one.)"""
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

    def _scalar(self, sql: str, args: Mapping[str, Any] | None = None) -> Any:
        def run(conn: psycopg.Connection[Any]) -> Any:
            row = conn.execute(sql, args).fetchone()
            return None if row is None else row[0]

        return self._read(run)

    def _rows(self, sql: str, args: Mapping[str, Any] | None = None) -> list[Any]:
        return self._read(lambda conn: conn.execute(sql, args).fetchall())

    @translated
    def _guarded(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` translated (and retried on a deadlock) as a ``translated`` method is: the
        methods written once for both backends (store/shared.py) run through it."""
        return fn()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._discard()

    @translated
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

    def checkpoint(self) -> None:
        """Nothing to do: the server bounds its own WAL (checkpoints, max_wal_size)."""
