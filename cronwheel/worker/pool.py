"""The daemon's side of the local workers: ``WorkerPool`` spawns and supervises them, hands
them grants and aborts. Its socket and each worker's connection are ``connections.py``'s, the
ledger of who holds which slot ``slots.py``'s.

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
  frame, or it stops reading (its unsent backlog is above ``connections.MAX_BACKLOG`` and takes
  nothing for ``connections.STALL_SEC``), ``on_worker_lost`` is called at once with everything
  it had in flight, the process is terminated (SIGTERM, SIGKILL after ``KILL_AFTER_SEC``), the
  command runs it left behind are killed once it is gone (``orphans.py``), and a new one is
  spawned under a new id (``{node}-{incarnation}-w{index}-{generation}``), after a backoff of
  min(30 s, 0.1 s × 2^n) when it keeps dying young.

Handler calls for one worker are made one at a time, in the order its frames arrived; the reads
from that worker wait meanwhile (natural back-pressure, and bigger batches).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Protocol

from cronwheel.core.config import inherited_environment
from cronwheel.core.model import Grant
from cronwheel.core.records import Completion, Outcome
from cronwheel.worker import orphans
from cronwheel.worker.connections import STALL_SEC, Connections, bind_socket
from cronwheel.worker.framing import encode_frame, encode_grant_frames
from cronwheel.worker.protocol import Abort, Bye, Ping
from cronwheel.worker.slots import PoolWorker, Roster

SPAWN_READY_SEC = 30.0  #: a spawned worker must be ready within this, or it is killed
KILL_AFTER_SEC = 2.0  #: SIGTERM → SIGKILL for a worker we are getting rid of
HEALTHY_AFTER_SEC = 10.0  #: a worker that lived this long resets the crash-loop backoff


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
        log: Callable[[str, dict[str, Any]], object] | None = None,  # its return value is ignored
        node_id: str | None = None,
        stall_sec: float = STALL_SEC,
    ) -> None:
        if n_workers < 0 or slots < 1:
            raise ValueError("n_workers must be >= 0 and slots >= 1")
        self.socket_path = Path(socket_path)
        self.handler = handler
        self.n_workers = n_workers
        self.slots = slots
        self.worker_cmd = list(worker_cmd) if worker_cmd else [sys.executable, "-m", "cronwheel.worker.process"]
        #: the workers' environment (their jobs' too): the daemon's less its settings, these on top
        self.env = {**inherited_environment(os.environ), **(env or {})}
        self._log_fn = log
        self.node_id = node_id or socket.gethostname()
        #: differs on every daemon start, so a worker id is never reused by a later incarnation
        #: and a restarted node can tell its predecessor's (dead) workers from its own
        self.incarnation = secrets.token_hex(3)
        self._roster = Roster(n_workers)
        self._links = Connections(self._roster, handler, self._log, lose=self._lose, capacity=self._capacity,
                                  notify=self._notify, stopping=lambda: self._stopping, stall_sec=stall_sec)  # fmt: skip
        self._server: asyncio.AbstractServer | None = None
        self._supervisors: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._hurry = asyncio.Event()
        self._changed: asyncio.Condition | None = None
        self._capacity_pending = False

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Bind the socket and spawn the workers; returns without waiting for their hellos."""
        loop = asyncio.get_running_loop()
        self._changed = asyncio.Condition()
        sock = bind_socket(self.socket_path, max(16, self.n_workers * 2))
        self._server = await asyncio.start_unix_server(self._links.on_connection, sock=sock)
        self._supervisors = [
            loop.create_task(self._supervise(i), name=f"worker-supervisor-{i}") for i in range(self.n_workers)
        ]

    async def wait_ready(self, n: int | None = None, timeout_sec: float = 30) -> None:
        """Until ``n`` (default: all) workers are ready. Raises TimeoutError."""
        want = self.n_workers if n is None else n
        cond = self._cond()
        async with asyncio.timeout(timeout_sec), cond:
            await cond.wait_for(lambda: self._roster.ready_count() >= want)

    async def stop(self, grace_sec: float) -> None:
        """Send bye (workers finish running jobs, take no more), wait up to ``grace_sec`` for
        them to exit, then SIGTERM (workers kill their jobs' process groups) and SIGKILL."""
        self._stopping = True
        for w in list(self._roster.workers.values()):
            if w.writer is not None and not w.lost and not w.leaving:
                w.leaving = True
                self._links.write(w, encode_frame(Bye()))
        procs = [w.proc for w in self._roster.workers.values() if w.proc is not None and w.proc.returncode is None]
        if procs:  # until they have all left, the grace runs out, or hurry() cuts it short
            hurried: asyncio.Future[Any] = asyncio.ensure_future(self._hurry.wait())
            await asyncio.wait([asyncio.gather(*(p.wait() for p in procs)), hurried], timeout=max(0.0, grace_sec), return_when=asyncio.FIRST_COMPLETED)
            hurried.cancel()
        alive = [w for w in self._roster.workers.values() if w.proc is not None and w.proc.returncode is None]
        for w in alive:
            self._terminate(w)
        procs = [w.proc for w in alive if w.proc is not None]
        if procs:
            await asyncio.wait([asyncio.ensure_future(p.wait()) for p in procs], timeout=KILL_AFTER_SEC + 1)
        workers = list(self._roster.workers.values())
        await asyncio.gather(*(self._links.read_to_the_end(w) for w in workers))
        for w in workers:
            self._lose(w, "pool stopped")
        await self._links.close()
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

    def hurry(self) -> None:
        """End the stop's grace now: running jobs are killed and reported interrupted."""
        self._hurry.set()

    # ---------------------------------------------------------------- queries
    def free_slots(self) -> int:
        return self._roster.free_slots()

    def assign(self, n: int) -> list[tuple[str, int]]:
        """Choose workers for up to ``n`` executions, least loaded first (by share of slots
        used). Sends and reserves nothing: ``send_grants`` does."""
        return self._roster.assign(n)

    def worker_pids(self) -> dict[str, int]:
        return self._roster.worker_pids()

    def in_flight(self) -> Mapping[str, tuple[str, int]]:
        """execution_id -> (worker_id, lease_epoch): a live read-only view, O(1) lookups."""
        return self._roster.in_flight()

    # ---------------------------------------------------------------- commands
    def send_grants(self, worker_id: str, grants: list[Grant]) -> None:
        """Write grant frames to the worker (no await; batched under MAX_FRAME) and mark the
        slots used. If the worker is gone or leaving, ``on_worker_lost`` gets them instead. A
        grant that cannot be encoded (too big, not JSON) is failed by the pool itself
        (``on_results`` with worker_id None)."""
        if not grants:
            return
        w = self._roster.workers.get(worker_id)
        frames, refused = encode_grant_frames(grants)
        sendable = grants
        bad: list[Completion] = []
        if refused:
            out = {id(g) for g, _ in refused}
            sendable = [g for g in grants if id(g) not in out]
            bad = [Completion(g.execution_id, None, g.lease_epoch, Outcome.FAILED, error=f"cannot hand to a worker: {why}")
                   for g, why in refused]  # fmt: skip
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
            self._roster.hold(w, g.execution_id, g.lease_epoch)
        for frame in frames:
            if not self._links.write(w, frame):
                break

    def abort(self, execution_id: str, reason: str) -> bool:
        """Tell the worker holding it to kill it now; its slot is free at once. False if no
        worker holds it."""
        owner = self._roster.in_flight().get(execution_id)
        if owner is None:
            return False
        worker_id, epoch = owner
        w = self._roster.workers.get(worker_id)
        self._roster.forget(execution_id, worker_id, epoch, released=True)
        if w is None or w.lost:
            return False
        self._links.write(w, encode_frame(Abort(execution_id, reason[:1024])))
        if reason == "lease_lost" and not w.suspect:
            w.suspect = True
            self._links.write(w, encode_frame(Ping()))
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

    def _lose(self, w: PoolWorker, why: str) -> None:
        """The worker is gone for us: report its in-flight work, close it, make it exit."""
        if w.lost:
            return
        w.lost = True
        lost = self._roster.drop_all(w)
        if lost or not w.leaving:
            self._log("pool.worker_lost", worker=w.worker_id, reason=why, inFlight=len(lost))
        else:
            self._log("pool.worker_left", worker=w.worker_id, reason=why)
        if lost:
            self._spawn_bg(self.handler.on_worker_lost(w.worker_id, lost))
        if w.writer is not None:
            w.writer.close()
        patience = KILL_AFTER_SEC if w.leaving else 0.0
        if w.proc is not None and w.proc.returncode is None:
            # one that said bye is on its way out: give it a moment before the signals
            self._terminate(w, patience=patience)
        if lost and w.proc is not None:
            self._spawn_bg(self._kill_orphans(w, [execution_id for execution_id, _ in lost], patience))
        self._capacity()
        self._notify()

    async def _kill_orphans(self, w: PoolWorker, execution_ids: list[str], patience: float) -> None:
        """Once the worker's process is gone, kill the command runs it left behind (a worker
        that dies unannounced cannot kill them itself: ``orphans.py``)."""
        proc = w.proc
        assert proc is not None
        with contextlib.suppress(TimeoutError):  # (_terminate's SIGKILL comes within this)
            await asyncio.wait_for(proc.wait(), patience + 2 * KILL_AFTER_SEC + 1.0)
        groups = await asyncio.to_thread(orphans.run_groups, w.worker_id, execution_ids)
        if groups:
            killed = orphans.kill_groups(groups)
            self._log("pool.worker_orphans_killed", worker=w.worker_id, groups=killed, inFlight=len(execution_ids))

    def _terminate(self, w: PoolWorker, patience: float = 0.0) -> None:
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
            w = PoolWorker(index, generation, worker_id, self.slots, spawned_at=time.monotonic())
            generation += 1
            cmd = [*self.worker_cmd, "--socket", str(self.socket_path), "--worker-id", worker_id,
                   "--slots", str(self.slots)]
            # registered before the spawn: its hello may arrive before create_subprocess_exec returns
            self._roster.replace(w)
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
            w.exited = True  # no grants while what it sent last is read
            await self._links.read_to_the_end(w)
            self._lose(w, f"process exited with {code}")
            if self._stopping:
                return
            lived = time.monotonic() - w.spawned_at
            failures = 0 if (w.ready and lived >= HEALTHY_AFTER_SEC) else failures + 1
            delay = backoff_sec(failures - 1) if failures else 0.0
            if delay >= 1:
                self._log("pool.worker_backoff", index=index, delay=delay, failures=failures)
            await asyncio.sleep(delay)

    async def _expect_ready(self, w: PoolWorker) -> None:
        """A worker that neither connects nor dies (stuck at start-up) is killed."""
        async with self._cond():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._cond().wait_for(lambda: w.ready or w.lost), SPAWN_READY_SEC)
        if not w.ready and not w.lost:
            self._log("pool.worker_not_ready", worker=w.worker_id, after=SPAWN_READY_SEC)
            self._lose(w, "not ready in time")
