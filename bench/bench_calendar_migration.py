"""How long migration 25 (a calendar's index stored beside its row) holds a store at its start:
a store at version 24 with ``--tenants`` x ``--calendars`` calendars of ``--dates`` dates each,
then the migrations to the latest timed as a start applies them. SQLite by default; with
``--dsn`` a PostgreSQL database (emptied first: give it a throwaway one).

    .venv/bin/python bench/bench_calendar_migration.py --tenants 1000 --calendars 1000 [--dsn postgresql://…]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (puts the repository on sys.path)

from cronwheel.core.calendar import build_calendar
from cronwheel.store.calendars import calendar_spec_json

BEFORE = 24  # the version before calendar_index


def rows(tenants: int, calendars: int, dates: int) -> Any:
    spec = calendar_spec_json(build_calendar("c", [f"2027-01-{d + 1:02d}" for d in range(dates)]))
    for t in range(tenants):
        for c in range(calendars):
            yield f"tenant-{t}", f"cal-{c}", spec, 1, 1


def sqlite_seconds(args: argparse.Namespace) -> float:
    import apsw

    from cronwheel.store.sqlite.migrate import apply_migrations

    with tempfile.TemporaryDirectory() as tmp:
        conn = apsw.Connection(str(Path(tmp) / "bench.db"))
        apply_migrations(conn, 0, until=BEFORE)
        with conn:
            conn.executemany("INSERT INTO calendars (tenant, name, spec, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                             rows(args.tenants, args.calendars, args.dates))  # fmt: skip
        t0 = time.perf_counter()
        apply_migrations(conn, 0)
        took = time.perf_counter() - t0
        conn.close()
        return took


def postgres_seconds(args: argparse.Namespace) -> float:
    import psycopg

    from cronwheel.store.postgres.migrate import apply_migrations

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        apply_migrations(conn, 0, until=BEFORE)
        with conn.cursor() as cur, cur.copy("COPY calendars (tenant, name, spec, created_at, updated_at) FROM STDIN") as copy:
            for row in rows(args.tenants, args.calendars, args.dates):
                copy.write_row(row)
        conn.execute("VACUUM ANALYZE calendars")
        t0 = time.perf_counter()
        apply_migrations(conn, 0)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tenants", type=int, default=1_000)
    ap.add_argument("--calendars", type=int, default=1_000)
    ap.add_argument("--dates", type=int, default=10)
    ap.add_argument("--dsn", help="a throwaway PostgreSQL database (its public schema is dropped)")
    args = ap.parse_args()
    took = postgres_seconds(args) if args.dsn else sqlite_seconds(args)
    print(json.dumps({"store": "postgresql" if args.dsn else "sqlite", "calendars": args.tenants * args.calendars,
                      "dates": args.dates, "migrate_s": round(took, 3)}))  # fmt: skip


if __name__ == "__main__":
    main()
