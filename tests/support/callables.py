"""Python targets used by the failure tests (imported inside real worker processes)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from typing import Any


def crash_worker(**_: Any) -> None:
    """A poison pill that takes its worker process down with it, every time."""
    os.kill(os.getpid(), signal.SIGKILL)


def remote_echo(execution_id: str, job_id: str, lease_epoch: int, worker_id: str, attempt: int, scheduled_at: int,
                payload: Any) -> dict[str, Any]:
    """A remote worker's handler: returns what it was called with. With a payload
    ``{"hangOnEpoch": n}``, the run at lease epoch ``n`` hangs (until its worker is killed);
    with ``{"waitFor": path}``, each run returns once that file exists (60 s at most)."""
    if isinstance(payload, dict) and payload.get("hangOnEpoch") == lease_epoch:
        threading.Event().wait()
    if isinstance(payload, dict) and isinstance(payload.get("waitFor"), str):
        deadline = time.monotonic() + 60
        while not os.path.exists(payload["waitFor"]) and time.monotonic() < deadline:
            threading.Event().wait(0.05)
    return {"executionId": execution_id, "jobId": job_id, "leaseEpoch": lease_epoch, "workerId": worker_id,
            "attempt": attempt, "scheduledAt": scheduled_at, "payload": payload}


def unfit_text(**_: Any) -> str:
    """Returns text no store can hold as it is: a lone surrogate (as os.fsdecode makes of a
    file name that is not UTF-8) and a NUL."""
    return "out\udc80\x00end"


def unshowable(payload: Any) -> object:
    """Returns what neither JSON nor repr can write: a list nested 100,000 deep (repr too
    runs out of stack), or with a payload ``"repr"`` an object whose repr raises."""
    if payload == "repr":
        return _ReprRaises()
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    return nested


class _ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def chatty(**_: Any) -> str:
    """Prints, logs and writes to stderr the way library code does, inside the worker."""
    print("hello from a callable")
    logging.getLogger("thirdparty.lib").warning("careful: %s", "disk almost full")
    sys.stderr.write("a raw line on stderr\n")
    return "ok"


def _check(payload: Any) -> None:
    if payload != "good":
        raise ValueError("bad input")


def bad_input(payload: Any) -> None:
    """Raises ValueError('bad input') two frames down, as a user's code would."""
    _check(payload)


async def bad_input_async(payload: Any) -> None:
    await asyncio.sleep(0)
    _check(payload)


async def too_slow(**_: Any) -> None:
    """Overruns any timeout under a minute (a coroutine: the timeout cancels it, where a
    thread would keep its worker busy for the minute)."""
    await asyncio.sleep(60)


def ledger(execution_id: str, lease_epoch: int, attempt: int, payload: Any = None, **_: Any) -> None:
    """Appends ``execution_id lease_epoch attempt pid time`` to the file ``payload["ledger"]``
    (one ``O_APPEND`` write: lines from many workers never interleave)."""
    fd = os.open(payload["ledger"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{execution_id} {lease_epoch} {attempt} {os.getpid()} {time.time():.3f}\n".encode())
    finally:
        os.close(fd)


async def blocks_the_loop(payload: Any) -> None:
    """Touches the file ``payload["started"]``, then blocks its worker's event loop for
    ``payload["sec"]`` seconds (time.sleep in a coroutine: a mistake that happens)."""
    os.close(os.open(payload["started"], os.O_CREAT | os.O_WRONLY, 0o644))
    time.sleep(payload["sec"])  # noqa: ASYNC251 - the mistake this callable stands for
