"""Memos bounded in bytes, for lookups on a hot path: pure, no clock.

``functools.lru_cache`` bounds in entries and keys by the arguments as given, so a schedule
memo keyed by job id held one copy of ``0 * * * *`` per job and grew to its 131,072 entries
(~40 MiB). A :class:`Memo` is bounded in bytes like the event ring and the calendar caches (each
entry's ``size`` estimated from tracemalloc's figures), over plain dicts its callers read
directly: a hit is a dict lookup, with no lock and no reordering. Entries leave in the order
they came (first in, first out): an entry still in use is computed again once per turn of the
memo, which costs less than reordering on every hit.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """At most ``limit`` bytes (as ``size(key, value)`` estimates each entry) in all the dicts
    its entries were put in: ``held``, its own, or others (one per parsed schedule, say), so
    that a reader looks up the dict at hand by the shortest key.

    Writers go through :meth:`put`, under a lock (a claim's thread and the event loop both
    compute schedules); readers look up the dicts directly."""

    __slots__ = ("_bytes", "_keys", "_lock", "_size", "_wheres", "held", "limit", "misses")

    def __init__(self, limit: int, size: Callable[[K, V], int]) -> None:
        self.limit = limit
        self.held: dict[K, V] = {}
        self.misses = 0  #: values put (computed on a miss), for the tests and the benchmarks
        self._size = size
        #: the entries in the order they came: two deques in step, not one of pairs (56 bytes each)
        self._keys: deque[K] = deque()
        self._wheres: deque[dict[K, V]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()

    def put(self, key: K, value: V, into: dict[K, V] | None = None) -> V:
        """Keep ``value`` for ``key`` in ``into`` (``held`` by default) and return what is kept
        for it (another thread's value, if it put one first: callers share one object),
        dropping the oldest entries past the limit."""
        held = self.held if into is None else into
        with self._lock:
            self.misses += 1
            kept = held.setdefault(key, value)
            if kept is not value:
                return kept
            self._keys.append(key)
            self._wheres.append(held)
            self._bytes += self._size(key, value)
            while self._bytes > self.limit and len(self._keys) > 1:
                old = self._keys.popleft()
                self._bytes -= self._size(old, self._wheres.popleft().pop(old))
            return value

    @property
    def bytes(self) -> int:
        """The estimated bytes held."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._keys)

    def clear(self) -> None:
        with self._lock:
            for where, key in zip(self._wheres, self._keys, strict=True):
                where.pop(key, None)
            self._keys.clear()
            self._wheres.clear()
            self._bytes = 0
            self.misses = 0
