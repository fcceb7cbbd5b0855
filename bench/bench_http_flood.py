"""A neighbour's flood of every-second HTTP jobs: another tenant's every-second job, late?

Starts a real ``cronwheel serve`` on a temporary data dir and a local HTTP server (answering
200 at once, in a thread of this process). Tenant ``acme`` has one every-second job; for
``--quiet`` seconds it runs alone, then tenant ``evil`` registers ``--jobs`` every-second jobs
(batches of 200 through ``POST /v1/jobs/batch``), all with HTTP targets on the local server (which answers
``--delay`` seconds late),
and for ``--seconds`` more the flood runs. Both tenants' targets are HTTP unless
``--acme-command`` (then acme's job runs ``true``). Reported for each phase: acme's start lag
(``startedAt - scheduledAt``) p50 / p99 / max, how many of acme's ticks started, the HTTP
calls the server answered a second, and the ready queue's depth at the end.

    .venv/bin/python bench/bench_http_flood.py --jobs 1000 --quiet 20 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit, iso_seconds, machine_line, pct, table, tenant_token, tree_cpu
from aiohttp import web

from tests.support.daemon import Daemon
from tests.support.threadserver import app_in_a_thread


def lags_between(d: Daemon, job_id: str, token: str, since: float, until: float) -> tuple[list[float], int]:
    """acme's start lags (ms, sorted) of the ticks scheduled in [since, until), and how many
    such ticks exist (started or not)."""
    runs = d.request("GET", f"/v1/jobs/{job_id}/executions?limit=1000", token=token).json()["executions"]
    mine = [e for e in runs if since <= iso_seconds(e["scheduledAt"]) < until]
    return sorted((iso_seconds(e["startedAt"]) - iso_seconds(e["scheduledAt"])) * 1000 for e in mine if e.get("startedAt")), len(mine)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000, help="evil's every-second HTTP jobs")
    ap.add_argument("--quiet", type=float, default=20, help="seconds acme runs alone first")
    ap.add_argument("--seconds", type=float, default=60, help="seconds of the flood watched")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds the server takes to answer evil's calls")
    ap.add_argument("--acme-command", action="store_true", help="acme's job runs `true`, not an HTTP call")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("serve_args", nargs="*", help="more `cronwheel serve` flags (after --)")
    args = ap.parse_args()
    calls = [0]

    async def answer(request: web.Request) -> web.Response:
        calls[0] += 1
        if args.delay and request.path == "/evil":
            await asyncio.sleep(args.delay)
        return web.Response(text="ok")

    def app() -> web.Application:
        a = web.Application()
        a.router.add_route("*", "/{tail:.*}", answer)
        return a

    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-http-flood-") as tmp, app_in_a_thread(app) as base:
        d = Daemon(Path(tmp) / "node", workers=args.workers, slots=args.slots, args=tuple(args.serve_args)).start(timeout=60)
        try:
            allow = {"httpAllow": ["127.0.0.1"]}
            acme = tenant_token(d, "acme", allowShell=True, **allow)
            evil = tenant_token(d, "evil", **allow)
            every = {"schedule": "* * * * * *", "retryPolicy": {"maxAttempts": 1}}
            target = {"command": "true"} if args.acme_command else {"http": {"url": f"{base}/acme", "method": "GET"}}
            r = d.request("POST", "/v1/jobs", {**every, **target}, token=acme)
            assert r.status == 201, r
            acme_job = r.json()["jobId"]

            def phase(name: str, began: float, seconds: float) -> None:
                calls0, cpu0 = calls[0], sum(tree_cpu(d.pid))
                time.sleep(seconds)  # a benchmark watches a period of time; tests never do this
                elapsed = time.time() - began
                lags, ticks = lags_between(d, acme_job, acme, began + 2, time.time() - 6)
                queue = d.get("/v1/status").json().get("queue", {})
                result[name] = {
                    "lag_p50_ms": pct(lags, 0.5), "lag_p99_ms": pct(lags, 0.99), "lag_max_ms": lags[-1] if lags else None,
                    "ticks": ticks, "started": len(lags), "calls_per_s": (calls[0] - calls0) / seconds,
                    "cpu_cores": (sum(tree_cpu(d.pid)) - cpu0) / seconds, "queue": queue, "elapsed_s": elapsed,
                }  # fmt: skip

            phase("alone", time.time(), args.quiet)
            began = time.time()
            flood = {**every, "http": {"url": f"{base}/evil", "method": "GET"}}
            for k in range(0, args.jobs, 200):
                r = d.request("POST", "/v1/jobs/batch", {"jobs": [flood] * min(200, args.jobs - k)}, token=evil)
                assert r.status in (200, 201, 207), r
            phase("flood", began, args.seconds)
        finally:
            d.stop(timeout=120)
    rows = [(name, f"{r['lag_p50_ms']:.0f} / {r['lag_p99_ms']:.0f} / {r['lag_max_ms']:.0f} ms",
             f"{r['started']} of {r['ticks']}", f"{r['calls_per_s']:.0f}/s", f"{r['cpu_cores']:.2f}",
             str(r["queue"].get("default", r["queue"])))
            for name, r in result.items()]  # fmt: skip
    emit(result, args.json, "\n".join([machine_line(), table(
        f"acme's every-second job, evil's {args.jobs:,} every-second HTTP jobs",
        ("phase", "acme's lag p50 / p99 / max", "acme's ticks started", "HTTP calls", "CPU (cores)", "queue.default at the end"),
        rows)]))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
