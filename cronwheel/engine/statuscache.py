"""The parts of the node's status read from the store, remembered with the time of the read,
so that status keeps answering (marked stale) while the store cannot be reached.

Composed into the node (``Node.status_cache``), used by the status part (engine/nodestatus.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from cronwheel.core.clock import Clock
from cronwheel.engine.service import Unavailable
from cronwheel.store.base import StoreUnavailable

#: a status read that takes longer is answered from the last read, marked stale: a store cut
#: off by the network does not refuse, it says nothing, and the calls queued before this one
#: (each waiting out its own connect or send timeout) could hold it for a minute
STATUS_READ_TIMEOUT_SEC = 5.0


class StatusCache:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._parts: dict[str, tuple[int, dict[str, Any]]] = {}  # part -> (when read, what)

    async def read(
        self, part: str, read: Callable[[], Awaitable[dict[str, Any]]], fresh_ms: int | None = None
    ) -> tuple[dict[str, Any], int, str | None]:
        """``(value, as of, error)``: the part as read now (or, given ``fresh_ms``, as read at
        most that long ago), or while the store cannot be reached (a failover), the last one
        read and the error. Unavailable if it was never read."""
        now = self.clock.now_ms()
        cached = self._parts.get(part)
        if fresh_ms is not None and cached is not None and now - cached[0] <= fresh_ms:
            return cached[1], cached[0], None
        try:
            try:
                value = await asyncio.wait_for(read(), STATUS_READ_TIMEOUT_SEC)
            except TimeoutError:
                raise StoreUnavailable(f"the store did not answer within {STATUS_READ_TIMEOUT_SEC:g} s") from None
        except StoreUnavailable as exc:
            cached = self._parts.get(part)
            if cached is None:
                raise Unavailable(str(exc)) from exc
            return cached[1], cached[0], str(exc)
        self._parts[part] = (now, value)
        return value, now, None
