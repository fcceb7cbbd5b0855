"""What of a running command's output is forwarded live, bounded in rate and size. Pure: the
caller passes the time (seconds, any monotonic origin).

A chatty job must not flood the daemon: output is sent in chunks of at most ``max_chunk``
bytes, no more often than every ``min_interval`` seconds, within a token bucket of ``rate``
bytes per second (``burst`` at once). When more waits than ``max_chunk``, the oldest waiting
bytes are dropped (the newest output is what a person following wants to see), and a marker
line saying how many bytes were skipped takes their place in the stream. The complete
tail of the output still reaches the store with the result; only the live view is thinned.
"""

from __future__ import annotations

RATE = 32 * 1024  #: bytes per second forwarded live, per execution
BURST = 64 * 1024
MAX_CHUNK = 16 * 1024  #: bytes waiting to be forwarded; more is dropped (and counted)
MIN_INTERVAL = 0.1  #: seconds between two chunks of one execution
MIN_SEND = 1024  #: under the rate limit, wait for the budget of a chunk this big (no dribbles)


def gap_marker(skipped: int) -> bytes:
    return f"\n[cronwheel: {skipped} bytes of output not shown live]\n".encode()


class OutputForwarder:
    def __init__(
        self,
        rate: float = RATE,
        burst: int = BURST,
        max_chunk: int = MAX_CHUNK,
        min_interval: float = MIN_INTERVAL,
        min_send: int = MIN_SEND,
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.max_chunk = max_chunk
        self.min_interval = min_interval
        self.min_send = min_send
        self._pending = bytearray()
        self._dropped = 0  #: bytes dropped since the last accepted byte
        self._tokens = float(burst)
        self._last_refill: float | None = None
        self._last_sent: float | None = None

    @property
    def pending(self) -> bool:
        return bool(self._pending) or self._dropped > 0

    def add(self, data: bytes) -> None:
        self._pending += data
        excess = len(self._pending) - self.max_chunk
        if excess > 0:  # the newest output matters most: the oldest waiting bytes go
            del self._pending[:excess]
            self._dropped += excess

    def due_in(self, now: float) -> float:
        """Seconds until ``take`` may give something (0: now); meaningful while ``pending``."""
        wait = 0.0 if self._last_sent is None else self._last_sent + self.min_interval - now
        self._refill(now)
        need = self._marker_len() + min(len(self._pending), self.min_send)
        if self._tokens < need:
            wait = max(wait, (need - self._tokens) / self.rate)
        return max(0.0, wait)

    def take(self, now: float, final: bool = False) -> bytes | None:
        """The next chunk to forward, or None (nothing waiting, or not yet allowed); a marker
        line first when bytes were skipped before it (it counts against the rate too).
        ``final``: the run ended; everything waiting goes now, whatever the rate."""
        if not self.pending:
            return None
        if not final and self.due_in(now) > 0:
            return None
        marker = gap_marker(self._dropped) if self._dropped else b""
        n = len(self._pending) if final else min(len(self._pending), int(self._tokens) - len(marker))
        out = marker + bytes(self._pending[:n])
        del self._pending[:n]
        self._dropped = 0
        self._tokens = max(0.0, self._tokens - len(out))
        self._last_sent = now
        return out

    def _marker_len(self) -> int:
        return len(gap_marker(self._dropped)) if self._dropped else 0

    def _refill(self, now: float) -> None:
        if self._last_refill is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last_refill) * self.rate)
        self._last_refill = now
