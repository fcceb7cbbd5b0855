"""What one tenant's calendars cost the store's thread at each claim batch: ``CalendarBook.load``
(what every claim batch does first, on the thread every tenant's claims and starts share) of
``--jobs`` jobs observing 8 of ``--calendars`` calendars of ``--windows`` one-hour windows
each, then one tick of each job looked up, timed over ``--batches`` batches. The store's row
read is left out (the rows are in memory): the figure is the calendars' own. ``--store``
times whole claim batches (``claim_due``) of a real SQLite store instead, the rows' read
included.

    .venv/bin/python bench/bench_calendar_claims.py --calendars 96 --jobs 12 --batches 5 [--store]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repository on sys.path)

from cronwheel.core.calendar import build_calendar
from cronwheel.core.instants import format_instant
from cronwheel.store.calendars import CalendarBook, calendar_spec_json

START = 1_893_456_000_000  # 2030-01-01T00:00Z


def rows_of(calendars: int, windows: int) -> list[tuple[str, str, str, int, int]]:
    rows = []
    for c in range(calendars):
        spans = [(format_instant(START + (c + 2 * w) * 3_600_000), format_instant(START + (c + 2 * w + 1) * 3_600_000))
                 for w in range(windows)]  # fmt: skip
        rows.append(("evil", f"cal-{c}", calendar_spec_json(build_calendar(f"cal-{c}", windows=spans)), 1, 1))
    return rows


def store_batches(rows: list[tuple[str, str, str, int, int]], jobs: int, batches: int) -> list[float]:
    """Milliseconds of each ``claim_due`` of a real SQLite store: ``jobs`` every-minute jobs
    observing 8 of the calendars, all due at each batch."""
    from cronwheel.core.calendar import calendar_from_json
    from cronwheel.core.model import JobSpec
    from cronwheel.core.records import NewJob
    from cronwheel.store.sqlite import SqliteStore

    now = 1_767_225_600_000  # 2026-01-01T00:00Z
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore.open(Path(tmp) / "bench.db")
        try:
            for tenant, name, spec, _, _ in rows:
                store.put_calendar(calendar_from_json(json.loads(spec) | {"name": name}, tenant), now)
            store.create_jobs([NewJob(f"job-{j}", JobSpec(schedule="* * * * *", target={"command": "true"}, tenant="evil",
                                                          calendars=tuple(f"cal-{(j * 8 + k) % len(rows)}" for k in range(8))),
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calendars", type=int, default=96)
    ap.add_argument("--windows", type=int, default=5_000)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--store", action="store_true", help="whole claim batches of a real SQLite store")
    args = ap.parse_args()
    rows = rows_of(args.calendars, args.windows)
    if args.store:
        times = store_batches(rows, args.jobs, args.batches)
        print(json.dumps({"store": "sqlite", "calendars": args.calendars, "jobs": args.jobs, "first_batch_ms": round(times[0], 1),
                          "later_batches_median_ms": round(statistics.median(times[1:]), 2)}))  # fmt: skip
        return
    by_name = {r[1]: r for r in rows}
    needs = [("evil", json.dumps([f"cal-{(j * 8 + k) % args.calendars}" for k in range(8)])) for j in range(args.jobs)]
    times = []
    for b in range(args.batches):
        t0 = time.perf_counter()
        book = CalendarBook.load(needs, lambda pairs: [by_name[p[1]] for p in pairs], json.loads)
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
