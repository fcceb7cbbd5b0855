"""One event when a loop loses the store, one when it has it back.

Every engine loop survives its own exceptions (it logs them and goes on). For a bug that is
right: each one is worth its traceback. For a store outage (a restart, a failover) it is
noise: every loop would log a traceback every half second for as long as it lasts. A loop
reports its errors through ``LoopHealth``: ``StoreUnavailable`` gives one
``store.unavailable`` per outage and loop, and the first good turn after it one
``store.available`` with how long it lasted. Any other error is logged with its traceback,
at most once per ``ERROR_LOG_INTERVAL_SEC`` for the same error (type and message): a loop that
fails on every turn says so once, then once per interval with the count held back
(``suppressed``), instead of a traceback twice a second.
"""

from __future__ import annotations

from traceback import format_exc

from cronwheel.core.clock import Clock
from cronwheel.core.ratelimit import OncePer
from cronwheel.obs.events import EventLog
from cronwheel.store.base import StoreUnavailable

#: the same error of a loop is logged at most once per this many seconds
ERROR_LOG_INTERVAL_SEC = 10.0


class LoopHealth:
    def __init__(self, events: EventLog, clock: Clock, loop: str) -> None:
        self.events = events
        self.clock = clock
        self.loop = loop
        self._down_since: float | None = None  # monotonic seconds, while the store is down
        self._errors = OncePer(ERROR_LOG_INTERVAL_SEC, max_keys=64)

    def failed(self, exc: Exception, traceback_limit: int = 8) -> None:
        """Report an exception caught by the loop (call it inside the ``except`` block)."""
        if isinstance(exc, StoreUnavailable):
            if self._down_since is None:
                self._down_since = self.clock.monotonic()
                self.events.emit("store.unavailable", loop=self.loop, error=str(exc))
            return
        error = repr(exc)
        if not self._errors.allow(error[:300], self.clock.monotonic()):
            return
        held = self._errors.suppressed
        self.events.emit(f"{self.loop}.error", error=error, traceback=format_exc(limit=traceback_limit),
                         **({"suppressed": held} if held else {}))

    def ok(self) -> None:
        """The loop's turn asked the store and went through (cheap: call it after every such
        turn). Not after a turn that asked the store nothing (a cluster node that lost its
        buckets in the outage has nothing to claim): that proves nothing, and the outage
        stays open until a store call succeeds."""
        if self._down_since is not None:
            down_ms = round((self.clock.monotonic() - self._down_since) * 1000)
            self._down_since = None
            self.events.emit("store.available", loop=self.loop, downMs=down_ms)
