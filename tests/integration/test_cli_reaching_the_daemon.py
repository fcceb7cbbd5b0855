"""How the CLI finds and reaches the local daemon, on a real one: ``--url`` with
``localhost`` is the same daemon as 127.0.0.1 (the local admin token goes with it), a 401 for
a CLI that sent no token says where a token comes from, a daemon that holds the data
directory but does not answer is named as such, not as absent, and so is one whose directory
this user may not enter (a service's)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support import otheruser as other_user
from tests.support.daemon import REPO, Daemon


def cli(*args: str, data_dir: Path, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_DATA_DIR": str(data_dir), **(env or {})}
    env.pop("CRONWHEEL_TOKEN", None)
    env.pop("CRONWHEEL_URL", None)
    return subprocess.run([sys.executable, "-m", "cronwheel", *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_a_daemon_on_ipv6_loopback_publishes_an_address_the_cli_can_use(make_daemon: Callable[..., Daemon]) -> None:
    """An IPv6 address in a URL goes in brackets: http.addr said http://::1:PORT, which no
    client could parse, so the CLI found no daemon (and no local admin token)."""
    daemon = make_daemon(args=("--http", "[::1]:0"))
    assert urlsplit(daemon.url).hostname == "::1", daemon.url
    daemon.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"})
    res = cli("--url", daemon.url, "ls", data_dir=daemon.data_dir)
    assert res.returncode == 0 and "yearly" in res.stdout, res.stderr


@pytest.mark.runs_no_jobs
def test_localhost_and_127_0_0_1_are_the_same_local_daemon(daemon: Daemon) -> None:
    port = urlsplit(daemon.url).port
    daemon.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"})
    for host in ("127.0.0.1", "localhost"):
        res = cli("--url", f"http://{host}:{port}", "ls", data_dir=daemon.data_dir)
        assert res.returncode == 0 and "yearly" in res.stdout, (host, res.stderr)


@pytest.mark.runs_no_jobs
def test_a_401_tells_a_cli_user_where_a_token_comes_from(daemon: Daemon, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    res = cli("--url", daemon.url, "ls", data_dir=elsewhere)
    assert res.returncode == 1 and "bearer token" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert "--token or CRONWHEEL_TOKEN" in res.stderr, res.stderr
    assert f"{elsewhere.absolute() / 'admin-token'}" in res.stderr and "--data-dir" in res.stderr, res.stderr
    # a token that was sent and refused is not told to send one
    res = cli("--url", daemon.url, "--token", "cw_not_a_token", "ls", data_dir=elsewhere)
    assert res.returncode == 1 and "unknown or revoked token" in res.stderr and "CRONWHEEL_TOKEN" not in res.stderr, res.stderr


@pytest.mark.runs_no_jobs
def test_a_stopped_daemon_is_named_as_such_not_as_absent(daemon: Daemon) -> None:
    """A SIGSTOPped daemon accepts connections on its socket and never answers: after the
    client's timeout the CLI said "No daemon runs ... start one", which `serve` then refused
    ("another cronwheel serve (pid N) is running"). It names the pid that holds the lock,
    reached by its socket or by the address it published (``--url``), both waited at once:
    one for ``--request-timeout``, one for ``CRONWHEEL_REQUEST_TIMEOUT``."""
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda run: run(), [
                lambda: cli("--request-timeout", "3s", "status", data_dir=daemon.data_dir, timeout=60),
                lambda: cli("--url", daemon.url, "status", data_dir=daemon.data_dir, timeout=60,
                            env={"CRONWHEEL_REQUEST_TIMEOUT": "2.5s"}),
            ]))  # fmt: skip
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    for res, waited in zip(answers, ("3", "2.5"), strict=True):
        assert res.returncode == 69 and "Traceback" not in res.stderr, res.stderr
        assert f"no answer within {waited} s" in res.stderr, res.stderr
        assert (f"A daemon (pid {daemon.pid}) holds the data directory {daemon.data_dir.absolute()} but does not answer: "
                f"it is stopped (`kill -CONT {daemon.pid}` resumes it)") in res.stderr, res.stderr
        assert "No daemon runs" not in res.stderr and "Start one" not in res.stderr, res.stderr
    # resumed, it answers; stopped for good, the CLI says no daemon runs again
    assert cli("status", data_dir=daemon.data_dir).returncode == 0
    daemon.stop()
    res = cli("status", data_dir=daemon.data_dir)
    assert res.returncode == 69 and "No daemon runs with the data directory" in res.stderr, res.stderr



def test_a_user_who_cannot_enter_the_data_dir_is_told_how_to_reach_the_daemon() -> None:
    """A service's data directory is 0700: another local user's CLI was told that no daemon
    runs (the lock is unreadable too), and, pointed at the TCP address, got a 401 that sent
    it to an admin token it cannot read. Each says what this user can do instead, and that
    way works."""
    other_user.require()
    root = Path(tempfile.mkdtemp(prefix="cronwheel-other-user-"))
    root.chmod(0o755)  # the way to the data directory is open; the directory itself is not
    d = Daemon(root / "data")
    try:
        d.start()
        data = d.data_dir.absolute()
        res = other_user.run("--data-dir", str(data), "ls")
        assert res.returncode == 69 and "Traceback" not in res.stderr, res.stderr
        said = " ".join(res.stderr.split())
        assert "permission denied on the socket" in said, said
        assert f"A daemon may be running with the data directory {data}, but this user cannot reach its socket " \
               "(it is root's, mode 0700)" in said, said
        assert "CRONWHEEL_URL=$(cat /run/cronwheel/http.addr)" in said and "CRONWHEEL_TOKEN" in said, said
        assert "No daemon runs" not in said, said

        res = other_user.run("--data-dir", str(data), "ls", env={"CRONWHEEL_URL": d.url})
        said = " ".join(res.stderr.split())
        assert res.returncode == 1 and "which this user cannot read" in said and "cronwheel token create" in said, said

        made = d.cli("token", "create", "--role", "admin", "--name", "alice")
        assert made.returncode == 0, made.stderr
        d.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"})
        res = other_user.run("ls", env={"CRONWHEEL_URL": d.url, "CRONWHEEL_TOKEN": made.stdout.strip()})
        assert res.returncode == 0 and "yearly" in res.stdout, res.stderr
    finally:
        try:
            d.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)
