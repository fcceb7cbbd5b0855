"""An online copy of a SQLite store, checked before it is named (``cronwheel backup``).

The store is ``cronwheel.db`` **plus** its ``-wal`` file while a daemon runs, so copying the
files is never a backup. ``VACUUM INTO`` reads one snapshot (a read transaction: the daemon
writes on meanwhile, WAL readers never block it) and writes a compact copy. The copy is
written under a hidden name, 0600 from its creation (it holds webhook secrets and token
hashes), run through ``PRAGMA integrity_check``, synced, and only then linked to its name,
so a name that exists is always a whole, checked backup, and an existing file is never
overwritten (``link`` refuses). No sqlite3 program is needed: the daemon's own SQLite does it.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

#: how long the copy waits for the daemon's write transaction of the moment, at most
BUSY_TIMEOUT_MS = 30_000
#: a backup's name in a directory: ``cronwheel-20260101T031700Z.db`` (UTC; sorts by time)
NAME_FORMAT = "cronwheel-%Y%m%dT%H%M%SZ.db"
#: the names ``--keep`` counts and removes: this format's, nothing else in the directory
NAMED = re.compile(r"cronwheel-\d{8}T\d{6}Z\.db")


class BackupRefused(Exception):
    """The backup was not made; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class BackupReport:
    source: Path
    dest: Path
    size_bytes: int
    schema: int
    jobs: int
    seconds: float
    pruned: tuple[Path, ...] = ()


def back_up(source: Path, dest: Path, keep: int | None = None, now: float | None = None) -> BackupReport:
    """Copy the store ``source`` to ``dest`` (a new file, or a directory to name it in);
    ``keep``: in a directory, then remove all but the ``keep`` newest backups named there."""
    started = time.monotonic()
    _check_source(source)
    _check_dest(source, dest)
    if keep is not None and not dest.is_dir():
        raise BackupRefused(f"--keep applies to a directory of backups; {dest} is not a directory")
    if dest.is_dir():
        dest = dest / time.strftime(NAME_FORMAT, time.gmtime(time.time() if now is None else now))
    if dest.exists() or dest.is_symlink():
        raise BackupRefused(f"{dest} exists: a backup never overwrites a file; give a new name, or a directory")
    if not dest.parent.is_dir():
        raise BackupRefused(f"{dest.parent} is not a directory")
    partial = dest.parent / f".{dest.name}.partial-{os.getpid()}"
    try:
        fd = os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as exc:
        raise BackupRefused(f"cannot write in {dest.parent}: {exc.strerror}") from exc
    os.close(fd)
    try:
        _copy(source, partial)
        schema, jobs = _verify(partial)
        _sync(partial)
        try:
            os.link(partial, dest)  # never replaces: a file that appeared meanwhile is kept
        except FileExistsError:
            raise BackupRefused(f"{dest} appeared while the copy was made: it is kept; give a new name") from None
        _sync(dest.parent)
    finally:
        partial.unlink(missing_ok=True)
    pruned = _prune(dest.parent, keep, dest) if keep is not None else ()
    return BackupReport(source, dest, dest.stat().st_size, schema, jobs, time.monotonic() - started, pruned)


def _check_source(source: Path) -> None:
    if not source.is_file():
        raise BackupRefused(f"no store at {source}: give the daemon's --data-dir (the directory holding cronwheel.db)")
    try:
        with source.open("rb") as f:
            header = f.read(16)
    except OSError as exc:
        raise BackupRefused(f"cannot read {source}: {exc.strerror} (run as the daemon's user, or as root)") from exc
    if header != b"SQLite format 3\x00":
        raise BackupRefused(f"{source} is not a SQLite database")


def _check_dest(source: Path, dest: Path) -> None:
    try:
        os.fsencode(dest).decode("utf-8")
    except UnicodeDecodeError:
        raise BackupRefused(f"{os.fsdecode(dest)!r} is not a UTF-8 path, which SQLite needs: choose another name") from None
    where = dest if dest.is_dir() else dest.parent
    if where.resolve() == source.parent.resolve():
        raise BackupRefused(f"{dest} is in the data directory, beside the store it would copy: a backup belongs "
                            "on another disk, or at least in another directory")  # fmt: skip


def _copy(source: Path, into: Path) -> None:
    # read-write without create (VACUUM INTO writes only the copy; query_only would refuse
    # it even so): a read-only connection to a store no daemon has open creates its -wal and
    # -shm and cannot remove them; this one removes them on close, as the last connection.
    # (Created as root, SQLite gives them the store's owner, so a service's user can open it.)
    try:
        conn = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.Error as exc:
        raise BackupRefused(f"cannot open {source}: {exc}") from exc
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        if not conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'jobs'").fetchall()[0][0]:
            raise BackupRefused(f"{source} is not a cronwheel store (it has no jobs table)")
        conn.execute("VACUUM INTO ?", (str(into),))
    except apsw.Error as exc:
        raise BackupRefused(f"the copy of {source} failed: {exc}") from exc
    finally:
        conn.close()


def _verify(copy: Path) -> tuple[int, int]:
    """The copy's schema version and job count, after SQLite's own check of every page."""
    conn = apsw.Connection(str(copy), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        verdict = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if verdict != ["ok"]:
            raise BackupRefused(f"the copy failed SQLite's integrity_check: {'; '.join(map(str, verdict[:5]))}")
        schema: Any = conn.execute("PRAGMA user_version").fetchall()[0][0]
        jobs: Any = conn.execute("SELECT count(*) FROM jobs").fetchall()[0][0]
    finally:
        conn.close()
    return int(schema), int(jobs)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _prune(directory: Path, keep: int, made: Path) -> tuple[Path, ...]:
    """Remove all but the ``keep`` newest backups named in ``directory`` (by name, which sorts
    by time); the one just made is never removed."""
    named = sorted(p for p in directory.iterdir() if NAMED.fullmatch(p.name) and p.is_file() and not p.is_symlink())
    old = [p for p in named[: max(0, len(named) - keep)] if p != made]
    for path in old:
        path.unlink(missing_ok=True)
    return tuple(old)
