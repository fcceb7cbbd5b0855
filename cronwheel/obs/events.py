"""Structured events: every thing the daemon does has a stable name and a level.

One JSON object per line on stdout (``ts``, ``level``, ``event``, ``node``, ``seq``, then the
event's fields), so journald and any log shipper take them as they are; under systemd each
line starts with its syslog priority (``<4>`` for a warning) so ``journalctl -p`` filters by
level. A human-friendly rendering when stdout is a TTY. Events below the chosen level are not
printed but still counted by name and kept in the ring buffer the API streams
(``cronwheel logs -f``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import secrets
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, TextIO

from cronwheel.core.instants import format_instant
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.words import is_utf8
from cronwheel.obs.levels import RANK, SYSLOG_PRIORITY, check_level, journal_stream, level_of

#: how often a line repeated in a loop reaches the log (``EventLog.emit_now_and_then``)
REPEAT_LOG_SEC = 60.0

#: the ring's bound in memory besides its lines (``record_bytes`` estimates each): 10,000
#: ordinary events hold ~7-10 MiB, but 10,000 of 8 KiB errors (a remote worker's completions,
#: which a tenant's worker token sends) held 85 MiB, 320 MiB in emoji; kept to this, the ring
#: holds the last ~1,800 such events (~500 in emoji), and a follower resuming past them gets
#: its ``stream.dropped`` line as ever
RING_BYTES = 16 * 2**20


class EventLog:
    def __init__(
        self,
        node_id: str,
        stream: TextIO | None = None,
        fmt: str = "auto",
        ring_size: int = 10_000,
        level: str = "info",
        journal: bool | None = None,
        ring_bytes: int = RING_BYTES,
    ) -> None:
        self.node_id = node_id
        self.stream = stream if stream is not None else sys.stdout
        self.set_format(fmt)
        self.set_level(level)
        #: prefix each line with ``<priority>`` for journald (auto: stdout is the journal stream)
        self.journal = journal_stream(self.stream) if journal is None else journal
        self.counts: Counter[str] = Counter()
        self.ring: deque[dict[str, Any]] = deque(maxlen=ring_size)
        #: ``record_bytes`` of each of ``ring``'s records, in step with it, and their sum
        self._sizes: deque[int] = deque(maxlen=ring_size)
        self.ring_bytes_max = ring_bytes
        self.ring_bytes = 0
        #: this log's identity: ``seq`` starts again at 1 with every start of the daemon, so an
        #: event is named for good by (log_id, seq), which a follower resumes after
        self.log_id = secrets.token_hex(8)
        self._seq = 0
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self._batch_subscribers: list[Callable[[list[dict[str, Any]]], None]] = []
        self._flush_pending = False

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the last event emitted (0 before the first)."""
        return self._seq

    def set_format(self, fmt: str) -> None:
        self.fmt = self.resolve_format(fmt)

    def resolve_format(self, fmt: str) -> str:
        """``auto``: console on a terminal, else json (what journald and log shippers read)."""
        if fmt == "auto":
            return "console" if self.stream.isatty() else "json"
        return fmt

    def set_level(self, level: str) -> None:
        self.level = check_level(level)
        self._min_rank = RANK[self.level]

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Log ``event`` at its level (``level=`` overrides the table in obs/levels.py)."""
        self._seq += 1
        level = fields.pop("level", None) or level_of(event)
        record = {"ts": format_instant(time.time_ns() // 1_000_000), "level": level, "event": event, "node": self.node_id, "seq": self._seq}
        for k, v in fields.items():
            if v is not None:
                record[k] = v
        xid = record.get("executionId")
        if "jobId" not in record and isinstance(xid, str) and ":" in xid:
            record["jobId"] = xid.rpartition(":")[0]  # an execution id is {jobId}:{scheduledAt}
        self.counts[event] += 1
        self._keep(record)
        if RANK[level] >= self._min_rank:
            self._write(record)
        for batch_fn in list(self._batch_subscribers):
            batch_fn([record])
        for fn in list(self._subscribers):
            fn(record)
        return record

    def emit_now_and_then(self, limiter: OncePer, key: object, now: float, event: str, /, **fields: Any) -> dict[str, Any]:
        """``event`` at its own level once per ``limiter``'s interval for ``key`` (``now``: the
        caller's clock's monotonic time), carrying ``suppressed`` (how many were held back
        since), and at debug level in between: a line repeated in a loop (by a job, a worker, a
        tick held back) reaches the log once in a while, and every one is still counted, kept in
        the ring and streamed. ``REPEAT_LOG_SEC`` is the interval its callers use."""
        if limiter.allow(key, now):
            return self.emit(event, suppressed=limiter.suppressed, **fields)
        return self.emit(event, level="debug", **fields)

    def emit_many(self, event: str, items: Sequence[dict[str, Any]], level: str | None = None) -> None:
        """``event`` once per item (each item its fields), in order: the same records, counts,
        ring, lines and subscribers as one ``emit`` per item, with the per-call work done once
        per batch: one timestamp, one level, and each ``subscribe_many`` subscriber called once
        with the batch's records (how the metrics count a herd per batch)."""
        if not items:
            return
        level = level or level_of(event)
        head = {"ts": format_instant(time.time_ns() // 1_000_000), "level": level, "event": event, "node": self.node_id}
        records: list[dict[str, Any]] = []
        seq = self._seq
        for fields in items:
            seq += 1
            record = {**head, "seq": seq, **fields}
            if None in fields.values():  # absent rather than null, as emit has it
                record = {k: v for k, v in record.items() if v is not None}
            if "jobId" not in record:
                xid = record.get("executionId")
                if isinstance(xid, str) and ":" in xid:
                    record["jobId"] = xid.rpartition(":")[0]
            records.append(record)
        self._seq = seq
        self.counts[event] += len(records)
        self._keep_all(records)
        if RANK[level] >= self._min_rank:
            for record in records:
                self._write(record)
        for batch_fn in list(self._batch_subscribers):
            batch_fn(records)
        for fn in list(self._subscribers):
            for record in records:
                fn(record)

    def _keep(self, record: dict[str, Any]) -> None:
        """``record`` into the ring, the oldest out while it holds more than its lines or its
        bytes (the newest stays, however big)."""
        size = record_bytes(record)
        held = self._sizes
        if len(held) == held.maxlen:  # append drops the oldest itself
            self.ring_bytes -= held[0]
        self.ring.append(record)
        held.append(size)
        self.ring_bytes += size
        if self.ring_bytes > self.ring_bytes_max:
            self._trim()

    def _keep_all(self, records: list[dict[str, Any]]) -> None:
        """``_keep`` for a batch, in one go: ``extend`` drops the oldest past the lines itself,
        whose sizes (old ones, or a batch's first if it is longer than the ring) leave the sum."""
        sizes = [record_bytes(r) for r in records]
        held = self._sizes
        over = len(held) + len(sizes) - (held.maxlen or 0)
        if over > 0:
            self.ring_bytes -= sum(islice(held, min(over, len(held)))) + sum(sizes[: max(0, over - len(held))])
        self.ring.extend(records)
        held.extend(sizes)
        self.ring_bytes += sum(sizes)
        if self.ring_bytes > self.ring_bytes_max:
            self._trim()

    def _trim(self) -> None:
        while self.ring_bytes > self.ring_bytes_max and len(self._sizes) > 1:
            self.ring.popleft()
            self.ring_bytes -= self._sizes.popleft()

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    def subscribe_many(self, fn: Callable[[list[dict[str, Any]]], None]) -> Callable[[], None]:
        """``fn`` gets every record, in lists: one per ``emit_many`` batch (all of one event),
        a list of one per ``emit``."""
        self._batch_subscribers.append(fn)
        return lambda: self._batch_subscribers.remove(fn)

    def _write(self, record: dict[str, Any]) -> None:
        try:
            line = json_line(record) if self.fmt == "json" else console_line(record)
            if self.journal:  # every line: journald makes each its own entry (a console traceback's too)
                prefix = f"<{SYSLOG_PRIORITY[record['level']]}>"
                line = prefix + line.replace("\n", "\n" + prefix)
            self.stream.write(line + "\n")
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


#: what a record's dict slot and the header of each of its values hold, about (a record of
#: the daemon's ordinary events, 8-13 fields, holds ~500-800 bytes)
FIELD_BYTES = 64
_CONTAINERS = (dict, list, tuple)


def record_bytes(record: dict[str, Any]) -> int:
    """What ``record`` holds in memory, about: ``FIELD_BYTES`` a field, its text's length, the
    exact size of a long text (four bytes a character in emoji) and twice its text's length for
    a list or a map (rare). Cheap, as ``emit`` is on every execution's way (~0.7 µs): ~15 %
    over tracemalloc's figure for ordinary events, within 3 % for those of long texts."""
    n = FIELD_BYTES * len(record)
    for v in record.values():
        kind = type(v)
        if kind is str:
            n += len(v) if len(v) < 256 else sys.getsizeof(v)
        elif kind is not int and kind in _CONTAINERS:  # ints first: most values that are not text
            n += 2 * len(repr(v))
    return n


_CONSOLE_SKIP = frozenset({"ts", "level", "event", "node", "seq", "traceback"})


def console_line(record: dict[str, Any]) -> str:
    """``HH:MM:SS.mmm LEVEL event key=value …`` with instants (``*At`` epoch milliseconds) as
    readable UTC times, and a traceback, if any, as the indented lines that follow. Values are
    logfmt's: bare when they are one printable word, else in double quotes with JSON's escapes
    (``name="nightly backup"``, ``error="exit 1: \\"x\\" not found\\n"``), so a line reads back."""
    parts = []
    for k, v in record.items():
        if k in _CONSOLE_SKIP:
            continue
        if k.endswith("At") and isinstance(v, int) and not isinstance(v, bool):
            v = format_instant(v)
        parts.append(f"{k}={logfmt_value(v)}")
    level = record.get("level", "info")
    line = f"{record['ts'][11:23]} {level.upper():<7} {record['event']:<28} {' '.join(parts)}"
    trace = record.get("traceback")
    if trace:
        line += "\n" + "\n".join("    " + t for t in str(trace).rstrip().splitlines())
    return line


#: what a bare logfmt value may not hold (a value with any of them, or empty, is quoted)
_NOT_BARE = frozenset(' ="\\')


def logfmt_value(value: Any) -> str:
    """``value`` as a logfmt value: ``true``/``false``, ``null``, a list or an object as compact
    JSON, text as it is when it is one printable word, else quoted. Every character that is not
    printable is escaped (JSON's ``\\n``, ``\\u001b``; a lone surrogate, bytes of no encoding,
    as ``\\udc80``): a console line is one line of UTF-8, whatever a job or a request held."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, (dict, list, tuple)):
        text = json_line(value)
    else:
        text = str(value)
    if text and text.isprintable() and _NOT_BARE.isdisjoint(text) and is_utf8(text):
        return text
    quoted = json.dumps(text, ensure_ascii=False)  # escapes '"', '\\' and the C0 controls
    return "".join(c if c.isprintable() and is_utf8(c) else json.dumps(c)[1:-1] for c in quoted)


def json_line(record: Any) -> str:
    """``record`` as one line of strict JSON: a lone surrogate (bytes of no encoding) becomes
    the text of its escape (``"\\\\udc80"``) rather than an escape some readers refuse, and a NaN
    or an infinity, which JSON has no word for, its name as a string."""
    try:
        line = _ENCODE(record)
    except ValueError:  # NaN or infinity
        return _ENCODE(_strict(record))
    # ensure_ascii writes every surrogate as \\udXXX: a pair (an emoji) is fine, a lone one is not
    return _ENCODE(_strict(record)) if "\\ud" in line else line


def _strict(value: Any) -> Any:
    if isinstance(value, str):
        return value if is_utf8(value) else value.encode("utf-8", "backslashreplace").decode()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {_strict(str(k)): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


#: one encoder for every line (json.dumps with arguments builds a new one per call); no NaN
_ENCODE = json.JSONEncoder(default=str, separators=(",", ":"), allow_nan=False).encode
