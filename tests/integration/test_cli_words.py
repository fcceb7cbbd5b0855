"""What the CLI prints reads right, on a real daemon: one description per command name,
human words for booleans, an execution id told apart from a job, counted nouns in the right
number, a unit required on relative times, instants in UTC whatever the machine's zone."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.daemon import REPO, Daemon
from tests.support.threadserver import recording_endpoint
from tests.support.wait import wait_for


def test_help_describes_import_and_import_crontab_each_once() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "cronwheel", "--help"], capture_output=True, text=True, env=env, timeout=30)
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^  (\S+)\s+(.+)$", res.stdout, re.M)}
    assert lines["import-crontab"] != lines["import"]
    assert "crontab" in lines["import-crontab"] and "import-crontab" in lines["import"]
    assert len(set(lines.values())) == len(lines), "two commands share one description"


@pytest.mark.runs_no_jobs
def test_status_says_stale_in_words(daemon: Daemon) -> None:
    res = daemon.cli("status")
    assert res.returncode == 0, res.stderr
    assert re.search(r"^stale:\s+no$", res.stdout, re.M), res.stdout
    assert "False" not in res.stdout and "True" not in res.stdout


def test_status_says_when_the_node_is_stopping(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    d = make_daemon(args=("--grace-sec", "60"))
    started, release = tmp_path / "started", tmp_path / "release"
    d.add_job({"runAt": "+0s", "command": f"touch {started}; while [ ! -e {release} ]; do sleep 0.05; done"})
    wait_for(started.exists, what="the run to start")
    assert d.status()["stopping"] is False
    assert "STOPPING" not in d.cli("status").stdout
    d.proc.send_signal(signal.SIGTERM)  # the run holds the stop in its grace period
    try:
        status = wait_for(lambda: (s := d.status()).get("stopping") and s, what="status to say stopping")
        assert status["workers"]["running"] == 1, status
        res = d.cli("status")
        assert res.returncode == 0 and res.stdout.startswith("STOPPING: the node is shutting down"), res.stdout
        assert re.search(r"^stopping:\s+yes$", res.stdout, re.M), res.stdout
    finally:
        release.touch()
    assert d.proc.wait(30) == 0


@pytest.mark.runs_no_jobs
def test_logs_of_an_unknown_execution_id_says_execution(daemon: Daemon) -> None:
    res = daemon.cli("logs", "nosuch:123")
    assert res.returncode == 1
    assert "no execution nosuch:123" in res.stderr and "Traceback" not in res.stderr


def test_an_http_runs_code_reads_as_its_status_by_execution_id_too(daemon: Daemon) -> None:
    """`cronwheel logs JOB` said "SUCCEEDED, HTTP 200" of an HTTP target's run, and `cronwheel
    logs EXECUTION` (and `logs -f EXECUTION`) "SUCCEEDED, exit 200" of the same run."""
    with recording_endpoint() as (base, got):
        job = daemon.add_job({"schedule": "@yearly", "name": "hook", "http": {"url": f"{base}/hook", "method": "POST"}})
        xid = daemon.post(f"/v1/jobs/{job['jobId']}/trigger").json()["executionId"]
        wait_for(lambda: daemon.get(f"/v1/executions/{xid}").json()["status"] == "SUCCEEDED", what="the HTTP run")
    assert got
    for args in (("logs", "hook"), ("logs", xid), ("logs", "-f", xid)):
        res = daemon.cli(*args)
        assert res.returncode == 0 and f"execution {xid}: SUCCEEDED, HTTP 200" in res.stderr, (args, res.stderr)
        assert "exit 200" not in res.stderr


def test_logs_of_a_job_whose_runs_wait_says_none_has_started_not_none_exists(daemon: Daemon) -> None:
    """It said "has no execution on record (none has started yet)" of a job with runs waiting
    for a worker, which have a record: none that started."""
    job = daemon.add_job({"name": "waits", "schedule": "@yearly", "queue": "nobody-polls"})
    assert daemon.post(f"/v1/jobs/{job['jobId']}/trigger").status in (200, 201, 202)
    res = daemon.cli("logs", "waits")
    assert res.returncode == 1, res.stderr
    assert f"{job['jobId']} (waits) has no execution on record that started: no output to show" in res.stderr, res.stderr
    assert "(`cronwheel history waits` lists any that wait)" in res.stderr and "none has started yet" not in res.stderr


def test_counts_have_the_right_number(daemon: Daemon) -> None:
    daemon.add_job({"schedule": "* * * * *", "command": "true"})
    res = daemon.cli("lint")
    assert res.returncode == 0, res.stderr
    assert "of 1 active job in" in res.stdout, res.stdout
    assert "1 active jobs" not in res.stdout


def test_a_relative_time_needs_a_unit(daemon: Daemon) -> None:
    res = daemon.cli("add", "+30", "--", "true")
    assert res.returncode == 2
    assert "needs a unit: +30s, +30m" in res.stderr
    assert daemon.get("/v1/jobs").json()["jobs"] == []
    r = daemon.post("/v1/jobs", {"runAt": "+30", "command": "true"})
    assert r.status == 400 and "needs a unit" in r.json()["detail"]


@pytest.mark.runs_no_jobs
def test_add_and_ls_print_utc_whatever_the_local_zone(daemon: Daemon) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_URL": daemon.url,
           "CRONWHEEL_DATA_DIR": str(daemon.data_dir), "TZ": "Europe/London"}
    add = subprocess.run([sys.executable, "-m", "cronwheel", "add", "2030-01-15T12:00:00Z", "--", "true"],
                         capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert add.returncode == 0, add.stderr
    assert "Next run: 2030-01-15 12:00:00 UTC" in add.stdout and "GMT" not in add.stdout, add.stdout
    ls = subprocess.run([sys.executable, "-m", "cronwheel", "ls"], capture_output=True, text=True, env=env, timeout=60)
    assert "2030-01-15 12:00:00 UTC" in ls.stdout and "GMT" not in ls.stdout, ls.stdout


@pytest.mark.runs_no_jobs
def test_a_job_in_its_own_zone_shows_its_next_run_as_next_does(daemon: Daemon) -> None:
    """add, update and show print a next run as `cronwheel next` prints each: the wall clock
    in the job's zone, named, then the RFC 3339 instant (ls keeps its UTC column)."""
    # noon in Paris on 15 January (CET, UTC+1), whatever year comes next
    add = daemon.cli("add", "--name", "paris-noon", "--tz", "Europe/Paris", "0 12 15 1 *", "--", "true")
    assert add.returncode == 0, add.stderr
    line = re.search(r"Next run: (\d{4}-01-15 12:00:00 CET  \d{4}-01-15T11:00:00\.000Z)\n", add.stdout)
    assert line is not None, add.stdout
    assert daemon.cli("next", "paris-noon", "-n", "1").stdout.strip() == line.group(1)
    shown = daemon.cli("show", "paris-noon").stdout
    assert re.search(rf"Next run: +{re.escape(line.group(1))}\n", shown), shown
    updated = daemon.cli("update", "paris-noon", "--schedule", "0 13 15 1 *").stdout
    assert re.search(r"Next run: \d{4}-01-15 13:00:00 CET  \d{4}-01-15T12:00:00\.000Z\n", updated), updated
    assert re.search(r"\d{4}-01-15 12:00:00 UTC", daemon.cli("ls").stdout)
    # without a zone: UTC, then the instant, as `next` prints it too
    utc = daemon.cli("add", "2030-01-15T12:00:00Z", "--", "true").stdout
    assert "Next run: 2030-01-15 12:00:00 UTC  2030-01-15T12:00:00.000Z\n" in utc, utc


def test_the_man_page_lists_lint_among_the_commands_without_a_daemon() -> None:
    text = (REPO / "man" / "cronwheel.1").read_text()
    offline = text.split("Every other command, except", 1)[1].split("talks to a running daemon", 1)[0]
    assert "lint" in offline and "next" in offline


def test_logs_f_of_an_ended_run_says_its_error_as_logs_does(daemon: Daemon) -> None:
    """`cronwheel logs -f EXECUTION` of a run that had failed said "DEAD, exit -15" and left out
    the error that `cronwheel logs EXECUTION` gave; both end with the same line now."""
    job = daemon.add_job({"runAt": "+0s", "command": "sleep 30", "timeoutSec": 1, "retryPolicy": {"maxAttempts": 1}})
    ex = wait_for(lambda: next((e for e in daemon.executions(job["jobId"]) if e["status"] == "DEAD"), None),
                  what="the run to time out")  # fmt: skip
    assert ex["error"], ex
    ends = [daemon.cli(*args).stderr.strip().splitlines()[-1] for args in (("logs", ex["executionId"]), ("logs", "-f", ex["executionId"]))]
    assert ends[0].startswith(f"execution {ex['executionId']}: DEAD") and ex["error"].split(":")[0] in ends[0], ends
    assert ends[1] == ends[0].removesuffix(" (no output)"), ends


@pytest.mark.runs_no_jobs
def test_calendar_set_refuses_a_bad_date_or_window_as_a_usage_error_naming_it(daemon: Daemon) -> None:
    """Exit 2 and click's words, as every other option's bad value: the option, the value and
    the form it needs; nothing is sent (the daemon's refusal was exit 1, naming dates[0])."""
    for args, says in [
        (("--date", "2026-13-25"), "Invalid value for '--date': '2026-13-25': month must be in 1..12; write YYYY-MM-DD"),
        (("--date", "2026-12-25", "--date", "25/12/2026"), "Invalid value for '--date': '25/12/2026' is not a date; write YYYY-MM-DD"),
        (("--window", "2026-12-24T22:00/nope"), "Invalid value for '--window': '2026-12-24T22:00/nope': 'nope' is not a date-time; write "),
        (("--window", "2026-12-24"), "Invalid value for '--window': '2026-12-24' is not START/END"),
    ]:
        out = daemon.cli("calendar", "set", "holidays", *args)
        assert out.returncode == 2 and says in out.stderr and "dates[" not in out.stderr, (args, out)
    assert daemon.get("/v1/calendars").json()["calendars"] == []
    assert daemon.cli("calendar", "set", "holidays", "--date", "2026-12-25").returncode == 0
