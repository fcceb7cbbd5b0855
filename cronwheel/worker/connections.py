"""The pool's Unix socket: binding it (mode 0600 from the first instant), and each worker's
connection — the hello/welcome handshake, the frames it sends (results, heartbeats, output,
bye) checked against what the pool granted it, and the writes to it, whose backlog, once it
stops draining, tells a worker that stopped reading."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cronwheel.core.records import Completion, LeaseVerdict
from cronwheel.worker.framing import FROM_WORKER, HELLO, FrameDecoder, encode_frame, read_frame
from cronwheel.worker.protocol import (
    PROTOCOL_VERSION,
    Beats,
    Bye,
    HbAck,
    Out,
    Pong,
    ProtocolError,
    Results,
    Welcome,
    WorkerFrame,
)
from cronwheel.worker.slots import PoolWorker, Roster
from cronwheel.worker.sockpath import unix_path
from cronwheel.worker.waiting import wait_event

if TYPE_CHECKING:
    from cronwheel.worker.pool import PoolHandler

HELLO_TIMEOUT_SEC = 10.0  #: a connection must say hello within this
MAX_HELLO = 4096  #: a hello is tiny: an unknown peer cannot make us buffer a whole MAX_FRAME
#: bytes written to a worker and not yet taken by it above which its reading is watched. Not
#: a verdict: a herd of big grants (a payload, stdin and env of 64 KiB each, hundreds of
#: slots) passes it in one write while the worker reads as fast as it can, and losing that
#: worker cost every run it held an attempt (seen: 750 of 800 such runs dead-lettered)
MAX_BACKLOG = 8 << 20
#: a worker above MAX_BACKLOG that takes no byte for this long has stopped reading: it is lost
STALL_SEC = 10.0
#: a worker's process exited: how long its last frames (results written just before it exited)
#: may take to be read and handled before its executions are taken for lost
EXIT_READ_SEC = 5.0
DRAIN_CHECK_SEC = 0.25  #: how often a watched backlog is looked at
READ_CHUNK = 256 * 1024


class LogFn(Protocol):
    def __call__(self, event: str, **fields: Any) -> None: ...


def bind_socket(path: Path, backlog: int) -> socket.socket:
    """A listening, non-blocking socket at ``path``; a leftover socket file of a crashed daemon
    is replaced, a live one refused (RuntimeError)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                with unix_path(path) as name:
                    probe.connect(name)
            except OSError:  # nobody listens: a leftover of a crashed daemon
                path.unlink()
            else:
                raise RuntimeError(f"another daemon is listening on {path}")
            finally:
                probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # Linux creates the socket file with the fd's mode (minus umask): 0600 from the
        # first instant, no window in which another user could connect.
        with contextlib.suppress(OSError):
            os.fchmod(sock.fileno(), 0o600)
        with unix_path(path) as name:
            sock.bind(name)
        os.chmod(path, 0o600)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class Connections:
    """Serves the workers' connections for a pool: ``on_connection`` is the server's callback.

    The pool's reactions come in as callbacks: ``lose`` (the worker is gone for us),
    ``capacity`` (slots freed up), ``notify`` (readiness changed), ``stopping`` (refuse
    newcomers)."""

    def __init__(
        self,
        roster: Roster,
        handler: PoolHandler,
        log: LogFn,
        *,
        lose: Callable[[PoolWorker, str], None],
        capacity: Callable[[], None],
        notify: Callable[[], None],
        stopping: Callable[[], bool],
        stall_sec: float = STALL_SEC,
    ) -> None:
        self.roster = roster
        self._stall_sec = stall_sec
        self._watches: dict[str, asyncio.Task[None]] = {}  #: by worker id: whose backlog is watched
        self.handler = handler
        self._log = log
        self._lose = lose
        self._capacity = capacity
        self._notify = notify
        self._stopping = stopping

    async def close(self) -> None:
        """The pool stops: no backlog is watched any more."""
        watches = list(self._watches.values())
        for watch in watches:
            watch.cancel()
        await asyncio.gather(*watches, return_exceptions=True)

    def write(self, w: PoolWorker, data: bytes | bytearray) -> bool:
        """Queue ``data`` for ``w``; False if it cannot take it (gone)."""
        writer = w.writer
        if writer is None or writer.is_closing():
            return False
        rest: bytes | bytearray | memoryview = data
        if w.fd is not None and writer.transport.get_write_buffer_size() == 0:
            # Nothing is queued, so a direct write keeps the order. os.write releases the GIL
            # around the system call and uvloop's transport.write does not: with the machine
            # busy, the wakeup of the worker could preempt us inside it, GIL held, stalling
            # the store thread too (seen as a fifth of the herd's GIL time).
            try:
                sent = os.write(w.fd, data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                sent = 0  # the transport's own write reports the broken connection
            if sent == len(data):
                return True
            rest = memoryview(data)[sent:]  # no copy of what is left of a big grant frame
        writer.write(rest)
        w.queued += len(rest)
        backlog = writer.transport.get_write_buffer_size()
        if backlog > MAX_BACKLOG and w.worker_id not in self._watches:
            self._log("pool.backlog_watched", worker=w.worker_id, backlog=backlog)
            watch = asyncio.get_running_loop().create_task(self._watch_reading(w), name=f"drain-{w.worker_id}")
            self._watches[w.worker_id] = watch
            watch.add_done_callback(lambda _: self._watches.pop(w.worker_id, None))
        return True

    async def _watch_reading(self, w: PoolWorker) -> None:
        """While ``w``'s backlog is above MAX_BACKLOG: lose it if it takes nothing for the stall
        period. Progress is what left the buffer (all ever queued, less what is still there),
        so writes that land meanwhile do not hide a worker that reads, nor one that stopped."""
        taken, since = -1, 0.0
        loop = asyncio.get_running_loop()
        while not w.lost and w.writer is not None and not w.writer.is_closing():
            backlog = w.writer.transport.get_write_buffer_size()
            if backlog <= MAX_BACKLOG:
                return
            if w.queued - backlog != taken:
                taken, since = w.queued - backlog, loop.time()
            elif loop.time() - since >= self._stall_sec:
                self._log("pool.worker_hung", worker=w.worker_id, backlog=backlog, stalledSec=round(loop.time() - since, 1))
                self._lose(w, "not reading (backlog)")
                return
            await asyncio.sleep(DRAIN_CHECK_SEC)

    async def on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        w: PoolWorker | None = None
        try:
            try:
                hello = await asyncio.wait_for(read_frame(reader, HELLO, max_size=MAX_HELLO), HELLO_TIMEOUT_SEC)
            except (ProtocolError, EOFError, TimeoutError, OSError) as exc:
                self._log("pool.connection_refused", reason=f"{type(exc).__name__}: {exc}")
                return
            w = self.roster.workers.get(hello.worker_id)
            if (
                hello.v != PROTOCOL_VERSION
                or w is None
                or w.writer is not None
                or w.lost
            ):
                self._log("pool.connection_refused", worker=hello.worker_id, v=hello.v,
                          reason="version" if hello.v != PROTOCOL_VERSION else "unknown or duplicate worker")
                w = None
                return
            if hello.slots != w.slots:
                self._log("pool.worker_slots", worker=w.worker_id, slots=hello.slots)
                w.slots = hello.slots
            w.writer = writer
            sock = writer.get_extra_info("socket")
            w.fd = sock.fileno() if sock is not None else None
            writer.write(encode_frame(Welcome(PROTOCOL_VERSION, live_output=True)))
            if self._stopping():
                # it connected after the stop's byes went out: it leaves the way the others do
                # (a refusal would read as a lost worker, and make it exit as if we had died)
                w.leaving = True
                writer.write(encode_frame(Bye()))
            else:
                w.ready = True
                self._log("pool.worker_ready", worker=w.worker_id, pid=hello.pid)
                self._capacity()
            self._notify()
            await self._serve(w, reader)
        except Exception as exc:  # a handler bug: do not let it pass silently
            self._log("pool.connection_error", worker=w.worker_id if w else None, error=repr(exc))
            if w is not None:
                self._lose(w, f"pool error: {exc!r}")
        finally:
            if w is not None:
                self._lose(w, "connection closed")
                w.hung_up.set()
            writer.close()

    async def read_to_the_end(self, w: PoolWorker) -> None:
        """``w``'s process exited: let its connection be read to the end first, so that the
        results it sent just before exiting are applied, not taken for lost work (the exit
        and the last bytes on the socket arrive in either order). Bounded: EXIT_READ_SEC."""
        if w.writer is None or w.lost:
            return
        await wait_event(w.hung_up, EXIT_READ_SEC)

    async def _serve(self, w: PoolWorker, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder(FROM_WORKER)
        while not w.lost:
            try:
                data = await reader.read(READ_CHUNK)
            except OSError:
                return
            if not data:
                return
            try:
                frames = decoder.feed(data)
            except ProtocolError as exc:
                self._log("pool.protocol_error", worker=w.worker_id, error=str(exc))
                self._lose(w, "protocol error")
                return
            await self._handle(w, frames)
    async def _handle(self, w: PoolWorker, frames: list[WorkerFrame]) -> None:
        """Apply one read's frames in order, calling the handler once per run of same-type
        frames (a batch)."""
        if w.suspect and frames:
            w.suspect = False  # it speaks: it is not frozen (any stale epoch it sends is fenced)
            self._log("pool.worker_alive", worker=w.worker_id)
            self._capacity()
        i = 0
        while i < len(frames) and not w.lost:
            kind = type(frames[i])
            j = i
            while j < len(frames) and type(frames[j]) is kind:
                j += 1
            batch = frames[i:j]
            i = j
            if kind is Results:
                await self._on_results(w, [c for f in batch if isinstance(f, Results) for c in f.results])
            elif kind is Beats:
                await self._on_beats(w, [b for f in batch if isinstance(f, Beats) for b in f.beats])
            elif kind is Out:
                for f in batch:  # output of a lease taken from it meanwhile is dropped
                    if isinstance(f, Out) and w.inflight.get(f.execution_id) == f.lease_epoch:
                        self.handler.on_output(f.execution_id, f.lease_epoch, f.data)
            elif kind is Bye:
                w.leaving = True
                self._notify()
            elif kind is Pong:
                pass
            else:  # a second hello
                self._log("pool.protocol_error", worker=w.worker_id, error=f"unexpected {kind.__name__.lower()}")
                self._lose(w, "protocol error")

    async def _on_results(self, w: PoolWorker, completions: list[Completion]) -> None:
        """The results a worker sent, decoded as ``Completion`` records: each is passed on as
        it is, with ``worker_id`` set to this connection's worker."""
        results: list[Completion] = []
        stranger: Completion | None = None
        forget = self.roster.forget
        worker_id = w.worker_id
        for c in completions:
            if not forget(c.execution_id, worker_id, c.lease_epoch):
                key = (c.execution_id, c.lease_epoch)
                if key not in w.released:
                    stranger = c  # never granted to it at that epoch: a broken or hostile peer
                    break
                # aborted or superseded while it ran: expected, and the store would fence it
                del w.released[key]
                self._log("pool.result_dropped", worker=worker_id, executionId=c.execution_id,
                          leaseEpoch=c.lease_epoch)
                continue
            c.worker_id = worker_id  # whatever it said: the connection says who it is
            results.append(c)
        if results:
            try:
                await self.handler.on_results(worker_id, results)
            except Exception as exc:
                # not the worker's fault: keep it. The executions stay RUNNING in the store
                # until their leases expire, and the reaper retries them.
                self._log("pool.handler_error", worker=worker_id, call="on_results",
                          count=len(results), error=repr(exc))
            self._capacity()
        if stranger is not None:
            self._log("pool.protocol_error", worker=worker_id, error="result for an execution it does not hold",
                      executionId=stranger.execution_id[:200], leaseEpoch=stranger.lease_epoch)
            self._lose(w, "protocol error")

    async def _on_beats(self, w: PoolWorker, beats: list[tuple[str, int]]) -> None:
        ours = [(x, e) for x, e in beats if w.inflight.get(x) == e]
        lost = [(x, LeaseVerdict.LEASE_LOST.value) for x, e in beats if w.inflight.get(x) != e]
        if ours:
            try:
                answered = await self.handler.on_heartbeats(w.worker_id, ours)
            except Exception as exc:  # the leases were not renewed; the worker beats again later
                self._log("pool.handler_error", worker=w.worker_id, call="on_heartbeats", error=repr(exc))
                answered = []
            epochs = dict(ours)
            for x, reason in answered:
                if x in epochs:
                    self.roster.forget(x, w.worker_id, epochs[x], released=True)
                lost.append((x, reason))
            if answered:
                self._capacity()
        if not w.lost:
            self.write(w, encode_frame(HbAck([(x, r[:1024]) for x, r in lost])))
