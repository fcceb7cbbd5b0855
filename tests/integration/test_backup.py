"""``cronwheel backup``: a copy of a running daemon's SQLite store, taken while it writes,
restores into a daemon that has every job; a copy never overwrites, is private, and leaves
the data directory as it found it (no root-owned -wal/-shm beside a service's store)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import apsw

from tests.support import otheruser as other_user
from tests.support.daemon import REPO, Daemon


def backup(data_dir: Path, *args: str, store: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_CONFIG": ""}
    env.pop("CRONWHEEL_STORE", None)
    if store is not None:
        env["CRONWHEEL_STORE"] = store
    return subprocess.run([sys.executable, "-m", "cronwheel", "--data-dir", str(data_dir), "backup", *args],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip


def test_a_backup_taken_under_writes_restores_every_job(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    d = make_daemon()
    ids = [d.add_job({"schedule": "0 0 1 1 *", "queue": "q", "name": f"job-{i}"})["jobId"] for i in range(50)]
    stop = threading.Event()

    def keep_writing() -> None:  # the daemon commits all through the copy
        i = 0
        while not stop.is_set():
            d.add_job({"schedule": "0 0 1 1 *", "queue": "q", "name": f"during-{i}"})
            i += 1

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        out = tmp_path / "backups"
        out.mkdir()
        made = backup(d.data_dir, str(out), "--json")
    finally:
        stop.set()
        writer.join()
    assert made.returncode == 0, made.stderr
    said = json.loads(made.stdout)
    copy = Path(said["backup"])
    assert copy.parent == out and copy.name.startswith("cronwheel-") and said["jobs"] >= 50
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert [p.name for p in out.iterdir()] == [copy.name]  # no partial file left beside it

    restored = tmp_path / "restored"
    restored.mkdir()
    (restored / "cronwheel.db").write_bytes(copy.read_bytes())
    os.chmod(restored / "cronwheel.db", 0o600)
    d2 = make_daemon("restored")
    jobs = {j["jobId"] for j in d2.get("/v1/jobs?limit=1000").json()["jobs"]}
    assert set(ids) <= jobs and len(jobs) == said["jobs"]


def test_a_backup_never_overwrites_and_keeps_the_newest(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    d = make_daemon(workers=0)
    d.add_job({"schedule": "0 0 1 1 *", "queue": "q"})
    taken = tmp_path / "taken.db"
    taken.write_text("precious")
    refused = backup(d.data_dir, str(taken))
    assert refused.returncode == 1 and "exists: a backup never overwrites" in refused.stderr, refused.stderr
    assert taken.read_text() == "precious"

    out = tmp_path / "nightly"
    out.mkdir()
    others = [out / "notes.txt", out / "cronwheel-manual.db"]  # not the backups' names: never removed
    for path in others:
        path.write_text("mine")
    old = [out / f"cronwheel-2026010{day}T031700Z.db" for day in range(1, 4)]
    for path in old:
        path.write_text("an older backup")
    made = backup(d.data_dir, str(out), "--keep", "2", "--json")
    assert made.returncode == 0, made.stderr
    said = json.loads(made.stdout)
    assert sorted(said["removed"]) == [str(p) for p in old[:2]]
    assert sorted(p.name for p in out.iterdir()) == sorted([Path(said["backup"]).name, old[2].name, *(p.name for p in others)])

    assert "--keep applies to a directory" in backup(d.data_dir, str(tmp_path / "x.db"), "--keep", "1").stderr
    nowhere = backup(tmp_path / "no-such-dir", str(out))
    assert nowhere.returncode == 1 and "no store at" in nowhere.stderr and "Traceback" not in nowhere.stderr
    # a hostile DEST: empty, not UTF-8, the data directory itself: each refused, nothing written
    empty = backup(d.data_dir, "")
    assert empty.returncode == 2 and "DEST is empty" in empty.stderr, empty.stderr
    latin1 = subprocess.run([sys.executable, "-m", "cronwheel", "--data-dir", str(d.data_dir), "backup",
                             os.fsencode(str(tmp_path)) + b"/caf\xe9.db"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_CONFIG": ""}, timeout=120)  # fmt: skip
    assert latin1.returncode == 1 and "not a UTF-8 path" in latin1.stderr and "Traceback" not in latin1.stderr, latin1.stderr
    inside = backup(d.data_dir, str(d.data_dir))
    assert inside.returncode == 1 and "is in the data directory" in inside.stderr, inside.stderr
    assert not [p for p in d.data_dir.iterdir() if p.name.startswith(("cronwheel-", ".cronwheel-"))]
    elsewhere = backup(d.data_dir, str(out), store="postgresql://cron@db.example/cron")
    assert elsewhere.returncode == 1 and "pg_dump" in elsewhere.stderr, elsewhere.stderr


def test_a_root_backup_leaves_no_root_owned_files_beside_a_services_store(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    """The daemon stopped (a clean stop leaves no -wal and -shm): SQLite creates them for the
    copy's reader; they must not stay root's, or the service's user could not open its store."""
    other_user.require()
    d = make_daemon(workers=0)
    d.add_job({"schedule": "0 0 1 1 *", "queue": "q"})
    d.stop()
    apsw.Connection(str(d.data_dir / "cronwheel.db")).close()  # the last connection: no -wal, no -shm
    assert not (d.data_dir / "cronwheel.db-wal").exists()
    for path in [d.data_dir, *d.data_dir.iterdir()]:
        os.chown(path, other_user.OTHER_UID, other_user.OTHER_UID)
    out = tmp_path / "out"
    out.mkdir()
    made = backup(d.data_dir, str(out))
    assert made.returncode == 0, made.stderr
    root_owned = [p.name for p in d.data_dir.iterdir() if p.stat().st_uid == 0]
    assert root_owned == [], root_owned
