"""Output of the executions running on this node's workers, as it is produced: a bounded tail
per running execution, and followers that get each chunk as it arrives.

What is kept and sent is the output as the API serves it: UTF-8 (bytes that are not, and
NULs, as U+FFFD, as the stored output has them), decoded once here for every reader. So a
byte offset into one hand-off's output means the same for every reader, and a reader that
lost its connection resumes at the very byte it got to (``tail_from``).

Memory is bounded: one tail of at most ``TAIL_BYTES`` per execution running here (so at most
slots × TAIL_BYTES), and per follower at most ``FOLLOWER_BYTES`` not yet taken (a reader too
slow to keep up loses the oldest bytes and is told how many). An execution's entry goes when
it leaves its worker (``finish``); what it printed is then in the store (the result's tail).
"""

from __future__ import annotations

import asyncio
import codecs
from dataclasses import dataclass, field

from cronwheel.core.limits import scrub_text
from cronwheel.core.liveout import gap_marker
from cronwheel.worker.waiting import wait_event

TAIL_BYTES = 64 * 1024
FOLLOWER_BYTES = 256 * 1024


def _cut(buf: bytearray, excess: int) -> int:
    """Drop the first ``excess`` bytes of UTF-8 ``buf``, and the rest of a character cut in
    two (a reader must never get half of one); how many went."""
    while excess < len(buf) and buf[excess] & 0xC0 == 0x80:  # a continuation byte
        excess += 1
    del buf[:excess]
    return excess


class Follower:
    """One reader of one execution's live output (``LiveOutput.follow``)."""

    def __init__(self, hub: LiveOutput, execution_id: str) -> None:
        self._hub = hub
        self.execution_id = execution_id
        self._buf = bytearray()
        self._skipped = 0
        self._wake = asyncio.Event()
        self.ended = False  #: the execution left its worker: nothing more will come here

    def _push(self, data: bytes) -> None:
        self._buf += data
        excess = len(self._buf) - FOLLOWER_BYTES
        if excess > 0:
            self._skipped += _cut(self._buf, excess)
        self._wake.set()

    def _end(self) -> None:
        self.ended = True
        self._wake.set()

    async def next(self, wait_sec: float) -> bytes:
        """What arrived since the last call (b"" when nothing did within ``wait_sec`` seconds,
        or the execution ended)."""
        if not self._buf and not self.ended:
            self._wake.clear()
            if not await wait_event(self._wake, wait_sec):
                return b""
        out = (gap_marker(self._skipped) if self._skipped else b"") + bytes(self._buf)
        self._buf.clear()
        self._skipped = 0
        return out

    def close(self) -> None:
        self._hub._drop(self)


@dataclass(frozen=True)
class LiveTail:
    """What is kept of a running hand-off's output: ``data``, from byte ``start`` of it."""

    epoch: int  #: the hand-off (its lease epoch): a retry's output starts again at byte 0
    start: int
    data: bytes

    @property
    def end(self) -> int:
        """Bytes of output the hand-off has printed so far."""
        return self.start + len(self.data)


@dataclass
class _Running:
    epoch: int
    tail: bytearray = field(default_factory=bytearray)
    start: int = 0  #: the offset of the tail's first byte in this hand-off's output
    decode: codecs.IncrementalDecoder = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))


class LiveOutput:
    def __init__(self) -> None:
        self._running: dict[str, _Running] = {}
        self._followers: dict[str, set[Follower]] = {}

    def append(self, execution_id: str, lease_epoch: int, data: bytes, final: bool = False) -> None:
        run = self._running.get(execution_id)
        if run is None or run.epoch != lease_epoch:  # a new hand-off starts a new output
            run = self._running[execution_id] = _Running(lease_epoch)
        served = scrub_text(run.decode.decode(data, final)).encode()
        if not served:
            return
        run.tail += served
        excess = len(run.tail) - TAIL_BYTES
        if excess > 0:
            run.start += _cut(run.tail, excess)
        for f in self._followers.get(execution_id, ()):
            f._push(served)

    def finish(self, execution_id: str) -> None:
        """The execution left its worker (ended, lost, aborted): its followers are done."""
        run = self._running.get(execution_id)
        if run is not None:  # a character its last chunk left unfinished
            self.append(execution_id, run.epoch, b"", final=True)
            self._running.pop(execution_id, None)
        for f in self._followers.pop(execution_id, ()):
            f._end()

    def tail(self, execution_id: str) -> LiveTail | None:
        """The output so far of an execution running here (None when it is not)."""
        run = self._running.get(execution_id)
        return None if run is None else LiveTail(run.epoch, run.start, bytes(run.tail))

    def follow(self, execution_id: str) -> Follower:
        """A follower of the execution, from now on (running here yet or not: it gets the
        output of its run here when it starts). Close it when done."""
        f = Follower(self, execution_id)
        self._followers.setdefault(execution_id, set()).add(f)
        return f

    def _drop(self, f: Follower) -> None:
        group = self._followers.get(f.execution_id)
        if group is not None:
            group.discard(f)
            if not group:
                del self._followers[f.execution_id]
