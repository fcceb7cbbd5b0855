"""The systemd notify protocol (sd_notify(3)) without libsystemd: datagrams of ``KEY=value``
lines sent to the AF_UNIX socket named by ``$NOTIFY_SOCKET``.

* ``READY=1`` once the node can serve (store open, API bound, wheel loaded); ``STATUS=`` a
  line for ``systemctl status``; ``STOPPING=1`` on the way down, with ``EXTEND_TIMEOUT_USEC=``
  while running executions drain; ``WATCHDOG=1`` at half of ``$WATCHDOG_USEC``, sent by the
  daemon only while its scheduler loop turns (``Node.healthy()``), so a stuck loop stops the
  pings and systemd restarts the service.
* Outside systemd (no ``$NOTIFY_SOCKET``) every call is a cheap no-op.
* The variables are removed from the environment once read (like ``sd_notify(unset=1)``), so
  workers and jobs do not inherit them: a job must never be able to ping our watchdog.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping

NOTIFY_VARS = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


def _address(path: str) -> str | bytes:
    """``@name`` is a Linux abstract socket (a leading NUL byte on the wire)."""
    if path.startswith("@"):
        return b"\0" + path[1:].encode()
    return path


def notify(message: str, socket_path: str | None = None) -> bool:
    """Send one notification (``"READY=1\\nSTATUS=…"``). Returns False when there is no
    socket to send to or the send failed (systemd gone): notifying is never fatal."""
    path = socket_path if socket_path is not None else os.environ.get("NOTIFY_SOCKET")
    if not path or not (path.startswith("/") or path.startswith("@")):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(message.encode(), _address(path))
    except OSError:
        return False
    return True


def watchdog_interval(environ: MutableMapping[str, str] | None = None, pid: int | None = None) -> float | None:
    """The watchdog timeout in seconds from ``$WATCHDOG_USEC``, or None when the watchdog is
    off or meant for another process (``$WATCHDOG_PID`` names someone else)."""
    env = os.environ if environ is None else environ
    usec = env.get("WATCHDOG_USEC", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    want_pid = env.get("WATCHDOG_PID", "")
    if want_pid and (not want_pid.isdigit() or int(want_pid) != (os.getpid() if pid is None else pid)):
        return None
    return int(usec) / 1_000_000


class Notifier:
    """What the daemon tells systemd. Build it with ``from_environ()`` before spawning any
    child process (it takes the variables out of the environment)."""

    def __init__(self, socket_path: str | None, watchdog_sec: float | None = None) -> None:
        self.socket_path = socket_path or None
        self.watchdog_sec = watchdog_sec if self.socket_path else None

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None, *, unset: bool = True) -> Notifier:
        env = os.environ if environ is None else environ
        notifier = cls(env.get("NOTIFY_SOCKET"), watchdog_interval(env))
        if unset:
            for var in NOTIFY_VARS:
                env.pop(var, None)
        return notifier

    @property
    def enabled(self) -> bool:
        return self.socket_path is not None

    def send(self, *lines: str) -> bool:
        if self.socket_path is None:
            return False
        return notify("\n".join(lines), self.socket_path)

    def ready(self, status: str | None = None) -> bool:
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={text}")

    def stopping(self, status: str | None = None) -> bool:
        return self.send("STOPPING=1", *([f"STATUS={status}"] if status else []))

    def extend_timeout(self, seconds: float) -> bool:
        return self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    # ---- the daemon's background duties
    async def run(
        self,
        healthy: Callable[[], bool],
        status: Callable[[], Awaitable[str]],
        status_every_sec: float = 5.0,
    ) -> None:
        """Until cancelled: ``WATCHDOG=1`` every half watchdog interval while ``healthy()``
        (a stuck loop stops the pings; systemd then restarts us), and ``STATUS=`` every
        ``status_every_sec``. Never raises for a failed status line."""
        if not self.enabled:
            return
        loop = asyncio.get_running_loop()
        ping_every = self.watchdog_sec / 2 if self.watchdog_sec else None
        next_ping = loop.time()
        next_status = loop.time() + status_every_sec
        while True:
            now = loop.time()
            if ping_every is not None and now >= next_ping:
                if healthy():
                    self.watchdog()
                next_ping = now + ping_every
            if now >= next_status:
                with contextlib.suppress(Exception):
                    self.status(await status())
                next_status = loop.time() + status_every_sec
            wake = next_status if ping_every is None else min(next_ping, next_status)
            await asyncio.sleep(max(0.01, wake - loop.time()))

    async def extend_while(self, work: Awaitable[object], budget_sec: float, step_sec: float = 5.0) -> None:
        """Await ``work`` (the drain), asking systemd every ``step_sec`` to extend the stop
        timeout, for at most ``budget_sec`` in all: a drain that hangs past its budget is
        left to systemd's SIGKILL (KillMode=mixed)."""
        task = asyncio.ensure_future(work)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + budget_sec
        while True:
            left = give_up - loop.time()
            if left > 0:
                self.extend_timeout(min(left, 2 * step_sec))
            done, _ = await asyncio.wait({task}, timeout=step_sec if left > 0 else None)
            if done:
                task.result()
                return
