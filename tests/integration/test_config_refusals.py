"""What the configuration says together, refused where it was written: keys valid alone that
``serve`` cannot run with (a shared store without cluster mode, a reserve of every slot, two
mail transports, a sendmail that is not there, an empty data_dir, a duration for a number of
seconds) stop `cronwheel config` and `cronwheel serve` alike, with exit status 2 and the
file, line and key; and a SIGHUP that finds one changes nothing. Real processes, real
daemons."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

#: how long a refused start may take; a daemon that starts instead is killed then
DEADLINE_S = 30


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m cronwheel ARGS``, ended with its process group if it still runs at the
    deadline (the old code started a daemon where the new one refuses)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_CONFIG": "", **(env or {})}
    for name in ("CRONWHEEL_DATA_DIR", "STATE_DIRECTORY", "CRONWHEEL_URL"):
        full_env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "cronwheel", *args], cwd=cwd, env=full_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
        err += f"\n(still running after {DEADLINE_S} s: killed)"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


REFUSED = [
    # (the file, the key, its line, what the message says besides)
    ('store = "postgresql://cw@127.0.0.1:1/cw"\ncluster = false\n', "cluster", 2,
     ["false cannot go with a PostgreSQL store", "store from {conf}:1", "bucket leases"]),
    ("workers = 1\nslots = 4\nreserved_high_slots = 100\n", "reserved_high_slots", 3,
     ["100 slots reserved", "the node has 4", "workers = 1 from {conf}:1", "slots = 4 from {conf}:2"]),
    ("workers = 2\nslots = 2\nreserved_high_slots = 4\n", "reserved_high_slots", 3, ["4 slots reserved", "the node has 4"]),
    ('smtp_url = "smtp://relay.example.com"\nsendmail = "{true}"\n', "sendmail", 2,
     ["set as well as smtp_url (from {conf}:1)", "remove one"]),
    ('\nsendmail = "/usr/sbin/no-such-sendmail"\n', "sendmail", 2,
     ["'/usr/sbin/no-such-sendmail' is not an executable program"]),
    ('data_dir = ""\n', "data_dir", 1, ["is empty", "give the data directory's path"]),
    ('grace_sec = "1m"\n', "grace_sec", 1, ["'1m' is not a number of seconds"]),
    ('claim_ahead_ms = "2s"\n', "claim_ahead_ms", 1, ["'2s' is not a whole number of milliseconds"]),
]


@pytest.mark.parametrize(("text", "key", "line", "says"), REFUSED, ids=[r[1] + str(i) for i, r in enumerate(REFUSED)])
@pytest.mark.parametrize("command", ["config", "serve"])
def test_config_and_serve_refuse_alike_naming_file_line_and_key(
    tmp_path: Path, command: str, text: str, key: str, line: int, says: list[str]
) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text(text.replace("{true}", "/bin/true"))
    cwd = tmp_path / "cwd"
    cwd.mkdir(mode=0o755)
    data = tmp_path / "data"
    args = ["--config", str(conf), "--data-dir", str(data), command] if key != "data_dir" else ["--config", str(conf), command]
    res = run([*args, *(["--http", "127.0.0.1:0"] if command == "serve" else [])], cwd)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert f"{conf}:{line}: key {key!r}: " in res.stderr, res.stderr
    for words in says:
        assert words.replace("{conf}", str(conf)) in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    # nothing was started: no data directory, and the current one left as it was
    assert not data.exists() and not list(cwd.iterdir()) and cwd.stat().st_mode & 0o777 == 0o755


def test_a_shared_store_refuses_cluster_off_from_the_environment(tmp_path: Path) -> None:
    env = {"CRONWHEEL_CLUSTER": "false"}
    for command in ("config", "serve"):
        res = run(["--data-dir", str(tmp_path / "data"), command, *(["--"] if command == "config" else []),
                   "--store", "postgresql://cw@127.0.0.1:1/cw", "--http", "127.0.0.1:0"], tmp_path, env)
        assert res.returncode == 2, (command, res.returncode, res.stderr)
        assert "$CRONWHEEL_CLUSTER: false cannot go with a PostgreSQL store (store from flag --store)" in res.stderr


def _lookup_error(host: str) -> int | None:
    try:
        socket.getaddrinfo(host, 0)
    except socket.gaierror as exc:
        return exc.errno
    return None


def test_an_http_host_that_does_not_resolve_is_a_warning_then_a_start_failure_with_its_line(tmp_path: Path) -> None:
    """`cronwheel config` may run before the name service is up, or on another host: it warns.
    serve cannot listen on it, and says where it was written."""
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('workers = 1\nhttp = "no-such-host.invalid:0"\n')
    res = run(["--config", str(conf), "config"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith(f"warning: {conf}:2: key 'http': 'no-such-host.invalid' does not resolve"), res.stderr
    res = run(["--config", str(conf), "--data-dir", str(tmp_path / "data"), "serve"], tmp_path)
    # a name the name service says is not there is lasting (2, not restarted); one it could
    # not look up for now (EAI_AGAIN: at boot, no network yet) is 75, restarted
    assert res.returncode == (75 if _lookup_error("no-such-host.invalid") == socket.EAI_AGAIN else 2), res.stderr
    [said] = res.stderr.strip().splitlines()
    assert said.startswith(f"cronwheel serve: {conf}:2: key 'http': cannot listen on no-such-host.invalid:0"), said


def test_a_reload_that_reserves_every_slot_changes_nothing(tmp_path: Path, make_daemon: Callable[..., Daemon]) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text("reserved_high_slots = 1\n")
    d = make_daemon(args=("--config", str(conf)))  # --workers 2 --slots 4 from the harness: 8 slots
    conf.write_text('log_level = "warning"\n\nreserved_high_slots = 8\n')
    os.kill(d.pid, signal.SIGHUP)
    said = wait_for(lambda: d.event("config.reload_failed") or d.event("config.reloaded"), 20, what="the reload")
    assert said["event"] == "config.reload_failed", said
    assert (said["file"], said["line"], said["key"]) == (str(conf), 3, "reserved_high_slots")
    assert "8 slots reserved" in said["error"] and "workers = 2 from flag --workers" in said["error"]
    assert "slots = 4 from flag --slots" in said["error"]
    assert d.event("config.reload_refused") is None  # nothing was compared: the file changed nothing
    assert d.status()
