"""Dispatch lag on an idle node: ``startedAt - scheduledAt`` of every-second jobs.

Starts a real ``cronwheel serve`` on a temporary data dir, registers JOBS every-second cron
jobs running ``true`` (or a no-op Python callable with ``--python``), lets them run for
SECONDS, then reads every execution back through the API and prints p50/p99/max.

With ``--peer``, APScheduler 3.x runs the same JOBS every-second jobs (a no-op function,
CronTrigger(second="*"), in its own process: bench/peer_apscheduler.py) during the same
period, and the table gets the ratio. Its lateness is the function's start minus the whole
second it was due; cronwheel's is the execution record's startedAt − scheduledAt.

    .venv/bin/python bench/bench_dispatch_lag.py --seconds 60 --jobs 10
    .venv/bin/python bench/bench_dispatch_lag.py --duration 600 --jobs 10 --python --peer
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.daemon import Daemon


def parse(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", "--duration", dest="seconds", type=float, default=30, help="how long (s)")
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--python", action="store_true", help="no-op Python callable instead of `true`")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--peer", action="store_true", help="APScheduler 3.x alongside, for the ratio")
    ap.add_argument("--json", action="store_true", help="one JSON line instead of the text")
    args = ap.parse_args()

    peer = None
    if args.peer:
        peer = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("peer_apscheduler.py")), "lag",
             "--seconds", str(args.seconds + 5), "--jobs", str(args.jobs)],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})

    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(Path(tmp) / "node", workers=args.workers, slots=16).start()
        try:
            target = {"python": "cronwheel.worker.noop:noop"} if args.python else {"command": "true"}
            ids = [d.add_job({"schedule": "* * * * * *", **target, "name": f"lag-{i}"})["jobId"] for i in range(args.jobs)]
            time.sleep(args.seconds)  # a benchmark measures a period of time; tests never do this
            lags = []
            for job_id in ids:
                for ex in d.executions(job_id, limit=1000):
                    if ex["startedAt"] and ex["attempt"] >= 1:
                        lags.append((parse(ex["startedAt"]) - parse(ex["scheduledAt"])) * 1000)
        finally:
            d.stop()
    lags.sort()
    peer_result = None
    if peer is not None:
        out, _ = peer.communicate(timeout=120)
        if peer.returncode != 0:
            print(f"APScheduler peer failed with exit code {peer.returncode}", file=sys.stderr)
            return 1
        peer_result = json.loads(out.strip().splitlines()[-1])
    if not lags:
        print("no executions ran", file=sys.stderr)
        return 1
    p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]  # noqa: E731
    if args.json:
        print(json.dumps({"row": "lag", "seconds": args.seconds, "jobs": args.jobs,
                          "target": "python" if args.python else "true",
                          "cronwheel": {"executions": len(lags), "lag_p50_ms": p(0.5), "lag_p99_ms": p(0.99),
                                        "lag_max_ms": lags[-1]}, "apscheduler": peer_result}))
        return 0
    print(f"dispatch lag over {len(lags)} executions ({args.jobs} every-second jobs, {args.seconds:.0f} s, "
          f"target={'python no-op' if args.python else 'true'}):")
    print(f"  p50 {p(0.5):.1f} ms   p99 {p(0.99):.1f} ms   max {lags[-1]:.1f} ms   mean {statistics.mean(lags):.1f} ms")
    if peer_result is not None:
        q = peer_result
        print(f"APScheduler 3.x, {q['executions']} executions in the same period:")
        print(f"  p50 {q['lag_p50_ms']:.1f} ms   p99 {q['lag_p99_ms']:.1f} ms   max {q['lag_max_ms']:.1f} ms")
        print("  cronwheel / APScheduler: " + "   ".join(
            f"{k} {v / q[f'lag_{k}_ms']:.2f}x" if q[f"lag_{k}_ms"] else f"{k} –"
            for k, v in (("p50", p(0.5)), ("p99", p(0.99)), ("max", lags[-1])))
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
