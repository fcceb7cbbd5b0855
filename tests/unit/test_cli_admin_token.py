"""When the CLI sends the local admin token on its own: only to the daemon that wrote it."""

from __future__ import annotations

import os
from pathlib import Path

from cronwheel.cli.context import local_admin, lock_holder


def local_admin_token(data_dir: Path, url: str) -> str | None:
    found = local_admin(data_dir, url)
    return None if found is None else found[0]


def data_dir(tmp_path: Path, addr: str = "http://127.0.0.1:7878", pid: int | None = None) -> Path:
    d = tmp_path / "dd"
    d.mkdir()
    (d / "admin-token").write_text("cw_secret\n")
    (d / "http.addr").write_text(addr + "\n")
    (d / "lock").write_text(f"{pid or os.getpid()}\n")
    return d


def test_the_daemon_that_wrote_it_gets_it(tmp_path: Path) -> None:
    assert local_admin_token(data_dir(tmp_path), "http://127.0.0.1:7878") == "cw_secret"


def test_another_host_or_port_never_does(tmp_path: Path) -> None:
    d = data_dir(tmp_path)
    assert local_admin_token(d, "http://127.0.0.1:7879") is None
    assert local_admin_token(d, "http://example.com:7878") is None
    assert local_admin_token(d, "http://10.1.2.3:7878") is None


def test_a_wildcard_bind_serves_loopback(tmp_path: Path) -> None:
    d = data_dir(tmp_path, "http://0.0.0.0:7878")
    assert local_admin_token(d, "http://localhost:7878") == "cw_secret"
    assert local_admin_token(d, "http://192.168.1.5:7878") is None


def test_nothing_when_the_daemon_is_gone(tmp_path: Path) -> None:
    d = data_dir(tmp_path, pid=2**22 + 12345)  # no such process: the port may be anyone's now
    assert local_admin_token(d, "http://127.0.0.1:7878") is None
    (d / "lock").unlink()
    assert local_admin_token(d, "http://127.0.0.1:7878") is None


def test_token_create_help_says_all_a_worker_token_may_do() -> None:
    # docs/security.md: a worker token claims executions, heartbeats, completes, records
    # effects and pings jobs; the help once left out claiming and pinging
    from click.testing import CliRunner

    from cronwheel.cli.main import cli

    res = CliRunner().invoke(cli, ["token", "create", "--help"], terminal_width=400)
    assert res.exit_code == 0, res.output
    worker = " ".join(res.output.split()).split("worker:", 1)[1].split(";", 1)[0]
    for word in ("claim", "heartbeat", "complete", "effects", "ping"):
        assert word in worker, worker


def test_localhost_is_a_loopback_name_and_is_sent_to_the_daemons_own_address(tmp_path: Path) -> None:
    """``--url http://localhost:PORT`` got no token from a daemon that wrote 127.0.0.1 (the
    README's curl examples say localhost); it is sent to 127.0.0.1, not to whichever of
    127.0.0.1 and ::1 the name resolves to first (another program may listen there)."""
    d = data_dir(tmp_path)
    assert local_admin(d, "http://localhost:7878") == ("cw_secret", "http://127.0.0.1:7878")
    assert local_admin(d, "http://LocalHost:7878/v1") == ("cw_secret", "http://127.0.0.1:7878/v1")
    assert local_admin(d, "http://localhost:7879") is None
    # an explicit other loopback address is another socket: not the daemon's
    assert local_admin(d, "http://[::1]:7878") is None


def test_localhost_reaches_an_ipv6_or_wildcard_daemon_at_its_loopback(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert local_admin(data_dir(tmp_path / "a", "http://[::1]:7878"), "http://localhost:7878") == ("cw_secret", "http://[::1]:7878")
    (tmp_path / "b").mkdir()
    assert local_admin(data_dir(tmp_path / "b", "http://[::]:7878"), "http://localhost:7878") == ("cw_secret", "http://[::1]:7878")
    (tmp_path / "c").mkdir()
    assert local_admin(data_dir(tmp_path / "c", "http://0.0.0.0:7878"), "http://[::1]:7878") == ("cw_secret", "http://[::1]:7878")


def test_the_lock_holder_is_a_live_cronwheel_process_only(tmp_path: Path) -> None:
    d = data_dir(tmp_path, pid=2**22 + 12345)  # no such process: a daemon that died
    assert lock_holder(d) is None
    (d / "lock").write_text("1\n")  # a live process, not cronwheel's (init)
    assert lock_holder(d) is None
    (d / "lock").unlink()
    assert lock_holder(d) is None
