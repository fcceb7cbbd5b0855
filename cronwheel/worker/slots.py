"""The pool's ledger of its workers and their slots: which worker process holds which
execution at which lease epoch, which results may still arrive for leases taken away, and who
gets the next grants. No I/O: ``pool.py`` and ``connections.py`` act, this module counts."""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

MAX_RELEASED = 4096  #: per worker: recently aborted (execution, epoch) whose late result is expected


@dataclass(eq=False)
class PoolWorker:
    """One worker process as the pool sees it (one generation of one index)."""

    index: int
    generation: int
    worker_id: str
    slots: int
    proc: asyncio.subprocess.Process | None = None
    writer: asyncio.StreamWriter | None = None
    fd: int | None = None  #: the connection's socket, for direct writes (see Connections.write)
    inflight: dict[str, int] = field(default_factory=dict)  #: execution_id -> lease_epoch
    #: (execution_id, lease_epoch) taken from it (abort, lost lease) whose result may still come
    released: dict[tuple[str, int], None] = field(default_factory=dict)
    ready: bool = False  #: said hello, got welcome
    leaving: bool = False  #: bye sent or received: no new grants
    lost: bool = False  #: on_worker_lost done: nothing more is accepted from it
    exited: bool = False  #: its process is gone (its connection may still be read to the end)
    #: let a lease expire (paused? partitioned?): no new grants until it shows a sign of life,
    #: or a frozen worker would be handed back the very execution that was taken from it
    suspect: bool = False
    spawned_at: float = 0.0
    queued: int = 0  #: bytes ever put in its connection's write buffer (what drained: this less the buffer)
    #: set once its connection was read to the end: what it wrote has been handled
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def free(self) -> int:
        return max(0, self.slots - len(self.inflight))

    @property
    def usable(self) -> bool:
        return self.ready and not self.leaving and not self.lost and not self.suspect and not self.exited


class Roster:
    """The current generation of each worker index, and every execution in flight."""

    def __init__(self, n_workers: int) -> None:
        self.workers: dict[str, PoolWorker] = {}  # by worker_id, current generation of each index
        self._by_index: list[PoolWorker | None] = [None] * n_workers
        self._inflight: dict[str, tuple[str, int]] = {}  # execution_id -> (worker_id, lease_epoch)

    def replace(self, w: PoolWorker) -> None:
        """``w`` is now the worker of its index; the previous generation is forgotten."""
        old = self._by_index[w.index]
        if old is not None:
            self.workers.pop(old.worker_id, None)
        self._by_index[w.index] = w
        self.workers[w.worker_id] = w

    # ---------------------------------------------------------------- queries
    def ready_count(self) -> int:
        return sum(w.ready and not w.lost for w in self.workers.values())

    def free_slots(self) -> int:
        return sum(w.free for w in self.workers.values() if w.usable)

    def assign(self, n: int) -> list[tuple[str, int]]:
        """Choose workers for up to ``n`` executions, least loaded first (by share of slots
        used). Reserves nothing: ``hold`` does, when the grants are sent."""
        heap = [
            (len(w.inflight) / w.slots, w.index, w.worker_id, len(w.inflight), w.slots)
            for w in self.workers.values()
            if w.usable and w.free > 0
        ]
        heapq.heapify(heap)
        counts: dict[str, int] = {}
        for _ in range(n):
            if not heap:
                break
            _, index, wid, used, slots = heapq.heappop(heap)
            counts[wid] = counts.get(wid, 0) + 1
            if used + 1 < slots:
                heapq.heappush(heap, ((used + 1) / slots, index, wid, used + 1, slots))
        return list(counts.items())

    def worker_pids(self) -> dict[str, int]:
        return {
            w.worker_id: w.proc.pid
            for w in self.workers.values()
            if w.proc is not None and w.proc.returncode is None
        }

    def in_flight(self) -> Mapping[str, tuple[str, int]]:
        """execution_id -> (worker_id, lease_epoch): a live read-only view, O(1) lookups."""
        return MappingProxyType(self._inflight)

    # ---------------------------------------------------------------- changes
    def hold(self, w: PoolWorker, execution_id: str, epoch: int) -> None:
        """A grant of (execution, epoch) was sent to ``w``: one of its slots is used."""
        w.inflight[execution_id] = epoch
        self._inflight[execution_id] = (w.worker_id, epoch)

    def forget(self, execution_id: str, worker_id: str, epoch: int, released: bool = False) -> bool:
        """Drop (execution, epoch) from a worker's in-flight set. True if it was there.
        ``released``: taken from a live worker, whose result for it may still arrive (and is
        then dropped rather than treated as a protocol violation)."""
        w = self.workers.get(worker_id)
        was = w is not None and w.inflight.get(execution_id) == epoch
        if was:
            assert w is not None
            del w.inflight[execution_id]
            if released:
                w.released[(execution_id, epoch)] = None
                if len(w.released) > MAX_RELEASED:
                    del w.released[next(iter(w.released))]
        if self._inflight.get(execution_id) == (worker_id, epoch):
            del self._inflight[execution_id]
        return was

    def drop_all(self, w: PoolWorker) -> list[tuple[str, int]]:
        """Everything ``w`` held, as (execution_id, lease_epoch), now held by nobody."""
        lost = list(w.inflight.items())
        for execution_id, epoch in lost:
            if self._inflight.get(execution_id) == (w.worker_id, epoch):
                del self._inflight[execution_id]
        w.inflight.clear()
        return lost
