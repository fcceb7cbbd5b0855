"""What one tenant's calendars cost the store's thread at each claim batch: ``CalendarBook.load``
(what every claim batch does first, on the thread every tenant's claims and starts share) of
``--jobs`` jobs observing 8 of ``--calendars`` calendars of ``--windows`` one-hour windows
each, then one tick of each job looked up, timed over ``--batches`` batches. The store's row
read is left out (the stored indexes are in memory): the figure is the calendars' own. ``--store`` times whole claim batches (``claim_due``) of a real SQLite store
instead, the rows' read included; ``--unpacked`` then first empties the rows' stored indexes
(as a store migrated to version 25 has them), so the first batch builds and keeps them.

    .venv/bin/python bench/bench_calendar_claims.py --calendars 96 --jobs 12 --batches 5 [--store]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (puts the repository on sys.path)

from cronwheel.core.calendar import Calendar, build_calendar
from cronwheel.core.calendarindex import CalendarIndex
from cronwheel.core.instants import format_instant
from cronwheel.store.calendars import INDEX_ENTRIES, CalendarBook, FairCache

START = 1_893_456_000_000  # 2030-01-01T00:00Z


def calendars_of(calendars: int, windows: int) -> list[Calendar]:
    cals = []
    for c in range(calendars):
        spans = [(format_instant(START + (c + 2 * w) * 3_600_000), format_instant(START + (c + 2 * w + 1) * 3_600_000))
                 for w in range(windows)]  # fmt: skip
        cals.append(build_calendar(f"cal-{c}", windows=spans, tenant="evil"))
    return cals


def store_batches(cals: list[Calendar], jobs: int, batches: int, unpacked: bool) -> list[float]:
    """Milliseconds of each ``claim_due`` of a real SQLite store: ``jobs`` every-minute jobs
    observing 8 of the calendars, all due at each batch."""
    from cronwheel.core.model import JobSpec
    from cronwheel.core.records import NewJob
    from cronwheel.store.sqlite import SqliteStore

    now = 1_767_225_600_000  # 2026-01-01T00:00Z
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "bench.db")
        try:
            for cal in cals:
                store.put_calendar(cal, now)
            if unpacked:
                with store._write() as conn:
                    conn.execute("DELETE FROM calendar_indexes")
            store.create_jobs([NewJob(f"job-{j}", JobSpec(schedule="* * * * *", target={"command": "true"}, tenant="evil",
                                                          calendars=tuple(f"cal-{(j * 8 + k) % len(cals)}" for k in range(8))),
                                      now, None, None) for j in range(jobs)], now - 1_000)  # fmt: skip
            times = []
            for b in range(batches):
                t0 = time.perf_counter()
                claimed = store.claim_due(list(range(64)), now + b * 60_000, 1_000)
                times.append((time.perf_counter() - t0) * 1000)
                assert len(claimed.executions) == jobs, len(claimed.executions)
            return times
        finally:
            store.close()


class Packed:
    """The stored indexes, in memory (``CalendarRows`` without a database)."""

    def __init__(self, by_name: dict[str, tuple[str, str, int, bytes]]) -> None:
        self.by_name = by_name

    def revisions(self, pairs: list[list[str]]) -> list[tuple[str, str, int]]:
        return [self.by_name[p[1]][:3] for p in pairs]

    def packed(self, pairs: list[list[str]]) -> list[tuple[str, str, int, bytes]]:
        return [self.by_name[p[1]] for p in pairs]

    def specs(self, pairs: list[list[str]]) -> list[Any]:
        return []

    def keep(self, built: list[tuple[str, str, int, bytes]]) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calendars", type=int, default=96)
    ap.add_argument("--windows", type=int, default=5_000)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--store", action="store_true", help="whole claim batches of a real SQLite store")
    ap.add_argument("--unpacked", action="store_true", help="with --store: the rows' indexes not stored yet")
    args = ap.parse_args()
    cals = calendars_of(args.calendars, args.windows)
    if args.store:
        times = store_batches(cals, args.jobs, args.batches, args.unpacked)
        print(json.dumps({"store": "sqlite", "calendars": args.calendars, "jobs": args.jobs, "unpacked": args.unpacked,
                          "first_batch_ms": round(times[0], 1),
                          "later_batches_median_ms": round(statistics.median(times[1:]), 2)}))  # fmt: skip
        return
    rows = Packed({c.name: ("evil", c.name, 1, c.index().pack()) for c in cals})
    held = FairCache[CalendarIndex](INDEX_ENTRIES, lambda index: index.size)
    needs = [("evil", json.dumps([f"cal-{(j * 8 + k) % args.calendars}" for k in range(8)])) for j in range(args.jobs)]
    times = []
    for b in range(args.batches):
        t0 = time.perf_counter()
        book = CalendarBook.load(needs, rows, held, json.loads)
        for _, names in needs:
            exclusions = book.exclusions("evil", "Europe/Paris", names)
            assert exclusions is not None
            exclusions.reason(START + b * 1000)
        times.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"calendars": args.calendars, "windows": args.windows, "jobs": args.jobs,
                      "first_batch_ms": round(times[0], 1),
                      "later_batches_median_ms": round(statistics.median(times[1:]), 2) if len(times) > 1 else None}))


if __name__ == "__main__":
    main()
