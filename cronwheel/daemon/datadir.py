"""The data directory a daemon takes: made private, locked against a second daemon, checked
for a store emptied by accident; and the address file it publishes there. Every problem is
a ``DaemonError`` in one line that names the file and what to do, never a traceback."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Any

from cronwheel.core.words import as_given, is_utf8
from cronwheel.daemon.options import DaemonError


def take_data_dir(data_dir: Path, store_url: str | None) -> Any:
    """Make ``data_dir`` (0700), lock it for this daemon and check its store; the lock file,
    held open for the daemon's lifetime."""
    if store_url is None:
        _refuse_a_path_sqlite_cannot_open(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(data_dir, 0o700)
        lock = _lock(data_dir)
    except OSError as exc:  # another user's files (a daemon run once as root), a read-only or full disk…
        # a full disk may have room again (rotated logs, a cleaned /tmp): a restart may start
        raise DaemonError(unusable_data_dir(data_dir, exc), transient=exc.errno in (errno.ENOSPC, errno.EDQUOT)) from None
    try:
        _refuse_an_emptied_store(data_dir, store_url)
    except BaseException:
        lock.close()
        raise
    return lock


def _refuse_a_path_sqlite_cannot_open(data_dir: Path) -> None:
    """SQLite opens files by UTF-8 name: a path with bytes of no encoding (lone surrogates in
    Python) would crash the store's open, after the directory was made."""
    if not is_utf8(str(data_dir.absolute())):
        raise DaemonError(f"the data directory '{as_given(str(data_dir), 4096)}' is not a UTF-8 path, and the embedded store opens its files "
                          "by UTF-8 names: choose another --data-dir (or --store postgresql://…)")


def unusable_data_dir(data_dir: Path, exc: OSError) -> str:
    """The OS error, with the advice that fits its cause: ownership only where it is one."""
    where = f" ({exc.filename})" if exc.filename else ""
    said = f"cannot use the data directory {data_dir}: {exc.strerror or exc}{where}"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (f"{said}. The daemon's user must own it and its files (`ls -la {data_dir}`; a daemon run once as "
                "root leaves root's files): fix the ownership, run as the owner, or give this daemon its own --data-dir")
    if exc.errno == errno.EROFS and os.environ.get("INVOCATION_ID"):
        # started by systemd: the shipped unit's ProtectSystem=strict makes every path but the
        # unit's own directories read-only, whatever the mount says
        return (f"{said}. Under systemd, ProtectSystem=strict (the shipped unit) leaves every path outside the unit's "
                "own directories read-only: keep data_dir in its state directory (/var/lib/cronwheel), or let the "
                f"unit write there with a drop-in (`systemctl edit cronwheel`: [Service] ReadWritePaths={data_dir}), "
                "then restart it")
    if exc.errno == errno.EROFS:
        return (f"{said}. Its file system is mounted read-only (`findmnt -T {data_dir}`): remount it read-write, "
                "or give this daemon a --data-dir on a writable file system")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"{said}. Its file system is full, or the user's quota is (`df -h {data_dir}`, `df -i` for inodes): "
                "free some space, or give this daemon a --data-dir on another file system")
    return said


def _refuse_an_emptied_store(data_dir: Path, store_url: str | None) -> None:
    """An empty ``cronwheel.db`` in a directory a daemon has used (its admin token is there) is
    a store emptied by accident (truncated, copied half-way): SQLite would open it as a new,
    empty store, and every job would be gone without a word."""
    db = data_dir / "cronwheel.db"
    if store_url is not None and Path(store_url) != db:
        return
    if db.exists() and db.stat().st_size == 0 and (data_dir / "admin-token").exists():
        raise DaemonError(
            f"the store {db} is empty (0 bytes), but a daemon has used this directory before (its admin-token "
            "is there): starting would begin again with no jobs. Restore cronwheel.db from a backup (Backups in "
            "docs/operations.md), or, to start afresh on purpose, remove cronwheel.db and admin-token first"
        )


def publish_address(path: Path, text: str) -> None:
    """``http.addr``: written whole (a reader never sees half of it, and a file left by
    another user is replaced, not refused) and readable by every local user whatever the
    umask (the unit's UMask=0027): it is how they find the API."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.fchmod(fd, 0o644)
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _lock(data_dir: Path) -> Any:
    lock = open(data_dir / "lock", "a+")  # noqa: SIM115 - held for the daemon's lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        pid = lock.read().strip()
        lock.close()
        who = f" (pid {pid})" if pid.isdigit() else ""
        raise DaemonError(
            f"another cronwheel serve{who} is running on the data directory {data_dir} (it holds "
            f"{data_dir / 'lock'}); stop it first, or give this one its own --data-dir", transient=True,
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock
