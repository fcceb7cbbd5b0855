"""A command's process, started with ``posix_spawn`` and watched through a pidfd on the loop.

Why not ``asyncio.create_subprocess_exec``: around the spawn itself it runs ~150 µs of Python
per process here (Popen's set-up, a transport and a protocol for the stdin pipe, the child
watcher's callback, a task to wait on), which in a herd of short commands was half of a
worker's CPU (py-spy of a worker, ``bench_herd.py --command true``). A command needs none of
it: its stdin is one write of the payload, its output one pipe the runner reads itself, its end
one readable pidfd.

Why one epoll set of its own (``Readiness``) for every run's pidfd and output pipe, itself one
reader on the loop: uvloop's ``add_reader`` and ``remove_reader`` make a libuv poll handle per
descriptor, which costs two ``ioctl`` and six ``epoll_ctl`` (four of them failing) per
descriptor and a handle's allocation and close; here a descriptor is one ``epoll_ctl`` in and
one out (strace of a worker running ``true``, docs/benchmarks.md).

What the child gets is what ``subprocess.Popen(start_new_session=True, close_fds=True)`` gives:
its own session and process group, the given stdin and output, SIGPIPE and SIGXFSZ back to their
default actions (Python ignores them), no blocked signals, and no other descriptor of the
worker's (every descriptor Python opens is close-on-exec; the file actions only map 0, 1 and 2).
One difference no program can see: glibc's posix_spawn leaves its two internal signals (32 and
33, below SIGRTMIN, which glibc keeps to itself) ignored rather than at their default.
A run that switches accounts or directories (``runAs``: user, groups, cwd) goes through Popen,
which can do that between fork and exec; its end is watched the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

#: signals Python ignores that a command expects at their default action (as Popen's restore_signals)
_DEFAULT_IN_CHILD = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name))


class Child:
    """A started process: ``exited`` resolves to its exit code as ``Popen.returncode`` has it
    (negative: killed by that signal)."""

    __slots__ = ("_popen", "exited", "pid")

    def __init__(self, pid: int, exited: asyncio.Future[int], popen: subprocess.Popen[bytes] | None) -> None:
        self.pid = pid
        self.exited = exited
        self._popen = popen  # held until reaped, so that its finaliser never reaps the pid itself

    @property
    def returncode(self) -> int | None:
        return self.exited.result() if self.exited.done() and not self.exited.cancelled() else None


class Readiness:
    """Descriptors watched for input in one epoll set (level-triggered), which is one reader of
    ``loop``: ``add(fd, handler)`` calls ``handler()`` on the loop whenever ``fd`` is readable
    (or hung up) until ``remove(fd)``, which must come before ``fd`` is closed."""

    __slots__ = ("_epoll", "_handlers", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._epoll = select.epoll()  # close-on-exec, as every descriptor Python opens
        self._handlers: dict[int, Callable[[], None]] = {}
        loop.add_reader(self._epoll.fileno(), self._ready)

    def add(self, fd: int, handler: Callable[[], None]) -> None:
        self._epoll.register(fd, select.EPOLLIN)
        self._handlers[fd] = handler

    def remove(self, fd: int) -> None:
        if self._handlers.pop(fd, None) is not None:
            self._epoll.unregister(fd)

    def _ready(self) -> None:
        for fd, _ in self._epoll.poll(0):
            handler = self._handlers.get(fd)
            if handler is None:  # removed by an earlier handler of this batch
                continue
            try:
                handler()
            except Exception as exc:  # one run's bad luck must not cost the others their events
                self._loop.call_exception_handler({"message": "error in a run's readiness handler", "exception": exc})

    def close(self) -> None:
        if not self._epoll.closed:
            self._loop.remove_reader(self._epoll.fileno())
            self._epoll.close()
        self._handlers.clear()


def spawn(
    path: str, argv: Sequence[str], env: dict[str, str], stdin_fd: int, out_fd: int, popen: dict[str, Any],
    watch: Readiness,
) -> Child:
    """Start the program ``path`` (absolute) with ``argv`` as the leader of a new session, with
    ``stdin_fd`` as its stdin and ``out_fd`` as both stdout and stderr; ``popen`` holds Popen's
    account and directory options (user, group, extra_groups, cwd), empty for most runs; its exit
    is watched in ``watch``. Raises OSError (or ValueError for an argument Python refuses) when
    it cannot start."""
    loop = asyncio.get_running_loop()
    started: subprocess.Popen[bytes] | None = None
    if popen or min(stdin_fd, out_fd) <= 2:  # a low descriptor would be closed by its own dup2
        started = subprocess.Popen(list(argv), executable=path, stdin=stdin_fd, stdout=out_fd, stderr=out_fd, env=env,
                                   start_new_session=True, **popen)  # fmt: skip
        pid = started.pid
    else:
        pid = os.posix_spawn(
            path, list(argv), env,
            file_actions=[(os.POSIX_SPAWN_DUP2, stdin_fd, 0), (os.POSIX_SPAWN_DUP2, out_fd, 1),
                          (os.POSIX_SPAWN_DUP2, out_fd, 2)],
            setsid=True, setsigdef=_DEFAULT_IN_CHILD, setsigmask=(),
        )  # fmt: skip
    child = Child(pid, loop.create_future(), started)
    _watch(loop, child, watch)
    return child


def _watch(loop: asyncio.AbstractEventLoop, child: Child, watch: Readiness) -> None:
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):  # no pidfds (kernel < 5.3, or seccomp): a thread waits instead
        waited = loop.run_in_executor(None, os.waitpid, child.pid, 0)
        waited.add_done_callback(lambda f: _settle(child, f.result()[1]))
        return

    def on_exit() -> None:
        watch.remove(pidfd)
        os.close(pidfd)
        _settle(child, os.waitpid(child.pid, 0)[1])  # readable: it has exited, so this returns at once

    watch.add(pidfd, on_exit)


def _settle(child: Child, status: int) -> None:
    code = os.waitstatus_to_exitcode(status)
    if child._popen is not None:
        child._popen.returncode = code  # reaped here: Popen must not wait for it again
    if not child.exited.done():
        child.exited.set_result(code)


class StdinFeed:
    """Writes ``data`` to the non-blocking pipe ``fd`` as the reader takes it, then closes it;
    a command that never reads its stdin (or exits first) just has the rest dropped."""

    __slots__ = ("_data", "_fd", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, data: bytes) -> None:
        self._loop, self._fd, self._data = loop, fd, memoryview(data)
        os.set_blocking(fd, False)
        if self._write():  # nearly always: a payload fits in the pipe's 64 KiB
            self.close()
        else:
            loop.add_writer(fd, self._on_writable)

    def _write(self) -> bool:
        """Write what the pipe takes; True when nothing is left to write."""
        try:
            while self._data:
                self._data = self._data[os.write(self._fd, self._data):]
        except BlockingIOError:
            return False
        except OSError:  # EPIPE: the command closed its stdin
            self._data = self._data[:0]
        return True

    def _on_writable(self) -> None:
        if self._write():
            self.close()

    def close(self) -> None:
        if self._fd < 0:
            return
        self._loop.remove_writer(self._fd)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1
