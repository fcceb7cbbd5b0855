#!/usr/bin/env python3
"""A downstream system that cannot be corrupted by zombie workers: the fencing pattern.

cronwheel runs every execution *at least once*. A worker that pauses past its lease (a long
GC, a SIGSTOP, a network partition) may wake up after another worker has taken the same
execution with a higher ``leaseEpoch``. The downstream store makes that harmless by keeping,
per execution, the highest epoch it has seen and the effect it applied:

* an epoch LOWER than the highest seen is a zombie: rejected, nothing written (exit 4);
* the same execution applied again at an equal or higher epoch is a redelivery: the effect is
  already there, so nothing is written twice, and the run succeeds (exit 0, prints
  ``duplicate``): for an idempotent downstream, "already done" is success;
* otherwise the effect is applied and the epoch remembered, in ONE transaction (exit 0).

Use it from a cron job (the environment comes from cronwheel):

    cronwheel add '*/5 * * * *' -- python3 examples/fenced_ledger.py ledger.db charge 10

Usage: fenced_ledger.py LEDGER_DB EFFECT [AMOUNT]      (reads CRONWHEEL_EXECUTION_ID and
       fenced_ledger.py LEDGER_DB --dump                 CRONWHEEL_LEASE_EPOCH from the env)
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys

SCHEMA = """
CREATE TABLE IF NOT EXISTS fence (execution_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
    execution_id TEXT PRIMARY KEY,  -- at most one effect per execution, ever
    epoch INTEGER NOT NULL,
    effect TEXT NOT NULL,
    amount INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rejected (execution_id TEXT, epoch INTEGER, why TEXT);
"""

APPLIED, FENCED = 0, 4
DUPLICATE = "duplicate"  # exit 0 too; told apart by what is printed


def apply(db_path: str, execution_id: str, epoch: int, effect: str, amount: int) -> int | str:
    db = sqlite3.connect(db_path, timeout=30, isolation_level=None)
    try:
        db.executescript(SCHEMA)
        db.execute("BEGIN IMMEDIATE")
        row = db.execute("SELECT epoch FROM fence WHERE execution_id = ?", (execution_id,)).fetchone()
        if row is not None and epoch < row[0]:
            db.execute("INSERT INTO rejected VALUES (?, ?, 'stale epoch')", (execution_id, epoch))
            db.execute("COMMIT")
            return FENCED
        db.execute(
            "INSERT INTO fence VALUES (?, ?) ON CONFLICT(execution_id) DO UPDATE SET epoch = excluded.epoch",
            (execution_id, epoch),
        )
        if db.execute("SELECT 1 FROM ledger WHERE execution_id = ?", (execution_id,)).fetchone():
            db.execute("COMMIT")
            return DUPLICATE
        db.execute("INSERT INTO ledger VALUES (?, ?, ?, ?)", (execution_id, epoch, effect, amount))
        db.execute("COMMIT")
        return APPLIED
    finally:
        db.close()


def dump(db_path: str) -> dict[str, list]:
    db = sqlite3.connect(db_path, timeout=30)
    try:
        db.executescript(SCHEMA)
        return {
            "ledger": [list(r) for r in db.execute("SELECT execution_id, epoch, effect, amount FROM ledger")],
            "rejected": [list(r) for r in db.execute("SELECT execution_id, epoch, why FROM rejected")],
        }
    finally:
        db.close()


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] == "--dump":
        print(json.dumps(dump(argv[0])))
        return 0
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        execution_id = os.environ["CRONWHEEL_EXECUTION_ID"]
        epoch = int(os.environ["CRONWHEEL_LEASE_EPOCH"])
    except (KeyError, ValueError):
        print("fenced_ledger: run me from a cronwheel job (CRONWHEEL_EXECUTION_ID, CRONWHEEL_LEASE_EPOCH)", file=sys.stderr)
        return 2
    verdict = apply(argv[0], execution_id, epoch, argv[1], int(argv[2]) if len(argv) == 3 else 1)
    print({APPLIED: "applied", DUPLICATE: "duplicate", FENCED: "fenced"}[verdict])
    return FENCED if verdict == FENCED else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
