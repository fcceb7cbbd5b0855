"""The Python remote worker: pulls executions of queue targets over the HTTP API.

    cronwheel worker --url URL --queue NAME [--queue NAME …] --handler module:function
                     [--concurrency N] [--token T] [--worker-id ID] [--grace SEC]

It speaks only the public API, as a worker in any other language would (docs/remote-workers.md):

* ``POST /v1/workers/claim {workerId, queues, max, waitSec}`` long-polls for up to as many
  executions as it has free slots;
* the handler is called like a local ``{"python": …}`` target, with the keyword arguments it
  accepts out of execution_id, job_id, lease_epoch, attempt, scheduled_at (ms) and payload;
  coroutines are awaited, plain functions run in a pool of ``concurrency`` threads, and the
  grant's ``timeoutSec`` bounds the call;
* ``POST /v1/executions/{id}/heartbeat`` every ``leaseSec / 4``; a 409 (lease lost or
  cancelled) aborts the run at once and no result is sent (a coroutine is cancelled; a plain
  function's thread cannot be killed, its result is dropped);
* ``POST /v1/executions/{id}/complete`` with outcome succeeded / failed / timed_out, sent
  again through a daemon restart or a 503 until the lease would have run out (``_complete``).

SIGTERM/SIGINT: stop claiming, let running executions finish for up to ``--grace`` seconds,
then report what is left as failed (so it is retried at once rather than when its lease
expires) and exit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import re
import signal
import socket
import sys
import threading
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from cronwheel.core.jobfields import PATTERN_WORDS, QUEUE_PATTERN
from cronwheel.core.limits import MAX_WORKER_ID_CHARS, scrub_text
from cronwheel.core.schedule import parse_instant
from cronwheel.core.tenants import given_token
from cronwheel.core.words import as_given, is_sendable
from cronwheel.worker.callthreads import CallThreads
from cronwheel.worker.eventlog import log
from cronwheel.worker.results import cause_text
from cronwheel.worker.targets import PythonTarget, load_callable
from cronwheel.worker.waiting import wait_event

CLAIM_WAIT_SEC = 20  #: the long poll's waitSec
RETRY_PAUSE_SEC = 1.0  #: after a failed claim (daemon down, 5xx), before the next one
HTTP_TIMEOUT_SEC = 30  #: any call but the claim's long poll
COMPLETE_RETRY_MIN_SEC = 10.0  #: a result is sent again for its lease's length, and at least this long


class _Fenced(Exception):
    """The daemon answered 409: this lease is gone."""


class _Refused(RuntimeError):
    """The daemon answered another error status."""

    def __init__(self, path: str, status: int, text: str) -> None:
        super().__init__(f"POST {path}: HTTP {status}: {text[:500]}")
        self.status = status

    @property
    def passing(self) -> bool:
        """A store outage (503), a restart's proxy (502/504), a rate: worth sending again."""
        return self.status >= 500 or self.status == 429

    @property
    def unauthorized(self) -> bool:
        """The token is refused (none, unknown, revoked) or may not claim (not a worker or admin
        token): no claim with it will ever be granted."""
        return self.status in (401, 403)


class RemoteWorker:
    def __init__(
        self,
        url: str,
        queues: list[str],
        handler: str,
        *,
        concurrency: int = 4,
        token: str | None = None,
        worker_id: str | None = None,
        grace_sec: float = 30.0,
        wait_sec: float = CLAIM_WAIT_SEC,
        target: PythonTarget | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.queues = list(dict.fromkeys(queues))
        self.handler = handler
        self.concurrency = concurrency
        self.token = token
        self.worker_id = worker_id or f"remote-{socket.gethostname()}-{os.getpid()}"
        self.grace_sec = grace_sec
        self.wait_sec = wait_sec
        self._running: dict[str, asyncio.Task[None]] = {}
        self._stopping = asyncio.Event()
        self._slot_free = asyncio.Event()
        self._executor = CallThreads(concurrency, "handler")
        self._target = target  #: the handler, when the caller loaded it already
        self._session: aiohttp.ClientSession | None = None
        self._refused = False  #: its token may not claim: it stopped (exit status 1)

    # ---- lifecycle
    async def run(self) -> int:
        if self._target is None:
            self._target = await asyncio.to_thread(load_callable, self.handler)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self._session = aiohttp.ClientSession(headers=headers)
        log("remote_worker.started", worker=self.worker_id, url=self.url, queues=self.queues,
             handler=self.handler, concurrency=self.concurrency)  # fmt: skip
        try:
            await self._claim_loop()
            await self._drain()
        finally:
            await self._session.close()
            self._executor.close()
        log("remote_worker.stopped", worker=self.worker_id)
        return 1 if self._refused else 0

    async def _claim_loop(self) -> None:
        stop = asyncio.ensure_future(self._stopping.wait())
        failed = 0  # claims failed in a row
        try:
            while not self._stopping.is_set():
                free = self.concurrency - len(self._running)
                if free <= 0:
                    self._slot_free.clear()
                    slot = asyncio.ensure_future(self._slot_free.wait())
                    await asyncio.wait({slot, stop}, return_when=asyncio.FIRST_COMPLETED)
                    slot.cancel()
                    continue
                claim = asyncio.ensure_future(self._claim(free))
                await asyncio.wait({claim, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not claim.done():  # stopping: give up the long poll (nothing was granted yet,
                    claim.cancel()  # or, if it was, the leases expire and the reaper retries)
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await claim
                    return
                try:
                    grants = claim.result()
                except Exception as exc:  # daemon down, stopping or refusing: pause, try again
                    if isinstance(exc, _Refused) and exc.unauthorized:
                        # it would claim nothing, once a second, for ever, looking alive: stop, saying why
                        log("remote_worker.refused", worker=self.worker_id, url=self.url, status=exc.status, error=str(exc),
                            hint="give a worker (or admin) token of the queues' tenant: --token or CRONWHEEL_TOKEN "
                                 "(`cronwheel token create --tenant NAME --role worker`)")  # fmt: skip
                        self._refused = True
                        return
                    if not failed:  # once per outage, not once a second
                        log("remote_worker.claim_failed", worker=self.worker_id, error=repr(exc))
                    failed += 1
                    await wait_event(self._stopping, RETRY_PAUSE_SEC)
                    continue
                if failed:
                    log("remote_worker.claim_recovered", worker=self.worker_id, failedClaims=failed)
                    failed = 0
                for g in grants:
                    xid = str(g["executionId"])
                    task = asyncio.get_running_loop().create_task(self._execute(g), name=f"run {xid}")
                    self._running[xid] = task
                    task.add_done_callback(functools.partial(self._done, xid))
        finally:
            stop.cancel()

    def _done(self, xid: str, _task: asyncio.Task[None]) -> None:
        self._running.pop(xid, None)
        self._slot_free.set()

    async def _drain(self) -> None:
        if not self._running:
            return
        log("remote_worker.draining", worker=self.worker_id, running=len(self._running), graceSec=self.grace_sec)
        tasks = list(self._running.values())
        _done, pending = await asyncio.wait(tasks, timeout=self.grace_sec)
        for task in pending:
            task.cancel()  # _execute reports it failed
        if pending:
            await asyncio.wait(pending, timeout=HTTP_TIMEOUT_SEC)

    # ---- HTTP
    async def _post(self, path: str, body: dict[str, Any], timeout_sec: float = HTTP_TIMEOUT_SEC) -> Any:
        assert self._session is not None
        async with self._session.post(
            self.url + path, json=body, timeout=aiohttp.ClientTimeout(total=timeout_sec)
        ) as resp:
            if resp.status == 409:
                raise _Fenced(await resp.text())
            if resp.status >= 300:
                raise _Refused(path, resp.status, await resp.text())
            return await resp.json()

    async def _claim(self, n: int) -> list[dict[str, Any]]:
        body = {"workerId": self.worker_id, "queues": self.queues, "max": min(n, 100), "waitSec": self.wait_sec}
        data = await self._post("/v1/workers/claim", body, timeout_sec=self.wait_sec + HTTP_TIMEOUT_SEC)
        return list(data.get("executions") or [])

    # ---- one execution
    async def _execute(self, g: dict[str, Any]) -> None:
        xid, epoch = str(g["executionId"]), int(g["leaseEpoch"])
        log("remote_worker.run", worker=self.worker_id, executionId=xid, leaseEpoch=epoch, attempt=g.get("attempt"))
        call = asyncio.ensure_future(self._call(g))
        beat = asyncio.ensure_future(self._heartbeat_loop(g, call))
        try:
            outcome, error, output = await call
        except asyncio.CancelledError:
            if call.cancelled() and beat.done() and not beat.cancelled() and beat.result() is not None:
                log("remote_worker.aborted", worker=self.worker_id, executionId=xid, leaseEpoch=epoch,
                     reason=beat.result())  # fmt: skip
                return  # fenced: the daemon knows; no result
            outcome, error, output = "failed", "worker stopped before the run finished", None
            call.cancel()
        finally:
            beat.cancel()
        # the API refuses NUL and lone surrogates (a handler's text may hold them): report the run anyway
        body = {"workerId": self.worker_id, "leaseEpoch": epoch, "outcome": outcome,
                "error": None if error is None else scrub_text(error), "output": None if output is None else scrub_text(output)}
        await self._complete(xid, epoch, body, float(g.get("leaseSec") or 60))

    async def _complete(self, xid: str, epoch: int, body: dict[str, Any], lease_sec: float) -> None:
        """Report a result through a daemon restart or a store outage: sent again until the
        lease would have run out anyway (then the reaper retries the run). Completions are
        fenced, so one applied whose answer was lost is refused (409) the second time, never
        applied twice."""
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + max(lease_sec, COMPLETE_RETRY_MIN_SEC)
        delay, retried = 0.5, False
        while True:
            try:
                await self._post(f"/v1/executions/{xid}/complete", body)
            except _Fenced as exc:
                log("remote_worker.fenced", worker=self.worker_id, executionId=xid, leaseEpoch=epoch, via="complete", detail=str(exc)[:300])
            except (aiohttp.ClientConnectionError, TimeoutError, _Refused) as exc:
                if (isinstance(exc, _Refused) and not exc.passing) or loop.time() + delay > give_up_at:
                    log("remote_worker.complete_failed", worker=self.worker_id, executionId=xid, error=repr(exc))
                    return  # the lease expires and the reaper retries it
                if not retried:  # once: the outcome (completed or complete_failed) follows
                    log("remote_worker.complete_retrying", worker=self.worker_id, executionId=xid, error=repr(exc))
                    retried = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            except Exception as exc:  # the lease expires and the reaper retries it
                log("remote_worker.complete_failed", worker=self.worker_id, executionId=xid, error=repr(exc))
            else:
                log("remote_worker.completed", worker=self.worker_id, executionId=xid, leaseEpoch=epoch, outcome=body["outcome"])
            return

    async def _heartbeat_loop(self, g: dict[str, Any], call: asyncio.Future[Any]) -> str | None:
        """Beat every leaseSec / 4; on 409, cancel the run and return why."""
        xid, epoch = str(g["executionId"]), int(g["leaseEpoch"])
        every = max(0.05, float(g.get("leaseSec") or 60) / 4)
        while True:
            await asyncio.sleep(every)
            try:
                await self._post(f"/v1/executions/{xid}/heartbeat", {"workerId": self.worker_id, "leaseEpoch": epoch},
                                 timeout_sec=max(1.0, every))  # fmt: skip
            except _Fenced as exc:
                call.cancel()
                return str(exc)[:300] or "lease lost"
            except Exception as exc:  # a missed beat: the next one may get through
                log("remote_worker.heartbeat_failed", worker=self.worker_id, executionId=xid, error=repr(exc))

    async def _call(self, g: dict[str, Any]) -> tuple[str, str | None, str | None]:
        """Run the handler as a python target is run (PythonTarget.call): (outcome, error, output)."""
        target = self._target
        assert target is not None
        scheduled = g.get("scheduledAt")
        kwargs = {
            "execution_id": g["executionId"],
            "job_id": g["jobId"],
            "lease_epoch": g["leaseEpoch"],
            "worker_id": self.worker_id,  # the lease's holder, which an effect recorded must name
            "attempt": g["attempt"],
            "scheduled_at": parse_instant(scheduled) if isinstance(scheduled, str) else scheduled,
            "payload": g.get("payload"),
        }
        result = await target.call(kwargs, float(g.get("timeoutSec") or 3600), self._executor)
        return result.outcome, result.error, result.output


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cronwheel worker", description="A remote worker: run executions of queue targets claimed over the HTTP API.")
    ap.add_argument("--url", required=True, help="the daemon's HTTP API, e.g. http://10.0.0.5:7878")
    ap.add_argument("--queue", action="append", required=True, metavar="NAME", help="a queue to serve (repeatable)")
    ap.add_argument("--handler", required=True, metavar="MODULE:FUNCTION", help="the Python callable that runs each execution")
    ap.add_argument("--concurrency", type=int, default=4, help="executions run at once (default: 4)")
    ap.add_argument("--token", default=os.environ.get("CRONWHEEL_TOKEN"), help="bearer token (default: $CRONWHEEL_TOKEN)")
    ap.add_argument("--worker-id", default=os.environ.get("CRONWHEEL_WORKER_ID"), help="default: remote-HOST-PID")
    ap.add_argument("--grace", type=float, default=30.0, metavar="SEC", help="on SIGTERM, how long running executions may finish (default: 30)")
    ap.add_argument("--wait", type=float, default=CLAIM_WAIT_SEC, metavar="SEC", help=f"the claim's long poll, 0..30 (default: {CLAIM_WAIT_SEC:g})")
    args = ap.parse_args(argv)
    refusal = _refusal(args)
    if refusal is not None:
        ap.error(refusal)
    try:  # here, not in the loop: a handler that cannot be loaded is a usage error, in one line
        target = load_callable(args.handler)
    except Exception as exc:
        ap.error(f"cannot load the handler {_shown(args.handler)}: {cause_text(exc)}")
    worker = RemoteWorker(
        args.url, args.queue, args.handler, concurrency=args.concurrency,
        token=None if args.token is None else given_token(args.token),  # _refusal saw it can be sent
        worker_id=args.worker_id, grace_sec=args.grace, wait_sec=args.wait, target=target,
    )
    code = asyncio.run(worker.run())
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # a handler thread that never returns must not keep us alive
    return code


#: a typo's size: each slot is a thread of the handler pool
MAX_CONCURRENCY = 10_000


def _refusal(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, in words, before anything starts: the claim loop
    would otherwise retry a URL or a queue name that can never work, once a second."""
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        return f"--concurrency must be between 1 and {MAX_CONCURRENCY:,}"
    if not 0 <= args.wait <= 30:  # nan fails both comparisons
        return "--wait must be between 0 and 30"
    if not 0 <= args.grace <= 86_400:
        return "--grace must be between 0 and 86400 seconds"
    url = urlsplit(args.url) if is_sendable(args.url) else None
    if url is None or url.scheme not in ("http", "https") or not url.hostname:
        return f"--url must be the daemon's http(s)://HOST:PORT, not {_shown(args.url)}"
    for queue in args.queue:
        if not re.search(QUEUE_PATTERN, queue):
            return f"--queue {_shown(queue)} is not a queue name ({PATTERN_WORDS[QUEUE_PATTERN]})"
    if args.token is not None and given_token(args.token) is None:
        return "--token (or $CRONWHEEL_TOKEN) must be printable ASCII, as `cronwheel token create` prints it"
    if args.worker_id is not None and not (0 < len(args.worker_id) <= MAX_WORKER_ID_CHARS and is_sendable(args.worker_id)):
        return f"--worker-id must be 1 to {MAX_WORKER_ID_CHARS} printable characters"
    return None


def _shown(text: str) -> str:
    return f"'{as_given(text, 100)}'"


if __name__ == "__main__":
    sys.exit(main())
