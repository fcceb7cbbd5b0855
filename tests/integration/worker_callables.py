"""Python-callable targets for tests/integration/test_worker_pool.py and test_worker_stop.py.

Imported by the worker processes (the test puts this directory on their PYTHONPATH), never by
pytest itself.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any


def echo_sync(execution_id: str, lease_epoch: int, payload: Any) -> dict[str, Any]:
    """Takes only some of the arguments: the worker must pass just those."""
    return {"execution_id": execution_id, "lease_epoch": lease_epoch, "payload": payload, "kind": "sync"}


async def echo_async(**kwargs: Any) -> dict[str, Any]:
    """Takes **kwargs: the worker passes everything."""
    await asyncio.sleep(0)
    return {"kind": "async", **kwargs}


def no_args() -> str:
    return "fine"


def not_json() -> object:
    return {1, 2, 3}


def boom(payload: Any) -> None:
    raise RuntimeError(f"boom with {payload!r}")


async def sleepy(payload: Any) -> str:
    await asyncio.sleep(float(payload))
    return "woke"


def sleepy_sync(payload: Any) -> str:
    time.sleep(float(payload))
    return "woke"


def lazy_sleeper(payload: Any) -> Any:
    """A plain function that returns a coroutine: the worker awaits it, within the timeout."""
    return sleepy(payload)


def own_timeout() -> None:
    """Fails with a TimeoutError of its own (an upstream call): a failure, not the job's timeout."""
    raise TimeoutError("the upstream API did not answer")


async def own_timeout_async() -> None:
    await asyncio.sleep(0)
    raise TimeoutError("the upstream API did not answer")


async def deaf_to_cancel(payload: Any) -> None:
    """Touches the file ``payload``, then never ends, even when cancelled: it catches
    CancelledError and waits on, as a retry loop that swallows every exception does."""
    os.close(os.open(payload, os.O_CREAT | os.O_WRONLY, 0o644))
    while True:
        try:  # noqa: SIM105 - the swallowing is the point, spelled as such code spells it
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass
