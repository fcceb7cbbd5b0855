"""The one source of time. Pure code takes time as an argument; the shells take a Clock."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock time, ms since the epoch (UTC). Used for schedules and stored times."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back. Used for local trust windows and timeouts."""


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to: for tests of pure logic, no sleeping."""

    def __init__(self, now_ms: int = 1_767_225_600_000) -> None:  # 2026-01-01T00:00:00Z
        self._now = now_ms
        self._mono = 1000.0

    def now_ms(self) -> int:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a fake clock only moves forward; use set() for a wall-clock jump")
        self._now += ms
        self._mono += ms / 1000

    def set(self, now_ms: int) -> None:
        """Jump the wall clock (either way); the monotonic clock is unaffected."""
        self._now = now_ms
