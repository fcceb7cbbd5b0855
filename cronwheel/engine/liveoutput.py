"""Output of the executions running on this node's workers, as it is produced: a bounded tail
per running execution, and followers that get each chunk as it arrives.

Memory is bounded: one tail of at most ``TAIL_BYTES`` per execution running here (so at most
slots × TAIL_BYTES), and per follower at most ``FOLLOWER_BYTES`` not yet taken (a reader too
slow to keep up loses the oldest bytes and is told how many). An execution's entry goes when
it leaves its worker (``finish``); what it printed is then in the store (the result's tail).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from cronwheel.core.liveout import gap_marker

TAIL_BYTES = 64 * 1024
FOLLOWER_BYTES = 256 * 1024


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
            del self._buf[:excess]
            self._skipped += excess
        self._wake.set()

    def _end(self) -> None:
        self.ended = True
        self._wake.set()

    async def next(self, wait_sec: float) -> bytes:
        """What arrived since the last call (b"" when nothing did within ``wait_sec`` seconds,
        or the execution ended)."""
        if not self._buf and not self.ended:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), wait_sec)
            except TimeoutError:
                return b""
        out = (gap_marker(self._skipped) if self._skipped else b"") + bytes(self._buf)
        self._buf.clear()
        self._skipped = 0
        return out

    def close(self) -> None:
        self._hub._drop(self)


@dataclass
class _Running:
    epoch: int
    tail: bytearray = field(default_factory=bytearray)


class LiveOutput:
    def __init__(self) -> None:
        self._running: dict[str, _Running] = {}
        self._followers: dict[str, set[Follower]] = {}

    def append(self, execution_id: str, lease_epoch: int, data: bytes) -> None:
        run = self._running.get(execution_id)
        if run is None or run.epoch != lease_epoch:  # a new attempt starts a new tail
            run = self._running[execution_id] = _Running(lease_epoch)
        run.tail += data
        if len(run.tail) > TAIL_BYTES:
            del run.tail[: len(run.tail) - TAIL_BYTES]
        for f in self._followers.get(execution_id, ()):
            f._push(data)

    def finish(self, execution_id: str) -> None:
        """The execution left its worker (ended, lost, aborted): its followers are done."""
        self._running.pop(execution_id, None)
        for f in self._followers.pop(execution_id, ()):
            f._end()

    def tail(self, execution_id: str) -> bytes | None:
        """The output so far of an execution running here (None when it is not)."""
        run = self._running.get(execution_id)
        return None if run is None else bytes(run.tail)

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
