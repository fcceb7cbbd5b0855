"""``cronwheel serve`` checks what can refuse its start before it creates anything: a busy
TCP address and a second daemon on the same data directory are one clear line, with no
admin token, store, workers or API socket left behind. Real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import REPO, Daemon

#: what a started daemon creates in its data directory (the lock is the check itself)
CREATED = {"admin-token", "cronwheel.db", "api.sock", "worker.sock", "http.addr"}


def serve(data_dir: Path, http: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "cronwheel", "serve", "--data-dir", str(data_dir), "--http", http, "--workers", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


def test_a_sendmail_that_is_not_there_is_refused_at_the_start(tmp_path: Path) -> None:
    # not months later, at the first failure's email
    (tmp_path / "data").mkdir()
    not_executable = tmp_path / "sendmail"
    not_executable.write_text("#!/bin/sh\n")
    for given in ("/usr/sbin/no-such-sendmail", str(not_executable)):
        res = serve(tmp_path / "data", "127.0.0.1:0", "--sendmail", given)
        assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
        [line] = res.stderr.strip().splitlines()
        assert f"--sendmail: {given!r} is not an executable program" in line, line
        assert CREATED.isdisjoint(p.name for p in (tmp_path / "data").iterdir())


def test_a_busy_port_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = serve(tmp_path / "data", f"127.0.0.1:{port}")
    assert res.returncode != 0
    assert "Traceback" not in res.stderr and res.stdout == "", res
    [line] = res.stderr.strip().splitlines()
    assert f"127.0.0.1:{port}" in line and "already in use" in line and "--http" in line, line
    assert CREATED.isdisjoint(p.name for p in (tmp_path / "data").iterdir())


def test_a_second_daemon_on_the_same_data_dir_is_held_off(make_daemon: Callable[..., Daemon]) -> None:
    first = make_daemon()
    before = {p.name: p.stat().st_ino for p in first.data_dir.iterdir()}
    res = serve(first.data_dir, "127.0.0.1:0")
    assert res.returncode != 0
    assert "Traceback" not in res.stderr, res.stderr
    [line] = res.stderr.strip().splitlines()
    assert f"pid {first.pid}" in line and str(first.data_dir) in line and "--data-dir" in line, line
    # the first daemon's files are untouched (its socket was not replaced) and it still answers
    assert {p.name: p.stat().st_ino for p in first.data_dir.iterdir()} == before
    assert first.get("/healthz", token=None).status == 200
    assert first.cli("status").returncode == 0


def test_an_unusable_api_socket_path_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)  # longer than a Unix socket path may be
    res = serve(deep, "127.0.0.1:0")
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
    [line] = res.stderr.strip().splitlines()
    assert "api.sock" in line, line
    assert CREATED.isdisjoint(p.name for p in deep.iterdir())


def test_a_socket_left_by_a_killed_daemon_does_not_stop_the_next_start(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    d.kill()
    assert (d.data_dir / "api.sock").exists()
    d.start()
    assert d.cli("status").returncode == 0
