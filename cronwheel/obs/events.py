"""Structured events: every thing the daemon does has a stable name.

One JSON object per line on stdout, so journald and any log shipper take them as they are;
a human-friendly rendering when stdout is a TTY. Events are also counted by name, and the
most recent ones are kept in a ring buffer that the API can stream (`cronwheel logs -f`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, TextIO


class EventLog:
    def __init__(
        self,
        node_id: str,
        stream: TextIO | None = None,
        fmt: str = "auto",
        ring_size: int = 10_000,
        quiet: frozenset[str] = frozenset(),
    ) -> None:
        self.node_id = node_id
        self.stream = stream if stream is not None else sys.stdout
        if fmt == "auto":
            fmt = "console" if self.stream.isatty() else "json"
        self.fmt = fmt
        self.counts: Counter[str] = Counter()
        self.ring: deque[dict[str, Any]] = deque(maxlen=ring_size)
        self._seq = 0
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self._flush_pending = False
        #: high-volume events counted and kept in the ring but not printed (e.g. heartbeats)
        self.quiet = quiet

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        self._seq += 1
        record = {"ts": _iso_now(), "event": event, "node": self.node_id, "seq": self._seq}
        for k, v in fields.items():
            if v is not None:
                record[k] = v
        self.counts[event] += 1
        self.ring.append(record)
        if event not in self.quiet:
            self._write(record)
        for fn in list(self._subscribers):
            fn(record)
        return record

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    def _write(self, record: dict[str, Any]) -> None:
        try:
            if self.fmt == "json":
                self.stream.write(_ENCODE(record) + "\n")
            else:
                extra = " ".join(
                    f"{k}={v}" for k, v in record.items() if k not in ("ts", "event", "node", "seq")
                )
                self.stream.write(f"{record['ts'][11:23]} {record['event']:<28} {extra}\n")
        except (OSError, ValueError):  # stdout gone (closed pipe) or its disk full: keep running
            return
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        """Flush once per event-loop turn rather than once per line: a burst of 100,000
        executions writes its lines in a few system calls. Without a running loop (start-up,
        tools), flush at once."""
        if self._flush_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._flush_pending = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_pending = False
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()


#: one encoder for every line (json.dumps with arguments builds a new one per call)
_ENCODE = json.JSONEncoder(default=str, separators=(",", ":")).encode
_second_text: tuple[int, str] = (-1, "")  # the last second formatted: a burst shares one


def _iso_now() -> str:
    global _second_text
    secs, rem = divmod(time.time_ns(), 1_000_000_000)
    if _second_text[0] != secs:
        _second_text = (secs, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)))
    return f"{_second_text[1]}.{rem // 1_000_000:03d}Z"


def iso_ms(ms: int | None) -> str | None:
    """RFC 3339 UTC with milliseconds, the one timestamp format cronwheel prints."""
    if ms is None:
        return None
    secs, rem = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rem:03d}Z"
