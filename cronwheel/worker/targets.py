"""The three kinds of target a worker runs: a shell command, an HTTP request, a Python callable.

The local worker (``process.py``) runs all three for the grants of its session; the remote
worker (``remote.py``) calls a Python handler exactly as a ``{"python": …}`` target is called.

* ``{"command": text}``: ``/bin/sh -c text`` (or, for a lone simple command of plain words, the
  program itself, as the shell would exec it: ``launch.py``), started by ``children.py`` as the
  leader of its own session / process group,
  the payload as JSON (plus a newline) on stdin, stdout+stderr into one pipe of which the last
  64 KiB are kept, ``CRONWHEEL_*`` variables in its environment (``CRONWHEEL_PARENT_*`` too
  for a run a chain triggered: the parent's execution id, job id, tick and outcome). The job's
  shell, runAs user, env and stdin change that as ``launch.py`` describes. When the shell exits,
  whatever is left of its process group is killed: a job cannot leave processes behind.
* ``{"http": {url, method="POST", headers={}, timeoutSec?}}``: ``httptarget.py``, one aiohttp
  request per hop of its redirects, the payload as a JSON body, ``Cronwheel-*`` and
  ``Idempotency-Key`` headers; 2xx succeeds.
* ``{"python": "module:function"}``: called with the keyword arguments it accepts out of
  execution_id, job_id, lease_epoch, attempt, scheduled_at, payload; coroutines are awaited,
  plain functions run in a thread pool. A loaded plain function can also be started with no
  task of its own (``TargetRunner.loaded_plain``, ``start_plain``, ``call_result``): the local
  worker does so for the herd's common case.

Why one module: the three kinds are one contract, a grant in and a ``Result`` out, with the
same timeout (``timed_out``), the same ``CRONWHEEL_*`` identity of the run, and one
``TargetRunner`` per worker session holding what they share (the callables loaded, the call
threads, the HTTP session); taken apart, each piece would import the others' halves.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import json
import os
import select
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cronwheel.core.instants import format_instant
from cronwheel.core.model import Grant
from cronwheel.worker.callthreads import CallThreads
from cronwheel.worker.children import Readiness, StdinFeed, spawn
from cronwheel.worker.launch import LaunchError, plan_launch
from cronwheel.worker.results import (
    Result,
    Tail,
    not_loaded,
    raised,
    return_text,
    timed_out,
)

if TYPE_CHECKING:
    import aiohttp

TERM_GRACE_MAX = 2.0  #: SIGTERM → SIGKILL on timeout: min(this, timeout / 10)
EXIT_DRAIN_SEC = 0.5  #: after the shell exits, how long to wait for the rest of its output
READ_CHUNK = 64 * 1024


_PARENT_FIELDS = (("executionId", "EXECUTION_ID", "Execution-Id"), ("jobId", "JOB_ID", "Job-Id"),
                  ("scheduledAt", "SCHEDULED_AT", "Scheduled-At"), ("outcome", "OUTCOME", "Outcome"))


def parent_fields(g: Grant, prefix: str, header: bool = False) -> dict[str, str]:
    """The chain parent of a grant (``context.parent``) as variables or headers; {} for none."""
    context = g.context
    parent = context.get("parent") if isinstance(context, dict) else None
    if not isinstance(parent, dict):
        return {}
    return {prefix + (h if header else e): str(parent[k]) for k, e, h in _PARENT_FIELDS if k in parent}


def killpg(pgid: int | None, sig: int) -> None:
    """Signal a run's process group; never the worker's own (pgid 0/1), never an error."""
    if pgid is None or pgid <= 1:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# ---------------------------------------------------------------- python callables


@dataclass
class PythonTarget:
    fn: Callable[..., Any]
    params: frozenset[str] | None  #: None: it takes **kwargs, pass everything
    is_async: bool

    def arguments(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The arguments it accepts out of ``kwargs``."""
        return kwargs if self.params is None else {k: v for k, v in kwargs.items() if k in self.params}

    def start(self, kwargs: dict[str, Any], deadline: float, threads: CallThreads) -> asyncio.Future[Any]:
        """A plain callable, started in ``threads``: its future gets the value, the exception,
        or ``_Overrun`` from a timer at ``deadline`` (loop time; one timer rather than an
        asyncio.timeout scope: ~3.5 µs less per call, docs/benchmarks.md). The timer goes
        when the future is done, however it ends."""
        call = threads.call(functools.partial(self.fn, **self.arguments(kwargs)))
        expiry = asyncio.get_running_loop().call_at(deadline, _overrun, call)
        call.add_done_callback(lambda _: expiry.cancel())
        return call

    async def call(self, kwargs: dict[str, Any], timeout_sec: float, threads: CallThreads) -> Result:
        """Call it with the arguments it accepts out of ``kwargs`` (execution_id, job_id,
        lease_epoch, attempt, scheduled_at, payload), bounded by ``timeout_sec``."""
        deadline = asyncio.get_running_loop().time() + timeout_sec
        if not self.is_async:
            call = self.start(kwargs, deadline, threads)
            try:
                await asyncio.wait((call,))  # never cancels the call: a kill cancels it below
            except asyncio.CancelledError:
                call.cancel()
                raise
            return await finished_call(call, deadline, timeout_sec)
        try:
            coroutine = self.fn(**self.arguments(kwargs))
        except Exception as exc:
            return raised(exc)
        return await returned(coroutine, deadline, timeout_sec)


def call_result(call: asyncio.Future[Any], timeout_sec: float) -> Result | None:
    """The result of a plain callable's finished call (``PythonTarget.start``); None when it
    returned an awaitable, which ``returned`` awaits."""
    exc = call.exception()
    if isinstance(exc, _Overrun):
        # a thread cannot be killed: a sync callable keeps its thread until it returns
        return timed_out(timeout_sec)
    if exc is not None:
        return raised(exc)
    value = call.result()
    return None if inspect.isawaitable(value) else Result("succeeded", None, None, return_text(value))


async def finished_call(call: asyncio.Future[Any], deadline: float, timeout_sec: float) -> Result:
    """``call_result``, an awaitable it returned awaited within what is left of the timeout."""
    result = call_result(call, timeout_sec)
    return result if result is not None else await returned(call.result(), deadline, timeout_sec)


async def returned(value: Any, deadline: float, timeout_sec: float) -> Result:
    """The result of a callable that returned ``value``, awaited (by ``deadline``) while it is
    awaitable: an async callable's coroutine, and anything awaitable it returns in turn."""
    if inspect.isawaitable(value):
        scope = asyncio.timeout_at(deadline)
        try:
            async with scope:
                while inspect.isawaitable(value):
                    value = await value
        except TimeoutError as exc:
            return timed_out(timeout_sec) if scope.expired() else raised(exc)
        except Exception as exc:
            return raised(exc)
    return Result("succeeded", None, None, return_text(value))


class _Overrun(Exception):
    """A plain callable outlived its timeout (set on its call's future by the timer)."""


def _overrun(call: asyncio.Future[Any]) -> None:
    if not call.done():
        call.set_exception(_Overrun())


def load_callable(spec: str) -> PythonTarget:
    """Import ``module:function`` (or ``module:Class.method``). Raises what importing raises,
    ValueError for a malformed spec and TypeError for something not callable."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"python target must be 'module:function', not {spec!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{type(obj).__name__!r} object is not callable")  # Python's words for it
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
    return PythonTarget(obj, params, is_async)


# ---------------------------------------------------------------- running a grant's target


class ShellHooks(Protocol):
    """What the session does while a command runs: fencing needs its process group, live
    output goes to the daemon as it comes."""

    def spawned(self, pgid: int) -> None:
        """The shell started as the leader of process group ``pgid``."""

    def output(self, data: bytes) -> None:
        """Bytes the command wrote (stdout and stderr, in one stream)."""

    def ended(self) -> None:
        """The command and its process group are gone; the result follows."""


class TargetRunner:
    """Runs the targets of one worker's grants; holds what runs share (the thread pool of
    sync callables, the loaded callables, the HTTP session, the base environment)."""

    def __init__(self, worker_id: str, slots: int, api_url: str | None = None) -> None:
        self.worker_id = worker_id
        self.slots = slots
        self._threads = CallThreads(slots, "cronwheel-job")  #: sync callables run here
        self._callables: dict[str, PythonTarget] = {}
        self._http: aiohttp.ClientSession | None = None  # created on first use
        env = dict(os.environ)
        if api_url:
            env["CRONWHEEL_URL"] = api_url
        self._base_env = env
        self._euid = os.geteuid()
        self._readiness: Readiness | None = None  #: the runs' pidfds and output pipes, made on first use

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
        self._threads.close()
        if self._readiness is not None:
            self._readiness.close()

    def _watch(self) -> Readiness:
        if self._readiness is None:
            self._readiness = Readiness(asyncio.get_running_loop())
        return self._readiness

    async def run(self, g: Grant, hooks: ShellHooks) -> Result:
        target = g.target
        if isinstance(target.get("command"), str):
            return await self.run_shell(g, target["command"], hooks)
        if isinstance(target.get("http"), dict):
            return await self.run_http(g, target["http"])
        if isinstance(target.get("python"), str):
            return await self.run_python(g, target["python"])
        return Result("failed", error=f"unsupported target for a local worker: {sorted(target)}")

    def run_env(self, g: Grant) -> dict[str, str]:
        """The variables every run sees, which a job's own env never overrides (with its chain
        parent's, for a run a chain triggered)."""
        return {
            "CRONWHEEL_JOB_ID": g.job_id,
            "CRONWHEEL_EXECUTION_ID": g.execution_id,
            "CRONWHEEL_LEASE_EPOCH": str(g.lease_epoch),
            "CRONWHEEL_ATTEMPT": str(g.attempt),
            "CRONWHEEL_SCHEDULED_AT": format_instant(g.scheduled_at),
            "CRONWHEEL_WORKER_ID": self.worker_id,
            **parent_fields(g, "CRONWHEEL_PARENT_"),
        }

    async def run_shell(self, g: Grant, command: str, hooks: ShellHooks) -> Result:
        loop = asyncio.get_running_loop()
        timeout_sec = float(g.timeout_sec)
        try:
            launch = plan_launch(command, g.process, self._base_env, self.run_env(g), self._euid)
        except LaunchError as exc:
            return Result("failed", error=str(exc))
        stdin_bytes = launch.stdin
        if stdin_bytes is None:  # the payload as JSON; most jobs have none
            stdin_bytes = b"null\n" if g.payload is None else json.dumps(g.payload, ensure_ascii=False).encode() + b"\n"
        watch = self._watch()
        out_r, out_w = os.pipe()
        in_r, in_w = os.pipe()
        try:
            if len(stdin_bytes) <= select.PIPE_BUF:
                # written before the start: an empty pipe takes PIPE_BUF bytes at once (any pipe
                # holds a page), so no feed is needed, and one that exits unread is no EPIPE
                os.write(in_w, stdin_bytes)
                os.close(in_w)
                in_w = -1
            child = None
            if launch.direct is not None:
                with contextlib.suppress(OSError):  # not exec'able after all: the shell says why
                    child = spawn(*launch.direct, launch.env, in_r, out_w, launch.popen, watch)
            if child is None:
                child = spawn(launch.argv[0], launch.argv, launch.env, in_r, out_w, launch.popen, watch)
        except BaseException as exc:
            for fd in (out_r, out_w, in_r, in_w):
                if fd >= 0:
                    os.close(fd)
            if isinstance(exc, (OSError, ValueError, subprocess.SubprocessError)):
                return Result("failed", error=f"cannot start {launch.argv[0]}: {exc}")
            raise
        os.close(out_w)
        os.close(in_r)
        hooks.spawned(child.pid)

        tail = Tail()
        eof: asyncio.Future[None] = loop.create_future()

        def on_readable() -> None:
            # out_r stays blocking: the run is its only reader and this is called only when it
            # is readable, so the read returns at once (and one ioctl per run is saved)
            try:
                data = os.read(out_r, READ_CHUNK)
            except OSError:
                data = b""
            if data:
                tail.add(data)
                hooks.output(data)
            else:
                watch.remove(out_r)
                if not eof.done():
                    eof.set_result(None)

        watch.add(out_r, on_readable)
        feed = StdinFeed(loop, in_w, stdin_bytes) if in_w >= 0 else None
        overran = False
        try:
            if not await _within(child.exited, timeout_sec):
                overran = True
                killpg(child.pid, signal.SIGTERM)
                if not await _within(child.exited, min(TERM_GRACE_MAX, timeout_sec / 10)):
                    killpg(child.pid, signal.SIGKILL)
                    await asyncio.shield(child.exited)
            # the shell is gone: take what is left in the pipe, then kill anything it left
            # behind in its group (which also closes the pipe's last writers)
            await _within(eof, EXIT_DRAIN_SEC)
            killpg(child.pid, signal.SIGKILL)
            await _within(eof, EXIT_DRAIN_SEC)  # a process that escaped the group
        finally:
            watch.remove(out_r)
            os.close(out_r)
            if feed is not None:
                feed.close()
            if child.returncode is None:  # cancelled (worker stopping): no orphans
                killpg(child.pid, signal.SIGKILL)
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(child.exited)
        hooks.ended()
        code = child.returncode
        output = tail.text()
        if overran:
            return timed_out(timeout_sec, code, output)
        if code == 0:
            return Result("succeeded", 0, None, output)
        if code is not None and code < 0:
            error = f"killed by signal {-code}"
        else:
            error = f"exit code {code}"
        return Result("failed", code, error, output)

    async def run_http(self, g: Grant, spec: dict[str, Any]) -> Result:
        # imported here: only workers that run http targets pay for aiohttp
        from cronwheel.worker import httptarget

        if self._http is None:
            self._http = httptarget.new_session(self.slots)
        ours = {  # the run's identity, on every request it makes
            "Cronwheel-Job-Id": g.job_id,
            "Cronwheel-Execution-Id": g.execution_id,
            "Cronwheel-Lease-Epoch": str(g.lease_epoch),
            # the lease's holder: an effect recorded for this run must name it (409 otherwise)
            "Cronwheel-Worker-Id": self.worker_id,
            "Cronwheel-Attempt": str(g.attempt),
            "Cronwheel-Scheduled-At": format_instant(g.scheduled_at),
            "Idempotency-Key": g.execution_id,
            **parent_fields(g, "Cronwheel-Parent-", header=True),
        }
        return await httptarget.run_http(self._http, g, spec, ours)

    def loaded_plain(self, g: Grant) -> PythonTarget | None:
        """The plain (sync) callable ``g`` runs, if it is loaded already: such a run needs no
        task of its own (``Worker._call_plain``), the herd's common case."""
        spec = g.target.get("python")
        target = self._callables.get(spec) if isinstance(spec, str) else None
        return None if target is None or target.is_async else target

    def start_plain(self, g: Grant, target: PythonTarget, deadline: float) -> asyncio.Future[Any]:
        """``target`` (``loaded_plain``) started for ``g``, to be done by ``deadline`` (loop
        time; ``call_result`` reads the future)."""
        return target.start(self.python_arguments(g), deadline, self._threads)

    async def run_python(self, g: Grant, spec: str) -> Result:
        try:
            target = self._callables.get(spec)
            if target is None:
                target = await asyncio.to_thread(load_callable, spec)
                self._callables[spec] = target
        except Exception as exc:
            return not_loaded(spec, exc)
        return await target.call(self.python_arguments(g), float(g.timeout_sec), self._threads)

    def python_arguments(self, g: Grant) -> dict[str, Any]:
        return {
            "execution_id": g.execution_id,
            "job_id": g.job_id,
            "lease_epoch": g.lease_epoch,
            "worker_id": self.worker_id,  # the lease's holder, which an effect recorded must name
            "attempt": g.attempt,
            "scheduled_at": g.scheduled_at,
            "payload": g.payload,
        }


async def _within(fut: asyncio.Future[Any], timeout_sec: float) -> bool:
    """Whether ``fut`` is done within ``timeout_sec``; unlike ``wait_for`` it is never cancelled."""
    if not fut.done():
        await asyncio.wait((fut,), timeout=timeout_sec)
    return fut.done()
