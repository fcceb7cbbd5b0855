"""A neighbour's tick flood: one tenant's every-second jobs that nothing starts, another's lag.

Starts a real ``cronwheel serve`` on a temporary data dir. Tenant ``flood`` registers JOBS
every-second jobs with a queue target no remote worker polls, so that every tick's run waits
and each job reaches its backlog bound (100 waiting runs) after 100 s; tenant ``quiet`` runs
five every-second ``true`` jobs on the local workers. Every 10 s it prints the quiet tenant's
dispatch lag (``startedAt - scheduledAt`` of its last runs), the daemon's CPU (daemon and
workers, from /proc) and the store's size on disk.

    .venv/bin/python bench/bench_tick_flood.py --jobs 3800 --seconds 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import iso_seconds, tenant_token, tree_cpu

from tests.support.daemon import Daemon


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=3800, help="the flooding tenant's every-second jobs")
    ap.add_argument("--seconds", type=float, default=200, help="how long to watch (s)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        node = Path(tmp) / "node"
        d = Daemon(node, workers=2, slots=16).start()
        try:
            flood, quiet = tenant_token(d, "flood"), tenant_token(d, "quiet", allowShell=True)
            for k in range(0, args.jobs, 1000):
                jobs = [{"schedule": "* * * * * *", "target": {"queue": "nobody"}} for _ in range(min(1000, args.jobs - k))]
                r = d.request("POST", "/v1/jobs/batch", {"jobs": jobs}, token=flood)
                assert r.status in (200, 201, 207), r
            ids = [d.request("POST", "/v1/jobs", {"schedule": "* * * * * *", "command": "true"}, token=quiet).json()["jobId"]
                   for _ in range(5)]  # fmt: skip
            began, cpu_before = time.time(), sum(tree_cpu(d.pid))
            print("   t   quiet tenant's lag p50 / max   CPU (cores, since start)   store")
            while time.time() - began < args.seconds:
                time.sleep(10)  # a benchmark watches a period of time; tests never do this
                lags = sorted(iso_seconds(e["startedAt"]) - iso_seconds(e["scheduledAt"])
                              for job_id in ids
                              for e in d.request("GET", f"/v1/jobs/{job_id}/executions?limit=10", token=quiet).json()["executions"]
                              if e.get("startedAt"))  # fmt: skip
                elapsed = time.time() - began
                size = sum(f.stat().st_size for f in node.glob("cronwheel.db*"))
                print(f"{elapsed:4.0f} s   {lags[len(lags) // 2] * 1000:8.0f} / {lags[-1] * 1000:6.0f} ms"
                      f"   {(sum(tree_cpu(d.pid)) - cpu_before) / elapsed:12.2f}   {size / 1e6:10.0f} MB", flush=True)  # fmt: skip
        finally:
            d.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
