"""What ends a local worker process whatever its event loop is doing: a thread of its own.

A worker stops through its loop (``process.py``): the read loop sees the daemon's socket close,
or a signal or a ``bye`` calls ``Worker._finish``, which kills every run, and ``run()`` winds
down. That takes a loop that turns and a way out that ends, and neither is certain: an async
callable may block the loop (``time.sleep`` in an ``async def``) or not end when cancelled (it
catches ``CancelledError`` and waits on), a killed command may not be reaped (uninterruptible
sleep), the way out may have a bug of its own. A worker caught so outlived its daemon, idle,
deaf to SIGTERM (a stopping worker ignores signals), and nobody killed its commands.

``Lifeline`` is a thread, started once the worker has connected:

* it watches the daemon's socket for a hang-up (``POLLRDHUP`` on a copy of its descriptor):
  the daemon is gone (killed, crashed), whatever the loop is doing. It asks the loop to stop
  and starts the deadline itself.
* from the moment the worker stops (``stopping``), the process has ``deadline_sec`` to end.
  Then the thread kills the process groups of the commands still running (``groups``), logs
  ``worker.shutdown_forced`` and leaves with ``os._exit``.
* ``force`` does the same at once: a second SIGTERM or SIGINT.

Why the socket rather than the daemon's pid (``prctl(PR_SET_PDEATHSIG)``, or polling
``getppid()``): the socket's other end is the daemon however the worker was started
(``CRONWHEEL_WORKER_CMD`` may put ``nice``, ``setpriv`` or a sandbox in between, and a sandbox
with a pid namespace of its own cannot see the daemon's pid); its hang-up is what the read loop
takes for the daemon's death already; a frozen daemon (SIGSTOP) keeps it open, as it keeps its
workers. PDEATHSIG would also fire when the *thread* that spawned the worker ends rather than
the daemon, must be set between fork and exec or raced against the parent's death, and
delivers a signal, which a blocked loop never handles: a thread is needed for the deadline
anyway, and it can watch the socket at no cost (one ``poll`` that sleeps until something
happens, never a wake-up while all is well).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import NoReturn

from cronwheel.worker.eventlog import log
from cronwheel.worker.targets import killpg

#: how long a stopping worker may take to end. Its own way out is bounded by 3 s for killed runs
#: to end, 2 s for its socket to close and 2 s for job threads to return (``process.py``): past
#: this, something on that way is stuck, and waiting longer would not help it.
STOP_DEADLINE_SEC = 10.0


class Lifeline:
    def __init__(self, worker_id: str, deadline_sec: float = STOP_DEADLINE_SEC) -> None:
        self.worker_id = worker_id
        self.deadline_sec = deadline_sec
        #: the process groups of the commands started and not yet reaped (the loop keeps it;
        #: the thread copies it, one C call under the GIL)
        self.groups: set[int] = set()
        self._lock = threading.Lock()
        self._stop_at: float | None = None  #: time.monotonic() when the worker began to stop
        self._code = 0  #: what the process exits with when forced: the stop's
        self._wake_r, self._wake_w = os.pipe()  # stopping() wakes the thread's poll with a byte
        self._thread: threading.Thread | None = None

    def watch(self, sock_fd: int, on_hangup: Callable[[], None], hangup_code: int) -> None:
        """Start the thread on the daemon's socket ``sock_fd`` (the loop's, which the thread
        copies): when the daemon hangs up, ``on_hangup`` is called on the running loop and the
        worker is stopping with ``hangup_code``."""
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        fd = os.dup(sock_fd)  # the loop closes its own as it leaves; this one cannot be reused meanwhile
        self._thread = threading.Thread(target=self._run, args=(fd, loop, on_hangup, hangup_code),
                                        name="cronwheel-lifeline", daemon=True)  # fmt: skip
        self._thread.start()

    def stopping(self, code: int) -> None:
        """The worker began to stop, to exit with ``code``: the deadline runs from now (the
        first call's; later ones change nothing)."""
        with self._lock:
            if self._stop_at is not None:
                return
            self._stop_at = time.monotonic()
            self._code = code
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"\0")

    def force(self, why: str) -> NoReturn:
        """Kill the commands' process groups and end the process now."""
        groups = self.groups.copy()
        log("worker.shutdown_forced", worker=self.worker_id, reason=why, groups=len(groups))
        for pgid in groups:
            killpg(pgid, signal.SIGKILL)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(self._code)

    def _run(self, fd: int, loop: asyncio.AbstractEventLoop, on_hangup: Callable[[], None], hangup_code: int) -> None:
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        poller.register(fd, select.POLLRDHUP)  # (POLLHUP and POLLERR come whether asked or not)
        while self._stop_at is None:
            if any(ready == fd for ready, _ in poller.poll()):
                self.stopping(hangup_code)
                with contextlib.suppress(RuntimeError):  # the loop is closed: it is ending anyway
                    loop.call_soon_threadsafe(on_hangup)
        os.close(fd)  # not watched any more: the worker's own close of the socket is the last
        stop_at = self._stop_at
        assert stop_at is not None
        time.sleep(max(0.0, stop_at + self.deadline_sec - time.monotonic()))
        self.force(f"still running {self.deadline_sec:g} s after it began to stop")
