"""A soak: a real ``cronwheel serve`` (SQLite) under accelerated churn for ``--minutes``, sampled.

Every cycle (``--cycle`` seconds) brings ``--tenants`` new tenants, each with tokens, a
calendar, and jobs of every kind: an every-second command observing the calendar, one-offs,
a failing job that retries into the dead-letter queue and tells a webhook (which fails one
call in three), a queue job claimed by remote workers over long polls, a dead-man job fed by
pings. Meanwhile it reads everything a client reads (listings, history, upcoming, logs and
their follow streams, events, status, herd, metrics), drops connections in the middle of
long polls and follows, replays and purges dead letters, patches and pauses. At the cycle's
end every job, calendar and token of that cycle's tenants goes away; the tenants stay (they
cannot be deleted) with a quota of 0 jobs.

Sampled after each cycle's clean-up, so samples compare equal phases: the daemon's RSS,
open fds, threads, its local workers' RSS, the SQLite file and WAL sizes, row counts, the
/metrics series count, and with ``--trace`` the daemon's asyncio task count and its
tracemalloc growth (``--trace`` runs the daemon under tracemalloc: slower, for finding what
grows, not for the RSS figures; the top growing allocation sites are printed at the end).

    PYTHONPATH=$PWD .venv/bin/python bench/soak.py --minutes 25
    PYTHONPATH=$PWD .venv/bin/python bench/soak.py --minutes 10 --trace
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import REPO, children, emit, machine_line, proc_status, table

from tests.support.daemon import Daemon

#: started in the daemon and its workers by ``--trace`` (PYTHONPATH's sitecustomize runs in
#: every process): SIGUSR2 writes a tracemalloc snapshot and the asyncio tasks by coroutine
TRACER = '''
import os, sys
if os.environ.get("SOAK_TRACE_DIR") and ("serve" in sys.argv or "--worker-id" in sys.argv):
    import gc, json, signal, tracemalloc
    tracemalloc.start(int(os.environ.get("SOAK_TRACE_FRAMES", "8")))
    _who = "serve" if "serve" in sys.argv else "worker"
    def _dump(signum, frame):
        if getattr(sys.modules.get("asyncio"), "all_tasks", None) is None:
            return  # still importing asyncio (a worker just spawned): this sample goes without it
        import asyncio, collections
        try:
            live = asyncio.all_tasks(asyncio.get_running_loop())
        except RuntimeError:
            live = set()
        kinds = collections.Counter(getattr(t.get_coro(), "__qualname__", "?") for t in live)
        out = os.environ["SOAK_TRACE_DIR"]
        gc.collect()
        n = len([f for f in os.listdir(out) if f.startswith(_who) and f.endswith(".bin")])
        name = os.path.join(out, f"{_who}-{os.getpid()}-{n:04d}")
        tracemalloc.take_snapshot().dump(name + ".bin")
        sched = sys.modules.get("cronwheel.core.schedule")
        memo = sched.cache_info() if sched else {}  # the cron memos: bounded, filled slowly
        with open(name + ".json", "w") as f:
            json.dump({"tasks": len(live), "kinds": kinds, "traced": tracemalloc.get_traced_memory()[0], "objects": len(gc.get_objects()),
                       "memo_parse": memo.get("parse_size"), "memo_eval": memo.get("eval_size")}, f)
    signal.signal(signal.SIGUSR2, _dump)
'''

TABLES = ("jobs", "job_definitions", "job_names", "job_watch", "executions", "effects", "notifications", "calendars", "api_tokens", "tenants", "idempotency_keys")


# ---------------------------------------------------------------- the webhook receiver


class Receiver:
    """A webhook receiver on 127.0.0.1 that answers 500 to every third call."""

    def __init__(self) -> None:
        self.calls = 0
        self.port = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0)
            await reader.readexactly(length)
            self.calls += 1
            code = b"500 Oops" if self.calls % 3 == 0 else b"204 No Content"
            writer.write(b"HTTP/1.1 " + code + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()


# ---------------------------------------------------------------- samples


def fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return -1


def row_counts(db: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for t in TABLES:
            if t in names:
                out[t] = conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # our own table names
    finally:
        conn.close()
    return out


class Sampler:
    def __init__(self, d: Daemon, trace_dir: Path | None) -> None:
        self.d = d
        self.trace_dir = trace_dir
        self.rows: list[dict[str, Any]] = []

    async def sample(self, label: str, http: Any) -> dict[str, Any]:
        pid = self.d.pid
        workers = children(pid)
        db = self.d.data_dir / "cronwheel.db"
        wal = db.with_name(db.name + "-wal")
        async with http.get(self.d.url + "/metrics", headers=self.d.auth()) as r:
            text = await r.text()
        s: dict[str, Any] = {
            "at": label,
            "rss": proc_status(pid).get("VmRSS", float("nan")),
            "workers_rss": sum(proc_status(w).get("VmRSS", 0) for w in workers),
            "fds": fds(pid),
            "threads": threads(pid),
            "db_mib": db.stat().st_size / 2**20 if db.exists() else 0,
            "wal_mib": wal.stat().st_size / 2**20 if wal.exists() else 0,
            "series": sum(1 for ln in text.splitlines() if ln and not ln.startswith("#")),
            **await asyncio.to_thread(row_counts, db),
        }
        if self.trace_dir is not None:
            before = len(list(self.trace_dir.glob("serve-*.json")))
            for p in (pid, *workers):
                os.kill(p, signal.SIGUSR2)
            for _ in range(600):  # a snapshot of a large heap takes a while
                if len(list(self.trace_dir.glob("serve-*.json"))) > before:
                    break
                await asyncio.sleep(0.2)
            with contextlib.suppress(Exception):
                await asyncio.sleep(0.5)  # the json is written after the snapshot
                info = json.loads(sorted(self.trace_dir.glob("serve-*.json"))[-1].read_text())
                s.update(tasks=info["tasks"], traced_mib=info["traced"] / 2**20, objects=info["objects"],
                         memo_parse=info["memo_parse"], memo_eval=info["memo_eval"])
        self.rows.append(s)
        print(json.dumps(s, default=float), file=sys.stderr, flush=True)
        return s


# ---------------------------------------------------------------- the churn


class Churn:
    def __init__(self, d: Daemon, http: Any, receiver: Receiver, tenants: int) -> None:
        self.d, self.http, self.receiver, self.tenants = d, http, receiver, tenants
        self.admin = d.auth()
        self.errors: dict[str, int] = {}
        self.calls = 0
        self.cycle = 0

    async def call(self, method: str, path: str, body: Any = None, token: str | None = None,
                   ok: tuple[int, ...] = (200, 201, 202, 204)) -> Any:
        import aiohttp

        headers = {"Authorization": f"Bearer {token}"} if token else self.admin
        self.calls += 1
        try:
            async with self.http.request(method, self.d.url + path, json=body, headers=headers,
                                         timeout=aiohttp.ClientTimeout(total=60)) as r:
                data = await r.read()
                if r.status not in ok:
                    key = f"{method} {path.split('?')[0].split('/')[2] if path.count('/') > 1 else path} {r.status}"
                    self.errors[key] = self.errors.get(key, 0) + 1
                    return None
                return json.loads(data) if data and r.content_type == "application/json" else data
        except (TimeoutError, aiohttp.ClientError) as e:
            key = f"{method} {type(e).__name__}"
            self.errors[key] = self.errors.get(key, 0) + 1
            return None

    async def hang_up(self, path: str, after: float, body: Any = None, token: str | None = None) -> None:
        """A client that sends a request and disconnects before (or while) it is answered."""
        with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._stream(path, body, token), after)

    async def _stream(self, path: str, body: Any, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else self.admin
        method = "POST" if body is not None else "GET"
        async with self.http.request(method, self.d.url + path, json=body, headers=headers) as r:
            async for _ in r.content.iter_any():
                pass

    async def tenant(self, name: str, stop: asyncio.Event) -> None:
        hook = f"http://127.0.0.1:{self.receiver.port}/hook"
        await self.call("POST", "/v1/tenants", {"name": name, "allowShell": True, "httpAllow": ["127.0.0.1"]})
        tok = await self.call("POST", "/v1/tokens", {"tenant": name, "role": "tenant", "name": "soak"})
        wtok = await self.call("POST", "/v1/tokens", {"tenant": name, "role": "worker", "name": "soak worker"})
        if not tok or not wtok:
            return
        t, w = tok["token"], wtok["token"]
        await self.call("PUT", "/v1/calendars/off", {"dates": ["2030-01-01"], "windows": []}, token=t)
        notify = [{"on": "failure", "via": "webhook", "url": hook, "secret": "s" * 32, "maxAttempts": 2},
                  {"on": "dead", "via": "webhook", "url": hook, "secret": "s" * 32}]
        specs = [
            {"name": "tick", "schedule": "* * * * * *", "command": "echo tick", "calendars": ["off"]},
            {"name": "once", "runAt": "+1s", "command": "echo once"},
            {"name": "fails", "schedule": "*/5 * * * * *", "command": "echo no >&2; exit 3", "notify": notify,
             "retryPolicy": {"maxAttempts": 2, "initialBackoffSec": 0.5, "jitter": 0}},
            {"name": "remote", "schedule": "* * * * * *", "queue": f"q-{name}", "leaseSec": 10},
            {"name": "watched", "expectSuccessWithin": "30s", "notify": [{"on": "missed", "via": "webhook", "url": hook, "secret": "s" * 32}]},
            {"name": "hook", "schedule": "*/2 * * * * *", "http": {"url": hook, "method": "POST"}},
        ]
        jobs = {}
        for spec in specs:
            made = await self.call("POST", "/v1/jobs", spec, token=t)
            if made:
                jobs[spec["name"]] = made["jobId"]
        await asyncio.gather(self.reader(t, jobs, stop), self.worker(w, name, stop), self.pinger(w, jobs.get("watched"), stop),
                             self.editor(t, jobs, stop))
        # the cycle is over: everything of this tenant goes
        for job in jobs.values():
            await self.call("DELETE", f"/v1/jobs/{job}", token=t, ok=(200, 202, 204, 404, 409))
        await asyncio.sleep(2)  # a retry under way lands in the dead-letter queue, which keeps the job
        for d in (await self.call("GET", "/v1/dlq?limit=100", token=t) or {}).get("executions", []):
            await self.call("DELETE", f"/v1/dlq/{d['executionId']}", token=t, ok=(200, 204, 404))
        # dead notifications wait for someone too, even once their job is gone
        for n in (await self.call("GET", "/v1/notifications?status=DEAD&limit=100", token=t) or {}).get("notifications", []):
            await self.call("DELETE", f"/v1/notifications/{n['notificationId']}", token=t, ok=(200, 204, 404))
        await self.call("DELETE", "/v1/calendars/off", token=t, ok=(200, 204, 404, 409))
        await self.call("PATCH", f"/v1/tenants/{name}", {"maxJobs": 0})
        for tk in (tok, wtok):
            await self.call("DELETE", f"/v1/tokens/{tk['tokenId']}", ok=(200, 204, 404))

    async def reader(self, t: str, jobs: dict[str, str], stop: asyncio.Event) -> None:
        rng = random.Random()
        while not stop.is_set():
            job = rng.choice(list(jobs.values())) if jobs else "x"
            ex = await self.call("GET", f"/v1/jobs/{job}/executions?limit=20", token=t)
            runs = (ex or {}).get("executions") or []
            await self.call("GET", "/v1/jobs?limit=50", token=t)
            await self.call("GET", f"/v1/jobs/{job}/upcoming?n=20", token=t, ok=(200, 400, 409))
            await self.call("GET", "/v1/notifications?limit=20", token=t)
            await self.call("GET", "/v1/calendars", token=t)
            if runs:
                run = runs[0]["executionId"]
                await self.call("GET", f"/v1/executions/{run}", token=t)
                await self.call("GET", f"/v1/executions/{run}/output", token=t, ok=(200, 204, 404))
                await self.hang_up(f"/v1/executions/{run}/output?follow=1", rng.uniform(0.05, 1.5), token=t)
            await self.hang_up(f"/v1/events?follow=1&job={job}", rng.uniform(0.05, 1.5), token=t)
            await asyncio.sleep(rng.uniform(0.2, 0.6))

    async def worker(self, w: str, tenant: str, stop: asyncio.Event) -> None:
        rng = random.Random()
        wid = f"remote-{tenant}"
        while not stop.is_set():
            if rng.random() < 0.2:  # a poll whose client goes away mid-wait
                await self.hang_up("/v1/workers/claim", rng.uniform(0.05, 1.0),
                                   {"workerId": wid, "queues": [f"q-{tenant}"], "max": 2, "waitSec": 5}, token=w)
                continue
            got = await self.call("POST", "/v1/workers/claim", {"workerId": wid, "queues": [f"q-{tenant}"], "max": 4, "waitSec": 2}, token=w)
            for g in (got or {}).get("executions", []):
                await self.call("POST", f"/v1/executions/{g['executionId']}/heartbeat",
                                {"workerId": wid, "leaseEpoch": g["leaseEpoch"]}, token=w, ok=(200, 409))
                outcome = "failed" if rng.random() < 0.1 else "succeeded"
                await self.call("POST", f"/v1/executions/{g['executionId']}/complete",
                                {"workerId": wid, "leaseEpoch": g["leaseEpoch"], "outcome": outcome, "output": "done\n"},
                                token=w, ok=(200, 409))

    async def pinger(self, w: str, job: str | None, stop: asyncio.Event) -> None:
        n = 0
        while job and not stop.is_set():
            n += 1
            await self.call("POST", f"/v1/jobs/{job}/ping", {"exitCode": 0 if n % 4 else 1}, token=w)
            await asyncio.sleep(2)

    async def editor(self, t: str, jobs: dict[str, str], stop: asyncio.Event) -> None:
        rng = random.Random()
        n = 0
        while not stop.is_set():
            await asyncio.sleep(rng.uniform(2, 5))
            n += 1
            if "tick" in jobs:
                await self.call("PATCH", f"/v1/jobs/{jobs['tick']}", {"payload": {"n": n}}, token=t)
                await self.call("POST", f"/v1/jobs/{jobs['tick']}/{'pause' if n % 2 else 'resume'}", token=t, ok=(200, 409))
            await self.call("PUT", "/v1/calendars/off", {"dates": [f"2030-01-{1 + n % 28:02d}"], "windows": []}, token=t)
            once = await self.call("POST", "/v1/jobs", {"runAt": "+1s", "command": "echo again"}, token=t)
            if once:
                jobs[f"once{n}"] = once["jobId"]
            dead = (await self.call("GET", "/v1/dlq?limit=5", token=t) or {}).get("executions", [])
            if dead:
                await self.call("POST", f"/v1/dlq/{dead[0]['executionId']}/replay", token=t, ok=(200, 201, 202, 404, 409))

    async def admin_reads(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            for path in ("/v1/status", "/metrics", "/v1/herd", "/v1/status/activity", "/v1/events?n=50", "/v1/tenants",
                         "/v1/dlq?limit=50", "/healthz", "/v1/tokens"):
                await self.call("GET", path)
            await asyncio.sleep(1)

    async def run_cycle(self, seconds: float) -> None:
        self.cycle += 1
        stop = asyncio.Event()
        names = [f"soak-{self.cycle}-{i}" for i in range(self.tenants)]
        tasks = [asyncio.create_task(self.tenant(n, stop)) for n in names]
        tasks.append(asyncio.create_task(self.admin_reads(stop)))
        await asyncio.sleep(seconds)
        stop.set()
        await asyncio.gather(*tasks)


# ---------------------------------------------------------------- main


async def soak(d: Daemon, minutes: float, cycle: float, tenants: int, trace_dir: Path | None) -> dict[str, Any]:
    import aiohttp

    receiver = Receiver()
    await receiver.start()
    sampler = Sampler(d, trace_dir)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=1.0)) as http:  # idle ones gone by each sample
        churn = Churn(d, http, receiver, tenants)
        await sampler.sample("start", http)
        end = time.monotonic() + minutes * 60
        t0 = time.monotonic()
        while time.monotonic() < end:
            await churn.run_cycle(cycle)
            await asyncio.sleep(3)  # the last runs and deletions settle
            await sampler.sample(f"{(time.monotonic() - t0) / 60:.1f} min (cycle {churn.cycle})", http)
    await receiver.stop()
    return {"samples": sampler.rows, "calls": churn.calls, "errors": churn.errors, "webhook_calls": receiver.calls,
            "cycles": churn.cycle}


def top_growth(trace_dir: Path, n: int = 25) -> str:
    """The allocation sites that grew most from the second snapshot (warmed up) to the last."""
    import tracemalloc

    snaps = sorted(trace_dir.glob("serve-*.bin"))
    if len(snaps) < 3:
        return "(too few snapshots)"
    first, last = tracemalloc.Snapshot.load(str(snaps[1])), tracemalloc.Snapshot.load(str(snaps[-1]))
    lines = []
    for stat in last.compare_to(first, "traceback")[:n]:
        lines.append(f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} objs")
        lines.extend(f"      {ln}" for ln in stat.traceback.format(limit=6))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=25, help="how long the churn runs")
    ap.add_argument("--cycle", type=float, default=60, help="seconds of one cycle's tenants")
    ap.add_argument("--tenants", type=int, default=8, help="new tenants per cycle")
    ap.add_argument("--retention", default="2m", help="the daemon's --retention: history and settled jobs go after it")
    ap.add_argument("--trace", action="store_true", help="run the daemon under tracemalloc; print what grew")
    ap.add_argument("--keep", type=Path, help="use this data dir (kept) instead of a temporary one")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cronwheel-soak-") as tmp:
        env: dict[str, str] = {}
        trace_dir = None
        if args.trace:
            site = Path(tmp) / "site"
            site.mkdir()
            (site / "sitecustomize.py").write_text(TRACER)
            trace_dir = Path(tmp) / "trace"
            trace_dir.mkdir()
            env = {"PYTHONPATH": f"{site}{os.pathsep}{REPO}", "SOAK_TRACE_DIR": str(trace_dir)}
        data = args.keep or Path(tmp) / "data"
        serve = ("--retention", args.retention, "--retention-interval-ms", "15000")
        d = Daemon(data, workers=2, slots=8, env=env, args=serve).start(timeout=120)
        try:
            result = asyncio.run(soak(d, args.minutes, args.cycle, args.tenants, trace_dir))
            growth = top_growth(trace_dir) if trace_dir is not None else ""
        finally:
            d.stop(timeout=60)
    rows = result["samples"]
    keys = ["rss", "workers_rss", "fds", "threads", "db_mib", "wal_mib", "series", *TABLES, "tasks", "traced_mib", "objects",
            "memo_parse", "memo_eval"]
    keys = [k for k in keys if any(k in r for r in rows)]
    picks = rows if len(rows) <= 8 else [rows[0], rows[1], *rows[2:-1:max(1, (len(rows) - 3) // 4)], rows[-1]]
    fmt = {"rss": "{:.0f}", "workers_rss": "{:.0f}", "db_mib": "{:.1f}", "wal_mib": "{:.1f}", "traced_mib": "{:.1f}"}
    text = "\n".join([
        f"soak: {args.minutes:g} min, {result['cycles']} cycles of {args.tenants} tenants, retention {args.retention}, {result['calls']:,} calls, "
        f"{result['webhook_calls']:,} webhook calls; {machine_line()}",
        "",
        table("samples after each cycle's clean-up (MiB for rss/db/wal)", ["at", *keys],
              [[r["at"], *(fmt.get(k, "{}").format(r[k]) if k in r else "–" for k in keys)] for r in picks]),
        "",
        "unexpected answers: " + (", ".join(f"{k} ×{v}" for k, v in sorted(result["errors"].items())) or "none"),
        *(["", "grew most (tracemalloc, second sample to last):", growth] if growth else []),
    ])
    emit(result, args.json, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
