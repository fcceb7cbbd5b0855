"""The sd_notify protocol, against real AF_UNIX datagram sockets (path and abstract)."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cronwheel.obs.systemd import Notifier, notify, watchdog_interval


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    yield str(path), sock
    sock.close()


def drain(sock: socket.socket) -> list[str]:
    out = []
    sock.setblocking(False)
    try:
        while True:
            out.append(sock.recv(4096).decode())
    except BlockingIOError:
        pass
    finally:
        sock.settimeout(5)
    return out


def test_notify_sends_one_datagram_to_a_path_socket(listener: tuple[str, socket.socket]) -> None:
    path, sock = listener
    assert notify("READY=1\nSTATUS=up", path)
    assert sock.recv(4096) == b"READY=1\nSTATUS=up"


def test_notify_reaches_an_abstract_socket() -> None:
    name = f"cronwheel-test-{secrets.token_hex(6)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(5)
        assert notify("WATCHDOG=1", "@" + name)
        assert sock.recv(4096) == b"WATCHDOG=1"


def test_notify_without_a_socket_is_a_quiet_no_op(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False
    assert notify("READY=1", "relative/path") is False  # not an address systemd would give
    assert notify("READY=1", str(tmp_path / "nobody-listens")) is False  # systemd gone: not fatal


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "junk"}, None),
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4243"}, None),  # meant for another process
    ],
)
def test_watchdog_interval(env: dict[str, str], expected: float | None) -> None:
    assert watchdog_interval(dict(env), pid=4242) == expected


def test_from_environ_takes_the_variables_out_so_children_cannot_ping(listener: tuple[str, socket.socket]) -> None:
    path, _ = listener
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid()), "OTHER": "x"}
    n = Notifier.from_environ(env)
    assert n.enabled and n.socket_path == path and n.watchdog_sec == 2.0
    assert env == {"OTHER": "x"}
    assert Notifier.from_environ({}).enabled is False


def test_messages(listener: tuple[str, socket.socket]) -> None:
    path, sock = listener
    n = Notifier(path)
    n.ready("3 jobs")
    n.status("busy")
    n.stopping("draining")
    n.extend_timeout(12.5)
    n.watchdog()
    assert drain(sock) == [
        "READY=1\nSTATUS=3 jobs", "STATUS=busy", "STOPPING=1\nSTATUS=draining",
        "EXTEND_TIMEOUT_USEC=12500000", "WATCHDOG=1",
    ]


def test_run_pings_the_watchdog_only_while_healthy_and_sends_status(listener: tuple[str, socket.socket]) -> None:
    path, sock = listener
    n = Notifier(path, watchdog_sec=0.1)  # ping every 0.05 s
    healthy = [True]
    got: list[str] = []

    async def status() -> str:
        return "fine"

    async def main() -> None:
        task = asyncio.create_task(n.run(lambda: healthy[0], status, status_every_sec=0.05))
        loop = asyncio.get_running_loop()

        async def collect_until(pred, within_sec: float = 5.0) -> None:
            deadline = loop.time() + within_sec
            while not pred():
                assert loop.time() < deadline, got
                await asyncio.sleep(0.02)
                got.extend(drain(sock))

        await collect_until(lambda: got.count("WATCHDOG=1") >= 3 and "STATUS=fine" in got)
        healthy[0] = False  # the scheduler loop is stuck: pings stop, status goes on
        drain(sock)  # no await since the flip: every ping sent before it is in the buffer
        got.clear()
        await collect_until(lambda: got.count("STATUS=fine") >= 3)
        assert "WATCHDOG=1" not in got
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


def test_extend_while_asks_for_more_time_until_the_drain_ends(listener: tuple[str, socket.socket]) -> None:
    path, sock = listener
    n = Notifier(path)

    async def main() -> None:
        drained = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.call_later(0.25, drained.set)
        await n.extend_while(drained.wait(), budget_sec=10, step_sec=0.05)

    asyncio.run(main())
    msgs = drain(sock)
    assert len(msgs) >= 3 and all(m.startswith("EXTEND_TIMEOUT_USEC=") for m in msgs)
    assert all(0 < int(m.split("=")[1]) <= 100_000 for m in msgs)  # 2 steps at most


def test_a_disabled_notifier_still_runs_the_drain() -> None:
    n = Notifier(None)
    done = []

    async def work() -> None:
        done.append(1)

    asyncio.run(n.extend_while(work(), budget_sec=1))
    assert done == [1]
    asyncio.run(asyncio.wait_for(n.run(lambda: True, lambda: None), 1))  # type: ignore[arg-type]
