"""Dispatch lag on an idle node: ``startedAt - scheduledAt`` of every-second jobs.

Starts a real ``cronwheel serve`` on a temporary data dir, registers JOBS every-second cron
jobs running ``true`` (or a no-op Python callable with ``--python``), lets them run for
SECONDS, then reads every execution back through the API and prints p50/p99/max.

    .venv/bin/python bench/bench_dispatch_lag.py --seconds 60 --jobs 10
"""

from __future__ import annotations

import argparse
import statistics
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
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--python", action="store_true", help="no-op Python callable instead of `true`")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

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
    if not lags:
        print("no executions ran")
        return 1
    p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]  # noqa: E731
    print(f"dispatch lag over {len(lags)} executions ({args.jobs} every-second jobs, {args.seconds:.0f} s, "
          f"target={'python no-op' if args.python else 'true'}):")
    print(f"  p50 {p(0.5):.1f} ms   p99 {p(0.99):.1f} ms   max {lags[-1]:.1f} ms   mean {statistics.mean(lags):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
