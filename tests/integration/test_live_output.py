"""Live output: a command's output reaches `GET /v1/executions/{id}/output` and
`cronwheel logs -f JOB` while it runs, bounded, against a real daemon and real workers."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from tests.support.daemon import Daemon, reap
from tests.support.wait import wait_for


class Reader:
    """Collects a process's stdout on a thread, so a test can wait on what it printed."""

    def __init__(self, stream) -> None:  # type: ignore[no-untyped-def]
        self.text = ""
        self._stream = stream
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            chunk = self._stream.read1(4096) if hasattr(self._stream, "read1") else self._stream.read(1)
            if not chunk:
                return
            self.text += chunk.decode() if isinstance(chunk, bytes) else chunk


def cli_follow(d: Daemon, *args: str) -> tuple[subprocess.Popen[bytes], Reader]:
    p = d.cli_popen("logs", "-f", *args, text=False)
    assert p.stdout is not None
    return p, Reader(p.stdout)


def test_logs_f_follows_the_current_run_as_it_prints_then_the_next(daemon: Daemon, tmp_path: Path) -> None:
    gate = tmp_path / "gate-"  # one gate per execution: gate-<executionId>
    cmd = f'echo "first $CRONWHEEL_EXECUTION_ID"; while [ ! -e "{gate}$CRONWHEEL_EXECUTION_ID" ]; do sleep 0.05; done; echo second'
    job = daemon.add_job({"schedule": "0 0 1 1 *", "command": cmd, "name": "gated"})
    job_id = job["jobId"]

    def running() -> str:
        [ex] = wait_for(lambda: [e for e in daemon.executions(job_id) if e["status"] == "RUNNING"], what="a run to start")
        return str(ex["executionId"])

    p, out = cli_follow(daemon, "gated")
    try:
        assert daemon.post(f"/v1/jobs/{job_id}/trigger").status == 202
        xid = running()
        # the API: the output so far, while it runs
        first = f"first {xid}\n".encode()
        wait_for(lambda: daemon.get(f"/v1/executions/{xid}/output").body == first, what="live output over the API")
        live = daemon.get(f"/v1/executions/{xid}/output")
        assert live.headers["Content-Type"].startswith("text/plain") and live.headers["Cronwheel-Cursor"] == "1:0"
        # a cursor moved on by the bytes read: the rest of that hand-off's output, from there
        resumed = daemon.get(f"/v1/executions/{xid}/output?after=1:6")
        assert resumed.body == first[6:] and resumed.headers["Cronwheel-Cursor"] == "1:6"
        other = daemon.get(f"/v1/executions/{xid}/output?after=7:6")  # another hand-off's: not this one's
        assert other.body == first and other.headers["Cronwheel-Cursor"] == "1:0"
        wait_for(lambda: f"first {xid}" in out.text, what="logs -f to print the running run's output")
        assert daemon.executions(job_id)[0]["status"] == "RUNNING"  # printed before the run ended
        Path(f"{gate}{xid}").touch()
        wait_for(lambda: out.text.endswith("second\n"), what="the rest of the run")
        # the next run is followed too
        assert daemon.post(f"/v1/jobs/{job_id}/trigger").status == 202
        wait_for(lambda: [e for e in daemon.executions(job_id) if e["status"] == "RUNNING"], what="the next run")
        xid2 = running()
        wait_for(lambda: f"first {xid2}" in out.text, what="the next run's output")
        Path(f"{gate}{xid2}").touch()
        wait_for(lambda: out.text.count("second") == 2, what="the end of the next run")
        assert p.poll() is None  # still following: the job has runs to come
        assert daemon.request("DELETE", f"/v1/jobs/{job_id}").status == 200
        wait_for(lambda: p.poll() is not None, what="logs -f to end once the job is cancelled")
        assert p.returncode == 0
    finally:
        reap(p)
    # a finished execution: its stored output, also when followed
    assert daemon.get(f"/v1/executions/{xid}/output?follow=1").body == f"first {xid}\nsecond\n".encode()
    stored = daemon.get(f"/v1/executions/{xid}/output?follow=1&after=1:6")  # ended: its stored output, from there
    assert stored.body == f"first {xid}\nsecond\n".encode()[6:] and stored.headers["Cronwheel-Cursor"] == "1:6"
    bad = daemon.get(f"/v1/executions/{xid}/output?after=1")
    assert bad.status == 400 and "EPOCH:OFFSET" in bad.json()["detail"]
    assert daemon.get("/v1/executions/jnosuch:1/output").status == 404
    assert daemon.get(f"/v1/executions/{xid}/output?follow=maybe").status == 400


def test_a_chatty_command_is_forwarded_bounded_and_its_result_keeps_the_tail(daemon: Daemon, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    # 4 MB at once, then it waits: the live view must stay bounded (rate and size)
    cmd = f"head -c 4000000 /dev/zero | tr '\\0' x; echo; echo end-of-flood; while [ ! -e {gate} ]; do sleep 0.05; done"
    job = daemon.add_job({"runAt": "+0s", "command": cmd})
    job_id = job["jobId"]
    [ex] = wait_for(lambda: [e for e in daemon.executions(job_id) if e["status"] == "RUNNING"], what="the run to start")
    xid = ex["executionId"]
    wait_for(lambda: b"end-of-flood" in daemon.get(f"/v1/executions/{xid}/output").body, what="the end of the flood, live")
    live = daemon.get(f"/v1/executions/{xid}/output").body
    assert len(live) <= 64 * 1024 and b"not shown live" in live, len(live)
    gate.touch()
    wait_for(lambda: daemon.get(f"/v1/jobs/{job_id}").json()["status"] == "SUCCEEDED", what="the run to end")
    stored = daemon.get(f"/v1/executions/{xid}").json()["output"]
    assert stored.endswith("end-of-flood\n") and len(stored) == 64 * 1024  # the result's whole tail
