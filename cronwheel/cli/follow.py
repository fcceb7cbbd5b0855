"""``cronwheel logs -f JOB|EXECUTION``: a job's output as it is printed, execution after execution."""

from __future__ import annotations

import sys
import time
from typing import Any

from cronwheel.cli import render, views
from cronwheel.cli.client import ApiError, Client

POLL_SEC = 0.25  #: how often the job is looked at while no execution of it is going on
SETTLED = ("CANCELLED", "SUCCEEDED", "FAILED")  #: job states with no execution to come


def _print(text: str) -> None:
    """A job's output: on a terminal its control characters shown as visible escapes (a job
    must not clear the screen, retitle the window or write the clipboard of whoever follows
    it); into a pipe or a file exact, as ``cronwheel logs`` writes it."""
    sys.stdout.write(render.safe(text) if render.is_tty() else text)
    sys.stdout.flush()


def _stream(client: Client, execution_id: str, target: dict[str, Any] | None = None) -> dict[str, Any]:
    """Print an execution's output as it comes, until its attempt ends; then say how it ended
    (``target``: its job's, when known, for the words of its exit code)."""
    for chunk in client.output(execution_id, follow=True):
        _print(chunk)
    ex = client.get_execution(execution_id)
    _ended(ex, target)
    return ex


def _ended(ex: dict[str, Any], target: dict[str, Any] | None) -> None:
    """How an execution's attempt ended, the same words however it was followed."""
    code = ex.get("exitCode")
    ended = f", {views.result_code(code, target)}" if code is not None else ""
    render.emit_note(f"execution {ex['executionId']}: {ex.get('status')}{ended}")


def follow_output(client: Client, ref: str) -> None:
    """Follow an execution's output (``ref`` an execution id), or a job's (its id or name):
    the execution going on now, then each next one, until the job has no execution to come or
    Ctrl-C."""
    try:
        if ":" in ref:
            try:
                client.get_execution(ref)
            except ApiError as exc:
                if exc.status != 404:
                    raise
            else:
                _stream(client, ref)
                return
        _follow_job(client, client.resolve_job(ref))
    except KeyboardInterrupt:
        sys.exit(130)


def _follow_job(client: Client, job: dict[str, Any]) -> None:
    job_id = job["jobId"]
    label = f"{job_id} ({job['name']})" if job.get("name") else job_id

    def key(execution: dict[str, Any] | None) -> tuple[str, int] | None:
        """Which attempt of which execution: a retry of the same execution is new output."""
        return None if execution is None else (execution["executionId"], execution["attempt"])

    latest = job.get("lastRun")  # the latest execution that started
    seen = None if latest is not None and latest["status"] == "RUNNING" else key(latest)  # the past is not shown
    waiting = False
    while True:
        latest = job.get("lastRun")
        if latest is not None and key(latest) != seen:
            seen = key(latest)
            waiting = False
            render.emit_note(f"output of {latest['executionId']} (attempt {latest['attempt']}):")
            if latest["status"] == "RUNNING":
                _stream(client, latest["executionId"], job.get("target"))
            else:  # it started and ended between two looks: what it printed
                ex = client.get_execution(latest["executionId"])
                _print(ex.get("output") or "")
                _ended(ex, job.get("target"))
        elif job.get("status") in SETTLED:
            render.emit_note(f"job {label} is {job['status']}: no execution to come")
            return
        elif not waiting:
            render.emit_note(f"waiting for the next execution of {label} (Ctrl-C stops)")
            waiting = True
        else:
            time.sleep(POLL_SEC)
        job = client.get_job(job_id)


