"""``cronwheel serve`` checks what can refuse its start before it creates anything: a busy
TCP address and a second daemon on the same data directory are one clear line, with no
admin token, store, workers or API socket left behind. Real processes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr  # lasting: not restarted
        [line] = res.stderr.strip().splitlines()
        assert f"--sendmail: {given!r} is not an executable program" in line, line
        assert CREATED.isdisjoint(p.name for p in (tmp_path / "data").iterdir())


def test_a_busy_port_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = serve(tmp_path / "data", f"127.0.0.1:{port}")
    assert res.returncode == 75, res.stderr  # EX_TEMPFAIL: the port may be free at the next start
    assert "Traceback" not in res.stderr and res.stdout == "", res
    [line] = res.stderr.strip().splitlines()
    assert f"127.0.0.1:{port}" in line and "already in use" in line and "--http" in line, line
    assert CREATED.isdisjoint(p.name for p in (tmp_path / "data").iterdir())


def test_a_busy_port_suggests_one_that_is_free_and_the_environment_form(tmp_path: Path) -> None:
    """The suggestion was the next port whether free or not, and only --http, which `make
    serve` cannot pass: it is a port free at that moment, in both forms."""
    with contextlib.ExitStack() as stack:
        taken = []
        for _ in range(2):  # two ports in a row, both busy (retried if another test took the second)
            first = stack.enter_context(socket.socket())
            first.bind(("127.0.0.1", 0))
            first.listen()
            port = first.getsockname()[1]
            second = stack.enter_context(socket.socket())
            with contextlib.suppress(OSError):
                second.bind(("127.0.0.1", port + 1))
                second.listen()
                taken = [port, port + 1]
                break
        if not taken:
            pytest.skip("no two ports in a row could be taken")
        res = serve(tmp_path / "data", f"127.0.0.1:{taken[0]}")
    [line] = res.stderr.strip().splitlines()
    suggested = re.search(r"--http 127\.0\.0\.1:(\d+) or, through the environment \(as under `make serve`\), "
                          r"CRONWHEEL_HTTP=127\.0\.0\.1:(\d+)", line)
    assert suggested is not None and suggested[1] == suggested[2], line
    assert int(suggested[1]) not in taken and int(suggested[1]) > taken[1], line


@pytest.mark.runs_no_jobs
def test_a_second_daemon_on_the_same_data_dir_is_held_off(make_daemon: Callable[..., Daemon]) -> None:
    first = make_daemon()
    before = {p.name: p.stat().st_ino for p in first.data_dir.iterdir()}
    res = serve(first.data_dir, "127.0.0.1:0")
    assert res.returncode == 75, res.stderr  # EX_TEMPFAIL: the other daemon may stop
    assert "Traceback" not in res.stderr, res.stderr
    [line] = res.stderr.strip().splitlines()
    assert f"pid {first.pid}" in line and str(first.data_dir) in line and "--data-dir" in line, line
    # the first daemon's files are untouched (its socket was not replaced) and it still answers
    assert {p.name: p.stat().st_ino for p in first.data_dir.iterdir()} == before
    assert first.get("/healthz", token=None).status == 200
    assert first.cli("status").returncode == 0


def test_an_unusable_api_socket_path_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "api.sock").mkdir(parents=True)  # what is there cannot be replaced by a socket
    res = serve(data, "127.0.0.1:0")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr  # lasting: someone must remove it
    [line] = res.stderr.strip().splitlines()
    assert f"cannot create the API socket {data / 'api.sock'}: Is a directory" in line, line
    assert CREATED.isdisjoint(p.name for p in data.iterdir() if p.name != "api.sock")


@pytest.mark.runs_no_jobs
def test_a_data_dir_too_deep_for_a_socket_path_serves_its_api_socket(make_daemon: Callable[..., Daemon]) -> None:
    """sun_path holds 107 bytes: the worker socket was bound through /proc/self/fd, the API
    socket was refused (`cannot create the API socket …: None`). Both work now, and the CLI
    reaches the daemon by its socket, as a job's `cronwheel effect` does (CRONWHEEL_URL=unix:…)."""
    d = make_daemon("d" * 120)
    sock = d.data_dir / "api.sock"
    assert len(os.fsencode(sock)) > 107 and sock.is_socket()
    env = {**d.cli_env(), "CRONWHEEL_URL": f"unix:{sock}"}
    res = subprocess.run([sys.executable, "-m", "cronwheel", "status", "--json"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["workers"]["count"] == d.workers


def test_a_socket_left_by_a_killed_daemon_does_not_stop_the_next_start(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    d.kill()
    assert (d.data_dir / "api.sock").exists()
    d.start()
    assert d.cli("status").returncode == 0
