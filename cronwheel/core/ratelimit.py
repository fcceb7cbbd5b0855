"""Say it once per interval: what keeps a flood of the same error or refusal to one log line.

Pure: time is an argument (seconds, any monotonic origin).
"""

from __future__ import annotations


class OncePer:
    """``allow(key, now)`` is True at most once per ``interval`` for each key; the calls it
    refused in between are counted and handed to the next allowed one (``suppressed``), so a
    log line can say "and 1,234 more like it". At most ``max_keys`` keys are remembered (the
    oldest forgotten first), so hostile variety cannot grow it."""

    def __init__(self, interval: float, max_keys: int = 1024) -> None:
        self.interval = interval
        self.max_keys = max_keys
        self._last: dict[object, float] = {}
        self._held: dict[object, int] = {}
        self.suppressed = 0  #: refused calls of the key last allowed, since its previous line

    def allow(self, key: object, now: float) -> bool:
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        self._last.pop(key, None)
        self._last[key] = now  # re-inserted: the dict keeps the most recent last
        self.suppressed = self._held.pop(key, 0)
        while len(self._last) > self.max_keys:
            oldest = next(iter(self._last))
            del self._last[oldest]
            self._held.pop(oldest, None)
        return True


class PerSecond:
    """Counts what happens in each whole second: ``over(n, now)`` adds ``n`` to the current
    second's count and says whether it now exceeds ``limit``. What turns per-item log lines
    into one line per batch above a rate, and keeps them per item below it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._second = -1
        self._count = 0

    def over(self, n: int, now: float) -> bool:
        second = int(now)
        if second != self._second:
            self._second, self._count = second, 0
        self._count += n
        return self._count > self.limit
