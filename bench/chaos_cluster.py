"""A cluster's bad day, measured: three `cronwheel serve` nodes on one throwaway PostgreSQL,
300 every-second jobs (a Python callable appending to a ledger) and three 12-second commands
every 20 s, then one of:

    restart-fast, restart-immediate   pg_ctl restart (HOLD=10: stop, wait 10 s, start)
    sigstop                           SIGSTOP one node for HOLD seconds (10), then SIGCONT
    skew                              a third node joins with its clock 30 s ahead (libfaketime)
    netcut                            one node's packets to PostgreSQL dropped (iptables) for HOLD (12) s
    rolling                           SIGTERM and start each node in turn

Prints what happened as JSON: missed ticks, ticks with two executions, first attempts run
twice, runs that ran more than once, lag (start − tick), the long runs, the chaos' own
figures (``marks``), and per node the events that tell the story. docs/scaling.md, "a
cluster's bad day", records a run of each.

    .venv/bin/python bench/chaos_cluster.py restart-immediate
    HOLD=10 .venv/bin/python bench/chaos_cluster.py restart-fast
"""

from __future__ import annotations

import glob
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg

from tests.support.daemon import Daemon
from tests.support.netcut import Forwarder, cut, require_iptables
from tests.support.postgres import Cluster, find_bindir
from tests.support.wait import wait_for

N_JOBS = int(os.environ.get("N_JOBS", "300"))
LEASE_MS = int(os.environ.get("LEASE_MS", "3000"))
HOLD = float(os.environ.get("HOLD", "0"))
NAMES = ("n1", "n2", "n3")
SHOWN = ("store", "bucket", "buckets", "lease", "completion", "node", "clock", "worker", "dispatch", "cluster")


class Bench:
    def __init__(self, out: Path, pg: Cluster) -> None:
        self.out, self.pg, self.dsn = out, pg, pg.dsn("cw")
        self.ledger = out / "ledger.txt"
        self.nodes: dict[str, Daemon] = {}
        self.ids: list[str] = []
        self.longs: list[str] = []
        self.marks: dict[str, Any] = {}

    def sql(self, query: str, args: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(query, args)
            return cur.fetchall() if cur.description else []

    def db_now(self) -> int:
        return int(self.sql("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")[0][0])

    def owners(self) -> Counter[str]:
        return Counter({str(o): int(n) for o, n in self.sql(
            "SELECT owner, count(*) FROM bucket_leases WHERE owner IS NOT NULL AND lease_until > "
            "(extract(epoch FROM clock_timestamp()) * 1000)::bigint GROUP BY owner")})

    def balanced(self, names: tuple[str, ...] = NAMES) -> bool:
        held = self.owners()
        return set(held) == set(names) and sum(held.values()) == 64 and min(held.values()) >= 64 // len(names) - 1

    def start_node(self, name: str, dsn: str | None = None, env: dict[str, str] | None = None) -> Daemon:
        args = ("--store", dsn or self.dsn, "--node-id", name, "--bucket-lease-ms", str(LEASE_MS))
        self.nodes[name] = Daemon(self.out / name, workers=2, slots=64, args=args, env=env)
        return self.nodes[name].start(60)

    def add_jobs(self, via: Daemon) -> None:
        for i in range(N_JOBS):
            self.ids.append(via.add_job({"schedule": "* * * * * *", "python": "tests.support.callables:ledger",
                                         "payload": {"ledger": str(self.ledger)}, "name": f"every-{i}",
                                         "misfireGraceSec": 60})["jobId"])
        log = self.out / "long.txt"
        line = 'echo "$CRONWHEEL_EXECUTION_ID $CRONWHEEL_LEASE_EPOCH $CRONWHEEL_ATTEMPT'
        for i in range(3):
            self.longs.append(via.add_job({"schedule": "*/20 * * * * *", "name": f"long-{i}", "leaseSec": 4,
                                           "command": f'{line} start" >> {log}; sleep 12; {line} end" >> {log}'})["jobId"])

    def ticking(self) -> bool:
        end = self.db_now() - 1500
        rows = self.sql("SELECT job_id, max(scheduled_at) FROM executions WHERE job_id = ANY(%s) GROUP BY job_id", (self.ids,))
        return len(rows) == len(self.ids) and all(int(m) >= end for _, m in rows)

    def setup(self, dsns: dict[str, str] | None = None, envs: dict[str, dict[str, str]] | None = None,
              names: tuple[str, ...] = NAMES) -> int:
        for name in names:
            self.start_node(name, (dsns or {}).get(name), (envs or {}).get(name))
        wait_for(lambda: self.balanced(names), 30, 0.1, "the buckets balanced")
        self.add_jobs(self.nodes[names[0]])
        wait_for(self.ticking, 60, 0.2, "every job ticking")
        wait_for((self.out / "long.txt").exists, 30, 0.2, "the long runs started")
        return self.db_now()

    def ran_since(self, t_wall: float) -> float | None:
        """Seconds from ``t_wall`` to the first run the ledger recorded after it."""
        for line in self.ledger.read_text().splitlines():
            ts = float(line.split()[4])
            if ts > t_wall:
                return round(ts - t_wall, 2)
        return None

    def unsettled(self, ids: list[str], until: int) -> int:
        return int(self.sql("SELECT count(*) FROM executions WHERE job_id = ANY(%s) AND scheduled_at <= %s AND status "
                            "NOT IN ('SUCCEEDED', 'SKIPPED', 'DEAD', 'CANCELLED')", (ids, until))[0][0])

    def report(self, start_ms: int) -> dict[str, Any]:
        end = self.db_now() + 3000
        wait_for(lambda: self.ticking() and self.db_now() > end + 1500, 90, 0.3, "ticks to the end")
        wait_for(lambda: self.unsettled(self.ids, end) == 0 and self.unsettled(self.longs, start_ms) == 0, 90, 0.3,
                 "every run up to the end settled")
        rows = self.sql("SELECT job_id, scheduled_at, status, attempt, lease_epoch, started_at FROM executions "
                        "WHERE job_id = ANY(%s) AND scheduled_at <= %s", (self.ids + self.longs, end))
        ticks = Counter((j, int(t)) for j, t, *_ in rows)
        every = set(self.ids)
        missed = 0
        for job in self.ids:
            mine = sorted(t for j, t in ticks if j == job)
            missed += sum(1 for t in range(max(mine[0], start_ms - start_ms % 1000), end + 1, 1000) if (job, t) not in ticks)
        first: Counter[str] = Counter()
        runs: Counter[str] = Counter()
        for line in self.ledger.read_text().splitlines():
            execution_id, _, attempt, *_ = line.split()
            runs[execution_id] += 1
            first[execution_id] += attempt == "1"
        lags = sorted(int(s) - int(t) for j, t, _, _, _, s in rows if j in every and s is not None and t >= start_ms)
        return {
            "missed": missed, "double": sum(1 for n in ticks.values() if n > 1),
            "firstAttemptTwice": sum(1 for n in first.values() if n > 1),
            "ranAgain": sum(1 for n in runs.values() if n > 1),
            "epochs": dict(Counter(int(r[4]) for r in rows if r[0] in every)),
            "lagMs": {"p50": lags[len(lags) // 2], "p99": lags[int(len(lags) * 0.99)], "max": lags[-1]} if lags else {},
            "longRuns": [(s, a, e) for j, _, s, a, e, _ in rows if j in set(self.longs)],
            "marks": self.marks,
            "events": {name: {k: v for k, v in sorted(Counter(e["event"] for e in d.events()).items())
                              if k.split(".")[0] in SHOWN} for name, d in self.nodes.items()},
        }

    def close(self) -> None:
        for d in self.nodes.values():
            if d.proc is not None and d.proc.poll() is None:
                os.kill(d.pid, signal.SIGCONT)
                try:
                    d.stop(60)
                except AssertionError:
                    d.kill()


def restart(b: Bench, mode: str) -> int:
    start_ms = b.setup()
    t_down = time.time()
    if HOLD:
        b.pg.stop(mode)
        wait_for(lambda: time.time() - t_down >= HOLD, HOLD + 5, 0.2, "the outage's length")
        b.pg.start()
    else:
        b.pg._run(str(b.pg.bindir / "pg_ctl"), "-D", str(b.pg.data), "-l", str(b.pg.log), "-m", mode, "-w",
                  "-o", f"-p {b.pg.port}", "restart")
    t_up = time.time()
    b.marks["downSec"] = round(t_up - t_down, 2)
    wait_for(lambda: b.ran_since(t_up) is not None, 60, 0.05, "a run after the restart")
    b.marks["dispatchAgainSec"] = b.ran_since(t_up)
    wait_for(b.balanced, 60, 0.1, "the buckets leased again")
    b.marks["leasedAgainSec"] = round(time.time() - t_up, 2)
    return start_ms


def sigstop(b: Bench) -> int:
    start_ms = b.setup()
    victim = b.nodes["n2"]
    before = dict(b.sql("SELECT bucket_id, epoch FROM bucket_leases WHERE owner = 'n2'"))
    t = time.time()
    os.kill(victim.pid, signal.SIGSTOP)
    try:
        wait_for(lambda: b.balanced(("n1", "n3")), 30, 0.05, "the buckets moved")
        b.marks["movedSec"] = round(time.time() - t, 2)
        wait_for(lambda: time.time() - t >= (HOLD or 10), (HOLD or 10) + 5, 0.2, "the stop's length")
    finally:
        os.kill(victim.pid, signal.SIGCONT)
    t = time.time()
    wait_for(b.balanced, 60, 0.1, "n2 back")
    b.marks["backSec"] = round(time.time() - t, 2)
    after = dict(b.sql("SELECT bucket_id, epoch FROM bucket_leases WHERE owner = 'n2'"))
    b.marks["newerEpochs"] = all(after[k] > before.get(k, 0) for k in after)
    return start_ms


def skew(b: Bench) -> int:
    preload = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not preload:
        sys.exit("libfaketime is not installed (apt-get install faketime)")
    start_ms = b.setup(names=("n1", "n2"))
    b.start_node("n3", env={"LD_PRELOAD": preload[0], "FAKETIME": os.environ.get("SKEW", "+30s"),
                            "DONT_FAKE_MONOTONIC": "1"})
    wait_for(b.balanced, 60, 0.1, "n3 holding its share")
    t = time.time()
    wait_for(lambda: time.time() - t >= 40, 45, 0.5, "40 s of the skewed node")
    b.marks["claimedAhead"] = b.sql("SELECT count(*) FROM executions WHERE created_at > scheduled_at + 5000")[0][0]
    return start_ms


def netcut(b: Bench) -> int:
    require_iptables_or_exit()
    forwarder = Forwarder(b.pg.port)
    start_ms = b.setup(dsns={"n2": b.dsn.replace(f":{b.pg.port}/", f":{forwarder.port}/")})
    n2 = b.nodes["n2"]
    t = time.time()
    with cut(forwarder.port):
        wait_for(lambda: b.balanced(("n1", "n3")), 30, 0.05, "the buckets moved")
        b.marks["movedSec"] = round(time.time() - t, 2)
        wait_for(lambda: n2.event("bucket.lost"), 60, 0.1, "n2 stepping down")
        b.marks["steppedDownSec"] = round(time.time() - t, 2)
        r = n2.get("/v1/status")
        b.marks["status"] = (r.status, (r.json() or {}).get("stale"))
        t_sub = time.monotonic()
        r = n2.post("/v1/jobs", {"runAt": "+1s", "command": "true"}, headers={"Idempotency-Key": "cut"})
        b.marks["submit"] = (r.status, round(time.monotonic() - t_sub, 2))
        wait_for(lambda: time.time() - t >= (HOLD or 12), 600, 0.2, "the cut's length")
    b.marks["cutSec"] = round(time.time() - t, 2)
    t = time.time()
    wait_for(b.balanced, 300, 0.1, "n2 back")
    b.marks["backSec"] = round(time.time() - t, 2)
    forwarder.close()
    return start_ms


def require_iptables_or_exit() -> None:
    try:
        require_iptables()
    except BaseException as exc:  # pytest.skip outside pytest
        sys.exit(f"netcut needs root and iptables: {exc}")


def rolling(b: Bench) -> int:
    start_ms = b.setup()
    for name in NAMES:
        t = time.time()
        rc = b.nodes[name].stop(60)
        stopped = round(time.time() - t, 2)
        b.nodes[name].start(60)
        wait_for(b.balanced, 60, 0.1, "balanced again")
        b.marks[name] = {"exit": rc, "stopSec": stopped, "balancedSec": round(time.time() - t, 2)}
    return start_ms


def main() -> None:
    scenario = sys.argv[1] if len(sys.argv) > 1 else ""
    runs = {"restart-fast": lambda b: restart(b, "fast"), "restart-immediate": lambda b: restart(b, "immediate"),
            "sigstop": sigstop, "skew": skew, "netcut": netcut, "rolling": rolling}
    if scenario not in runs:
        sys.exit(f"usage: chaos_cluster.py {{{','.join(runs)}}}")
    bindir = find_bindir()
    if bindir is None:
        sys.exit("no PostgreSQL (initdb, pg_ctl) found")
    out = Path(tempfile.mkdtemp(prefix="cronwheel-chaos-"))
    os.chmod(out, 0o777)  # the ledger is written by the workers
    pg = Cluster.create(bindir)
    pg.start()
    pg.sql("CREATE DATABASE cw")
    bench = Bench(out, pg)
    try:
        start_ms = runs[scenario](bench)
        print(json.dumps(bench.report(start_ms), indent=1))
    finally:
        bench.close()
        pg.destroy()
    print(f"logs in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
