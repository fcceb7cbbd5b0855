"""The SQLite store's connection: opening the file, write transactions, error translation, WAL upkeep.

The embedded store is one SQLite file through apsw, in WAL mode.

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
import os
import pwd
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

import apsw

from cronwheel.core.records import Migrated
from cronwheel.store.base import StoreError, StoreUnavailable
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.migrate import apply_migrations, current_version

DEFAULT_BUSY_TIMEOUT_MS = 10_000
#: the writer's page cache. A herd's claims, starts and completions walk the tables page after
#: page (schema 14), so a larger cache buys little: 256 MiB held ~36 MiB more at the peak of a
#: 100,000 herd for the same time and CPU, and sustained load and a million jobs' start-up
#: measured the same. 24 MiB holds ~9 MiB less than 32 at that peak with no CPU cost seen in
#: the herd or in sustained load; 16 MiB saved ~20 MiB but cost ~2 % more of the daemon's CPU
#: per execution (docs/benchmarks.md). Pages beyond it are read from the OS's page cache.
#: Readers get less (daemon/serve.py).
DEFAULT_CACHE_MIB = 24
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
S = TypeVar("S", bound="SqliteBase")


def translated(fn: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """apsw errors never leave the store: they become StoreUnavailable or StoreError."""

    @functools.wraps(fn)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(self, *args, **kwargs)
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(f"sqlite store {self.path} unavailable: {exc}") from exc
        except apsw.ConnectionClosedError as exc:
            raise StoreError("the store is closed") from exc
        except (apsw.CorruptError, apsw.NotADBError) as exc:  # a page damaged past the header
            raise StoreError(_damaged(f"sqlite store {self.path}", exc)) from exc
        except apsw.Error as exc:
            raise StoreError(f"sqlite store {self.path}: {exc}") from exc

    return wrapper


def _damaged(what: str, exc: apsw.Error) -> str:
    """The store's file is damaged (its header at the open, or a page read later): what to do."""
    return (f"{what}: {exc}. It is damaged: restore it from a backup (Backups in docs/operations.md), or recover "
            "what it holds from a copy with `sqlite3 COPY .recover | sqlite3 recovered.db`")


def _unwritable(path: Path) -> str:
    """Why this process cannot open or write the store at ``path``, and what fixes it. The
    common cause is a file restored or copied in as root: it keeps root's ownership, and
    systemd's DynamicUser= fixes the state directory's ownership only when the directory's
    own is wrong."""
    uid = os.geteuid()
    theirs: list[tuple[Path, os.stat_result]] = []
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            st = file.stat()
            if st.st_uid != uid:
                theirs.append((file, st))
    if not theirs:
        return ("it or its directory is read-only to this daemon's user: a file mode, or a read-only file system "
                "(under systemd's ProtectSystem=strict, every path outside the unit's own directories unless a "
                "drop-in's ReadWritePaths= names it)")
    files = " ".join(str(f) for f, _ in theirs)
    try:
        reference = path.parent.stat().st_uid == uid  # the data directory: its owner is the daemon's user
    except OSError:
        reference = False
    fix = f"chown --reference={path.parent} {files}" if reference else f"chown {uid}:{os.getegid()} {files}"
    owners = ", ".join(f"{f.name} is {_user(st.st_uid)}'s (mode {st.st_mode & 0o777:04o})" for f, st in theirs)
    return (f"{owners}, not this daemon's user's ({_user(uid)}), as a file restored or copied in as root is: "
            f"give it to the daemon's user (`{fix}`), then start again")


def _user(uid: int) -> str:
    with contextlib.suppress(KeyError):
        return pwd.getpwuid(uid).pw_name
    return f"uid {uid}"


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


def count_rows(conn: apsw.Connection, sql: str, args: tuple[Any, ...] = ()) -> int:
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


class SqliteBase:
    """The connection and its transactions, shared by the SQLite store's role classes."""

    def __init__(self, conn: apsw.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._closed = False
        self.migrated: Migrated | None = None  #: what opening it applied (Store.migrated)
        #: the schema's version once opened (only an open migrates): what meta() says without a
        #: query, so that any thread may call it while another uses the connection (apsw
        #: refuses a second thread mid-statement: the daemon's start died of it)
        self._version: int | None = None

    @classmethod
    def open(
        cls, path: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS, cache_mib: int = DEFAULT_CACHE_MIB
    ) -> Self:
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
            if conn.readonly("main"):  # SQLite opens a file it may not write read-only, without a word
                conn.close()
                raise StoreError(f"cannot write the store at {path}: {_unwritable(path)}")
            conn.set_busy_timeout(busy_timeout_ms)
            mode = _enable_wal(conn, busy_timeout_ms)
            if mode.lower() != "wal":
                conn.close()
                raise StoreError(f"{path}: cannot use WAL mode (journal_mode is {mode})")
            conn.execute(q.PRAGMAS)
            conn.execute(f"PRAGMA cache_size = {-1024 * max(1, int(cache_mib)):d}")
            migrated = apply_migrations(conn, time.time_ns() // 1_000_000)
        except apsw.CantOpenError as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"cannot open the store at {path}: {exc}: {_unwritable(path)}") from exc
        except (apsw.CorruptError, apsw.NotADBError) as exc:
            if conn is not None:
                conn.close()
            raise StoreError(_damaged(f"cannot open the store at {path}", exc)) from exc
        except _UNAVAILABLE as exc:
            if conn is not None:
                conn.close()
            raise StoreUnavailable(f"sqlite store {path} unavailable: {exc}") from exc
        except (apsw.Error, RuntimeError) as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        store = cls(conn, path)
        store.migrated = migrated
        store._version = current_version(conn)
        return store

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

    # what the methods written once for both backends (store/shared.py) run on

    @translated
    def _guarded(self, fn: Callable[[], Any]) -> Any:
        return fn()

    def _read(self, fn: Callable[[apsw.Connection], R]) -> R:
        return fn(self._conn)  # one connection: a read sees every commit before it

    def _rows(self, sql: str, args: Mapping[str, Any] | None = None) -> list[Any]:
        return self._conn.execute(sql, args).fetchall()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._conn.close()

    @translated
    def schema_version(self) -> int:
        return current_version(self._conn)

    def meta(self) -> dict[str, Any]:
        return {
            "kind": "sqlite",
            "path": str(self.path),
            "version": None if self._closed else self._version,
            "sqlite": apsw.sqlite_lib_version(),
            "journalMode": "wal",
            "synchronous": "full",
        }

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
