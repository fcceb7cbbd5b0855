"""TimingWheel vs heapq: N timers over a 60 s horizon.

Both sides offer the same contract: timers keyed by id, cancel by id, fire in deadline order
(ties in insertion order), and a next-expiry instant for the scheduler's sleep.

* ``heapq``  a heap of ``(deadline, seq, key)`` plus a ``key -> entry`` dict; cancel is lazy
             (drop the dict entry, skip the dead heap entry when it surfaces).
* ``wheel``  ``cronwheel.core.wheel.TimingWheel`` (tick 10 ms, 64 buckets per level).

Phases, each timed on its own in CPU time of this process (``time.process_time``, so other load
on the machine does not count), with the cyclic GC disabled as ``timeit`` does (``--gc`` keeps
it on); each side runs ``--repeat`` times, alternating, and the best time per phase is kept:

* ``insert``   N adds, deadlines uniform over [start + tick, start + horizon]     ns / add
* ``cancel``   10 % of the keys, at random                                         ns / cancel
* ``advance``  advance(now) in 10 ms steps to the horizon, plus one next_expiry()
               per step (what the scheduler loop does); every live timer fires     ns / timer fired

A separate, untimed pass measures the memory each structure holds after the inserts
(``tracemalloc``; ``--no-mem`` skips it). The two sides' outputs are compared (same timers,
same order). ``wheel/heapq`` below 1 means the wheel is faster. Usage::

    .venv/bin/python bench/bench_wheel.py [--n 1000000] [--horizon-ms 60000] [--step-ms 10]
"""

from __future__ import annotations

import argparse
import gc
import heapq
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cronwheel.core.wheel import TimingWheel

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class HeapTimers:
    """The baseline: heapq with lazy deletion, same contract as the wheel."""

    __slots__ = ("_heap", "_live", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, int]] = []
        self._live: dict[int, tuple[int, int, int]] = {}
        self._seq = 0

    def add(self, key: int, deadline_ms: int) -> bool:
        e = (deadline_ms, self._seq, key)
        self._seq += 1
        heapq.heappush(self._heap, e)
        self._live[key] = e
        return True

    def cancel(self, key: int) -> bool:
        return self._live.pop(key, None) is not None

    def advance(self, now_ms: int) -> list[tuple[int, int]]:
        heap = self._heap
        live = self._live
        out: list[tuple[int, int]] = []
        pop = heapq.heappop
        while heap and heap[0][0] <= now_ms:
            e = pop(heap)
            k = e[2]
            if live.get(k) is e:
                del live[k]
                out.append((e[0], k))
        return out

    def next_expiry(self) -> int | None:
        heap = self._heap
        live = self._live
        while heap:
            e = heap[0]
            if live.get(e[2]) is e:
                return e[0]
            heapq.heappop(heap)
        return None


Timers = HeapTimers | TimingWheel[int]


def _timed(keep_gc: bool, fn: Callable[[], object]) -> tuple[float, object]:
    gc.collect()
    if not keep_gc:
        gc.disable()
    try:
        t0 = time.process_time_ns()
        result = fn()
        return time.process_time_ns() - t0, result
    finally:
        gc.enable()


def run(
    make: Callable[[], Timers],
    deadlines: list[int],
    cancels: list[int],
    horizon_ms: int,
    step_ms: int,
    keep_gc: bool,
) -> tuple[dict[str, float], list[tuple[int, int]]]:
    timers = make()

    def insert() -> None:
        add = timers.add
        for key, d in enumerate(deadlines):
            add(key, d)

    def cancel() -> None:
        c = timers.cancel
        for key in cancels:
            c(key)

    def advance() -> list[tuple[int, int]]:
        adv = timers.advance
        nxt = timers.next_expiry
        fired: list[tuple[int, int]] = []
        for now in range(START + step_ms, START + horizon_ms + step_ms, step_ms):
            fired += adv(now)
            nxt()
        return fired

    t_insert, _ = _timed(keep_gc, insert)
    t_cancel, _ = _timed(keep_gc, cancel)
    t_advance, fired = _timed(keep_gc, advance)
    assert isinstance(fired, list)
    n_fired = max(1, len(fired))
    times = {
        "insert": t_insert / len(deadlines),
        "cancel": t_cancel / max(1, len(cancels)),
        "advance": t_advance / n_fired,
        "total_ms": (t_insert + t_cancel + t_advance) / 1e6,
    }
    return times, fired


def held_bytes(make: Callable[[], Timers], deadlines: list[int]) -> int:
    """Bytes allocated by ``make()`` plus ``len(deadlines)`` adds, still held afterwards."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        timers = make()
        add = timers.add
        for key, d in enumerate(deadlines):
            add(key, d)
        held = tracemalloc.get_traced_memory()[0] - before
        del timers, add
        return held
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=1_000_000, help="timers (default 1,000,000)")
    ap.add_argument("--horizon-ms", type=int, default=60_000)
    ap.add_argument("--step-ms", type=int, default=10)
    ap.add_argument("--tick-ms", type=int, default=10)
    ap.add_argument("--wheel-size", type=int, default=64)
    ap.add_argument("--cancel-fraction", type=float, default=0.10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2, help="runs per side; best time per phase")
    ap.add_argument("--gc", action="store_true", help="keep the cyclic GC enabled while timing")
    ap.add_argument("--no-mem", action="store_true", help="skip the tracemalloc memory pass")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    first = START + args.tick_ms  # the earliest deadline the wheel accepts at START
    deadlines = [rng.randint(first, START + args.horizon_ms) for _ in range(args.n)]
    cancels = rng.sample(range(args.n), int(args.n * args.cancel_fraction))

    def make_wheel() -> Timers:
        return TimingWheel[int](START, args.tick_ms, args.wheel_size)

    sides: dict[str, Callable[[], Timers]] = {"heapq": HeapTimers, "wheel": make_wheel}
    best: dict[str, dict[str, float]] = {}
    reference: list[tuple[int, int]] | None = None
    for _ in range(args.repeat):  # alternate the two sides; keep each phase's best time
        for name, make in sides.items():
            times, fired = run(make, deadlines, cancels, args.horizon_ms, args.step_ms, args.gc)
            if reference is None:
                reference = fired
            elif fired != reference:
                raise SystemExit(f"MISMATCH: {name} fired different timers")
            prev = best.get(name)
            best[name] = times if prev is None else {k: min(v, prev[k]) for k, v in times.items()}
            del fired
    assert reference is not None
    heap_t, wheel_t = best["heapq"], best["wheel"]
    n_fired = len(reference)

    print(
        f"{args.n:,} timers over {args.horizon_ms / 1000:g} s, tick {args.tick_ms} ms x "
        f"{args.wheel_size}, cancel {args.cancel_fraction:.0%}, advance every {args.step_ms} ms; "
        f"{n_fired:,} fired (identical order); Python {sys.version.split()[0]}; "
        f"GC {'on' if args.gc else 'off'} while timing; best of {args.repeat}"
    )
    print()
    print(f"{'phase':<26}{'heapq ns/op':>14}{'wheel ns/op':>14}{'wheel/heapq':>14}")
    print("-" * 68)
    labels = {
        "insert": "insert (per add)",
        "cancel": "cancel (per cancel)",
        "advance": "advance+next (per fire)",
    }
    for key, label in labels.items():
        h, w = heap_t[key], wheel_t[key]
        print(f"{label:<26}{h:>14.0f}{w:>14.0f}{w / h:>13.2f}x")
    h, w = heap_t["total_ms"], wheel_t["total_ms"]
    print(f"{'total CPU (ms)':<26}{h:>14.0f}{w:>14.0f}{w / h:>13.2f}x")
    if not args.no_mem:
        h, w = (held_bytes(make, deadlines) / args.n for make in sides.values())
        print(f"{'memory (bytes/timer)':<26}{h:>14.0f}{w:>14.0f}{w / h:>13.2f}x")


if __name__ == "__main__":
    main()
