"""Two OS processes claim the same buckets of one store at once: every (job, tick) must be
claimed exactly once, by one of them.

Each process runs the same fake clock (``now`` steps through the same instants) and calls
``claim_due`` in small batches until a batch comes back short. The processes open the store,
report ready, and block on stdin until both are told to go, so they start together; the test
then waits for them to exit (no sleeps anywhere). Used by the SQLite race
(``tests/integration/test_sqlite_claim_race.py``) and the PostgreSQL one
(``tests/contract/test_postgres_specific.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cronwheel.core import schedule
from cronwheel.core.records import NewJob

ROOT = Path(__file__).resolve().parents[2]

#: the racer's loop; the caller's ``opening`` defines ``store`` from ``target`` (a path or a DSN)
_RACER = """
import json, sys
{opening}
print("ready", flush=True)
assert sys.stdin.readline().strip() == "go"
claimed, skipped, transactions = [], [], 0
for i in range(steps):
    now = t0 + i * step
    while True:
        res = store.claim_due(range(64), now, limit)
        transactions += 1
        claimed += [e.execution_id for e in res.executions]
        skipped += [e.execution_id for e in res.skipped]
        if res.jobs_claimed < limit:
            break
store.close()
with open(out, "w") as f:
    json.dump({{"claimed": claimed, "skipped": skipped, "transactions": transactions}}, f)
"""


def race(opening: str, target: str, tmp_path: Path, t0: int, step: int, steps: int, limit: int) -> list[dict[str, Any]]:
    """Run two racers to the end; each one's claimed and skipped execution ids."""
    prelude = "target, out, t0, step, steps, limit = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])\n"
    code = _RACER.format(opening=prelude + textwrap.dedent(opening))
    outs = [tmp_path / f"out{k}.json" for k in range(2)]
    procs = [
        subprocess.Popen([sys.executable, "-c", code, target, str(out), str(t0), str(step), str(steps), str(limit)],
                         cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for out in outs
    ]  # fmt: skip
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            p.communicate(timeout=90)
            assert p.returncode == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [json.loads(out.read_text()) for out in outs]


def assert_each_tick_once(results: Sequence[dict[str, Any]], jobs: Sequence[NewJob], text: str, end: int) -> set[str]:
    """Every tick of ``jobs`` (schedule ``text``) up to ``end`` claimed by exactly one racer,
    nothing skipped, and both took part; the expected execution ids."""
    expected = set()
    for job in jobs:
        assert job.next_run_at is not None
        tick: int | None = job.next_run_at
        while tick is not None and tick <= end:
            expected.add(f"{job.job_id}:{tick}")
            tick = schedule.next_fire(text, job.job_id, "UTC", tick)
    a, b = (set(r["claimed"]) for r in results)
    assert len(a) == len(results[0]["claimed"]) and len(b) == len(results[1]["claimed"])
    assert not a & b, f"{len(a & b)} ticks claimed twice, e.g. {sorted(a & b)[:3]}"
    assert a | b == expected, f"lost: {sorted(expected - (a | b))[:3]}, extra: {sorted((a | b) - expected)[:3]}"
    assert results[0]["skipped"] == results[1]["skipped"] == []
    assert a and b, (len(a), len(b))  # both really took part (each won some transactions)
    return expected
