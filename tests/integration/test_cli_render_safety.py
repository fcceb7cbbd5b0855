"""Tenant-controlled text never drives the operator's terminal: on a TTY the CLI writes
control characters of outputs, errors and commands as visible escapes; into a pipe an
execution's output stays as the job wrote it; ``--json`` stays exact. And no stored value
can crash a listing (a next run past the year 9999, left by an older version)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys

import apsw
import pytest

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

# clear the screen, set the window title, write the clipboard, ring the bell
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;aGk=\x07\x9b31m"
PRINTF = r"printf '\033[2J\033]0;pwned\007\033]52;c;aGk=\007\302\23331m'"


def cli_on_a_tty(d: Daemon, *args: str) -> str:
    """Run the CLI with its stdout (and stderr) on a pseudo-terminal; what it wrote there."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_URL": d.url, "CRONWHEEL_DATA_DIR": str(d.data_dir),
           "COLUMNS": "200", "TERM": "xterm"}
    env.pop("CRONWHEEL_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "cronwheel", *args], stdout=follower, stderr=follower, env=env)
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=30) == 0, out
    return out.decode("utf-8", "replace")


def test_terminal_escapes_in_output_and_commands_are_shown_not_obeyed(daemon: Daemon) -> None:
    job = daemon.add_job({"runAt": "+0s", "command": PRINTF + "; echo line2 >&2; exit 3", "name": "hostile",
                          "retryPolicy": {"maxAttempts": 1}})["jobId"]
    wait_for(lambda: [e["status"] for e in daemon.executions(job)] == ["DEAD"], 20, what="the run to end")
    (ex,) = daemon.executions(job)
    xid = ex["executionId"]

    shown = cli_on_a_tty(daemon, "logs", xid)
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown, repr(shown)
    assert "\\x1b[2J" in shown and "\\x1b]52;c;aGk=\\x07" in shown and "\\x9b31m" in shown, repr(shown)
    for args in (("ls",), ("show", job), ("history", job), ("dlq", "ls")):
        listing = cli_on_a_tty(daemon, *args)
        assert "\x1b]" not in listing and "\x07" not in listing and "\x1b[2J" not in listing, (args, repr(listing))

    # into a pipe: the output as the job wrote it; --json: exact
    piped = daemon.cli("logs", xid)
    assert piped.returncode == 0 and piped.stdout.startswith(HOSTILE), repr(piped.stdout)
    as_json = daemon.cli("logs", "--json", xid)
    assert json.loads(as_json.stdout)["output"].startswith(HOSTILE)


def test_bidirectional_overrides_in_a_tenant_s_text_are_shown_not_obeyed(daemon: Daemon) -> None:
    """A right-to-left override (U+202E) or isolate (U+2067) that a tenant writes into a
    calendar's description or a run's output would show the rest of the operator's line
    reversed on a terminal that lays out right-to-left text: on a TTY it is an escape, into
    a pipe (and in --json) exact."""
    flipped = "ok\u202e10.0.0.1 \u2067x"
    r = daemon.request("PUT", "/v1/calendars/holidays", {"description": flipped, "dates": ["2030-01-01"]})
    assert r.status == 200, r
    listing = cli_on_a_tty(daemon, "calendar", "ls")
    assert "\u202e" not in listing and "\u2067" not in listing and "ok\\u202e10.0.0.1 \\u2067x" in listing, repr(listing)
    job = daemon.add_job({"runAt": "+0s", "command": r"printf 'ok\342\200\25610.0.0.1 \342\201\247x'", "name": "flip",
                          "retryPolicy": {"maxAttempts": 1}})["jobId"]
    wait_for(lambda: [e["status"] for e in daemon.executions(job)] == ["SUCCEEDED"], 20, what="the run to end")
    (ex,) = daemon.executions(job)
    shown = cli_on_a_tty(daemon, "logs", ex["executionId"])
    assert "\u202e" not in shown and "ok\\u202e10.0.0.1 \\u2067x" in shown, repr(shown)
    piped = daemon.cli("logs", ex["executionId"])
    assert piped.returncode == 0 and piped.stdout.startswith(flipped), repr(piped.stdout)


def test_a_stored_time_past_year_9999_does_not_crash_a_listing(daemon: Daemon) -> None:
    """A job accepted by an older version with ``@every 100000000d`` (next run in the year
    200946) still lists, shows and previews."""
    job = daemon.add_job({"schedule": "@every 1d", "queue": "q", "name": "far"})["jobId"]
    conn = apsw.Connection(str(daemon.data_dir / "cronwheel.db"))
    conn.setbusytimeout(10_000)
    conn.execute("UPDATE jobs SET next_run_at = ? WHERE id = ?", (6_279_000_000_000_000, job))
    conn.close()
    assert daemon.get(f"/v1/jobs/{job}").json()["nextRunAt"].startswith("200")
    for args in (("ls",), ("show", job), ("next", job), ("ls", "--json")):
        r = daemon.cli(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr[-400:])
    assert "far" in daemon.cli("ls").stdout


def test_following_output_on_a_tty_shows_escapes_not_obeys_them(daemon: Daemon) -> None:
    """``logs -f JOB`` and ``logs -f EXECUTION`` print a job's output as it comes: on a
    terminal its control sequences are shown as escapes, like ``logs``; into a pipe exact."""
    job = daemon.add_job({"runAt": "+2s", "command": "sleep 0.5; " + PRINTF + "; sleep 0.5", "name": "hostile-live",
                          "retryPolicy": {"maxAttempts": 1}})["jobId"]
    live = cli_on_a_tty(daemon, "logs", "-f", job)  # waits for the run, streams it, ends with the job
    assert "\x1b" not in live and "\x07" not in live and "\x9b" not in live, repr(live)
    assert "\\x1b[2J" in live and "\\x1b]0;pwned\\x07" in live and "\\x1b]52;c;aGk=\\x07" in live, repr(live)
    (ex,) = daemon.executions(job)
    ended = cli_on_a_tty(daemon, "logs", "-f", ex["executionId"])  # an ended one: its output, then how it ended
    assert "\x1b" not in ended and "\x07" not in ended and "\\x1b]52;c;aGk=\\x07" in ended, repr(ended)
    piped = daemon.cli("logs", "-f", ex["executionId"])
    assert piped.returncode == 0 and piped.stdout.startswith(HOSTILE), repr(piped.stdout)


@pytest.mark.runs_no_jobs
def test_export_as_a_crontab_on_a_tty_shows_escapes_and_into_a_file_is_exact(daemon: Daemon) -> None:
    """A tenant's command, standard input and environment are written by ``export`` on a
    terminal as visible escapes; into a pipe exactly as stored (click would otherwise strip
    what looks like ANSI styling, and the file would not import back to the same job)."""
    daemon.add_job({"schedule": "0 3 * * *", "command": "echo '" + HOSTILE + "'", "stdin": "in" + HOSTILE,
                    "env": {"GREETING": "hi" + HOSTILE}})  # no name: a crontab line cannot say one
    shown = cli_on_a_tty(daemon, "export", "--format", "crontab")
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown, repr(shown)
    assert "echo '\\x1b[2J\\x1b]0;pwned\\x07" in shown and "GREETING=hi\\x1b[2J" in shown, repr(shown)
    assert "%in\\x1b[2J" in shown, repr(shown)
    piped = daemon.cli("export", "--format", "crontab")
    assert piped.returncode == 0, piped.stderr
    assert f"echo '{HOSTILE}'" in piped.stdout and f"GREETING=hi{HOSTILE}" in piped.stdout, repr(piped.stdout)
    assert f"%in{HOSTILE}" in piped.stdout, repr(piped.stdout)
