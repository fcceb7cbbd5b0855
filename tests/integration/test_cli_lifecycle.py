"""`cronwheel import-crontab`, `export` and `completion` against a real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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
    assert "3 jobs would be created, 0 already there" in dry.stderr
    assert jobs(daemon) == []

    first = daemon.cli("import-crontab", str(src))
    assert first.returncode == 0, first.stderr
    assert "3 jobs created, 0 already there" in first.stderr
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
    assert dry.returncode == 0 and "0 jobs would be created, 3 already there" in dry.stderr, dry.stderr
    assert dry.stdout.count("already there as j") == 3, dry.stdout
    res = daemon.cli("import-crontab", str(back))  # and imports back to no change
    assert res.returncode == 0 and "0 jobs created, 3 already there" in res.stderr, res.stderr
    # a job made by `add` (no idempotency key of its own) exported and imported back: still one
    added = daemon.cli("add", "--tz", "Europe/London", "H * * * *", "--", "/usr/local/bin/report")
    assert added.returncode == 0, added.stderr
    back.write_text(daemon.cli("export").stdout)
    res = daemon.cli("import-crontab", str(back))
    assert res.returncode == 0 and "0 jobs created, 4 already there" in res.stderr, res.stderr
    assert len(jobs(daemon)) == 4

    # JSON export keeps everything, and imports back idempotently (even into another daemon)
    daemon.add_job({"schedule": "@every 10m", "http": {"url": "https://example.invalid/ping"}, "name": "pinger",
                    "timezone": "Europe/Paris", "retryPolicy": {"maxAttempts": 7}})
    crontab_form = daemon.cli("export")
    assert "# skipped" in crontab_form.stdout and "pinger" in crontab_form.stdout
    as_json = daemon.cli("export", "--json")
    bodies = json.loads(as_json.stdout)
    assert len(bodies) == 5
    pinger = next(b for b in bodies if b.get("name") == "pinger")
    assert pinger["http"]["url"] == "https://example.invalid/ping" and pinger["retryPolicy"]["maxAttempts"] == 7
    dump = tmp_path / "jobs.json"
    dump.write_text(as_json.stdout)
    # into the same daemon: every job is there already (the ones imported from the crontab
    # too, whose keys were the crontab's), and the named one would be refused by its name anyway
    res = daemon.cli("import", str(dump))
    assert res.returncode == 0 and "0 jobs created, 5 already there" in res.stderr, res.stderr
    assert len(jobs(daemon)) == 5
    # into another daemon: everything, the name too
    other = make_daemon("other")
    res = other.cli("import", str(dump))
    assert res.returncode == 0 and "5 jobs created" in res.stderr, res.stderr
    res = other.cli("import", str(dump))
    assert res.returncode == 0 and "0 jobs created, 5 already there" in res.stderr, res.stderr
    copy = next(j for j in jobs(other) if j["name"] == "pinger")
    assert copy["retryPolicy"]["maxAttempts"] == 7 and copy["timezone"] == "Europe/Paris"


@pytest.mark.runs_no_jobs
def test_only_the_very_same_job_is_already_there(daemon: Daemon, make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    # a job alike in schedule and queue but not in name or payload is another job: it was
    # once taken for sync-us ("already there") and never created
    assert daemon.cli("add", "0 9 * * *", "--name", "sync-us", "--queue", "sync", "--payload", '{"region":"us"}').returncode == 0
    eu = {"name": "sync-eu", "schedule": "0 9 * * *", "queue": "sync", "payload": {"region": "eu"}}
    src = tmp_path / "eu.json"
    src.write_text(json.dumps([eu]))
    dry = daemon.cli("import-crontab", "--dry-run", str(src))
    assert dry.returncode == 0 and "1 job would be created, 0 already there" in dry.stderr, dry
    res = daemon.cli("import-crontab", str(src))
    assert res.returncode == 0 and "1 job created, 0 already there" in res.stderr, res
    assert {j["name"]: j["payload"] for j in jobs(daemon)} == {"sync-us": {"region": "us"}, "sync-eu": {"region": "eu"}}
    res = daemon.cli("import-crontab", str(src))  # and the same file again: no change
    assert res.returncode == 0 and "0 jobs created, 1 already there" in res.stderr, res

    # one job never answers for two entries: sync-eu waits for a calendar, sync-us is created;
    # once the calendar is there, sync-eu is created, not "already there" as sync-us
    other = make_daemon("other")
    both = tmp_path / "both.json"
    both.write_text(json.dumps([{**eu, "calendars": ["holidays"]}, {**eu, "name": "sync-us", "payload": {"region": "us"}}]))
    res = other.cli("import-crontab", str(both))
    assert res.returncode == 1 and "1 job created, 0 already there, 1 job skipped" in res.stderr, res
    assert "holidays" in res.stderr
    assert other.cli("calendar", "set", "holidays", "--date", "2030-12-25").returncode == 0
    res = other.cli("import-crontab", "--json", str(both))
    assert res.returncode == 0, res
    rows = {r["where"]: r for r in json.loads(res.stdout)}
    assert (rows["job 1"]["created"], rows["job 2"]["created"]) == (True, False), rows
    assert rows["job 1"]["jobId"] != rows["job 2"]["jobId"], rows
    assert sorted((j["name"], j["calendars"]) for j in jobs(other)) == [("sync-eu", ["holidays"]), ("sync-us", [])]

    # a job changed since an import created it is no longer that entry's, though the entry's
    # idempotency key still names it; nor is a job cancelled since
    solo = tmp_path / "solo.json"
    solo.write_text(json.dumps([{"name": "solo", "schedule": "0 4 * * *", "command": "solo.sh"}]))
    first = json.loads(other.cli("import-crontab", "--json", str(solo)).stdout)[0]
    assert other.cli("update", "solo", "--name", "renamed").returncode == 0
    pair = tmp_path / "pair.json"
    pair.write_text(json.dumps([{"name": "renamed", "schedule": "0 4 * * *", "command": "solo.sh"},
                                {"name": "solo", "schedule": "0 4 * * *", "command": "solo.sh"}]))  # fmt: skip
    res = other.cli("import-crontab", "--json", str(pair))
    assert res.returncode == 0, res
    rows = {r["where"]: r for r in json.loads(res.stdout)}
    assert (rows["job 1"]["jobId"], rows["job 1"]["created"]) == (first["jobId"], False), rows
    assert rows["job 2"]["created"] and rows["job 2"]["jobId"] != first["jobId"], rows
    assert other.cli("cancel", "solo").returncode == 0
    res = other.cli("import-crontab", "--json", str(solo))
    assert res.returncode == 0 and json.loads(res.stdout)[0]["created"], res
    assert sorted(j["name"] for j in jobs(other) if j["status"] == "ACTIVE") == ["renamed", "solo", "sync-eu", "sync-us"]


@pytest.mark.runs_no_jobs
def test_a_schedule_written_another_way_is_already_there(daemon: Daemon) -> None:
    # jobs made by `add`, then a crontab saying the same times in other words: the very same
    # jobs, so nothing new; but the 1st OR-ed with Mondays is not the 1st, and is created
    for when, command in (("@daily", "backup.sh"), ("0 9 * * MON-FRI", "report.sh"), ("0 0 1 * *", "monthly.sh")):
        added = daemon.cli("add", when, "--", command)
        assert added.returncode == 0, added.stderr
    ids = {j["target"]["command"]: j["jobId"] for j in jobs(daemon)}
    text = "0 0 * * * backup.sh\n0  9 * * 1-5 report.sh\n0 0 1 * 1 monthly.sh\n"
    dry = daemon.cli("import-crontab", "--dry-run", "-", input=text)
    assert dry.returncode == 0 and "1 job would be created, 2 already there" in dry.stderr, dry
    assert f"line 1: already there as {ids['backup.sh']}" in dry.stdout, dry.stdout
    res = daemon.cli("import-crontab", "--json", "-", input=text)
    assert res.returncode == 0, res
    rows = [(r["line"], r["jobId"], r["created"]) for r in json.loads(res.stdout)]
    assert rows[:2] == [(1, ids["backup.sh"], False), (2, ids["report.sh"], False)], rows
    assert rows[2][2] and rows[2][1] != ids["monthly.sh"], rows
    assert sorted(j["schedule"] for j in jobs(daemon)) == ["0 0 1 * *", "0 0 1 * 1", "0 9 * * MON-FRI", "@daily"]
    res = daemon.cli("import-crontab", "-", input=text)  # and again: all three there
    assert res.returncode == 0 and "0 jobs created, 3 already there" in res.stderr, res
    assert len(jobs(daemon)) == 4


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
    assert "1 job created, 0 already there, 1 line skipped" in res.stderr
    assert [j["target"]["command"] for j in jobs(daemon)] == ["fine"]
    res = daemon.cli("import-crontab", "-", input="@hourly from-stdin\n")
    assert res.returncode == 0 and "1 job created" in res.stderr
    res = daemon.cli("import-crontab", "-", input="@hourly from-stdin\n")
    assert "0 jobs created, 1 already there" in res.stderr


@pytest.mark.runs_no_jobs
def test_a_setting_not_carried_over_sets_the_exit_status(daemon: Daemon) -> None:
    # README: what cannot be carried over is reported "and the exit status says so"; a
    # MAILTO= that is no address is such a thing, though the job below it is imported
    text = "MAILTO=root\n0 5 * * * echo mailtest\n"
    dry = daemon.cli("import-crontab", "--dry-run", "-", input=text)
    assert dry.returncode == 1 and "-:1: MAILTO=root is not carried over" in dry.stderr, dry
    res = daemon.cli("import-crontab", "-", input=text)
    assert res.returncode == 1, res
    assert "-:1: MAILTO=root is not carried over" in res.stderr
    assert "1 job created, 0 already there; 1 setting not carried over" in res.stderr, res.stderr
    assert [j["target"]["command"] for j in jobs(daemon)] == ["echo mailtest"]
    res = daemon.cli("import-crontab", "-", input=text)  # again: still not carried over
    assert res.returncode == 1 and "0 jobs created, 1 already there; 1 setting not carried over" in res.stderr, res
    res = daemon.cli("import-crontab", "-", input="0 5 * * * echo mailtest\n")  # nothing left out: 0
    assert res.returncode == 0 and "0 jobs created, 1 already there" in res.stderr, res


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


def test_an_import_refuses_what_it_cannot_read_and_a_dry_run_what_the_daemon_would(daemon: Daemon, tmp_path: Path) -> None:
    latin = tmp_path / "latin1.crontab"
    latin.write_bytes(b"0 * * * * fine\n1 * * * * echo caf\xe9\n")
    res = daemon.cli("import-crontab", "--dry-run", str(latin))
    assert res.returncode == 1 and f"{latin}:2: not UTF-8 (byte 0xe9)" in res.stderr and "iconv" in res.stderr, res
    assert "Traceback" not in res.stderr
    res = daemon.cli("import-crontab", "--dry-run", "/dev/zero")
    assert res.returncode == 1 and "/dev/zero: larger than 64 MiB" in res.stderr, res
    # the dry run says what the import would do: the lines the daemon refuses are skipped with its reason
    odd = tmp_path / "odd.crontab"
    odd.write_text("0 * * * * fine\n1 * * * * echo " + "x" * 20_000 + "\n2 * * * * echo a\x00b\n")
    dry = daemon.cli("import-crontab", "--dry-run", str(odd))
    real = daemon.cli("import-crontab", str(odd))
    assert dry.returncode == real.returncode == 1, (dry, real)
    for out in (dry.stderr, real.stderr):
        assert f"{odd}:2: " in out and "command" in out and f"{odd}:3: " in out and "NUL" in out, out
    assert "1 job would be created, 0 already there, 2 lines skipped" in dry.stderr, dry.stderr
    assert "1 job created, 0 already there, 2 lines skipped" in real.stderr, real.stderr
