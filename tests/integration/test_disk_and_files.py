"""The store's files and the disk under them, against a real daemon: the SQLite files are
0600 (and a store left 0644 by an older version is tightened); the free space of the data
directory shows in status and /metrics, ``store.disk_low`` is logged under the low mark, and
while the disk is low the WAL is kept to a few MiB."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from tests.support import otheruser as other_user
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


@pytest.mark.runs_no_jobs
def test_free_space_and_a_low_disk(make_daemon: Callable[..., Daemon]) -> None:
    """A low mark above the free space (1,000 TiB): the disk reads as low at once."""
    d = make_daemon(args=("--disk-low", "1000T"))
    low = wait_for(lambda: d.event("store.disk_low"), 20, what="store.disk_low")
    assert low["freeBytes"] > 0 and low["lowMarkBytes"] == 1000 * 2**40
    assert low["level"] == "warning"  # an alert: `journalctl -p warning` shows it
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
    # refused by the option's type, as a file's or a variable's value would be: a usage error
    assert r.returncode == 2 and "'--disk-low'" in r.stderr and "must be a size" in r.stderr and "Traceback" not in r.stderr


def test_a_full_disk_is_a_clean_503_and_recovers(tmp_path: Path) -> None:
    """The data directory on a small tmpfs, filled up: the daemon warned first
    (store.disk_low), submissions answer 503 (never 500) while it is full, and once there is
    room again they succeed; everything acknowledged is there and the store is intact."""
    mount = tmp_path / "node"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m,mode=0700", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    d = Daemon(mount, args=("--disk-low", "24M"))
    try:
        d.start()
        acked = [d.add_job({"schedule": "0 0 1 1 *", "queue": "q"})["jobId"]]
        filler = mount / "filler"
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * (1 << 20))
                    f.flush()
            except OSError:
                pass
        wait_for(lambda: d.event("store.disk_low"), 20, what="store.disk_low")
        payload = {"blob": "x" * 60_000}
        statuses = []
        for _ in range(40):
            r = d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "queue": "q", "payload": payload})
            statuses.append(r.status)
            assert r.status in (201, 503), r
            if r.status == 201:
                acked.append(r.json()["jobId"])
            else:
                assert r.headers.get("Retry-After") and r.json()["code"] == "unavailable"
                break
        assert 503 in statuses, "the full disk was reached"
        assert d.get("/v1/status").status == 200
        filler.unlink()
        r = wait_for(lambda: (x := d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "queue": "q"})).status == 201 and x, 30,
                     interval=0.5, what="submissions to succeed again")
        acked.append(r.json()["jobId"])
        for job in acked:
            assert d.get(f"/v1/jobs/{job}").status == 200, job
        assert "Traceback" not in d.log_path.read_text()
        d.stop()
        conn = apsw.Connection(str(mount / "cronwheel.db"))
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.kill()
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_the_api_address_is_readable_by_local_users_under_the_units_umask(tmp_path: Path) -> None:
    """The unit runs with UMask=0027; ``/run/cronwheel/http.addr`` is how local users find the
    API (docs/operations.md), so it is 0644 whatever the umask."""
    run = tmp_path / "run"
    run.mkdir()
    d = Daemon(tmp_path / "node", env={"RUNTIME_DIRECTORY": str(run)})
    old = os.umask(0o027)
    try:
        d.start()
    finally:
        os.umask(old)
    try:
        for addr in (run / "http.addr", d.data_dir / "http.addr"):
            assert oct(stat.S_IMODE(os.stat(addr).st_mode)) == "0o644", addr
            assert addr.read_text() == d.url + "\n"
    finally:
        d.stop()


@pytest.mark.runs_no_jobs
def test_an_emptied_store_is_refused_rather_than_started_afresh(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    d.add_job({"schedule": "0 0 1 1 *", "queue": "q"})
    d.stop()
    db = d.data_dir / "cronwheel.db"
    for name in ("cronwheel.db-wal", "cronwheel.db-shm"):
        (d.data_dir / name).unlink(missing_ok=True)
    db.write_bytes(b"")  # truncated by accident: SQLite would open it as a new, empty store
    r = d.cli("serve", "--data-dir", str(d.data_dir), "--http", "127.0.0.1:0")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr  # lasting: a restart would not mend it
    assert f"the store {db} is empty (0 bytes)" in r.stderr and "Restore cronwheel.db from a backup" in r.stderr
    assert db.stat().st_size == 0


@pytest.mark.parametrize(("options", "said", "advice", "systemd", "status"), [
    ("ro,size=1m", "Read-only file system", "mounted read-only", False, 2),
    # under systemd (INVOCATION_ID), ProtectSystem=strict is the likely cause, not the mount
    ("ro,size=1m", "Read-only file system", "[Service] ReadWritePaths=", True, 2),
    # no inode left for the lock: a full disk may have room again (75, restarted), a read-only one not (2)
    ("size=64k,nr_inodes=1", "No space left on device", "is full", False, 75),
])  # fmt: skip
def test_a_read_only_or_full_data_directory_is_not_called_an_ownership_problem(
        tmp_path: Path, options: str, said: str, advice: str, systemd: bool, status: int) -> None:
    node = tmp_path / "node"
    node.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(node)], capture_output=True, text=True)
    if os.geteuid() != 0 or mounted.returncode != 0:
        pytest.skip(f"needs root to mount a tmpfs -o {options}: {mounted.stderr.strip()}")
    env = {k: v for k, v in Daemon(tmp_path / "unused").cli_env().items() if k != "INVOCATION_ID"}
    if systemd:
        env["INVOCATION_ID"] = "0123456789abcdef0123456789abcdef"
    try:
        r = subprocess.run([sys.executable, "-m", "cronwheel", "serve", "--data-dir", str(node), "--http", "127.0.0.1:0"],
                           capture_output=True, text=True, env=env, timeout=60)
    finally:
        subprocess.run(["umount", "-l", str(node)], capture_output=True)
    assert r.returncode == status and "Traceback" not in r.stderr, r.stderr
    assert f"cannot use the data directory {node}: {said}" in r.stderr and advice in r.stderr, r.stderr
    assert "ownership" not in r.stderr, r.stderr


def test_a_data_directory_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").touch()
    d = Daemon(tmp_path / "unused")
    r = d.cli("serve", "--data-dir", str(tmp_path / "a-file" / "node"), "--http", "127.0.0.1:0")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"cannot use the data directory {tmp_path / 'a-file' / 'node'}: Not a directory" in r.stderr
    # a name whose bytes are no UTF-8 (argv's 0xff): refused before it is made, not a crash
    # of the store's open once it was
    r = d.cli("serve", "--data-dir", str(tmp_path / "node\udcff"), "--http", "127.0.0.1:0")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "node.crashed" not in r.stderr, r.stderr
    assert f"the data directory '{tmp_path}/node\\xff' is not a UTF-8 path" in r.stderr, r.stderr
    assert not os.path.exists(os.fsencode(str(tmp_path)) + b"/node\xff")


@pytest.mark.runs_no_jobs
def test_a_store_damaged_inside_a_page_is_refused_with_what_to_do(make_daemon: Callable[..., Daemon]) -> None:
    """A damaged header was refused with the advice (restore, .recover); a page damaged past it
    was found by the first read after the open, and said only "malformed". Both say what to do."""
    d = make_daemon()
    for i in range(20):
        d.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": f"job-{i}"})
    d.stop()
    db = d.data_dir / "cronwheel.db"
    conn = apsw.Connection(str(db))
    page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    # every table's and index's first page but the schema's and schema_migrations' (the open reads those)
    roots = [r[0] for r in conn.execute("SELECT rootpage FROM sqlite_schema WHERE rootpage > 2")]
    conn.close()
    data = bytearray(db.read_bytes())
    for root in roots:
        start = (root - 1) * page_size
        data[start + 2:start + page_size - 2] = b"\xff" * (page_size - 4)
    db.write_bytes(bytes(data))
    r = d.cli("serve", "--data-dir", str(d.data_dir), "--http", "127.0.0.1:0")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{db}: database disk image is malformed. It is damaged: restore it from a backup" in r.stderr, r.stderr
    assert "sqlite3 COPY .recover | sqlite3 recovered.db" in r.stderr, r.stderr


def test_a_store_restored_as_root_is_refused_with_the_chown_that_fixes_it() -> None:
    """The restore in docs/operations.md, done as root for a daemon of its own user: the copy
    put in place is root's (0600, or 0644), which systemd's DynamicUser= does not fix (it
    chowns only when the state directory's own ownership is wrong). 0600 was refused with
    "(does the daemon's user own it…?)", 0644 was opened read-only without a word. Both are
    refused naming the file's owner and the chown to run; after it, the node starts with the
    restored jobs."""
    other_user.require()
    root = Path(tempfile.mkdtemp(prefix="cronwheel-restore-"))
    root.chmod(0o755)
    data = root / "data"
    try:
        data.mkdir(mode=0o700)
        os.chown(data, other_user.OTHER_UID, other_user.OTHER_UID)
        serve = ("serve", "--data-dir", str(data), "--http", "127.0.0.1:0", "--workers", "1", "--log-format", "json")
        _serve_as_other_user(serve, data, lambda url, token: _post_job(url, token, "restored"))
        # the backup, as the docs take it (as root, umask 077), and the restore
        old = os.umask(0o077)
        try:
            with sqlite3.connect(data / "cronwheel.db") as live, sqlite3.connect(root / "backup.db") as copy:
                live.backup(copy)
        finally:
            os.umask(old)
        (data / "cronwheel.db").rename(root / "aside.db")
        shutil.copy(root / "backup.db", data / "cronwheel.db")
        db = data / "cronwheel.db"
        for mode in (0o644, 0o600):
            db.chmod(mode)
            refused = other_user.run(*serve)
            assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
            said = " ".join(refused.stderr.split())
            assert f"cronwheel.db is root's (mode {mode:04o}), not this daemon's user's (uid {other_user.OTHER_UID})" in said, said
            fix = said.split("`")[1]
            assert fix == f"chown --reference={data} {db}", said
        subprocess.run(fix.split(), check=True)
        assert _serve_as_other_user(serve, data, lambda url, token: "restored" in _job_names(url, token))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _serve_as_other_user(serve: tuple[str, ...], data: Path, check: Callable[[str, str], object]) -> object:
    """Start ``serve`` as the other user, run ``check(url, admin token)`` once it answers,
    stop it; returns what ``check`` returned."""
    (data / "http.addr").unlink(missing_ok=True)
    proc = other_user.popen(*serve, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        addr = data / "http.addr"
        wait_for(lambda: proc.poll() is None and addr.exists() and _healthy(addr.read_text().strip()), 60,
                 what="the other user's daemon to answer")
        return check(addr.read_text().strip(), (data / "admin-token").read_text().strip())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        assert proc.stderr is not None
        proc.stderr.close()


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(url + "/healthz", timeout=5) as resp:
        return resp.status == 200


def _post_job(url: str, token: str, name: str) -> None:
    req = urllib.request.Request(url + "/v1/jobs", method="POST", data=json.dumps(
        {"schedule": "0 0 1 1 *", "command": "true", "name": name}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 201


def _job_names(url: str, token: str) -> list[str]:
    req = urllib.request.Request(url + "/v1/jobs", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return [j.get("name") for j in json.loads(resp.read())["jobs"]]
