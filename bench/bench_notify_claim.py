"""The deliverer's claim behind notification backlogs, on the SQLite store.

A claim takes tenants in turn (``store/outbox/delivery.claim``). This times one claim, the
statement that runs in a write transaction whenever a delivery slot frees, in two shapes:

* ``loud``   one tenant with ``--backlog`` due notifications (default 100,000) and one quiet
             tenant with one: a claim for 4 slots, and for 1.
* ``many``   ``--tenants`` tenants (default 500) with 20 due each: a claim for 1 slot (one
             delivery finished) and for 16 (a deliverer starting).

Rows are written straight into the table (the claim reads nothing else); each claim is rolled
back so that every repeat sees the same backlog.

Usage::

    .venv/bin/python bench/bench_notify_claim.py
    .venv/bin/python bench/bench_notify_claim.py --backlog 10000 --tenants 50 --repeat 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cronwheel.store.sqlite import SqliteStore

T0 = 1_800_000_000_000
RULE = json.dumps({"on": "failure", "via": "webhook", "url": "https://hooks.example/x", "secret": "0123456789abcdef-s"})
INSERT = ("INSERT INTO notifications (notification_id, subject, rule_id, job_id, tenant, event, rule, body, status,"
          " available_at, created_at) VALUES (?, ?, 'r', ?, ?, 'failure', ?, '{}', 'PENDING', ?, ?)")


def fill(store: SqliteStore, rows: list[tuple[str, int]]) -> None:
    """``(tenant, available_at)`` rows, one job per 100 of a tenant's (the rate check reads per job)."""
    conn = store._conn
    conn.execute("BEGIN")
    for i, (tenant, at) in enumerate(rows):
        conn.execute(INSERT, (f"s{i}@r", f"s{i}", f"j{tenant}{i // 100}", tenant, RULE, at, at))
    conn.execute("COMMIT")


def time_claim(store: SqliteStore, limit: int, repeat: int) -> float:
    """The median ms of one claim of ``limit`` (rolled back after each)."""
    from cronwheel.store.outbox import delivery

    conn = store._conn
    took = []
    for _ in range(repeat):
        conn.execute("BEGIN IMMEDIATE")
        start = time.perf_counter()
        delivery.claim(store._dialect.outbox_sql(conn), "bench", T0 + 10**9, limit, 60_000)
        took.append((time.perf_counter() - start) * 1000)
        conn.execute("ROLLBACK")
    return statistics.median(took)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backlog", type=int, default=100_000)
    ap.add_argument("--tenants", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loud = SqliteStore.open(Path(tmp) / "loud.db")
        fill(loud, [("loud", T0 + i) for i in range(args.backlog)] + [("quiet", T0 + args.backlog)])
        many = SqliteStore.open(Path(tmp) / "many.db")
        fill(many, [(f"t{k:04d}", T0 + i) for k in range(args.tenants) for i in range(20)])
        print(f"loud: {args.backlog:,} due of one tenant, 1 of another")
        for limit in (4, 1):
            print(f"  claim {limit:>2}: {time_claim(loud, limit, args.repeat):8.2f} ms (median of {args.repeat})")
        print(f"many: {args.tenants} tenants with 20 due each")
        for limit in (1, 16):
            print(f"  claim {limit:>2}: {time_claim(many, limit, args.repeat):8.2f} ms (median of {args.repeat})")
        loud.close()
        many.close()


if __name__ == "__main__":
    main()
