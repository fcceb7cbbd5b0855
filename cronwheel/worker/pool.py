"""The daemon's side of the local workers: the socket server, slot accounting and supervision.

``WorkerPool`` spawns ``n_workers`` worker processes (``cronwheel.worker.process``), each in its
own session so that a terminal's Ctrl-C reaches only the daemon, which then stops them in
order. Each worker connects to the pool's Unix socket (mode 0600) and says ``hello`` with the id
the pool gave it; the pool answers ``welcome`` and from then on the worker counts as ready.

What the pool promises its handler (the dispatcher):

* **Slots.** ``assign`` spreads executions over ready workers, least loaded first; it reserves
  nothing, ``send_grants`` marks the slots used. A slot frees when the worker's result for that
  ``(execution_id, lease_epoch)`` arrives, when the execution is aborted (``abort``, or a
  heartbeat answered lost), or when the worker is lost. Each of those calls ``on_capacity``.
* **Results and heartbeats** are passed on in batches (every frame that arrived in one read).
  Only what the pool granted to *that* worker at *that* epoch is passed on: a result or beat for
  anything else (an aborted run, a stale epoch, another worker's execution) is dropped, or
  answered lost, by the pool itself.
* **Lost workers.** When a worker's process dies, its connection closes, it sends an invalid
  frame, or it stops reading (its unsent backlog passes ``MAX_BACKLOG``), ``on_worker_lost`` is
  called at once with everything it had in flight, the process is terminated (SIGTERM, SIGKILL
  after ``KILL_AFTER_SEC``) and a new one is spawned under a new id
  (``{node}-{incarnation}-w{index}-{generation}``), after a backoff of min(30 s, 0.1 s × 2^n) when it keeps
  dying young.

Handler calls for one worker are made one at a time, in the order its frames arrived; the reads
from that worker wait meanwhile (natural back-pressure, and bigger batches).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import os
import secrets
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from cronwheel.core.model import Grant
from cronwheel.core.records import Completion, LeaseVerdict, Outcome
from cronwheel.worker.protocol import (
    PROTOCOL_VERSION,
    WORKER_TO_DAEMON,
    FrameDecoder,
    ProtocolError,
    encode_frame,
    encode_grant_frames,
    grant_to_wire,
    pack_grant,
    read_frame,
    unix_path,
)

HELLO_TIMEOUT_SEC = 10.0  #: a connection must say hello within this
MAX_HELLO = 4096  #: a hello is tiny: an unknown peer cannot make us buffer a whole MAX_FRAME
MAX_RELEASED = 4096  #: per worker: recently aborted (execution, epoch) whose late result is expected
SPAWN_READY_SEC = 30.0  #: a spawned worker must be ready within this, or it is killed
KILL_AFTER_SEC = 2.0  #: SIGTERM → SIGKILL for a worker we are getting rid of
MAX_BACKLOG = 8 << 20  #: bytes written to a worker and not yet taken by it: above this it is hung
HEALTHY_AFTER_SEC = 10.0  #: a worker that lived this long resets the crash-loop backoff
READ_CHUNK = 256 * 1024


class PoolHandler(Protocol):
    async def on_results(self, worker_id: str, results: list[Completion]) -> None: ...

    async def on_heartbeats(self, worker_id: str, beats: list[tuple[str, int]]) -> list[tuple[str, str]]:
        """Renew these leases; return ``(execution_id, reason)`` for the ones lost or cancelled."""
        ...

    async def on_worker_lost(self, worker_id: str, execution_ids: list[tuple[str, int]]) -> None:
        """``(execution_id, lease_epoch)`` that the worker had in flight when it was lost."""
        ...

    def on_output(self, execution_id: str, lease_epoch: int, data: bytes) -> None:
        """Output of a running execution, as the worker forwards it (the lease is current)."""
        ...

    def on_capacity(self) -> None:
        """Slots freed up (a worker connected, a result came, a worker was lost, an abort)."""
        ...


def backoff_sec(failures: int) -> float:
    """Delay before respawning a worker that died young ``failures`` times in a row."""
    return min(30.0, 0.1 * float(1 << min(failures, 16)))


@dataclass(eq=False)
class _Worker:
    index: int
    generation: int
    worker_id: str
    slots: int
    proc: asyncio.subprocess.Process | None = None
    writer: asyncio.StreamWriter | None = None
    fd: int | None = None  #: the connection's socket, for direct writes (see WorkerPool._write)
    inflight: dict[str, int] = field(default_factory=dict)  #: execution_id -> lease_epoch
    #: (execution_id, lease_epoch) taken from it (abort, lost lease) whose result may still come
    released: dict[tuple[str, int], None] = field(default_factory=dict)
    ready: bool = False  #: said hello, got welcome
    leaving: bool = False  #: bye sent or received: no new grants
    lost: bool = False  #: on_worker_lost done: nothing more is accepted from it
    #: let a lease expire (paused? partitioned?): no new grants until it shows a sign of life,
    #: or a frozen worker would be handed back the very execution that was taken from it
    suspect: bool = False
    spawned_at: float = 0.0

    @property
    def free(self) -> int:
        return max(0, self.slots - len(self.inflight))

    @property
    def usable(self) -> bool:
        return self.ready and not self.leaving and not self.lost and not self.suspect


class WorkerPool:
    def __init__(
        self,
        socket_path: Path,
        handler: PoolHandler,
        *,
        n_workers: int,
        slots: int,
        worker_cmd: list[str] | None = None,
        env: dict[str, str] | None = None,
        log: Callable[[str, dict[str, Any]], None] | None = None,
        node_id: str | None = None,
    ) -> None:
        if n_workers < 0 or slots < 1:
            raise ValueError("n_workers must be >= 0 and slots >= 1")
        self.socket_path = Path(socket_path)
        self.handler = handler
        self.n_workers = n_workers
        self.slots = slots
        self.worker_cmd = list(worker_cmd) if worker_cmd else [sys.executable, "-m", "cronwheel.worker.process"]
        #: the workers' environment: the daemon's, with these on top
        self.env = {**os.environ, **(env or {})}
        self._log_fn = log
        self.node_id = node_id or socket.gethostname()
        #: differs on every daemon start, so a worker id is never reused by a later incarnation
        #: and a restarted node can tell its predecessor's (dead) workers from its own
        self.incarnation = secrets.token_hex(3)
        self._workers: dict[str, _Worker] = {}  # by worker_id, current generation of each index
        self._slots_of: list[_Worker | None] = [None] * n_workers
        self._inflight: dict[str, tuple[str, int]] = {}  # execution_id -> (worker_id, lease_epoch)
        self._server: asyncio.AbstractServer | None = None
        self._supervisors: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._changed: asyncio.Condition | None = None
        self._capacity_pending = False

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Bind the socket and spawn the workers; returns without waiting for their hellos."""
        loop = asyncio.get_running_loop()
        self._changed = asyncio.Condition()
        sock = self._bind()
        self._server = await asyncio.start_unix_server(self._on_connection, sock=sock)
        self._supervisors = [
            loop.create_task(self._supervise(i), name=f"worker-supervisor-{i}") for i in range(self.n_workers)
        ]

    def _bind(self) -> socket.socket:
        path = self.socket_path
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
            sock.listen(max(16, self.n_workers * 2))
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        return sock

    async def wait_ready(self, n: int | None = None, timeout: float = 30) -> None:
        """Until ``n`` (default: all) workers are ready. Raises TimeoutError."""
        want = self.n_workers if n is None else n
        cond = self._cond()
        async with asyncio.timeout(timeout), cond:
            await cond.wait_for(lambda: sum(w.ready and not w.lost for w in self._workers.values()) >= want)

    async def stop(self, grace_sec: float) -> None:
        """Send bye (workers finish running jobs, take no more), wait up to ``grace_sec`` for
        them to exit, then SIGTERM (workers kill their jobs' process groups) and SIGKILL."""
        self._stopping = True
        for w in list(self._workers.values()):
            if w.writer is not None and not w.lost and not w.leaving:
                w.leaving = True
                self._write(w, encode_frame({"t": "bye"}))
        procs = [w.proc for w in self._workers.values() if w.proc is not None and w.proc.returncode is None]
        if procs:
            await asyncio.wait([asyncio.ensure_future(p.wait()) for p in procs], timeout=max(0.0, grace_sec))
        alive = [w for w in self._workers.values() if w.proc is not None and w.proc.returncode is None]
        for w in alive:
            self._terminate(w)
        procs = [w.proc for w in alive if w.proc is not None]
        if procs:
            await asyncio.wait([asyncio.ensure_future(p.wait()) for p in procs], timeout=KILL_AFTER_SEC + 1)
        for w in list(self._workers.values()):
            self._lose(w, "pool stopped")
        for t in self._supervisors:
            t.cancel()
        await asyncio.gather(*self._supervisors, return_exceptions=True)
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    # ---------------------------------------------------------------- queries
    def free_slots(self) -> int:
        return sum(w.free for w in self._workers.values() if w.usable)

    def assign(self, n: int) -> list[tuple[str, int]]:
        """Choose workers for up to ``n`` executions, least loaded first (by share of slots
        used). Sends and reserves nothing: ``send_grants`` does."""
        heap = [
            (len(w.inflight) / w.slots, w.index, w.worker_id, len(w.inflight), w.slots)
            for w in self._workers.values()
            if w.usable and w.free > 0
        ]
        heapq.heapify(heap)
        counts: dict[str, int] = {}
        for _ in range(n):
            if not heap:
                break
            _, index, wid, used, slots = heapq.heappop(heap)
            counts[wid] = counts.get(wid, 0) + 1
            if used + 1 < slots:
                heapq.heappush(heap, ((used + 1) / slots, index, wid, used + 1, slots))
        return list(counts.items())

    def worker_pids(self) -> dict[str, int]:
        return {
            w.worker_id: w.proc.pid
            for w in self._workers.values()
            if w.proc is not None and w.proc.returncode is None
        }

    def in_flight(self) -> Mapping[str, tuple[str, int]]:
        """execution_id -> (worker_id, lease_epoch): a live read-only view, O(1) lookups."""
        return MappingProxyType(self._inflight)

    # ---------------------------------------------------------------- commands
    def send_grants(self, worker_id: str, grants: list[Grant]) -> None:
        """Write grant frames to the worker (no await; batched under MAX_FRAME) and mark the
        slots used. If the worker is gone or leaving, ``on_worker_lost`` gets them instead. A
        grant that cannot be encoded (too big, not JSON) is failed by the pool itself
        (``on_results`` with worker_id None)."""
        if not grants:
            return
        w = self._workers.get(worker_id)
        packed: list[bytes] = []
        sendable: list[Grant] = []
        bad: list[Completion] = []
        for g in grants:
            try:
                packed.append(pack_grant(grant_to_wire(g)))
                sendable.append(g)
            except ProtocolError as exc:
                bad.append(Completion(g.execution_id, None, g.lease_epoch, Outcome.FAILED,
                                      error=f"cannot hand to a worker: {exc}"))
        if bad:
            self._log("pool.grant_refused", worker=worker_id, count=len(bad), error=bad[0].error)
            self._spawn_bg(self.handler.on_results(worker_id, bad))
        if not sendable:
            return
        if w is None or not w.usable or w.writer is None:
            self._log("pool.grant_to_gone_worker", worker=worker_id, count=len(sendable))
            self._spawn_bg(self.handler.on_worker_lost(worker_id, [(g.execution_id, g.lease_epoch) for g in sendable]))
            self._capacity()
            return
        if len(sendable) > w.free:
            # the worker queues what exceeds its slots; the dispatcher should not let it happen
            self._log("pool.oversubscribed", worker=worker_id, grants=len(sendable), free=w.free)
        for g in sendable:
            w.inflight[g.execution_id] = g.lease_epoch
            self._inflight[g.execution_id] = (worker_id, g.lease_epoch)
        for frame in encode_grant_frames(packed):
            if not self._write(w, frame):
                break

    def abort(self, execution_id: str, reason: str) -> bool:
        """Tell the worker holding it to kill it now; its slot is free at once. False if no
        worker holds it."""
        owner = self._inflight.get(execution_id)
        if owner is None:
            return False
        worker_id, epoch = owner
        w = self._workers.get(worker_id)
        self._forget(execution_id, worker_id, epoch, released=True)
        if w is None or w.lost:
            return False
        self._write(w, encode_frame({"t": "abort", "execution_id": execution_id, "reason": reason[:1024]}))
        if reason == "lease_lost" and not w.suspect:
            w.suspect = True
            self._write(w, encode_frame({"t": "ping"}))
            self._log("pool.worker_suspect", worker=worker_id, executionId=execution_id)
        self._log("pool.abort", worker=worker_id, executionId=execution_id, leaseEpoch=epoch, reason=reason)
        self._capacity()
        return True

    # ---------------------------------------------------------------- internals
    def _log(self, event: str, **fields: Any) -> None:
        if self._log_fn is not None:
            self._log_fn(event, fields)

    def _cond(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _notify(self) -> None:
        cond = self._cond()

        async def notify() -> None:
            async with cond:
                cond.notify_all()

        self._spawn_bg(notify())

    def _spawn_bg(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._bg_done)

    def _bg_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log("pool.handler_error", error=repr(task.exception()))

    def _capacity(self) -> None:
        """Tell the handler that slots freed up: once per loop iteration, never re-entrantly."""
        if self._capacity_pending or self._stopping:
            return
        self._capacity_pending = True

        def call() -> None:
            self._capacity_pending = False
            self.handler.on_capacity()

        asyncio.get_running_loop().call_soon(call)

    def _forget(self, execution_id: str, worker_id: str, epoch: int, released: bool = False) -> bool:
        """Drop (execution, epoch) from a worker's in-flight set. True if it was there.
        ``released``: taken from a live worker, whose result for it may still arrive (and is
        then dropped rather than treated as a protocol violation)."""
        w = self._workers.get(worker_id)
        was = w is not None and w.inflight.get(execution_id) == epoch
        if was:
            assert w is not None
            del w.inflight[execution_id]
            if released:
                w.released[(execution_id, epoch)] = None
                if len(w.released) > MAX_RELEASED:
                    del w.released[next(iter(w.released))]
        if self._inflight.get(execution_id) == (worker_id, epoch):
            del self._inflight[execution_id]
        return was

    def _write(self, w: _Worker, data: bytes) -> bool:
        writer = w.writer
        if writer is None or writer.is_closing():
            return False
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
            data = memoryview(data)[sent:]
        writer.write(data)
        backlog = writer.transport.get_write_buffer_size()
        if backlog > MAX_BACKLOG:
            self._log("pool.worker_hung", worker=w.worker_id, backlog=backlog)
            self._lose(w, "not reading (backlog)")
            return False
        return True

    def _lose(self, w: _Worker, why: str) -> None:
        """The worker is gone for us: report its in-flight work, close it, make it exit."""
        if w.lost:
            return
        w.lost = True
        lost = list(w.inflight.items())
        for execution_id, epoch in lost:
            if self._inflight.get(execution_id) == (w.worker_id, epoch):
                del self._inflight[execution_id]
        w.inflight.clear()
        if lost or not w.leaving:
            self._log("pool.worker_lost", worker=w.worker_id, reason=why, inFlight=len(lost))
        else:
            self._log("pool.worker_left", worker=w.worker_id, reason=why)
        if lost:
            self._spawn_bg(self.handler.on_worker_lost(w.worker_id, lost))
        if w.writer is not None:
            w.writer.close()
        if w.proc is not None and w.proc.returncode is None:
            # one that said bye is on its way out: give it a moment before the signals
            self._terminate(w, patience=KILL_AFTER_SEC if w.leaving else 0.0)
        self._capacity()
        self._notify()

    def _terminate(self, w: _Worker, patience: float = 0.0) -> None:
        """SIGTERM (after ``patience`` seconds, if it is still there), SIGKILL KILL_AFTER_SEC later."""
        proc = w.proc
        if proc is None or proc.returncode is not None:
            return

        async def escalate() -> None:
            for sig, wait in ((None, patience), (signal.SIGTERM, KILL_AFTER_SEC), (signal.SIGKILL, None)):
                if proc.returncode is not None:
                    return
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(sig)
                if wait is not None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(proc.wait(), wait)

        self._spawn_bg(escalate())

    # ---------------------------------------------------------------- supervision
    async def _supervise(self, index: int) -> None:
        generation = 0
        failures = 0
        while not self._stopping:
            worker_id = f"{self.node_id}-{self.incarnation}-w{index}-{generation}"
            w = _Worker(index, generation, worker_id, self.slots, spawned_at=time.monotonic())
            generation += 1
            cmd = [*self.worker_cmd, "--socket", str(self.socket_path), "--worker-id", worker_id,
                   "--slots", str(self.slots)]
            old = self._slots_of[index]
            if old is not None:
                self._workers.pop(old.worker_id, None)
            # registered before the spawn: its hello may arrive before create_subprocess_exec returns
            self._slots_of[index] = w
            self._workers[worker_id] = w
            try:
                w.proc = await asyncio.create_subprocess_exec(
                    *cmd, stdin=asyncio.subprocess.DEVNULL, env=self.env, start_new_session=True,
                )
            except OSError as exc:
                self._log("pool.spawn_failed", worker=worker_id, error=str(exc))
                w.lost = True
                failures += 1
                await asyncio.sleep(backoff_sec(failures - 1))
                continue
            self._log("pool.worker_spawned", worker=worker_id, pid=w.proc.pid)
            self._spawn_bg(self._expect_ready(w))
            try:
                code = await w.proc.wait()
            except asyncio.CancelledError:
                if w.proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        w.proc.kill()
                    await asyncio.shield(w.proc.wait())
                raise
            self._log("pool.worker_exited", worker=worker_id, pid=w.proc.pid, code=code)
            self._lose(w, f"process exited with {code}")
            if self._stopping:
                return
            lived = time.monotonic() - w.spawned_at
            failures = 0 if (w.ready and lived >= HEALTHY_AFTER_SEC) else failures + 1
            delay = backoff_sec(failures - 1) if failures else 0.0
            if delay >= 1:
                self._log("pool.worker_backoff", index=index, delay=delay, failures=failures)
            await asyncio.sleep(delay)

    async def _expect_ready(self, w: _Worker) -> None:
        """A worker that neither connects nor dies (stuck at start-up) is killed."""
        async with self._cond():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._cond().wait_for(lambda: w.ready or w.lost), SPAWN_READY_SEC)
        if not w.ready and not w.lost:
            self._log("pool.worker_not_ready", worker=w.worker_id, after=SPAWN_READY_SEC)
            self._lose(w, "not ready in time")

    # ---------------------------------------------------------------- connections
    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        w: _Worker | None = None
        try:
            try:
                hello = await asyncio.wait_for(read_frame(reader, accept={"hello"}, max_size=MAX_HELLO), HELLO_TIMEOUT_SEC)
            except (ProtocolError, EOFError, TimeoutError, OSError) as exc:
                self._log("pool.connection_refused", reason=f"{type(exc).__name__}: {exc}")
                return
            w = self._workers.get(hello["worker_id"])
            if (
                hello["v"] != PROTOCOL_VERSION
                or w is None
                or w.writer is not None
                or w.lost
                or self._stopping
            ):
                self._log("pool.connection_refused", worker=hello["worker_id"], v=hello["v"],
                          reason="version" if hello["v"] != PROTOCOL_VERSION else "unknown or duplicate worker")
                w = None
                return
            if hello["slots"] != w.slots:
                self._log("pool.worker_slots", worker=w.worker_id, slots=hello["slots"])
                w.slots = hello["slots"]
            w.writer = writer
            sock = writer.get_extra_info("socket")
            w.fd = sock.fileno() if sock is not None else None
            writer.write(encode_frame({"t": "welcome", "v": PROTOCOL_VERSION, "live_output": True}))
            w.ready = True
            self._log("pool.worker_ready", worker=w.worker_id, pid=hello["pid"])
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
            writer.close()

    async def _serve(self, w: _Worker, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder(accept=WORKER_TO_DAEMON)
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

    async def _handle(self, w: _Worker, frames: list[dict[str, Any]]) -> None:
        """Apply one read's frames in order, calling the handler once per run of same-type
        frames (a batch)."""
        if w.suspect and frames:
            w.suspect = False  # it speaks: it is not frozen (any stale epoch it sends is fenced)
            self._log("pool.worker_alive", worker=w.worker_id)
            self._capacity()
        i = 0
        while i < len(frames) and not w.lost:
            t = frames[i]["t"]
            j = i
            while j < len(frames) and frames[j]["t"] == t:
                j += 1
            batch = frames[i:j]
            i = j
            if t == "result":
                await self._on_results(w, batch)
            elif t == "hb":
                await self._on_beats(w, [(b[0], b[1]) for f in batch for b in f["beats"]])
            elif t == "out":
                for f in batch:  # output of a lease taken from it meanwhile is dropped
                    if w.inflight.get(f["execution_id"]) == f["lease_epoch"]:
                        self.handler.on_output(f["execution_id"], f["lease_epoch"], f["data"])
            elif t == "bye":
                w.leaving = True
                self._notify()
            elif t == "pong":
                pass
            else:  # a second hello
                self._log("pool.protocol_error", worker=w.worker_id, error=f"unexpected {t}")
                self._lose(w, "protocol error")

    async def _on_results(self, w: _Worker, frames: list[dict[str, Any]]) -> None:
        results: list[Completion] = []
        stranger: dict[str, Any] | None = None
        for f in frames:
            if not self._forget(f["execution_id"], w.worker_id, f["lease_epoch"]):
                key = (f["execution_id"], f["lease_epoch"])
                if key not in w.released:
                    stranger = f  # never granted to it at that epoch: a broken or hostile peer
                    break
                # aborted or superseded while it ran: expected, and the store would fence it
                del w.released[key]
                self._log("pool.result_dropped", worker=w.worker_id, executionId=f["execution_id"],
                          leaseEpoch=f["lease_epoch"])
                continue
            results.append(Completion(
                execution_id=f["execution_id"],
                worker_id=w.worker_id,
                lease_epoch=f["lease_epoch"],
                outcome=Outcome(f["outcome"]),
                exit_code=f.get("exit_code"),
                error=f.get("error"),
                output=f.get("output"),
            ))
        if results:
            try:
                await self.handler.on_results(w.worker_id, results)
            except Exception as exc:
                # not the worker's fault: keep it. The executions stay RUNNING in the store
                # until their leases expire, and the reaper retries them.
                self._log("pool.handler_error", worker=w.worker_id, call="on_results",
                          count=len(results), error=repr(exc))
            self._capacity()
        if stranger is not None:
            self._log("pool.protocol_error", worker=w.worker_id, error="result for an execution it does not hold",
                      executionId=str(stranger["execution_id"])[:200], leaseEpoch=stranger["lease_epoch"])
            self._lose(w, "protocol error")

    async def _on_beats(self, w: _Worker, beats: list[tuple[str, int]]) -> None:
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
                    self._forget(x, w.worker_id, epochs[x], released=True)
                lost.append((x, reason))
            if answered:
                self._capacity()
        if not w.lost:
            self._write(w, encode_frame({"t": "hb_ack", "lost": [[x, r[:1024]] for x, r in lost]}))
