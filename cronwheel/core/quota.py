"""Submission rate limits: a token bucket per tenant. Pure: time is an argument (ms).

A bucket holds up to ``burst`` tokens and refills at ``rate`` tokens per second; a
submission takes one. Worked example, rate 2/s, burst 3, starting full at t = 0::

    t=0     take, take, take      → ok ok ok (0 left)
    t=0     take                  → refused, retry after 0.5 s (one token needs 1/rate s)
    t=500   take                  → ok (refilled 1.0, 0 left)
    t=10000 take ×3               → ok ok ok (refill is capped at burst: 3, not 19)

``RateLimiter`` keeps one bucket per tenant and forgets buckets that are full again, so its
size follows the tenants that submitted in the last ``burst / rate`` seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class TokenBucket:
    rate: float  #: tokens per second, > 0
    burst: float  #: capacity, >= 1
    tokens: float  #: tokens available at ``updated_ms``
    updated_ms: int

    @classmethod
    def full(cls, rate: float, burst: float, now_ms: int) -> TokenBucket:
        if not rate > 0 or not math.isfinite(rate):
            raise ValueError("rate must be a positive number")
        if not burst >= 1 or not math.isfinite(burst):
            raise ValueError("burst must be at least 1")
        return cls(rate, burst, burst, now_ms)

    def _refill(self, now_ms: int) -> None:
        if now_ms > self.updated_ms:
            self.tokens = min(self.burst, self.tokens + (now_ms - self.updated_ms) * self.rate / 1000.0)
            self.updated_ms = now_ms
        # a clock that went backwards refills nothing (and takes nothing back)

    def take(self, now_ms: int, n: float = 1.0) -> float:
        """Take ``n`` tokens: 0.0 when granted, else the seconds until they would be
        available (nothing is taken then)."""
        self._refill(now_ms)
        if self.tokens >= n - 1e-9:
            self.tokens = max(0.0, self.tokens - n)
            return 0.0
        return (n - self.tokens) / self.rate

    def is_full(self, now_ms: int) -> bool:
        self._refill(now_ms)
        return self.tokens >= self.burst - 1e-9

    def reconfigure(self, rate: float, burst: float, now_ms: int) -> None:
        """New limits: tokens already earned are kept, up to the new capacity."""
        self._refill(now_ms)
        self.rate, self.burst = rate, burst
        self.tokens = min(self.tokens, burst)


class RateLimiter:
    """One bucket per key (tenant), created full on first use."""

    def __init__(self, max_keys: int = 100_000) -> None:
        self._buckets: dict[str, TokenBucket] = {}
        self._max_keys = max_keys

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, rate: float | None, burst: float | None, now_ms: int, n: int = 1) -> float:
        """0.0 when ``n`` submissions for ``key`` may go ahead now, else seconds to wait
        (``inf`` when ``n`` exceeds the bucket: it never holds that many). ``rate`` None means
        unlimited (and forgets any bucket)."""
        if rate is None:
            self._buckets.pop(key, None)
            return 0.0
        cap = float(burst) if burst is not None else float(max(1, math.ceil(rate)))
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._max_keys:
                self.prune(now_ms)
            bucket = self._buckets[key] = TokenBucket.full(rate, cap, now_ms)
        elif bucket.rate != rate or bucket.burst != cap:
            bucket.reconfigure(rate, cap, now_ms)
        if n > cap:
            return math.inf
        return bucket.take(now_ms, n)

    def forget(self, key: str) -> None:
        """Drop ``key``'s bucket (a deleted tenant's)."""
        self._buckets.pop(key, None)

    def prune(self, now_ms: int) -> None:
        """Forget full buckets: a new one would be created full anyway."""
        for key in [k for k, b in self._buckets.items() if b.is_full(now_ms)]:
            del self._buckets[key]


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` wants whole seconds: round up, at least 1."""
    return str(max(1, math.ceil(seconds - 1e-9)))
