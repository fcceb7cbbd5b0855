"""cronwheel under systemd: the unit files pass `systemd-analyze verify`, and a real daemon
speaks the notify protocol to a socket the test binds, as systemd would."""

from __future__ import annotations

import http.client
import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

UNIT = REPO / "systemd" / "cronwheel.service"
DROP_IN = REPO / "systemd" / "cronwheel.service.d" / "cron-replacement.conf.example"
INSTALLED = "/usr/local/bin/cronwheel"


def _unit_settings(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


@pytest.fixture
def unit_dir(tmp_path: Path) -> Path:
    """The unit (and its drop-ins dir) copied with ExecStart pointing at a cronwheel that
    exists here, and man pages where `man` finds them (verify checks Documentation=)."""
    exe = shutil.which("cronwheel") or str(Path(sys.executable).with_name("cronwheel"))
    assert Path(exe).exists(), "the cronwheel console script must be installed (pip install -e .)"
    d = tmp_path / "units"
    d.mkdir()
    (d / UNIT.name).write_text(UNIT.read_text().replace(INSTALLED, exe))
    for page in REPO.glob("man/cronwheel*.[0-9]"):
        section = tmp_path / "man" / f"man{page.suffix[1:]}"
        section.mkdir(parents=True, exist_ok=True)
        shutil.copy(page, section)
    return d


def verify(unit_dir: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    env = {**os.environ, "MANPATH": str(unit_dir.parent / "man")}
    return subprocess.run(
        ["systemd-analyze", "verify", str(unit_dir / UNIT.name)],
        capture_output=True, text=True, env=env, timeout=60,
    )


def test_unit_verifies_without_warnings(unit_dir: Path) -> None:
    res = verify(unit_dir)
    assert res.returncode == 0 and res.stderr == "" and res.stdout == "", res.stderr + res.stdout


def test_cron_replacement_drop_in_verifies_without_warnings(unit_dir: Path) -> None:
    drop_dir = unit_dir / f"{UNIT.name}.d"
    drop_dir.mkdir()
    exe = (unit_dir / UNIT.name).read_text().split("ExecStart=", 1)[1].split()[0]
    (drop_dir / "cron-replacement.conf").write_text(DROP_IN.read_text().replace(INSTALLED, exe))
    res = verify(unit_dir)
    assert res.returncode == 0 and res.stderr == "" and res.stdout == "", res.stderr + res.stdout
    # the check is real: a bad key in the drop-in is reported
    with open(drop_dir / "cron-replacement.conf", "a") as fh:
        fh.write("NoSuchSetting=1\n")
    assert "NoSuchSetting" in verify(unit_dir).stderr


def test_unit_settings_the_daemon_relies_on() -> None:
    s = _unit_settings(UNIT.read_text())
    assert s["Type"] == ["notify"]
    assert s["KillMode"] == ["mixed"]
    assert s["StateDirectory"] == ["cronwheel"] and s["RuntimeDirectory"] == ["cronwheel"]
    assert s["ExecStart"][0].startswith(INSTALLED + " serve")
    watchdog = int(s["WatchdogSec"][0].rstrip("s"))
    assert watchdog > 10, "Node.healthy() allows the scheduler 10 s between turns"
    assert s["ExecStart"][0] == INSTALLED + " serve --config /etc/cronwheel/cronwheel.toml"
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    conf = tomllib.loads((REPO / "etc" / "cronwheel.toml").read_text())
    assert conf["data_dir"] == "/var/lib/" + s["StateDirectory"][0]  # `cronwheel ls` finds the daemon
    grace = float(conf.get("grace_sec", 30))  # the daemon's default
    assert float(s["TimeoutStopSec"][0].rstrip("s")) > grace
    drop = _unit_settings(DROP_IN.read_text())
    assert drop["ExecStart"][0] == "", "a drop-in must reset ExecStart before replacing it"
    grace = float(re.search(r"--grace-sec (\d+)", drop["ExecStart"][1]).group(1))  # type: ignore[union-attr]
    assert float(drop["TimeoutStopSec"][0].rstrip("s")) > grace
    # the drop-in lifts every restriction of the base unit that a root cron job could meet
    lifted = {"ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "NoNewPrivileges", "RestrictSUIDSGID",
              "ProtectClock", "ProtectHostname", "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
              "ProtectControlGroups", "RestrictRealtime", "LockPersonality", "RestrictAddressFamilies", "UMask"}
    assert lifted <= set(s), "a setting the drop-in lifts is not in the base unit any more"
    assert all(key in drop for key in lifted), sorted(lifted - set(drop))
    assert drop["UMask"] == ["0022"] and drop["RestrictAddressFamilies"] == [""]


def test_a_configuration_error_is_not_restarted_and_a_refused_start_is(tmp_path: Path) -> None:
    """Restart=on-failure alone restarted a bad key every 2 s for ever (the start limit never
    tripped): the exit status of a configuration error is one the unit does not restart,
    and that of a start refused for a cause that may pass (here a busy port) is not. A
    refusal the daemon itself finds lasting (what is at its API socket's path cannot be
    replaced) is not restarted either: it exited 1, as a busy port did, and looped."""
    s = _unit_settings(UNIT.read_text())
    assert s["Restart"] == ["on-failure"]
    prevented = {int(code) for line in s.get("RestartPreventExitStatus", []) for code in line.split()}
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def serve(*args: str) -> int:
        cmd = [sys.executable, "-m", "cronwheel", "serve", "--data-dir", str(tmp_path / "d"), "--workers", "1", *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60).returncode

    conf = tmp_path / "cronwheel.toml"
    conf.write_text('wrokers = 2\n')
    assert serve("--config", str(conf), "--http", "127.0.0.1:0") in prevented
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = serve("--http", f"127.0.0.1:{taken.getsockname()[1]}")
    assert busy == 75 and busy not in prevented  # EX_TEMPFAIL
    (tmp_path / "lasting" / "api.sock").mkdir(parents=True)
    assert serve("--data-dir", str(tmp_path / "lasting"), "--http", "127.0.0.1:0") in prevented


# ---------------------------------------------------------------- the protocol, live


class NotifyListener:
    """What systemd does: a datagram socket, every message kept with what /healthz said at
    the instant READY=1 arrived."""

    def __init__(self, path: Path, data_dir: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.data_dir = data_dir
        self.messages: list[tuple[float, str]] = []
        self.health_at_ready: int | str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536).decode()
            except TimeoutError:
                continue
            except OSError:
                return
            if "READY=1" in data.splitlines():
                self.health_at_ready = self._healthz()
            self.messages.append((time.monotonic(), data))

    def _healthz(self) -> int | str:
        try:
            parts = urlsplit((self.data_dir / "http.addr").read_text().strip())
        except OSError as exc:
            return repr(exc)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status
        except OSError as exc:
            return repr(exc)
        finally:
            conn.close()

    def lines(self, prefix: str) -> list[str]:
        return [line for _, m in list(self.messages) for line in m.splitlines() if line.startswith(prefix)]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.fixture
def notify_daemon(make_daemon: Callable[..., Daemon], tmp_path: Path) -> Iterator[tuple[Daemon, NotifyListener]]:
    listener = NotifyListener(tmp_path / "notify.sock", tmp_path / "node")
    env = {"NOTIFY_SOCKET": str(tmp_path / "notify.sock"), "WATCHDOG_USEC": "1000000"}
    try:
        yield make_daemon(env=env, args=("--grace-sec", "20")), listener
    finally:
        listener.close()


def test_daemon_speaks_the_notify_protocol(notify_daemon: tuple[Daemon, NotifyListener], tmp_path: Path) -> None:
    d, sd = notify_daemon
    wait_for(lambda: sd.lines("READY=1"), 20, what="READY=1")
    assert sd.health_at_ready == 200, "READY=1 came before the API answered"
    assert len(sd.lines("READY=1")) == 1
    # STATUS= on READY and then every few seconds, saying jobs, next run and lag
    wait_for(lambda: len(sd.lines("STATUS=")) >= 2, 20, what="a periodic STATUS=")
    assert re.search(r"\d+ active jobs?, next run .*, dispatch lag p99", sd.lines("STATUS=")[-1])
    # WATCHDOG_USEC=1 s: pinged every half interval while the scheduler loop turns
    wait_for(lambda: len(sd.lines("WATCHDOG=1")) >= 4, 20, what="watchdog pings")
    pings = [t for t, m in sd.messages if m == "WATCHDOG=1"]
    assert min(b - a for a, b in itertools.pairwise(pings)) > 0.3

    # jobs (and workers) do not inherit the notify variables: a job cannot feed our watchdog
    out = tmp_path / "env.txt"
    job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": f'echo "[$NOTIFY_SOCKET][$WATCHDOG_USEC]" > {out}'})
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in d.executions(job["jobId"])), 20, what="the env job")
    assert out.read_text() == "[][]\n"

    # SIGTERM: STOPPING=1 at once, EXTEND_TIMEOUT_USEC while draining a running job
    slow = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "sleep 2"})
    wait_for(lambda: any(e["status"] == "RUNNING" for e in d.executions(slow["jobId"])), 20, what="the slow job to run")
    assert d.stop(timeout=30) == 0
    stopping = [m for _, m in sd.messages if "STOPPING=1" in m]
    assert len(stopping) == 1 and "draining 1 running" in stopping[0]
    extends = sd.lines("EXTEND_TIMEOUT_USEC=")
    assert extends and all(0 < int(x.split("=")[1]) <= 50_000_000 for x in extends)
    order = [m.split("=")[0] for _, m in sd.messages if m.startswith(("READY", "STOPPING", "EXTEND"))]
    assert order.index("READY") < order.index("STOPPING") < order.index("EXTEND_TIMEOUT_USEC")
    assert d.event("node.stopped")
