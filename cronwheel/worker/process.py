"""The worker process: connects to the daemon's socket and runs the executions it is granted.

    python -m cronwheel.worker.process --socket PATH --worker-id ID --slots N [--api-url URL]

Runs on the default asyncio loop, not uvloop: uvloop starts children with fork(), which in a
parent with a big heap falls to a few dozen spawns per second; the default loop's subprocess
path uses vfork (via _posixsubprocess) and, with a pidfd child watcher, reaches ~2,500/s here
(``bench/bench_spawn.py``). On Python 3.11 we install ``asyncio.PidfdChildWatcher`` ourselves;
3.12+ uses pidfds by default.

What a run sees and how it ends:

* ``{"command": text}``: ``/bin/sh -c text`` as the leader of its own session / process group,
  the payload as JSON (plus a newline) on stdin, stdout+stderr into one pipe of which the last
  64 KiB are kept, ``CRONWHEEL_*`` variables in its environment (``CRONWHEEL_PARENT_*`` too
  for a run a chain triggered: the parent's execution id, job id, tick and outcome). The job's
  shell, runAs user, env and stdin change that as ``launch.py`` describes. When the shell exits, whatever
  is left of its process group is killed: a job cannot leave processes behind.
* ``{"http": {url, method="POST", headers={}, timeoutSec?}}``: one aiohttp request, the
  payload as a JSON body, ``Cronwheel-*`` and ``Idempotency-Key`` headers; 2xx succeeds.
* ``{"python": "module:function"}``: called with the keyword arguments it accepts out of
  execution_id, job_id, lease_epoch, attempt, scheduled_at, payload; coroutines are awaited,
  plain functions run in a thread pool of ``slots`` threads.

Fencing: on an ``abort`` frame, or an ``hb_ack`` that lists one of our leases as lost, the run
is killed at once (SIGKILL to its process group; the task is cancelled for http/python) and NO
result is sent for it: the daemon already knows the lease is gone, and would fence the result
anyway. A ``bye`` frame lets running work finish, then the worker exits. SIGTERM/SIGINT, a
closed socket (the daemon died) or a protocol error kill every running process group and exit.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import importlib
import inspect
import json
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cronwheel.worker.launch import LaunchError, plan_launch
from cronwheel.worker.protocol import (
    DAEMON_TO_WORKER,
    PROTOCOL_VERSION,
    FrameDecoder,
    ProtocolError,
    encode_frame,
    unix_path,
)

OUTPUT_TAIL = 64 * 1024  #: bytes of stdout/stderr (or HTTP body) kept: the last ones
MAX_RETURN_TEXT = 64 * 1024  #: characters of a python callable's return value kept
MAX_ERROR = 8 * 1024  #: characters of an error text
ERROR_LINES = 20  #: traceback lines kept (the last ones)
TERM_GRACE_MAX = 2.0  #: SIGTERM → SIGKILL on timeout: min(this, timeout / 10)
EXIT_DRAIN_SEC = 0.5  #: after the shell exits, how long to wait for the rest of its output
READ_CHUNK = 64 * 1024
MAX_BEATS_PER_FRAME = 8192

EXIT_OK = 0
EXIT_PROTOCOL = 2  #: the daemon sent something invalid, or refused us
EXIT_DAEMON_GONE = 3  #: the socket closed under us

_CALLABLE_ARGS = ("execution_id", "job_id", "lease_epoch", "attempt", "scheduled_at", "payload")


def _log(event: str, **fields: Any) -> None:
    """One JSON line on stderr (the daemon's stderr: journald takes it as it is)."""
    record = {"event": event, "pid": os.getpid(), **fields}
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(json.dumps(record, default=str, separators=(",", ":")) + "\n")
        sys.stderr.flush()


def rfc3339_ms(ms: int) -> str:
    secs, rem = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rem:03d}Z"


_PARENT_FIELDS = (("executionId", "EXECUTION_ID", "Execution-Id"), ("jobId", "JOB_ID", "Job-Id"),
                  ("scheduledAt", "SCHEDULED_AT", "Scheduled-At"), ("outcome", "OUTCOME", "Outcome"))


def parent_fields(g: dict[str, Any], prefix: str, header: bool = False) -> dict[str, str]:
    """The chain parent of a grant (``context.parent``) as variables or headers; {} for none."""
    context = g.get("context")
    parent = context.get("parent") if isinstance(context, dict) else None
    if not isinstance(parent, dict):
        return {}
    return {prefix + (h if header else e): str(parent[k]) for k, e, h in _PARENT_FIELDS if k in parent}


class _Tail:
    """The last ``limit`` bytes of a stream, in at most 2 × limit bytes of memory."""

    def __init__(self, limit: int = OUTPUT_TAIL) -> None:
        self.limit = limit
        self._buf = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if len(data) >= self.limit:
            self._buf[:] = data[-self.limit :]
            return
        self._buf += data
        if len(self._buf) > 2 * self.limit:
            del self._buf[: -self.limit]

    def text(self) -> str:
        return bytes(self._buf[-self.limit :]).decode("utf-8", "replace")


def _bounded_tail(text: str, limit: int = MAX_ERROR) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _error_text(exc: BaseException) -> str:
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    return _bounded_tail("\n".join(lines[-ERROR_LINES:]))


def _return_text(value: Any) -> str | None:
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= MAX_RETURN_TEXT else text[: MAX_RETURN_TEXT - 1] + "…"


def _killpg(pgid: int | None, sig: int) -> None:
    if pgid is None or pgid <= 1:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@dataclass(eq=False)
class _Result:
    outcome: str
    exit_code: int | None = None
    error: str | None = None
    output: str | None = None


@dataclass(eq=False)
class _Run:
    grant: dict[str, Any]
    next_beat: float
    task: asyncio.Task[None] | None = None
    pgid: int | None = None  #: the shell's process group, once spawned
    killed: str | None = None  #: why it was aborted (no result is sent then)
    started: bool = False

    @property
    def execution_id(self) -> str:
        return str(self.grant["execution_id"])

    @property
    def lease_epoch(self) -> int:
        return int(self.grant["lease_epoch"])

    @property
    def beat_every(self) -> float:
        return max(0.05, float(self.grant["lease_sec"]) / 4)


@dataclass
class _PythonTarget:
    fn: Callable[..., Any]
    params: frozenset[str] | None  #: None: it takes **kwargs, pass everything
    is_async: bool


def _load_callable(spec: str) -> _PythonTarget:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"python target must be 'module:function', not {spec!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{spec} is not callable")
    params: frozenset[str] | None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # some builtins: pass everything and hope
        params = None
    else:
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
            params = None
        else:
            params = frozenset(
                name
                for name, p in sig.parameters.items()
                if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            )
    is_async = inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(getattr(obj, "__call__", None))  # noqa: B004
    return _PythonTarget(obj, params, is_async)


def _install_pidfd_watcher(loop: asyncio.AbstractEventLoop) -> bool:
    """Python 3.11 only: watch children with pidfds instead of one thread per child."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # kernel < 5.3, or seccomp
        return False
    watcher = asyncio.PidfdChildWatcher()
    watcher.attach_loop(loop)
    asyncio.set_child_watcher(watcher)
    return True


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
    _pidfd_watcher: bool = False

    def __post_init__(self) -> None:
        self._done = asyncio.Event()
        self._beat_wake = asyncio.Event()
        self._writer: asyncio.StreamWriter | None = None
        self._executor = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="cronwheel-job")
        self._callables: dict[str, _PythonTarget] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # every run's task until it ends
        self._http: Any = None  # aiohttp.ClientSession, created on first use
        env = dict(os.environ)
        if self.api_url:
            env["CRONWHEEL_URL"] = self.api_url
        self._base_env = env
        self._euid = os.geteuid()

    # ---------------------------------------------------------------- lifecycle
    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self._pidfd_watcher = _install_pidfd_watcher(loop)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._finish, 128 + sig, f"signal {signal.Signals(sig).name}")
        tasks: list[asyncio.Task[None]] = []
        try:
            try:
                with unix_path(self.socket_path) as name:
                    reader, self._writer = await asyncio.open_unix_connection(name)
            except (OSError, ValueError) as exc:
                _log("worker.connect_failed", worker=self.worker_id, error=str(exc))
                return EXIT_DAEMON_GONE
            self._send({"t": "hello", "v": PROTOCOL_VERSION, "worker_id": self.worker_id,
                        "slots": self.slots, "pid": os.getpid()})
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
            if self._pidfd_watcher:
                asyncio.set_child_watcher(None)  # type: ignore[arg-type]

    def _on_loop_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            _log("worker.crashed", worker=self.worker_id, loop=task.get_name(), error=_error_text(task.exception()))  # type: ignore[arg-type]
            self._finish(1, "internal error")

    def _finish(self, code: int, why: str) -> None:
        """Stop now: kill every run (no results), then leave run()."""
        if self._done.is_set():
            return
        self.exit_code = code
        self._done.set()  # first: _pump starts nothing from here on
        _log("worker.stopping", worker=self.worker_id, reason=why, running=len(self._runs))
        for run in list(self._runs.values()):
            self._kill(run, why)

    async def _shutdown(self) -> None:
        for run in list(self._runs.values()):
            self._kill(run, "shutdown")
        if self._tasks:  # killed shells are reaped within milliseconds; do not wait forever
            await asyncio.wait(list(self._tasks), timeout=3)
        if self._http is not None:
            await self._http.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(self._writer.wait_closed(), 2)

    def _send(self, frame: dict[str, Any]) -> None:
        w = self._writer
        if w is None or w.is_closing():
            return
        w.write(encode_frame(frame))

    # ---------------------------------------------------------------- frames in
    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder(accept=DAEMON_TO_WORKER)
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
            except ProtocolError as exc:
                _log("worker.protocol_error", worker=self.worker_id, error=str(exc))
                self._finish(EXIT_PROTOCOL, "protocol error")
                return
            for frame in frames:
                t = frame["t"]
                if not welcomed:
                    if t != "welcome" or frame["v"] != PROTOCOL_VERSION:
                        _log("worker.refused", worker=self.worker_id, frame=t, v=frame.get("v"))
                        self._finish(EXIT_PROTOCOL, "not welcomed")
                        return
                    welcomed = True
                elif t == "grant":
                    for g in frame["grants"]:
                        self._on_grant(g)
                elif t == "hb_ack":
                    for execution_id, reason in frame["lost"]:
                        self._abort(execution_id, reason)
                elif t == "abort":
                    self._abort(frame["execution_id"], frame["reason"])
                elif t == "bye":
                    self._draining = True
                    self._exit_if_idle()
                elif t == "ping":
                    self._send({"t": "pong"})
                # a second welcome is harmless

    def _on_grant(self, g: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        old = self._runs.get(g["execution_id"])
        if old is not None:
            if old.lease_epoch >= g["lease_epoch"]:
                _log("worker.grant_ignored", execution=g["execution_id"], epoch=g["lease_epoch"])
                return
            self._kill(old, "superseded")  # the daemon re-granted it: the older lease is dead
        run = _Run(g, next_beat=loop.time() + max(0.05, float(g["lease_sec"]) / 4))
        self._runs[run.execution_id] = run
        self._queue.append(run)
        self._beat_wake.set()
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
            _log("worker.killed", worker=self.worker_id, execution=run.execution_id,
                 epoch=run.lease_epoch, reason=reason)
        if run.pgid is not None:
            _killpg(run.pgid, signal.SIGKILL)  # the task sees the shell die and ends quietly
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
            run.task = asyncio.get_running_loop().create_task(self._execute(run), name=run.execution_id)
            self._tasks.add(run.task)
            run.task.add_done_callback(self._tasks.discard)
        self._exit_if_idle()

    def _exit_if_idle(self) -> None:
        if self._draining and not self._runs and not self._done.is_set():
            self._send({"t": "bye"})
            self._finish(EXIT_OK, "bye")

    async def _execute(self, run: _Run) -> None:
        try:
            result = await self._run_target(run)
        except asyncio.CancelledError:
            if run.killed is None:
                raise
            return
        except Exception as exc:  # a bug of ours: report it as a failed attempt
            result = _Result("failed", error="worker error: " + _error_text(exc))
        finally:
            self._busy.discard(run)
            if self._runs.get(run.execution_id) is run:
                del self._runs[run.execution_id]
        if run.killed is None:
            self._send({
                "t": "result",
                "execution_id": run.execution_id,
                "lease_epoch": run.lease_epoch,
                "outcome": result.outcome,
                "exit_code": result.exit_code,
                "error": result.error,
                "output": result.output,
            })
        self._pump()

    async def _run_target(self, run: _Run) -> _Result:
        target = run.grant["target"]
        if isinstance(target.get("command"), str):
            return await self._run_shell(run, target["command"])
        if isinstance(target.get("http"), dict):
            return await self._run_http(run, target["http"])
        if isinstance(target.get("python"), str):
            return await self._run_python(run, target["python"])
        return _Result("failed", error=f"unsupported target for a local worker: {sorted(target)}")

    # ---------------------------------------------------------------- heartbeats
    async def _heartbeat_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            # coalesce: every lease whose beat is due within a quarter of its period goes now
            due = [r for r in self._runs.values() if r.next_beat <= now + r.beat_every / 4]
            for r in due:
                r.next_beat = now + r.beat_every
            for i in range(0, len(due), MAX_BEATS_PER_FRAME):
                chunk = due[i : i + MAX_BEATS_PER_FRAME]
                self._send({"t": "hb", "beats": [[r.execution_id, r.lease_epoch] for r in chunk]})
            nxt = min((r.next_beat for r in self._runs.values()), default=None)
            self._beat_wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._beat_wake.wait(), None if nxt is None else max(0.0, nxt - loop.time()))

    # ---------------------------------------------------------------- targets
    def _run_env(self, g: dict[str, Any]) -> dict[str, str]:
        """The variables every run sees, which a job's own env never overrides (with its chain
        parent's, for a run a chain triggered)."""
        return {
            "CRONWHEEL_JOB_ID": g["job_id"],
            "CRONWHEEL_EXECUTION_ID": g["execution_id"],
            "CRONWHEEL_LEASE_EPOCH": str(g["lease_epoch"]),
            "CRONWHEEL_ATTEMPT": str(g["attempt"]),
            "CRONWHEEL_SCHEDULED_AT": rfc3339_ms(g["scheduled_at"]),
            "CRONWHEEL_WORKER_ID": self.worker_id,
            **parent_fields(g, "CRONWHEEL_PARENT_"),
        }

    async def _run_shell(self, run: _Run, command: str) -> _Result:
        g = run.grant
        loop = asyncio.get_running_loop()
        timeout = float(g["timeout_sec"])
        try:
            launch = plan_launch(command, g.get("process"), self._base_env, self._run_env(g), self._euid)
        except LaunchError as exc:
            return _Result("failed", error=str(exc))
        out_r, out_w = os.pipe()  # ours, not asyncio's: we close it whatever the job does
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                stdin=asyncio.subprocess.PIPE, stdout=out_w, stderr=out_w,
                env=launch.env, start_new_session=True, **launch.popen,
            )
        except BaseException as exc:
            os.close(out_r)
            os.close(out_w)
            if isinstance(exc, OSError):
                return _Result("failed", error=f"cannot start {launch.argv[0]}: {exc}")
            raise
        os.close(out_w)
        run.pgid = proc.pid
        if run.killed is not None:  # aborted while we were spawning
            _killpg(proc.pid, signal.SIGKILL)

        tail = _Tail()
        eof = loop.create_future()

        def on_readable() -> None:
            try:
                data = os.read(out_r, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if data:
                tail.add(data)
            else:
                loop.remove_reader(out_r)
                if not eof.done():
                    eof.set_result(None)

        os.set_blocking(out_r, False)
        loop.add_reader(out_r, on_readable)
        stdin_bytes = launch.stdin
        if stdin_bytes is None:
            stdin_bytes = json.dumps(g.get("payload"), ensure_ascii=False).encode() + b"\n"
        feeder = loop.create_task(self._feed_stdin(proc, stdin_bytes))
        timed_out = False
        try:
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                timed_out = True
                _killpg(proc.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), min(TERM_GRACE_MAX, timeout / 10))
                except TimeoutError:
                    _killpg(proc.pid, signal.SIGKILL)
                    await proc.wait()
            # the shell is gone: take what is left in the pipe, then kill anything it left
            # behind in its group (which also closes the pipe's last writers)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(eof), EXIT_DRAIN_SEC)
            _killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):  # a process that escaped the group
                await asyncio.wait_for(asyncio.shield(eof), EXIT_DRAIN_SEC)
        finally:
            loop.remove_reader(out_r)
            os.close(out_r)
            feeder.cancel()
            if proc.stdin is not None:
                proc.stdin.close()
            if proc.returncode is None:  # cancelled (worker stopping): no orphans
                _killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(proc.wait())
        code = proc.returncode
        output = tail.text()
        if timed_out:
            return _Result("timed_out", code, f"timed out after {timeout:g}s", output)
        if code == 0:
            return _Result("succeeded", 0, None, output)
        if code is not None and code < 0:
            error = f"killed by signal {-code}"
        else:
            error = f"exit code {code}"
        return _Result("failed", code, error, output)

    @staticmethod
    async def _feed_stdin(proc: asyncio.subprocess.Process, data: bytes) -> None:
        stdin = proc.stdin
        if stdin is None:
            return
        try:
            stdin.write(data)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):  # the command does not read stdin
            pass
        finally:
            stdin.close()

    async def _run_http(self, run: _Run, spec: dict[str, Any]) -> _Result:
        import aiohttp  # only workers that run http targets pay for it
        from multidict import CIMultiDict

        g = run.grant
        url = spec.get("url")
        method = spec.get("method") or "POST"
        headers = spec.get("headers") or {}
        if not isinstance(url, str) or not isinstance(method, str) or not isinstance(headers, dict):
            return _Result("failed", error="http target needs url (string), method (string), headers (map)")
        timeout = float(g["timeout_sec"])
        t = spec.get("timeoutSec")
        if isinstance(t, int | float) and not isinstance(t, bool) and t > 0:
            timeout = min(timeout, float(t))
        h: CIMultiDict[str] = CIMultiDict((str(k), str(v)) for k, v in headers.items())
        h.update({  # ours win, whatever the case of the user's header names
            "Cronwheel-Job-Id": g["job_id"],
            "Cronwheel-Execution-Id": g["execution_id"],
            "Cronwheel-Lease-Epoch": str(g["lease_epoch"]),
            "Cronwheel-Attempt": str(g["attempt"]),
            "Cronwheel-Scheduled-At": rfc3339_ms(g["scheduled_at"]),
            "Idempotency-Key": g["execution_id"],
        })
        h.update(parent_fields(g, "Cronwheel-Parent-", header=True))
        body: bytes | None = None
        if method.upper() not in ("GET", "HEAD"):
            body = json.dumps(g.get("payload"), ensure_ascii=False).encode()
            h.setdefault("Content-Type", "application/json")  # case-insensitive
        if self._http is None:
            self._http = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=max(100, self.slots)),
                timeout=aiohttp.ClientTimeout(total=None),
            )
        tail = _Tail()
        try:
            async with asyncio.timeout(timeout):
                async with self._http.request(method.upper(), url, data=body, headers=h) as resp:
                    async for chunk in resp.content.iter_chunked(READ_CHUNK):
                        tail.add(chunk)
                    status, reason = resp.status, resp.reason
        except TimeoutError:
            return _Result("timed_out", None, f"timed out after {timeout:g}s", tail.text() or None)
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            return _Result("failed", None, _bounded_tail(f"{type(exc).__name__}: {exc}"), tail.text() or None)
        output = tail.text()
        if 200 <= status < 300:
            return _Result("succeeded", status, None, output)
        return _Result("failed", status, f"HTTP {status} {reason or ''}".rstrip(), output)

    async def _run_python(self, run: _Run, spec: str) -> _Result:
        g = run.grant
        try:
            target = self._callables.get(spec)
            if target is None:
                target = await asyncio.to_thread(_load_callable, spec)
                self._callables[spec] = target
        except Exception as exc:
            return _Result("failed", error=f"cannot load {spec}: " + _error_text(exc))
        kwargs = {
            "execution_id": g["execution_id"],
            "job_id": g["job_id"],
            "lease_epoch": g["lease_epoch"],
            "attempt": g["attempt"],
            "scheduled_at": g["scheduled_at"],
            "payload": g.get("payload"),
        }
        if target.params is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in target.params}
        timeout = float(g["timeout_sec"])
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                if target.is_async:
                    value = await target.fn(**kwargs)
                else:
                    value = await loop.run_in_executor(self._executor, functools.partial(target.fn, **kwargs))
                if inspect.isawaitable(value):
                    value = await value
        except TimeoutError:
            # a thread cannot be killed: a sync callable keeps its thread until it returns
            return _Result("timed_out", None, f"timed out after {timeout:g}s")
        except Exception as exc:
            return _Result("failed", None, _error_text(exc))
        return _Result("succeeded", None, None, _return_text(value))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a == "--url" or a.startswith("--url=") for a in argv):
        # a remote worker: pulls queue targets' executions over the HTTP API
        from cronwheel.worker.remote import main as remote_main

        return remote_main(argv)
    ap = argparse.ArgumentParser(prog="cronwheel worker", description="Run executions granted by a cronwheel daemon.")
    ap.add_argument("--socket", required=True, help="the daemon's worker socket")
    ap.add_argument("--worker-id", required=True)
    ap.add_argument("--slots", type=int, default=4, help="executions run at once")
    ap.add_argument("--api-url", default=os.environ.get("CRONWHEEL_URL"),
                    help="exported to commands as CRONWHEEL_URL (default: $CRONWHEEL_URL)")
    args = ap.parse_args(argv)
    if args.slots < 1:
        ap.error("--slots must be at least 1")
    with warnings.catch_warnings():  # 3.12+ deprecates policies; we only want the default loop
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())

    async def go() -> int:
        return await Worker(args.socket, args.worker_id, args.slots, args.api_url).run()

    code = asyncio.run(go())
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        # a sync callable that never returns would keep the interpreter from exiting
        _log("worker.exit_with_stuck_threads", worker=args.worker_id)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
