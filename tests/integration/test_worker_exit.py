"""A local worker that ran sync Python callables exits cleanly when the daemon stops: its job
threads, told to stop, are waited for, not reported as stuck (the report, and the hard exit
that goes with it, are for a callable that never returns)."""

from __future__ import annotations

from collections.abc import Callable

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

NOOP = "cronwheel.worker.noop:noop"


def test_workers_that_ran_sync_callables_stop_without_stuck_threads(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(workers=2, slots=256)
    r = d.post("/v1/jobs/batch", {"jobs": [{"runAt": "+0s", "python": NOOP} for _ in range(1000)]})
    assert r.status == 200, r
    ids = [x["jobId"] for x in r.json()["results"]]
    wait_for(lambda: all(d.get(f"/v1/jobs/{j}").json()["status"] == "SUCCEEDED" for j in ids), 60,
             what="the 1000 one-off jobs to succeed")  # fmt: skip
    assert d.stop() == 0
    assert len(d.events("worker.stopping")) == 2, d.log_tail()  # both workers logged their exit
    assert d.events("worker.exit_with_stuck_threads") == [], d.log_tail()
