"""`cronwheel import-crontab`, `export` and `completion` against a real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import REPO, Daemon

CRONTAB = """\
# nightly work
0 3 * * *     /usr/local/bin/backup --full
*/15 * * * *  echo "tick $(date +\\%s)"
@weekly       tidy --older-than 30d
"""


def jobs(d: Daemon) -> list[dict]:
    return d.get("/v1/jobs?limit=1000").json()["jobs"]


def test_import_is_idempotent_and_export_round_trips(daemon: Daemon, make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    src = tmp_path / "my.crontab"
    src.write_text(CRONTAB)
    dry = daemon.cli("import-crontab", "--dry-run", str(src))
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        "line 2: 0 3 * * *  /usr/local/bin/backup --full", "    zone: UTC",
        'line 3: */15 * * * *  echo "tick $(date +%s)"', "    zone: UTC",
        "line 4: @weekly  tidy --older-than 30d", "    zone: UTC",
    ]
    assert "3 job(s) would be imported" in dry.stderr
    assert jobs(daemon) == []

    first = daemon.cli("import-crontab", str(src))
    assert first.returncode == 0, first.stderr
    assert "3 job(s) created, 0 already there" in first.stderr
    created = {j["schedule"]: j for j in jobs(daemon)}
    assert created["*/15 * * * *"]["target"] == {"command": 'echo "tick $(date +%s)"'}

    # again, with a comment added on top (line numbers shift): nothing new
    src.write_text("# moved down a line\n" + CRONTAB)
    again = daemon.cli("import", str(src), "--json")
    assert again.returncode == 0, again.stderr
    assert [r["created"] for r in json.loads(again.stdout)] == [False, False, False]
    assert len(jobs(daemon)) == 3

    exported = daemon.cli("export")
    assert exported.returncode == 0, exported.stderr
    lines = [line for line in exported.stdout.splitlines() if not line.startswith("#")]
    assert sorted(lines) == sorted([
        "0 3 * * * /usr/local/bin/backup --full", '*/15 * * * * echo "tick $(date +\\%s)"', "@weekly tidy --older-than 30d",
    ])
    # the exported crontab imports back (to the same jobs' schedules and commands)
    back = tmp_path / "exported.crontab"
    back.write_text(exported.stdout)
    dry = daemon.cli("import-crontab", "--dry-run", str(back))
    assert dry.returncode == 0 and "3 job(s) would be imported" in dry.stderr

    # JSON export keeps everything, and imports back idempotently (even into another daemon)
    daemon.add_job({"schedule": "@every 10m", "http": {"url": "https://example.invalid/ping"}, "name": "pinger",
                    "timezone": "Europe/Paris", "retryPolicy": {"maxAttempts": 7}})
    crontab_form = daemon.cli("export")
    assert "# skipped" in crontab_form.stdout and "pinger" in crontab_form.stdout
    as_json = daemon.cli("export", "--json")
    bodies = json.loads(as_json.stdout)
    assert len(bodies) == 4
    pinger = next(b for b in bodies if b.get("name") == "pinger")
    assert pinger["http"]["url"] == "https://example.invalid/ping" and pinger["retryPolicy"]["maxAttempts"] == 7
    dump = tmp_path / "jobs.json"
    dump.write_text(as_json.stdout)
    # into the same daemon: the named job is refused, naming its namesake (names are unique)
    holder = next(j["jobId"] for j in jobs(daemon) if j["name"] == "pinger")
    res = daemon.cli("import", str(dump))
    assert res.returncode == 1 and "3 job(s) created, 0 already there, 1 job(s) skipped" in res.stderr, res.stderr
    assert holder in res.stderr
    res = daemon.cli("import", str(dump))
    assert "0 job(s) created, 3 already there, 1 job(s) skipped" in res.stderr
    assert len(jobs(daemon)) == 7
    # into another daemon: everything, the name too
    other = make_daemon("other")
    res = other.cli("import", str(dump))
    assert res.returncode == 0 and "4 job(s) created" in res.stderr, res.stderr
    copy = next(j for j in jobs(other) if j["name"] == "pinger")
    assert copy["retryPolicy"]["maxAttempts"] == 7 and copy["timezone"] == "Europe/Paris"


def test_a_bad_line_is_skipped_and_named_and_the_rest_imported(daemon: Daemon, tmp_path: Path) -> None:
    src = tmp_path / "bad.crontab"
    src.write_text("MAILTO=root\n0 * * * * fine\n@reboot /usr/bin/start\n")
    res = daemon.cli("import-crontab", "--strict", str(src))
    assert res.returncode == 1 and "nothing was imported" in res.stderr
    assert jobs(daemon) == []
    res = daemon.cli("import-crontab", str(src))
    assert res.returncode == 1
    assert f"{src}:1: MAILTO=root is not carried over" in res.stderr
    assert f"{src}:3: @reboot is not carried over" in res.stderr
    assert "1 job(s) created, 0 already there, 1 line(s) skipped" in res.stderr
    assert [j["target"]["command"] for j in jobs(daemon)] == ["fine"]
    res = daemon.cli("import-crontab", "-", input="@hourly from-stdin\n")
    assert res.returncode == 0 and "1 job(s) created" in res.stderr
    res = daemon.cli("import-crontab", "-", input="@hourly from-stdin\n")
    assert "0 job(s) created, 1 already there" in res.stderr


def test_shell_completion_scripts_complete_commands(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for shell, marker in (("bash", "complete -o nosort -F"), ("zsh", "compdef"), ("fish", "complete --no-files")):
        res = subprocess.run([sys.executable, "-m", "cronwheel", "completion", shell], capture_output=True, text=True, env=env, timeout=30)
        assert res.returncode == 0 and "_CRONWHEEL_COMPLETE" in res.stdout and marker in res.stdout, (shell, res)
    # what the bash script asks the program at TAB
    res = subprocess.run(
        [sys.executable, "-m", "cronwheel"], capture_output=True, text=True, timeout=30,
        env={**env, "_CRONWHEEL_COMPLETE": "bash_complete", "COMP_WORDS": "cronwheel im", "COMP_CWORD": "1"},
    )
    assert res.stdout.split() == ["plain,import", "plain,import-crontab"], res
    res = subprocess.run([sys.executable, "-m", "cronwheel", "completion", "tcsh"], capture_output=True, text=True, env=env, timeout=30)
    assert res.returncode == 2
