"""A job's state follows its executions, and "last result" is the latest run that started,
the same in `cronwheel show`, `ls`, `logs` and the API, against a real daemon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.daemon import Daemon
from tests.support.wait import wait_for


def views(d: Daemon, job_id: str, *, settled: bool = True) -> dict[str, Any]:
    """The job's status as the API, `show --json` and `ls --json` tell it (all must agree).
    ``settled=False`` while its run may start between the three reads: the last result may
    then move on from one read to the next, the job's status may not."""
    api = d.get(f"/v1/jobs/{job_id}").json()
    shown = json.loads(d.cli("show", job_id, "--json").stdout)
    listed = next(j for j in json.loads(d.cli("ls", "--json").stdout) if j["jobId"] == job_id)
    assert api["status"] == shown["status"] == listed["status"], (api["status"], shown["status"], listed["status"])
    if settled:
        assert api["lastRun"] == shown["lastRun"] == listed["lastRun"]
    return api


def test_a_one_off_is_active_until_its_run_ends_then_succeeded(daemon: Daemon, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    added = daemon.cli("add", "+1s", "--name", "once", "--json", "--", f"while [ ! -e {gate} ]; do sleep 0.05; done; echo done")
    assert added.returncode == 0, added.stderr
    job_id = json.loads(added.stdout)["jobId"]
    assert views(daemon, job_id, settled=False)["status"] == "ACTIVE"  # due in 1 s: it may start meanwhile
    wait_for(lambda: [e["status"] for e in daemon.executions(job_id)] == ["RUNNING"], what="the one-off to start")
    job = views(daemon, job_id)
    assert (job["status"], job["nextRunAt"], job["lastRun"]["status"]) == ("ACTIVE", None, "RUNNING")  # not COMPLETED
    gate.touch()
    wait_for(lambda: daemon.get(f"/v1/jobs/{job_id}").json()["status"] == "SUCCEEDED", what="the job to settle")
    job = views(daemon, job_id)
    assert job["lastRun"]["status"] == "SUCCEEDED"
    shown = daemon.cli("show", "once")
    assert "SUCCEEDED" in shown.stdout and "Last result" in shown.stdout


def test_a_dead_one_off_is_failed_replay_reopens_it_and_a_purge_keeps_it_failed(daemon: Daemon) -> None:
    job = daemon.add_job({"runAt": "+0s", "command": "echo boom; exit 3", "retryPolicy": {"maxAttempts": 1}})
    job_id = job["jobId"]
    wait_for(lambda: daemon.get(f"/v1/jobs/{job_id}").json()["status"] == "FAILED", what="the one-off to fail")
    got = views(daemon, job_id)
    assert (got["lastRun"]["status"], got["lastRun"]["exitCode"]) == ("DEAD", 3)
    [dead] = daemon.executions(job_id)

    replay = daemon.cli("dlq", "replay", dead["executionId"])
    assert replay.returncode == 0, replay.stderr
    # ACTIVE again while the replay is queued or running, then FAILED again (it fails the same way)
    assert daemon.get(f"/v1/jobs/{job_id}").json()["status"] in ("ACTIVE", "FAILED")
    wait_for(lambda: daemon.executions(job_id)[0]["leaseEpoch"] == 2 and daemon.executions(job_id)[0]["status"] == "DEAD",
             what="the replay to die too")
    assert views(daemon, job_id)["status"] == "FAILED"

    assert daemon.cli("dlq", "purge", dead["executionId"]).returncode == 0
    got = views(daemon, job_id)
    assert (got["status"], got["lastRun"]) == ("FAILED", None)  # never "COMPLETED · never ran"
    logs = daemon.cli("logs", job_id)
    assert logs.returncode == 1 and "no execution on record" in logs.stderr


def test_last_result_is_the_latest_run_that_started_never_a_tick_claimed_ahead(daemon: Daemon, tmp_path: Path) -> None:
    job = daemon.add_job({"schedule": "* * * * * *", "command": "echo tick-$CRONWHEEL_SCHEDULED_AT", "name": "ticker"})
    job_id = job["jobId"]
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in daemon.executions(job_id)), what="a run to finish")
    # with claim-ahead, the newest executions are PENDING ticks that have not started
    wait_for(lambda: daemon.executions(job_id)[0]["status"] == "PENDING", what="a tick claimed ahead")
    got = views(daemon, job_id, settled=False)  # every second a newer run starts
    assert got["lastRun"]["status"] in ("RUNNING", "SUCCEEDED") and got["lastRun"]["startedAt"] is not None
    logs = daemon.cli("logs", "ticker")
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.startswith("tick-") and "PENDING" not in logs.stderr, logs
    listed = daemon.cli("ls")
    row = next(line for line in listed.stdout.splitlines() if line.startswith(job_id))
    assert "LAST RESULT" in listed.stdout.splitlines()[0] and ("SUCCEEDED" in row or "RUNNING" in row), listed.stdout


def test_cancelling_a_job_with_ticks_claimed_ahead_logs_no_warning(daemon: Daemon) -> None:
    """Its ticks claimed ahead are cancelled in the store; the node drops them from its queue
    when their time comes. That is the cancel working, not something for `journalctl -p
    warning`: the tour's `cronwheel cancel ticker` printed two warnings in the daemon's log."""
    job = daemon.add_job({"schedule": "* * * * * *", "command": "true", "name": "ticker"})
    wait_for(lambda: any(e["status"] == "PENDING" for e in daemon.executions(job["jobId"])), timeout=30,
             what="a tick claimed ahead")
    assert daemon.cli("cancel", "ticker").returncode == 0
    dropped = daemon.wait_event("dispatch.dropped", timeout=30)
    assert dropped["level"] == "info" and dropped["count"] >= 1
    assert [e["event"] for e in daemon.events() if e["level"] in ("warning", "error", "critical")] == []
