"""How the CLI finds and reaches the local daemon, on a real one: ``--url`` with
``localhost`` is the same daemon as 127.0.0.1 (the local admin token goes with it), a 401 for
a CLI that sent no token says where a token comes from, and a daemon that holds the data
directory but does not answer is named as such, not as absent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.daemon import REPO, Daemon


def cli(*args: str, data_dir: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_DATA_DIR": str(data_dir)}
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


def test_localhost_and_127_0_0_1_are_the_same_local_daemon(daemon: Daemon) -> None:
    port = urlsplit(daemon.url).port
    daemon.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"})
    for host in ("127.0.0.1", "localhost"):
        res = cli("--url", f"http://{host}:{port}", "ls", data_dir=daemon.data_dir)
        assert res.returncode == 0 and "yearly" in res.stdout, (host, res.stderr)


def test_a_401_tells_a_cli_user_where_a_token_comes_from(daemon: Daemon, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    res = cli("--url", daemon.url, "ls", data_dir=elsewhere)
    assert res.returncode == 1 and "bearer token" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert "--token or CRONWHEEL_TOKEN" in res.stderr, res.stderr
    assert f"{elsewhere.absolute() / 'admin-token'}" in res.stderr and "--data-dir" in res.stderr, res.stderr
    # a token that was sent and refused is not told to send one
    res = cli("--url", daemon.url, "--token", "cw_not_a_token", "ls", data_dir=elsewhere)
    assert res.returncode == 1 and "unknown or revoked token" in res.stderr and "CRONWHEEL_TOKEN" not in res.stderr, res.stderr


def test_a_stopped_daemon_is_named_as_such_not_as_absent(daemon: Daemon) -> None:
    """A SIGSTOPped daemon accepts connections on its socket and never answers: after the
    client's 30 s the CLI said "No daemon runs ... start one", which `serve` then refused
    ("another cronwheel serve (pid N) is running"). It names the pid that holds the lock,
    reached by its socket or by the address it published (``--url``), both waited at once."""
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda args: cli(*args, "status", data_dir=daemon.data_dir, timeout=90),
                                    [(), ("--url", daemon.url)]))  # fmt: skip
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    for res in answers:
        assert res.returncode == 69 and "Traceback" not in res.stderr, res.stderr
        assert "no answer within 30 s" in res.stderr, res.stderr
        assert (f"A daemon (pid {daemon.pid}) holds the data directory {daemon.data_dir.absolute()} but does not answer: "
                f"it is stopped (`kill -CONT {daemon.pid}` resumes it)") in res.stderr, res.stderr
        assert "No daemon runs" not in res.stderr and "Start one" not in res.stderr, res.stderr
    # resumed, it answers; stopped for good, the CLI says no daemon runs again
    assert cli("status", data_dir=daemon.data_dir).returncode == 0
    daemon.stop()
    res = cli("status", data_dir=daemon.data_dir)
    assert res.returncode == 69 and "No daemon runs with the data directory" in res.stderr, res.stderr
