"""The worker process: connects to the daemon's socket and runs the executions it is granted.

    python -m cronwheel.worker.process --socket PATH --worker-id ID --slots N [--api-url URL]

Runs on uvloop, as the daemon does. A command's process is started with ``posix_spawn``
(vfork and exec in glibc, no copy of the page tables) and watched through a pidfd on the loop
(``children.py``), not through the loop's own subprocess support: uvloop's would fork().

Why one module: the session is one state machine over one set of runs (grants in, runs
started in slots, results batched per loop turn, heartbeats, aborts, leaving).

Fencing: on an ``abort`` frame, or an ``hb_ack`` that lists one of our leases as lost, the run
is killed at once (SIGKILL to its process group; the task is cancelled for http/python) and NO
result is sent for it: the daemon already knows the lease is gone, and would fence the result
anyway. A ``bye`` frame lets running work finish, then the worker exits. SIGTERM/SIGINT, a
closed socket (the daemon died) or a protocol error kill every running process group and exit.
Whatever holds up the way out, the process ends ``lifeline.STOP_DEADLINE_SEC`` after it began
to stop, or at once on a second SIGTERM/SIGINT; a thread sees the daemon hang up even when the
loop is blocked (``lifeline.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import uvloop

from cronwheel.core.liveout import OutputForwarder
from cronwheel.core.model import Grant
from cronwheel.core.records import Completion, Outcome
from cronwheel.obs.heap import settle_heap
from cronwheel.worker import protocol as wire
from cronwheel.worker.eventlog import capture_output, configure_log, log
from cronwheel.worker.framing import FROM_DAEMON, FrameDecoder, encode_frame, encode_result_frames
from cronwheel.worker.lifeline import Lifeline
from cronwheel.worker.results import Result, error_text
from cronwheel.worker.sockpath import unix_path
from cronwheel.worker.targets import PythonTarget, TargetRunner, call_result, finished_call, killpg
from cronwheel.worker.waiting import wait_event

READ_CHUNK = 64 * 1024
MAX_BEATS_PER_FRAME = 8192

EXIT_OK = 0
EXIT_PROTOCOL = 2  #: the daemon sent something invalid, or refused us
EXIT_DAEMON_GONE = 3  #: the socket closed under us


@dataclass(eq=False)
class _Run:
    grant: Grant
    next_beat: float
    task: asyncio.Task[None] | None = None
    call: asyncio.Future[Any] | None = None  #: a plain callable's call, run with no task (``_call_plain``)
    pgid: int | None = None  #: the shell's process group, once spawned
    killed: str | None = None  #: why it was aborted (no result is sent then)
    started: bool = False
    live: OutputForwarder | None = None  #: its output as it comes (when the daemon takes it)
    live_timer: asyncio.TimerHandle | None = None  #: the next forward of output held back

    @property
    def execution_id(self) -> str:
        return self.grant.execution_id

    @property
    def lease_epoch(self) -> int:
        return self.grant.lease_epoch

    @property
    def beat_every(self) -> float:
        return max(0.05, self.grant.lease_sec / 4)


@dataclass(eq=False)
class _RunHooks:
    """What the session does as ``run``'s command goes (``targets.ShellHooks``)."""

    worker: Worker
    run: _Run

    def spawned(self, pgid: int) -> None:
        run = self.run
        run.pgid = pgid
        self.worker.groups.add(pgid)
        if run.killed is not None:  # aborted while we were spawning
            killpg(pgid, signal.SIGKILL)
        run.live = OutputForwarder() if self.worker.live_output else None

    def output(self, data: bytes) -> None:
        if self.run.live is not None:
            self.run.live.add(data)
            self.worker.forward_output(self.run)

    def ended(self) -> None:
        self.worker.forward_output(self.run, final=True)


@dataclass
class Worker:
    socket_path: str
    worker_id: str
    slots: int
    api_url: str | None = None
    exit_code: int = EXIT_OK
    _runs: dict[str, _Run] = field(default_factory=dict)  # granted and not finished, by id
    _queue: collections.deque[_Run] = field(default_factory=collections.deque)  # waiting for a slot
    _busy: set[_Run] = field(default_factory=set)  # started and not killed
    _draining: bool = False
    live_output: bool = False  #: the daemon's welcome offered live_output
    #: ends the process whatever the loop does (``main`` gives one; a worker in a test's loop has none)
    lifeline: Lifeline | None = None

    def __post_init__(self) -> None:
        self._done = asyncio.Event()
        #: set by a new run (``_wake_beats``): the heartbeat loop looks again at when to beat
        self._beats_changed = asyncio.Event()
        #: the process groups of the commands started and not yet reaped (the lifeline kills them)
        self.groups: set[int] = self.lifeline.groups if self.lifeline is not None else set()
        self._writer: asyncio.StreamWriter | None = None
        self._targets = TargetRunner(self.worker_id, self.slots, self.api_url)
        self._tasks: set[asyncio.Task[None]] = set()  # every run's task until it ends
        self._results: list[Completion] = []  # ended in this loop turn: sent as one frame

    # ---------------------------------------------------------------- lifecycle
    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        tasks: list[asyncio.Task[None]] = []
        try:
            try:
                with unix_path(self.socket_path) as name:
                    reader, self._writer = await asyncio.open_unix_connection(name)
            except (OSError, ValueError) as exc:
                log("worker.connect_failed", worker=self.worker_id, error=str(exc))
                return EXIT_DAEMON_GONE
            sock = self._writer.get_extra_info("socket")
            if self.lifeline is not None and sock is not None:
                self.lifeline.watch(sock.fileno(), functools.partial(self._finish, EXIT_DAEMON_GONE, "daemon hung up"),
                                    EXIT_DAEMON_GONE)  # fmt: skip
            self._send(wire.Hello(wire.PROTOCOL_VERSION, self.worker_id, self.slots, os.getpid()))
            tasks = [
                loop.create_task(self._read_loop(reader), name="read"),
                loop.create_task(self._heartbeat_loop(), name="heartbeat"),
            ]
            for t in tasks:
                t.add_done_callback(self._on_loop_done)
            await self._done.wait()
            return self.exit_code
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._shutdown()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    def _on_loop_done(self, task: asyncio.Task[None]) -> None:
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            log("worker.crashed", worker=self.worker_id, loop=task.get_name(), error=error_text(exc))
            self._finish(1, "internal error")

    def _on_signal(self, sig: int) -> None:
        why = f"signal {signal.Signals(sig).name}"
        if self._done.is_set() and self.lifeline is not None:
            self.lifeline.force(f"{why} while stopping")  # asked twice: whatever holds the way out up
        self._finish(128 + sig, why)

    def _finish(self, code: int, why: str) -> None:
        """Stop now: kill every run (no results), then leave run()."""
        if self._done.is_set():
            return
        self.exit_code = code
        self._done.set()  # first: _pump starts nothing from here on
        if self.lifeline is not None:
            self.lifeline.stopping(code)
        log("worker.stopping", worker=self.worker_id, reason=why, running=len(self._runs))
        for run in list(self._runs.values()):
            self._kill(run, why)

    async def _shutdown(self) -> None:
        for run in list(self._runs.values()):
            self._kill(run, "shutdown")
        if self._tasks:  # killed shells are reaped within milliseconds; do not wait forever
            await asyncio.wait(list(self._tasks), timeout=3)
        await self._targets.close()
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(self._writer.wait_closed(), 2)

    def _send(self, frame: wire.Frame) -> None:
        w = self._writer
        if w is None or w.is_closing():
            return
        self._flush_results()  # the frames keep their order: a result before a later bye
        w.write(encode_frame(frame))

    def _add_result(self, c: Completion) -> None:
        """Results that end in the same loop turn go to the daemon as one frame."""
        if not self._results:
            asyncio.get_running_loop().call_soon(self._flush_results)
        self._results.append(c)

    def _flush_results(self) -> None:
        results, self._results = self._results, []
        w = self._writer
        if results and w is not None and not w.is_closing():
            w.writelines(encode_result_frames(results))

    # ---------------------------------------------------------------- frames in
    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder(FROM_DAEMON)
        welcomed = False
        while True:
            try:
                data = await reader.read(READ_CHUNK)
            except OSError:
                data = b""
            if not data:
                self._finish(EXIT_DAEMON_GONE, "daemon closed the socket")
                return
            try:
                frames = decoder.feed(data)
            except wire.ProtocolError as exc:
                log("worker.protocol_error", worker=self.worker_id, error=str(exc))
                self._finish(EXIT_PROTOCOL, "protocol error")
                return
            for frame in frames:
                if not welcomed:
                    if not isinstance(frame, wire.Welcome) or frame.v != wire.PROTOCOL_VERSION:
                        log("worker.refused", worker=self.worker_id, frame=frame.__struct_config__.tag,
                            v=getattr(frame, "v", None))
                        self._finish(EXIT_PROTOCOL, "not welcomed")
                        return
                    welcomed = True
                    self.live_output = frame.live_output
                elif isinstance(frame, wire.Grants):
                    for g in frame.grants:
                        self._on_grant(g)
                elif isinstance(frame, wire.HbAck):
                    for execution_id, reason in frame.lost:
                        self._abort(execution_id, reason)
                elif isinstance(frame, wire.Abort):
                    self._abort(frame.execution_id, frame.reason)
                elif isinstance(frame, wire.Bye):
                    self._draining = True
                    self._exit_if_idle()
                elif isinstance(frame, wire.Ping):
                    self._send(wire.Pong())
                # a second welcome is harmless

    def _on_grant(self, g: Grant) -> None:
        loop = asyncio.get_running_loop()
        old = self._runs.get(g.execution_id)
        if old is not None:
            if old.lease_epoch >= g.lease_epoch:
                log("worker.grant_ignored", executionId=g.execution_id, leaseEpoch=g.lease_epoch)
                return
            self._kill(old, "superseded")  # the daemon re-granted it: the older lease is dead
        run = _Run(g, next_beat=loop.time() + max(0.05, g.lease_sec / 4))
        self._runs[run.execution_id] = run
        self._queue.append(run)
        self._wake_beats()
        self._pump()

    def _abort(self, execution_id: str, reason: str) -> None:
        run = self._runs.get(execution_id)
        if run is not None:
            self._kill(run, reason)

    def _kill(self, run: _Run, reason: str) -> None:
        """Kill a run at once; it will send no result."""
        if run.killed is not None:
            return
        run.killed = reason
        if self._runs.get(run.execution_id) is run:
            del self._runs[run.execution_id]
        self._busy.discard(run)
        if run.started:
            log("worker.killed", worker=self.worker_id, executionId=run.execution_id,
                 leaseEpoch=run.lease_epoch, reason=reason)
        if run.pgid is not None:
            killpg(run.pgid, signal.SIGKILL)  # the task sees the shell die and ends quietly
        elif run.call is not None:
            run.call.cancel()  # its thread runs on; what it returns goes nowhere
        elif run.task is not None:
            run.task.cancel()
        self._pump()

    # ---------------------------------------------------------------- scheduling runs
    def _pump(self) -> None:
        if self._done.is_set():
            return
        while self._queue and len(self._busy) < self.slots:
            run = self._queue.popleft()
            if run.killed is not None:
                continue
            run.started = True
            self._busy.add(run)
            target = self._targets.loaded_plain(run.grant)
            if target is not None:
                self._call_plain(run, target)
            else:
                self._start_task(run, self._execute(run))
        self._exit_if_idle()

    def _start_task(self, run: _Run, execute: Coroutine[Any, Any, None]) -> None:
        run.task = asyncio.get_running_loop().create_task(execute, name=run.execution_id)
        self._tasks.add(run.task)
        run.task.add_done_callback(self._tasks.discard)

    def _call_plain(self, run: _Run, target: PythonTarget) -> None:
        """Start a loaded plain callable in a thread, with no task of its own: a task and its
        chain of coroutines per run were ~40 % of a worker's samples in a herd of no-op
        callables (docs/benchmarks.md). ``_called`` takes it from there."""
        deadline = asyncio.get_running_loop().time() + float(run.grant.timeout_sec)
        try:
            call = run.call = self._targets.start_plain(run.grant, target, deadline)
        except Exception as exc:  # a bug of ours, as in _execute; ended on the next turn, not
            # from inside _pump, which would recurse once per queued run
            failed = Result("failed", error="worker error: " + error_text(exc))
            asyncio.get_running_loop().call_soon(self._ended, run, failed)
            return
        call.add_done_callback(functools.partial(self._called, run, deadline))

    def _called(self, run: _Run, deadline: float, call: asyncio.Future[Any]) -> None:
        if run.killed is not None:  # _kill cancelled it and let the run go
            return
        if call.cancelled():  # the threads closed under it (shutdown): as a cancelled task
            self._release(run)
            return
        try:
            result = call_result(call, float(run.grant.timeout_sec))
        except Exception as exc:
            result = Result("failed", error="worker error: " + error_text(exc))
        if result is None:  # it returned an awaitable, awaited in a task within the timeout
            run.call = None
            self._start_task(run, self._execute(run, finished_call(call, deadline, float(run.grant.timeout_sec))))
            return
        self._ended(run, result)

    def _exit_if_idle(self) -> None:
        if self._draining and not self._runs and not self._done.is_set():
            self._send(wire.Bye())
            self._finish(EXIT_OK, "bye")

    async def _execute(self, run: _Run, work: Coroutine[Any, Any, Result] | None = None) -> None:
        """Run ``run`` (or await ``work``, what is left of it) and report its result."""
        try:
            result = await (self._targets.run(run.grant, _RunHooks(self, run)) if work is None else work)
        except asyncio.CancelledError:
            self._release(run)
            if run.killed is None:
                raise
            return
        except Exception as exc:  # a bug of ours: report it as a failed attempt
            result = Result("failed", error="worker error: " + error_text(exc))
        self._ended(run, result)

    def _release(self, run: _Run) -> None:
        if run.pgid is not None:
            self.groups.discard(run.pgid)  # reaped, and what it left in its group killed
        self._busy.discard(run)
        if self._runs.get(run.execution_id) is run:
            del self._runs[run.execution_id]

    def _ended(self, run: _Run, result: Result) -> None:
        """``run`` ended with ``result``: its slot is free, and the daemon hears of it unless
        it was killed."""
        self._release(run)
        if run.killed is None:
            self._add_result(Completion(run.execution_id, None, run.lease_epoch, Outcome(result.outcome),
                                        result.exit_code, result.error, result.output))
        self._pump()

    # ---------------------------------------------------------------- heartbeats
    async def _heartbeat_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._done.is_set():
            self._beats_changed.clear()
            now = loop.time()
            # coalesce: every lease whose beat is due within a quarter of its period goes now
            due = [r for r in self._runs.values() if r.next_beat <= now + r.beat_every / 4]
            for r in due:
                r.next_beat = now + r.beat_every
            for i in range(0, len(due), MAX_BEATS_PER_FRAME):
                chunk = due[i : i + MAX_BEATS_PER_FRAME]
                self._send(wire.Beats([(r.execution_id, r.lease_epoch) for r in chunk]))
            nxt = min((r.next_beat for r in self._runs.values()), default=None)
            # wait_event, not wait_for(event.wait()): on Python 3.11 wait_for swallows a cancel
            # that comes as the event is set (a grant in the same read as a bye), and this loop
            # then waited for ever, holding up the worker's exit
            await wait_event(self._beats_changed, None if nxt is None else max(0.0, nxt - loop.time()))

    def _wake_beats(self) -> None:
        """A new run: the heartbeat loop looks again at when the next beat is due."""
        self._beats_changed.set()

    def forward_output(self, run: _Run, final: bool = False) -> None:
        """Send what ``run.live`` lets through now; what it holds back goes on a timer (all of
        it when ``final``: the command ended, its result follows)."""
        live = run.live
        if run.live_timer is not None:
            run.live_timer.cancel()
            run.live_timer = None
        if live is None or run.killed is not None:  # an aborted run's output goes nowhere
            run.live = None
            return
        loop = asyncio.get_running_loop()
        chunk = live.take(loop.time(), final=final)
        if chunk:
            self._send(wire.Out(run.execution_id, run.lease_epoch, chunk))
        if final:
            run.live = None
        elif live.pending:
            run.live_timer = loop.call_later(live.due_in(loop.time()), self.forward_output, run)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a == "--url" or a.startswith("--url=") for a in argv):
        # a remote worker: pulls queue targets' executions over the HTTP API
        from cronwheel.worker.remote import main as remote_main

        return remote_main(argv)
    ap = argparse.ArgumentParser(
        prog="cronwheel worker",
        description="Two kinds of worker. Without --url: a local worker, which runs the executions\n"
                    "its daemon grants over the worker socket (`cronwheel serve` starts these;\n"
                    "rarely run by hand).",
        epilog="With --url: a remote worker, which claims the executions of queue targets over\n"
               "the HTTP API and runs them with a Python handler:\n\n"
               "  cronwheel worker --url URL --queue NAME --handler module:function\n"
               "                   [--concurrency N] [--token T]\n\n"
               "`cronwheel worker --url URL --help` lists its options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--socket", required=True, help="the daemon's worker socket")
    ap.add_argument("--worker-id", required=True)
    ap.add_argument("--slots", type=int, default=4, help="executions run at once")
    ap.add_argument("--api-url", default=os.environ.get("CRONWHEEL_URL"),
                    help="exported to commands as CRONWHEEL_URL (default: $CRONWHEEL_URL)")
    if not any(a in ("-h", "--help") or a == "--socket" or a.startswith("--socket=") for a in argv):
        # most who type `cronwheel worker` want a remote worker: name both kinds
        ap.error("give --url URL for a remote worker (`cronwheel worker --url URL --help` lists its options), "
                 "or --socket for a local one (`cronwheel serve` starts those)")
    args = ap.parse_args(argv)
    if args.slots < 1:
        ap.error("--slots must be at least 1")
    # a local worker's id is {node}-{incarnation}-w{index}-{generation}
    parts = args.worker_id.rsplit("-", 3)
    capture_output(configure_log(parts[0] if len(parts) == 4 else socket.gethostname()), args.worker_id)

    async def go() -> int:
        return await Worker(args.socket, args.worker_id, args.slots, args.api_url,
                            lifeline=Lifeline(args.worker_id)).run()

    settle_heap()
    code = uvloop.run(go())  # a dependency wherever a worker can run (posix_spawn, pidfds: Linux)
    if _threads_left(EXIT_JOIN_SEC):
        # a sync callable that never returns would keep the interpreter from exiting
        log("worker.exit_with_stuck_threads", worker=args.worker_id)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


#: how long an exiting worker waits for its job threads, told to stop, to return
EXIT_JOIN_SEC = 2.0


def _threads_left(within_sec: float) -> bool:
    """Whether a non-daemon thread is still alive ``within_sec`` from now: the job threads were
    told to stop at shutdown and return at once unless a callable in one never does."""
    deadline = time.monotonic() + within_sec
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    return any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate())


if __name__ == "__main__":
    sys.exit(main())
