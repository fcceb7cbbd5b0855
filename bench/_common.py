"""Helpers shared by the benchmarks that measure cronwheel against its peers.

Percentiles, the machine line, process memory from /proc, a plain Markdown table, bulk
registration straight into a node's SQLite store (what bench_herd.py does), a real daemon
waited on until N executions have finished, and a child process that prints one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
for _p in (str(REPO), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

NOOP = {"python": "cronwheel.worker.noop:noop"}
DONE_STATUSES = "('SUCCEEDED','DEAD','CANCELLED','FAILED')"


class BenchError(RuntimeError):
    """A benchmark that could not measure what it set out to: exit non-zero with this message."""


#: a benchmark's PostgreSQL is durable, as production's
DURABLE = "\n# bench: durable, like production\nfsync = on\nsynchronous_commit = on\nfull_page_writes = on\n"


@contextmanager
def durable_postgres() -> Iterator[Any]:
    """A started throwaway PostgreSQL cluster (``tests.support.postgres.Cluster``) with
    ``DURABLE`` settings, destroyed afterwards; None when its binaries (initdb, pg_ctl) are
    not here."""
    from tests.support.postgres import Cluster, find_bindir

    bindir = find_bindir()
    if bindir is None:
        yield None
        return
    cluster = Cluster.create(bindir)
    try:
        with open(cluster.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(DURABLE)
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


# ---------------------------------------------------------------- numbers


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted ``values`` (nearest rank below), NaN when empty."""
    return float(values[min(len(values) - 1, int(q * len(values)))]) if values else float("nan")


def ratio(ours: float | None, peer: float | None) -> str:
    """``ours / peer`` as ``0.42×`` (``–`` when either side is missing or zero)."""
    if ours is None or peer is None or peer == 0 or ours != ours or peer != peer:
        return "–"
    return f"{ours / peer:.2f}×"


def ms(v: float | None) -> str:
    if v is None or v != v:
        return "–"
    return f"{v / 1000:.2f} s" if v >= 1000 else f"{v:.1f} ms" if v < 100 else f"{v:.0f} ms"


def secs(v: float | None) -> str:
    return "–" if v is None or v != v else f"{v:.2f} s"


def mib(v: float | None) -> str:
    return "–" if v is None or v != v else f"{v:,.0f} MiB"


def rate(v: float | None) -> str:
    return "–" if v is None or v != v else f"{v:,.0f}/s"


# ---------------------------------------------------------------- the machine


def machine_line() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()[0]
    return (f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {socket.gethostname()}: {os.cpu_count()} CPUs ({model}), "
            f"{mem_gib:.0f} GiB, Python {platform.python_version()}, load {load:.2f}")


# ---------------------------------------------------------------- process memory


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid`` in MiB (empty when the process is gone)."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return out


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (a daemon's workers); empty when it is gone."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_cpu(stat: Path) -> float | None:
    """user + system CPU seconds from a /proc ``stat`` file (None if it is gone)."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15)


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of one process (0.0 if it is gone). Wall-clock figures move
    with whatever else runs on the two cores; the CPU a run costs moves much less."""
    return _stat_cpu(Path(f"/proc/{pid}/stat")) or 0.0


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of a process, by thread id (the main thread's id is ``pid``):
    which thread of the daemon a run's CPU went to (its event loop or its store writer)."""
    out: dict[int, float] = {}
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return out
    for tid in tids:
        cpu = _stat_cpu(Path(f"/proc/{pid}/task/{tid}/stat"))
        if cpu is not None:
            out[tid] = cpu
    return out


def tree_cpu(pid: int) -> tuple[float, float]:
    """(the process's CPU seconds, its live children's CPU seconds)."""
    return cpu_seconds(pid), sum(cpu_seconds(c) for c in children(pid))


def tree_memory(pid: int) -> dict[str, float]:
    """The daemon's own VmRSS/VmHWM and the sums over it and its direct children (workers)."""
    own = proc_status(pid)
    kids = [proc_status(c) for c in children(pid)]
    return {
        "rss": own.get("VmRSS", float("nan")),
        "hwm": own.get("VmHWM", float("nan")),
        "tree_rss": own.get("VmRSS", 0) + sum(k.get("VmRSS", 0) for k in kids),
        "tree_hwm": own.get("VmHWM", 0) + sum(k.get("VmHWM", 0) for k in kids),
    }


def self_peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ---------------------------------------------------------------- output


def table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table (what docs/benchmarks.md holds), first column left-aligned."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = [f"### {title}", ""] if title else []
    lines.append("| " + " | ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True))) + " |")
    lines.append("|" + "|".join(("-" * (w + 2)) if i == 0 else ("-" * (w + 1) + ":") for i, w in enumerate(widths)) + "|")
    for r in rows:
        lines.append("| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))) + " |")
    return "\n".join(lines)


def emit(result: dict[str, Any], as_json: bool, text: str) -> None:
    """Print the human table, or one JSON line (what run_quick.py reads)."""
    if as_json:
        print(json.dumps(result, default=float))
    else:
        print(text)


def run_json(argv: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a child that prints one JSON object on its last stdout line; its result."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, check=False)
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}\n{proc.stdout[-1000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise BenchError(f"{' '.join(argv)} printed no JSON result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def guard(main: Callable[[], int]) -> None:
    """Exit with the benchmark's code; a BenchError is one clear line on stderr and exit 1."""
    try:
        code = main()
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        code = 1
    raise SystemExit(code)


# ---------------------------------------------------------------- cronwheel: a real node

def iso_seconds(ts: str) -> float:
    """An API instant (``2026-12-07T16:00:00.123Z``) as seconds since the epoch."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def tenant_token(d: Any, tenant: str, **settings: object) -> str:
    """Create ``tenant`` on the daemon ``d`` (tests/support/daemon.py) with ``settings``; a token of its own."""
    assert d.post("/v1/tenants", {"name": tenant, **settings}).status == 201
    r = d.post("/v1/tokens", {"tenant": tenant, "role": "tenant"})
    assert r.status == 201, r
    return str(r.json()["token"])



def register_oneoffs(db: Path, n: int, due_ms: int, target: dict[str, Any] | None = None,
                     tenants: int = 1, batch: int = 5000) -> float:
    """N one-off jobs all due at ``due_ms``, written straight into a node's SQLite store (the
    bulk path of bench_herd.py: the daemon is not running yet); seconds taken."""
    from cronwheel.core.ids import new_job_id
    from cronwheel.core.model import JobSpec, RetryPolicy
    from cronwheel.core.records import NewJob
    from cronwheel.store.sqlite import SqliteStore

    target = target or NOOP
    store = SqliteStore.open(db)
    t0 = time.perf_counter()
    try:
        jobs = []
        for i in range(n):
            tenant = "default" if tenants <= 1 else f"tenant-{i % tenants:03d}"
            spec = JobSpec(target=target, run_at=due_ms, tenant=tenant, retry=RetryPolicy(max_attempts=1))
            jobs.append(NewJob(new_job_id(), spec, due_ms))
            if len(jobs) >= batch:
                store.create_jobs(jobs, due_ms - 60_000)
                jobs = []
        if jobs:
            store.create_jobs(jobs, due_ms - 60_000)
    finally:
        store.close()
    return time.perf_counter() - t0


def create_jobs_in_batches(store: Any, spec: Any, n: int, next_run_at: int, now_ms: int, batch: int = 5000) -> list[str]:
    """N jobs of one ``JobSpec``, first due at ``next_run_at``, created at ``now_ms`` through an
    open store's ``create_jobs``, ``batch`` a transaction; their ids, in order."""
    from cronwheel.core.ids import new_job_id
    from cronwheel.core.records import NewJob

    ids = [new_job_id() for _ in range(n)]
    for start in range(0, n, batch):
        store.create_jobs([NewJob(job_id, spec, next_run_at) for job_id in ids[start : start + batch]], now_ms)
    return ids


def count_done_sqlite(db: Path) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return int(con.execute(f"SELECT count(*) FROM executions WHERE status IN {DONE_STATUSES}").fetchone()[0])
    finally:
        con.close()


def wait_until(count: Callable[[], int], total: int, timeout: float, every: float = 0.25,
               on_tick: Callable[[], None] | None = None) -> int:
    """Poll ``count()`` until it reaches ``total``; the last count. A benchmark polls a long
    process; tests never do this."""
    deadline = time.time() + timeout
    done = 0
    while time.time() < deadline:
        done = count()
        if on_tick is not None:
            on_tick()
        if done >= total:
            return done
        time.sleep(every)
    return done


def execution_rows_sqlite(db: Path) -> list[tuple[int, int | None, int | None, str]]:
    """(scheduled_at, started_at, finished_at, status) of every execution."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute("SELECT scheduled_at, started_at, finished_at, status FROM executions").fetchall()
    finally:
        con.close()


def lag_summary(rows: Sequence[tuple[int, int | None, int | None, str]], t_due: int | None = None) -> dict[str, float]:
    """Lateness (started − scheduled) percentiles in ms, and seconds from the due instant
    (or the earliest scheduled time) until the last execution finished."""
    lags = sorted(r[1] - r[0] for r in rows if r[1] is not None)
    finished = [r[2] for r in rows if r[2] is not None]
    base = t_due if t_due is not None else min((r[0] for r in rows), default=0)
    return {
        "executions": len(rows),
        "succeeded": sum(1 for r in rows if r[3] == "SUCCEEDED"),
        "lag_p50_ms": pct(lags, 0.5),
        "lag_p99_ms": pct(lags, 0.99),
        "lag_max_ms": float(lags[-1]) if lags else float("nan"),
        "last_started_s": (max(r[1] for r in rows if r[1] is not None) - base) / 1000 if lags else float("nan"),
        "last_finished_s": (max(finished) - base) / 1000 if finished else float("nan"),
    }


class ReadyListener:
    """A ``$NOTIFY_SOCKET`` of our own: the daemon says ``READY=1`` once its store is open,
    the API bound and the first horizon is in the wheel (obs/systemd.py)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.05)

    def wait_ready(self, timeout: float) -> float | None:
        """Seconds (time.time()) at which READY=1 arrived, or None on timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                msg = self.sock.recv(65536)
            except TimeoutError:
                continue
            if b"READY=1" in msg.split(b"\n"):
                return time.time()
        return None

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


def run_due_once(store: Any, at: int, outcome: Any, batch: int = 5000) -> None:
    """Every job due at ``at`` claimed, started and completed with ``outcome``, ``batch`` a
    transaction, through an open store."""
    from cronwheel.core.ids import N_BUCKETS
    from cronwheel.core.records import Completion, StartRequest

    while claimed := store.claim_due(list(range(N_BUCKETS)), at, batch).executions:
        grants = store.start_executions([StartRequest(e.execution_id, "w") for e in claimed], at)
        store.complete_executions([Completion(g.execution_id, "w", g.lease_epoch, outcome) for g in grants], at + 1)


def timed_pass(call: Any) -> tuple[float, int, float, int]:
    """A retention pass as the daemon makes it: ``call(cursor)`` returns (deleted, cursor) and
    is called from the first page to the last (cursor None). (seconds in all, calls, the
    longest call's seconds, deleted)."""
    cursor, deleted, calls, longest = None, 0, 0, 0.0
    began = time.perf_counter()
    while True:
        started = time.perf_counter()
        gone, cursor = call(cursor)
        longest = max(longest, time.perf_counter() - started)
        deleted, calls = deleted + gone, calls + 1
        if cursor is None:
            return time.perf_counter() - began, calls, longest, deleted
