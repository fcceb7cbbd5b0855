"""A local worker's way out, with a REAL worker process facing a fake daemon (the Unix socket
the test listens on): whatever holds the way out up, a stopping worker ends, and its commands'
process groups die with it. Waits are on conditions with deadlines, never bare sleeps."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from cronwheel.worker.framing import FROM_WORKER, encode_frame, read_frame
from cronwheel.worker.lifeline import STOP_DEADLINE_SEC
from cronwheel.worker.pool import WorkerPool
from cronwheel.worker.protocol import PROTOCOL_VERSION, Abort, Bye, Frame, Grants, Hello, Welcome
from tests.integration.test_worker_pool import (
    HERE,
    REPO,
    Recorder,
    grant,
    read_pids,
    run,
    shell,
    until,
)
from tests.support.procs import alive

#: a stuck worker ends at its deadline: give it that and room for a loaded machine
EXIT_WITHIN_SEC = STOP_DEADLINE_SEC + 20


class LoneWorker:
    """One worker process and the daemon's end of its connection."""

    def __init__(self, tmp: Path, proc: asyncio.subprocess.Process, writer: asyncio.StreamWriter) -> None:
        self.tmp = tmp
        self.proc = proc
        self.writer = writer

    def send(self, *frames: Frame) -> None:
        """In one write: the worker reads them together."""
        self.writer.write(b"".join(encode_frame(f) for f in frames))

    def events(self, name: str) -> list[dict[str, Any]]:
        lines = (self.tmp / "worker.log").read_text().splitlines()
        return [e for e in map(json.loads, (x for x in lines if x.startswith("{"))) if e.get("event") == name]

    async def exit_code(self) -> int:
        return await asyncio.wait_for(self.proc.wait(), EXIT_WITHIN_SEC)


@contextlib.asynccontextmanager
async def lone_worker(slots: int = 4) -> AsyncIterator[LoneWorker]:
    tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
    loop = asyncio.get_running_loop()
    connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = loop.create_future()
    server = await asyncio.start_unix_server(lambda r, w: connected.set_result((r, w)), path=str(tmp / "d.sock"))
    with (tmp / "worker.log").open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cronwheel.worker.process", "--socket", str(tmp / "d.sock"),
            "--worker-id", "lone-w0-0", "--slots", str(slots), stderr=log,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]), "CRONWHEEL_LOG_FORMAT": "json"},
        )  # fmt: skip
    writer: asyncio.StreamWriter | None = None
    try:
        reader, writer = await asyncio.wait_for(connected, 30)
        assert await asyncio.wait_for(read_frame(reader, FROM_WORKER), 10) == Hello(PROTOCOL_VERSION, "lone-w0-0", slots, proc.pid)
        writer.write(encode_frame(Welcome(PROTOCOL_VERSION)))
        yield LoneWorker(tmp, proc, writer)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if writer is not None:
            writer.close()
        for pid in read_pids(tmp / "pids"):  # what a failed test left behind
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        server.close()
        await server.wait_closed()
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_bye_read_with_a_grant_while_a_lease_beats_ends_the_worker() -> None:
    """overlap=replace at a stop: the next tick's grant, the aborts of both runs and the bye,
    read together while a lease was beating. The grant woke the heartbeat loop as the bye ended
    the session, and on Python 3.11 the wait_for it waited in swallowed the cancel: the loop
    waited on for ever, the worker never left run(), and ignored SIGTERM (it was stopping)."""

    async def main() -> None:
        async with lone_worker() as w:
            pids = w.tmp / "pids"
            first = grant(shell(f"echo $$ >> {pids}; exec sleep 1000"))
            w.send(Grants([first]))
            [pid] = await until(lambda: read_pids(pids), what="the first run")  # its lease beats on a timer now
            second = grant(shell(f"echo $$ >> {pids}; exec sleep 1000"))
            w.send(Grants([second]), Abort(first.execution_id, "replaced"), Abort(second.execution_id, "cancelled"), Bye())
            assert await w.exit_code() == 0
            assert w.events("worker.shutdown_forced") == []  # it left on its own, not at its deadline
            assert not alive(pid)

    run(main())


def test_a_worker_stuck_on_its_way_out_ends_at_its_deadline_when_its_daemon_goes() -> None:
    """A callable that does not end when cancelled holds the worker's exit up for good (the
    loop's last act waits for every task). Once its daemon is gone, the worker still ends at
    its deadline, and its commands die with it."""

    async def main() -> None:
        async with lone_worker() as w:
            pids, deaf = w.tmp / "pids", w.tmp / "deaf"
            w.send(Grants([grant(shell(f"echo $$ >> {pids}; exec sleep 1000")),
                           grant({"python": "worker_callables:deaf_to_cancel"}, payload=str(deaf))]))  # fmt: skip
            [pid] = await until(lambda: read_pids(pids), what="the command")
            await until(deaf.exists, what="the callable")
            w.writer.close()  # the daemon dies
            assert await w.exit_code() == 3
            [forced] = w.events("worker.shutdown_forced")
            assert forced["reason"] == f"still running {STOP_DEADLINE_SEC:g} s after it began to stop"
            await until(lambda: not alive(pid), 5, "the command to die with its worker")

    run(main())


def test_a_second_sigterm_ends_a_stopping_worker_at_once() -> None:
    """The first SIGTERM kills the runs and begins the way out, which a callable deaf to its
    cancel holds up; the second ends the process there and then. Both used to be one: a
    stopping worker ignored every later signal."""

    async def main() -> None:
        async with lone_worker() as w:
            deaf = w.tmp / "deaf"
            w.send(Grants([grant({"python": "worker_callables:deaf_to_cancel"}, payload=str(deaf))]))
            await until(deaf.exists, what="the callable")
            w.proc.send_signal(signal.SIGTERM)
            await until(lambda: w.events("worker.stopping"), what="the worker to begin to stop")
            w.proc.send_signal(signal.SIGTERM)
            assert await w.exit_code() in (128 + signal.SIGTERM, -signal.SIGTERM)
            # ended by the signal (its handler, or the default action once the loop let it go),
            # not by the deadline
            assert [e["reason"] for e in w.events("worker.shutdown_forced")] in ([], ["signal SIGTERM while stopping"])

    run(main())


#: a worker process that ignores SIGTERM and never connects (argv[1]: a file it makes once deaf)
_DEAF_TO_SIGTERM = """import signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], "w").close()
while True:
    signal.pause()
"""


def test_a_stopping_pool_kills_a_worker_deaf_to_sigterm() -> None:
    """`serve` stopping waits for its workers for a bounded time (the grace, then SIGTERM and
    KILL_AFTER_SEC), then kills what is left with SIGKILL: a worker cannot keep it waiting."""

    async def main() -> None:
        tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
        deaf = tmp / "deaf"
        pool = WorkerPool(tmp / "w.sock", Recorder(), n_workers=1, slots=1, node_id="test",
                          worker_cmd=[sys.executable, "-c", _DEAF_TO_SIGTERM, str(deaf)])  # fmt: skip
        pid = None
        try:
            await pool.start()
            await until(deaf.exists, what="the worker to ignore SIGTERM")
            [pid] = pool.worker_pids().values()
            await asyncio.wait_for(pool.stop(grace_sec=0.5), 30)
            assert not alive(pid)
        finally:
            if pid is not None and alive(pid):
                os.kill(pid, signal.SIGKILL)
            shutil.rmtree(tmp, ignore_errors=True)

    run(main())
