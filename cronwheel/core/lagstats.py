"""Dispatch lag per minute over the last hour, in bounded memory (the dashboard's lag chart).

Pure code: time is an argument, never read from a clock.

Each minute keeps a sparse log-linear histogram of the lags recorded in it (the HDR
histogram's layout with 4 sub-bucket bits): a lag below 32 ms is counted exactly; a larger
one falls in a bin ``2**e`` wide where ``2**(e+4) <= lag``, so a bin is at most 1/16 of its
value wide. A percentile answers its bin's upper bound (capped at the minute's exact
maximum): it may overstate the lag by up to 6.25 %, never understate it, which is the safe
side for an SLO. 5,800 executions/s cost one dict update each; a minute holds at most a few
hundred bins whatever the rate, and a ring of ``minutes`` slots is all the history kept.

Worked example: a lag of 1,000 ms has bit length 10, so ``e = 10 - 5 = 5`` and its sub-bucket
is ``1000 >> 5 = 31``; the bin covers ``[31 * 32, 32 * 32 - 1] = [992, 1023]``, and a p99
that lands in it reads 1,023 ms (or the minute's max, if that is smaller).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["MINUTE_MS", "LagHistory", "MinuteLag", "bin_of", "bin_upper"]

MINUTE_MS = 60_000
_EXACT = 32  #: lags below this are their own bin
_SUB = 16  #: sub-buckets per power of two above it


def bin_of(lag_ms: int) -> int:
    """The histogram bin of a lag (negative lags, a clock step backwards, count as 0)."""
    if lag_ms < _EXACT:
        return max(0, lag_ms)
    e = lag_ms.bit_length() - 5
    return e * _SUB + (lag_ms >> e)


def bin_upper(key: int) -> int:
    """The largest lag that falls in bin ``key``."""
    if key < _EXACT:
        return key
    e = key // _SUB - 1
    m = key - e * _SUB
    return ((m + 1) << e) - 1


@dataclass(frozen=True, slots=True)
class MinuteLag:
    """One minute of the history: ``start_ms`` is the minute's first millisecond (UTC)."""

    start_ms: int
    count: int
    p50: int | None
    p99: int | None
    max: int | None


@dataclass(slots=True)
class _Slot:
    minute: int = -1  #: minute number (ms // 60,000) this slot holds; -1: never used
    count: int = 0
    max: int = 0
    bins: dict[int, int] = field(default_factory=dict)


class LagHistory:
    """``record(lag, now)`` per first-attempt start; ``snapshot(now)`` for the last ``minutes``
    minutes, oldest first, the current (partial) minute last. Minutes with no start have
    ``count == 0`` and None percentiles."""

    def __init__(self, minutes: int = 60) -> None:
        if minutes < 1:
            raise ValueError(f"minutes must be at least 1, not {minutes}")
        self.minutes = minutes
        self._slots = [_Slot() for _ in range(minutes)]

    def record(self, lag_ms: int, now_ms: int) -> None:
        self.record_many((lag_ms,), now_ms)

    def record_many(self, lags_ms: Sequence[int], now_ms: int) -> None:
        """``record(lag, now_ms)`` for each of ``lags_ms``: one slot lookup for the batch."""
        minute = now_ms // MINUTE_MS
        slot = self._slots[minute % self.minutes]
        if slot.minute != minute:
            if minute < slot.minute:  # the clock stepped back past this slot: keep the newer data
                return
            slot.minute, slot.count, slot.max = minute, 0, 0
            slot.bins.clear()
        bins, top = slot.bins, slot.max
        for lag_ms in lags_ms:
            lag = max(0, lag_ms)
            key = bin_of(lag)
            bins[key] = bins.get(key, 0) + 1
            if lag > top:
                top = lag
        slot.count += len(lags_ms)
        slot.max = top

    def snapshot(self, now_ms: int) -> list[MinuteLag]:
        current = now_ms // MINUTE_MS
        out = []
        for minute in range(current - self.minutes + 1, current + 1):
            slot = self._slots[minute % self.minutes]
            if slot.minute != minute or slot.count == 0:
                out.append(MinuteLag(minute * MINUTE_MS, 0, None, None, None))
                continue
            out.append(MinuteLag(
                minute * MINUTE_MS, slot.count,
                self._percentile(slot, 0.5), self._percentile(slot, 0.99), slot.max,
            ))
        return out

    @staticmethod
    def _percentile(slot: _Slot, p: float) -> int:
        """The value at sorted index ``int(p * count)``, as ``GET /v1/status`` picks it."""
        rank = min(slot.count - 1, int(p * slot.count))
        seen = 0
        for key in sorted(slot.bins):
            seen += slot.bins[key]
            if seen > rank:
                return min(bin_upper(key), slot.max)
        return slot.max  # unreachable: the bins add up to count
