"""A hierarchical hashed timing wheel: pure, clock-free, O(1) add and cancel.

Modelled on Kafka's ``TimingWheel``/``SystemTimer`` (the caller supplies time through
``advance``; ``add`` refuses what is already due; overflow levels are created on demand; an idle
wheel never ticks) and Netty's ``HashedWheelTimer`` (nothing is scheduled in the past; ``stop()``
hands back what never ran, here ``drain()``). This module never reads a clock and does no I/O:
every time is an integer number of milliseconds passed in by the caller.

Unlike Kafka's wheel, entries never fire early: ``advance(now)`` returns an entry only once
``deadline <= now``, even when ``now`` falls inside the deadline's tick.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["K", "TimingWheel"]

K = TypeVar("K", bound=Hashable)


class TimingWheel(Generic[K]):
    """Timers keyed by ``key``, each due at an integer ``deadline_ms``.

    Layout
    ------
    Level ``i`` is a ring of ``wheel_size`` buckets, each ``w_i = tick_ms * wheel_size**i`` ms
    wide, so the level spans ``tick_ms * wheel_size**(i+1)`` ms. Bucket *numbers* are absolute,
    ``n = deadline // w_i``, and bucket ``n`` lives in slot ``n % wheel_size``. With ``now`` the
    time the wheel was last advanced to and ``c_i = now // w_i`` (the bucket ``now`` is in),
    level ``i`` holds bucket numbers ``c_0 .. c_0 + size - 1`` on level 0 and
    ``c_i + 1 .. c_i + size - 1`` above it, so a slot never holds two bucket numbers at once.
    An entry goes to the *lowest* level whose window holds its bucket; levels are appended
    only when a deadline fits no existing level. Nothing refers to ticks that have passed:
    the whole wheel state is the buckets plus ``now``.

    ``advance(now)`` visits, on each level, only the buckets whose start moved from the future
    to ``<= now`` -- at most ``wheel_size`` of them, however much time passed -- from the
    bottom level up. A level-0 bucket that has wholly passed is returned whole; the bucket that
    ``now`` falls in returns only its entries with ``deadline <= now`` and keeps the rest. An
    expired overflow bucket returns its entries that are due and re-inserts the others into
    the (already advanced) lower levels, where they now fit. Nothing is ever returned early.

    Worked example: ``TimingWheel(start_ms=0, tick_ms=10, wheel_size=4)``::

        level 0: buckets  10 ms wide, span  40 ms; at now=0 holds [0,10) [10,20) [20,30) [30,40)
        level 1: buckets  40 ms wide, span 160 ms; at now=0 holds [40,80) [80,120) [120,160)
        level 2: buckets 160 ms wide, span 640 ms; at now=0 holds [160,320) [320,480) [480,640)

        add(a, 5)    -> False: 5 < current_ms + tick_ms = 10, already due; caller runs it now
        add(b, 17)   -> level 0, bucket 17//10 = 1, i.e. [10,20), slot 1
        add(c, 95)   -> level 1 (created now), bucket 95//40 = 2, i.e. [80,120), slot 2
        add(d, 300)  -> level 2 (created now), bucket 300//160 = 1, i.e. [160,320), slot 1
        advance(15)  -> []: [10,20) is the current bucket; b (17) is not due yet and stays
        advance(25)  -> [(17, b)]: [10,20) has passed. current_ms = 20
        advance(85)  -> []: level 0 visits buckets 2..5 (all empty); level 1 moved to c_1 = 2:
                        bucket [80,120) expired, c (95 > 85) drops to level 0 bucket 9, [90,100)
        advance(100) -> [(95, c)]
        advance(10**9) -> [(300, d)]: level 0 visits 4 buckets (not 10**8 ticks), level 1 visits
                        3, level 2 visits 3 and finds d due

    Windows of different levels overlap (above, at now=50 level 0 holds [50,90) while level 1
    may still hold [80,120)), so an upper level can hold an entry due before some level-0
    entries; ``next_expiry`` therefore looks at the first non-empty bucket of each level until
    the next level cannot hold anything earlier.

    The caller's loop (the clock lives there, not here)::

        if not wheel.add(job, due_ms):      # already due: run it now
            run(job)
        ...
        for due_ms, job in wheel.advance(clock.now_ms()):
            run(job)
        sleep_until(wheel.next_expiry())    # None: nothing scheduled; sleep until an add

    Storage: a bucket is a dict ``key -> (deadline, seq, key)`` (``seq`` orders ties; the tuple
    is what gets sorted), and ``_loc`` maps each key to the bucket holding it, so ``cancel`` is
    two dict deletions and the wheel holds exactly the live entries: no tombstones, no
    compaction pauses.

    Costs: ``add``/``cancel``/``deadline_of``/``in``/``len`` O(1) (``add`` O(levels) for a
    deadline beyond level 0); ``advance`` O(levels * wheel_size + entries moved or returned +
    k log k) for k returned; ``next_expiry`` O(1) when nothing fired and the earliest entry was
    not cancelled since the last call, else O(levels * wheel_size + one bucket per level);
    ``drain`` O(n log n).

    Ties (equal deadlines) come out in insertion order; a re-``add`` counts as a new insertion.
    """

    __slots__ = (
        "_c0",
        "_cur",
        "_due_before",
        "_levels",
        "_loc",
        "_next",
        "_next_ok",
        "_now",
        "_seq",
        "_size",
        "_slots0",
        "_tick",
    )

    def __init__(self, start_ms: int, tick_ms: int = 10, wheel_size: int = 64) -> None:
        for name, value in (
            ("start_ms", start_ms),
            ("tick_ms", tick_ms),
            ("wheel_size", wheel_size),
        ):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if tick_ms < 1:
            raise ValueError("tick_ms must be >= 1")
        if wheel_size < 2:
            raise ValueError("wheel_size must be >= 2")
        self._tick = tick_ms
        self._size = wheel_size
        self._now = start_ms  # exact time of the last advance; everything <= it was returned
        c0 = start_ms // tick_ms
        self._c0 = c0  # the bucket number `now` is in on level 0 (== self._cur[0])
        self._due_before = (c0 + 1) * tick_ms  # add() refuses deadlines below this
        self._slots0: list[dict[K, tuple[int, int, K]]] = [{} for _ in range(wheel_size)]
        self._levels: list[list[dict[K, tuple[int, int, K]]]] = [self._slots0]
        self._cur: list[int] = [c0]  # per level: the bucket number `now` is in
        self._loc: dict[K, dict[K, tuple[int, int, K]]] = {}  # key -> the bucket holding it
        self._seq = 0
        self._next: tuple[int, int, K] | None = None  # the earliest entry, while _next_ok
        self._next_ok = True

    # -- introspection -----------------------------------------------------------------------

    @property
    def current_ms(self) -> int:
        """The time the wheel has been advanced to, floored to a multiple of ``tick_ms``."""
        return self._c0 * self._tick

    @property
    def tick_ms(self) -> int:
        return self._tick

    @property
    def wheel_size(self) -> int:
        return self._size

    def __contains__(self, key: object) -> bool:
        return key in self._loc

    def __len__(self) -> int:
        return len(self._loc)

    def deadline_of(self, key: K) -> int | None:
        bucket = self._loc.get(key)
        return None if bucket is None else bucket[key][0]

    def entries(self) -> list[tuple[K, int]]:
        """Every ``(key, deadline_ms)`` held, in no particular order (to rebuild a wheel)."""
        return [(key, bucket[key][0]) for key, bucket in self._loc.items()]

    def __repr__(self) -> str:
        return (
            f"TimingWheel(current_ms={self.current_ms}, tick_ms={self._tick}, "
            f"wheel_size={self._size}, levels={len(self._levels)}, entries={len(self._loc)})"
        )

    # -- mutation ----------------------------------------------------------------------------

    def add(self, key: K, deadline_ms: int) -> bool:
        """Schedule ``key`` at ``deadline_ms``; O(1).

        Returns False, and stores nothing, when ``deadline_ms < current_ms + tick_ms``: the
        entry is already due (or due within the current tick) and the caller must handle it
        now. A key is in the wheel at most once: adding a present key moves it to the new
        deadline, and a refused re-add removes the old entry, so that afterwards the key is in
        the wheel exactly when ``add`` returned True.
        """
        loc = self._loc
        if deadline_ms < self._due_before:
            if key in loc:
                self.cancel(key)
            return False
        size = self._size
        t = deadline_ms // self._tick
        if t - self._c0 < size:
            bucket = self._slots0[t % size]
        else:  # the lowest overflow level whose window holds the deadline
            if not isinstance(deadline_ms, int):  # e.g. inf would never fit any level
                raise TypeError(f"deadline_ms must be an int, got {type(deadline_ms).__name__}")
            cur = self._cur
            levels = self._levels
            i = 1
            while True:
                t //= size  # now deadline_ms // (tick_ms * size**i)
                if i == len(levels):
                    self._add_level()
                if t - cur[i] < size:
                    bucket = levels[i][t % size]
                    break
                i += 1
        old = loc.get(key)
        if old is not None and old.pop(key) is self._next:
            self._next_ok = False
        seq = self._seq
        self._seq = seq + 1
        e = (deadline_ms, seq, key)
        bucket[key] = e
        loc[key] = bucket
        if self._next_ok:
            nxt = self._next
            if nxt is None or deadline_ms < nxt[0]:
                self._next = e
        return True

    def cancel(self, key: K) -> bool:
        """Remove ``key``; O(1). True if it was present."""
        bucket = self._loc.pop(key, None)
        if bucket is None:
            return False
        if bucket.pop(key) is self._next:
            self._next_ok = False
        return True

    def advance(self, now_ms: int) -> list[tuple[int, K]]:
        """Move the wheel to ``now_ms``; remove and return every entry with deadline <= now_ms.

        The result is sorted by deadline, ties in insertion order. Moving backwards (or not at
        all) is a no-op that returns []. Cost does not depend on how much time passed.
        """
        if not isinstance(now_ms, int):
            raise TypeError(f"now_ms must be an int, got {type(now_ms).__name__}")
        if now_ms <= self._now:
            return []
        self._now = now_ms
        tick = self._tick
        size = self._size
        cur = self._cur
        c0_old = self._c0
        c0 = now_ms // tick
        self._c0 = c0
        cur[0] = c0
        self._due_before = (c0 + 1) * tick
        loc = self._loc
        if not loc:  # idle: move the cursors, visit nothing
            ci = c0
            for i in range(1, len(cur)):
                ci //= size
                cur[i] = ci
            return []

        due: list[tuple[int, int, K]] = []
        # Level 0: buckets c0_old (the old current one) .. c0 (the new current one).
        slots0 = self._slots0
        last = c0 if c0 - c0_old < size else c0_old + size - 1
        for n in range(c0_old, last + 1):
            s = n % size
            bucket = slots0[s]
            if not bucket:
                continue
            if n < c0:  # wholly in the past
                slots0[s] = {}
                due += bucket.values()
                for k in bucket:
                    del loc[k]
            else:  # the bucket now_ms is in: only what is due
                ripe = [e for e in bucket.values() if e[0] <= now_ms]
                for e in ripe:
                    k = e[2]
                    del bucket[k]
                    del loc[k]
                due += ripe

        # Overflow levels, bottom up, so that lower levels are already advanced when an
        # expired bucket's entries drop into them.
        levels = self._levels
        ci = c0
        for i in range(1, len(levels)):
            ci_old = cur[i]
            ci //= size  # now_ms // (tick_ms * size**i)
            if ci == ci_old:
                break  # this level did not move, so no coarser one did either
            cur[i] = ci
            slots = levels[i]
            last = ci if ci - ci_old < size else ci_old + size - 1
            for n in range(ci_old + 1, last + 1):
                s = n % size
                bucket = slots[s]
                if not bucket:
                    continue
                slots[s] = {}
                for k, e in bucket.items():
                    d = e[0]
                    if d <= now_ms:
                        due.append(e)
                        del loc[k]
                        continue
                    t = d // tick
                    if t - c0 < size:
                        target = slots0[t % size]
                    else:
                        j = 1
                        while True:  # always ends below level i: see the class docstring
                            t //= size
                            if t - cur[j] < size:
                                target = levels[j][t % size]
                                break
                            j += 1
                    target[k] = e
                    loc[k] = target

        if not due:
            return []
        self._next_ok = False  # the cached earliest entry is due whenever anything is
        due.sort()
        return [(e[0], e[2]) for e in due]

    def next_expiry(self) -> int | None:
        """The earliest deadline in the wheel (exact, not a bucket bound), or None when empty.

        Call ``advance`` again at or after this instant. Cached until an entry fires or the
        earliest one is cancelled, so calling it after every ``advance`` is cheap.
        """
        if self._next_ok:
            nxt = self._next
            return None if nxt is None else nxt[0]
        best: tuple[int, int, K] | None = None
        if self._loc:
            size = self._size
            cur = self._cur
            width = self._tick
            for i, slots in enumerate(self._levels):
                c = cur[i]
                if i:
                    width *= size
                    # Every entry on level i (and above) is due at or after (c+1) * width.
                    if best is not None and best[0] <= (c + 1) * width:
                        break
                    first = c + 1
                else:
                    first = c
                for n in range(first, c + size):  # one level's buckets: disjoint, in order
                    bucket = slots[n % size]
                    if bucket:
                        m = min(bucket.values())
                        if best is None or m < best:
                            best = m
                        break
        self._next = best
        self._next_ok = True
        return None if best is None else best[0]

    def drain(self) -> list[tuple[int, K]]:
        """Remove and return every entry, sorted by deadline (ties in insertion order)."""
        out: list[tuple[int, int, K]] = []
        for slots in self._levels:
            for s, bucket in enumerate(slots):
                if bucket:
                    out += bucket.values()
                    slots[s] = {}
        self._loc.clear()
        self._next = None
        self._next_ok = True
        out.sort()
        return [(e[0], e[2]) for e in out]

    # -- internals ---------------------------------------------------------------------------

    def _add_level(self) -> None:
        size = self._size
        self._cur.append(self._cur[-1] // size)
        self._levels.append([{} for _ in range(size)])

