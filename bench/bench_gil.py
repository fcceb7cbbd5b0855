"""The GIL hand-off cost behind the daemon's switch interval (daemon/serve.py).

The store's writer thread releases the GIL around SQLite work and must win it back from the
event-loop thread; while that thread runs Python, each hand-back can wait up to the switch
interval. This times one 5,000-row ``executemany`` transaction alone and next to a busy
thread, for several switch intervals:

    .venv/bin/python bench/bench_gil.py
"""

from __future__ import annotations

import statistics
import sys
import threading
import time

import apsw

ROWS = 5000


def run(interval_s: float) -> tuple[float, float]:
    sys.setswitchinterval(interval_s)
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")

    def batch() -> float:
        t0 = time.perf_counter()
        with conn:
            conn.executemany("INSERT OR REPLACE INTO t VALUES (?, ?)", ((i, "x" * 50) for i in range(ROWS)))
        return time.perf_counter() - t0

    alone = statistics.median(batch() for _ in range(9))
    stop = threading.Event()

    def busy() -> None:  # the event loop's share: pure Python, never blocking
        x = 0
        while not stop.is_set():
            for i in range(1000):
                x += i

    spinner = threading.Thread(target=busy)
    spinner.start()
    try:
        contended = statistics.median(batch() for _ in range(9))
    finally:
        stop.set()
        spinner.join()
    conn.close()
    return alone, contended


def main() -> int:
    print(f"{'switch interval':>16} {'alone':>9} {'busy loop':>10}")
    for interval in (0.005, 0.002, 0.001, 0.0005):
        alone, contended = run(interval)
        print(f"{interval * 1000:>13.1f} ms {alone * 1000:>6.1f} ms {contended * 1000:>7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
