"""A python target whose code raises, run by a real daemon's workers: the run's error is the
exception (``ValueError: bad input``), as ``dlq ls``, ``history``, ``logs`` and a notification
show it, and the output is the traceback through the user's own frames.

The error used to be a traceback that began with the worker's frames (``Traceback (most recent
call last): File ".../cronwheel/worker/callthreads.py" …``), which ``dlq ls`` cut before the
exception. A remote worker reports the same (tests/integration/test_remote_workers.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.support.daemon import REPO, Daemon
from tests.support.receiver import WebhookReceiver
from tests.support.wait import wait_for

SECRET = "a-secret-for-the-raising-callables"
CALLABLES = "tests.support.callables"
CALLABLES_FILE = REPO / "tests" / "support" / "callables.py"

#: the output of a run of bad_input / bad_input_async, frame by frame: the user's frames only
USER_FRAMES = {
    "bad_input": ["bad_input", "_check"],
    "bad_input_async": ["bad_input_async", "_check"],
}


def frames_of(output: str) -> list[str]:
    """The functions a traceback's frames are in, outermost first, each in the callables'
    file (no frame of the worker's, asyncio's or the thread pool's)."""
    frames = [line for line in output.splitlines() if line.startswith('  File "')]
    assert all(line.startswith(f'  File "{CALLABLES_FILE}", line ') for line in frames), output
    return [line.split(", in ")[-1] for line in frames]


def test_a_python_target_that_raises_fails_with_its_exception(make_daemon: Callable[..., Daemon]) -> None:
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        hook = {"on": "dead", "via": "webhook", "url": rx.url, "secret": SECRET}
        jobs = {
            name: d.add_job({"runAt": "+0s", "python": f"{CALLABLES}:{name}", "payload": "bad",
                             "retryPolicy": {"maxAttempts": 1}, "notify": [hook]})["jobId"]
            for name in USER_FRAMES
        }  # fmt: skip
        # the job's own timeout still reads as one
        slow = d.add_job({"runAt": "+0s", "python": f"{CALLABLES}:too_slow", "timeoutSec": 1,
                          "retryPolicy": {"maxAttempts": 1}})["jobId"]  # fmt: skip

        def dead(job: str) -> dict | None:
            runs = d.executions(job)
            return runs[0] if len(runs) == 1 and runs[0]["status"] == "DEAD" else None

        runs = {name: wait_for(lambda job=job: dead(job), 30, what=f"{name} dead-lettered") for name, job in jobs.items()}
        for name, run in runs.items():
            assert run["error"] == "ValueError: bad input", run
            full = d.get(f"/v1/executions/{run['executionId']}").json()
            output = full["output"]
            assert output.startswith("Traceback (most recent call last):\n"), output
            assert output.endswith("\nValueError: bad input"), output
            assert frames_of(output) == USER_FRAMES[name], output
            assert 'raise ValueError("bad input")' in output

        timed_out = wait_for(lambda: dead(slow), 30, what="the slow run timed out")
        assert timed_out["error"] == "timed out after 1s", timed_out
        assert d.get(f"/v1/executions/{timed_out['executionId']}").json().get("output") is None

        listed = d.cli("dlq", "ls")
        assert listed.returncode == 0, listed.stderr
        for run in runs.values():
            (row,) = [line for line in listed.stdout.splitlines() if run["executionId"] in line]
            assert row.endswith("ValueError: bad input"), row

        history = d.cli("history", jobs["bad_input"], "--json")
        assert history.returncode == 0, history.stderr
        assert json.loads(history.stdout)[0]["error"] == "ValueError: bad input"

        shown = d.cli("logs", runs["bad_input"]["executionId"])
        assert shown.returncode == 0, shown.stderr
        assert "DEAD: ValueError: bad input" in shown.stderr
        assert frames_of(shown.stdout) == USER_FRAMES["bad_input"], shown.stdout

        told = wait_for(lambda: len(rx.unique()) == len(jobs) and rx.unique(), 30, what="both runs told")
        for deliveries in told.values():
            body = deliveries[0].body
            assert body["error"] == "ValueError: bad input", body
            assert body["output"].endswith("\nValueError: bad input") and frames_of(body["output"]), body
