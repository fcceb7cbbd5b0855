"""The store's files and the disk under them, against a real daemon: the SQLite files are
0600 (and a store left 0644 by an older version is tightened); the free space of the data
directory shows in status and /metrics, ``store.disk_low`` is logged under the low mark, and
while the disk is low the WAL is kept to a few MiB."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

STORE_FILES = ("cronwheel.db", "cronwheel.db-wal", "cronwheel.db-shm")


def modes(data_dir: Path) -> dict[str, str]:
    return {name: oct(stat.S_IMODE(os.stat(data_dir / name).st_mode)) for name in STORE_FILES if (data_dir / name).exists()}


def test_store_files_are_private(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    d.add_job({"schedule": "0 0 1 1 *", "queue": "q"})
    assert modes(d.data_dir) == dict.fromkeys(STORE_FILES, "0o600")
    d.stop()
    for name in STORE_FILES:  # as an older version left them
        if (d.data_dir / name).exists():
            os.chmod(d.data_dir / name, 0o644)
    d.start()
    d.add_job({"schedule": "0 0 1 1 *", "queue": "q"})
    assert set(modes(d.data_dir).values()) == {"0o600"}, modes(d.data_dir)


def test_free_space_and_a_low_disk(make_daemon: Callable[..., Daemon]) -> None:
    """A low mark above the free space (1,000 TiB): the disk reads as low at once."""
    d = make_daemon(args=("--disk-low", "1000T"))
    low = wait_for(lambda: d.event("store.disk_low"), 20, what="store.disk_low")
    assert low["freeBytes"] > 0 and low["lowMarkBytes"] == 1000 * 2**40
    disk = d.status()["disk"]
    assert disk["low"] is True and disk["freeBytes"] > 0 and disk["totalBytes"] >= disk["freeBytes"]
    metrics = d.get("/metrics").body.decode()
    assert "cronwheel_store_disk_free_bytes " in metrics and "cronwheel_store_wal_bytes " in metrics
    # the WAL is kept small while the disk is low: ~12 MiB written, at most 4 MiB kept
    payload = {"blob": "x" * 60_000}
    for _ in range(10):
        r = d.post("/v1/jobs/batch", {"jobs": [{"schedule": "0 0 1 1 *", "queue": "q", "payload": payload}] * 15})
        assert r.status == 200, r
    wait_for(lambda: (d.data_dir / "cronwheel.db-wal").stat().st_size <= 4 * 2**20, 20, interval=0.5,
             what="the WAL to be checkpointed and truncated")
    assert len(d.events("store.disk_low")) == 1, "said once, not every check"


def test_a_bad_disk_low_is_one_line(tmp_path: Path) -> None:
    d = Daemon(tmp_path / "bad", args=("--disk-low", "lots"))
    r = d.cli("serve", "--data-dir", str(tmp_path / "bad"), "--http", "127.0.0.1:0", "--disk-low", "lots")
    assert r.returncode == 1 and "--disk-low must be a size" in r.stderr and "Traceback" not in r.stderr
