"""Jobs as code on a real daemon: a directory of job files applies, applies again with no
changes, exports back identically; --prune deletes only what apply created; a tenant applies
with its own token; updates keep the job's id and history (needs PATCH /v1/jobs/{id})."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

JOBS = {
    "a.toml": """
[backup]
schedule = "0 3 * * *"
timezone = "Europe/Paris"
command = "echo backup"
retryPolicy = { maxAttempts = 5 }

[ping]
schedule = "@every 30s"
http = { url = "https://example.com/ping", method = "POST" }
timeoutSec = 3600
""",
    "sub/b.toml": """
[report]
schedule = "H 8 * * 1-5"
python = "os:getcwd"
payload = { to = ["a@example.com"], n = 3 }
priority = "batch"
""",
}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def plan(d: Daemon, *args: str, token: str | None = None) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    extra = ("--token", token, "--url", d.url) if token else ()
    res = d.cli(*extra, "apply", *args, "--json")
    return res, (json.loads(res.stdout) if res.stdout.strip() else [])


def actions(changes: list[dict]) -> dict[str, str]:
    return {c["name"]: c["action"] for c in changes}


def test_apply_twice_then_export_round_trips(tmp_path: Path, daemon: Daemon) -> None:
    jobs = write(tmp_path / "jobs", JOBS)
    res, dry = plan(daemon, str(jobs), "--dry-run")
    assert res.returncode == 0 and actions(dry) == {"backup": "create", "ping": "create", "report": "create"}, res.stderr
    assert "dry run" in res.stderr and daemon.get("/v1/jobs").json()["jobs"] == []

    res, first = plan(daemon, str(jobs))
    assert res.returncode == 0 and all(c["jobId"] for c in first), res.stderr
    listed = {j["name"]: j for j in daemon.get("/v1/jobs").json()["jobs"]}
    assert set(listed) == {"backup", "ping", "report"}
    assert all(j["managedBy"] == "apply" for j in listed.values())
    assert listed["report"]["priority"] == "batch" and listed["backup"]["retryPolicy"]["maxAttempts"] == 5

    res, again = plan(daemon, str(jobs))
    assert res.returncode == 0 and set(actions(again).values()) == {"unchanged"}, res.stdout
    assert "no changes" in res.stderr

    exported = daemon.cli("export", "--format", "toml")
    assert exported.returncode == 0, exported.stderr
    out = write(tmp_path / "exported", {"all.toml": exported.stdout})
    res, back = plan(daemon, str(out), "--prune")
    assert res.returncode == 0 and set(actions(back).values()) == {"unchanged"} and len(back) == 3, res.stdout
    # and the export of what the export applied is the same text
    assert daemon.cli("export", "--format", "toml").stdout == exported.stdout


def test_prune_deletes_only_what_apply_created(tmp_path: Path, daemon: Daemon) -> None:
    jobs = write(tmp_path / "jobs", JOBS)
    assert plan(daemon, str(jobs))[0].returncode == 0
    by_hand = daemon.add_job({"schedule": "@daily", "command": "true", "name": "byhand"})
    (jobs / "sub/b.toml").unlink()
    res, changes = plan(daemon, str(jobs))
    assert actions(changes) == {"backup": "unchanged", "ping": "unchanged"}  # no --prune: report stays
    res, changes = plan(daemon, str(jobs), "--prune")
    assert res.returncode == 0 and actions(changes) == {"backup": "unchanged", "ping": "unchanged", "report": "delete"}
    live = {j["name"] for j in daemon.get("/v1/jobs").json()["jobs"] if j["status"] == "ACTIVE"}
    assert live == {"backup", "ping", "byhand"}
    assert daemon.get(f"/v1/jobs/{by_hand['jobId']}").json()["status"] == "ACTIVE"


def test_a_job_made_by_hand_is_not_taken_over_silently(tmp_path: Path, daemon: Daemon) -> None:
    daemon.add_job({"schedule": "@daily", "command": "true", "name": "backup"})
    res = daemon.cli("apply", str(write(tmp_path / "jobs", {"a.toml": JOBS["a.toml"]})))
    assert res.returncode == 1 and "apply does not manage it" in res.stderr and "--adopt" in res.stderr
    assert "Traceback" not in res.stderr


def test_bad_files_are_refused_before_anything_changes(tmp_path: Path, daemon: Daemon) -> None:
    jobs = write(tmp_path / "jobs", {"a.toml": JOBS["a.toml"], "bad.toml": '[x]\nschedule = "61 * * * *"\ncommand = "y"\n'})
    res = daemon.cli("apply", str(jobs))
    assert res.returncode == 2 and f"{jobs / 'bad.toml'}:2: key 'x': job 'x': " in res.stderr, res.stderr  # the field's line
    assert daemon.get("/v1/jobs").json()["jobs"] == []


def test_a_tenant_applies_with_its_own_token(tmp_path: Path, make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    assert d.cli("tenant", "add", "acme", "--allow-shell").returncode == 0
    token = d.cli("token", "create", "--tenant", "acme", "--json")
    secret = json.loads(token.stdout)["token"]
    jobs = write(tmp_path / "jobs", {"a.toml": JOBS["a.toml"]})
    assert plan(d, str(jobs))[0].returncode == 0  # the admin's, in the default tenant
    res, changes = plan(d, str(jobs), token=secret)
    assert res.returncode == 0 and actions(changes) == {"backup": "create", "ping": "create"}, res.stderr
    tenants = sorted((j["tenant"], j["name"]) for j in d.get("/v1/jobs").json()["jobs"])
    assert tenants == [("acme", "backup"), ("acme", "ping"), ("default", "backup"), ("default", "ping")]
    res, changes = plan(d, str(jobs), token=secret)
    assert set(actions(changes).values()) == {"unchanged"}


@pytest.mark.runs_no_jobs
def test_a_dry_run_names_the_command_jobs_a_tenant_without_allow_shell_would_be_refused(
    tmp_path: Path, daemon: Daemon
) -> None:
    """Before, --dry-run planned them and said nothing; the apply then failed on each one."""
    d = daemon
    assert d.cli("tenant", "add", "acme").returncode == 0  # no allowShell
    secret = json.loads(d.cli("token", "create", "--tenant", "acme", "--json").stdout)["token"]
    jobs = write(tmp_path / "jobs", {"a.toml": JOBS["a.toml"]})  # backup: a command; ping: http
    env = {"--token": secret, "--url": d.url}
    dry = d.cli(*(x for kv in env.items() for x in kv), "apply", str(jobs / "a.toml"), "--dry-run")
    assert dry.returncode == 1, dry
    assert "backup: would be refused: a command or python target needs allowShell" in dry.stderr, dry.stderr
    assert "ping: would be refused" not in dry.stderr and "Traceback" not in dry.stderr, dry.stderr
    assert d.cli("tenant", "set", "acme", "--allow-shell").returncode == 0
    again = d.cli(*(x for kv in env.items() for x in kv), "apply", str(jobs / "a.toml"), "--dry-run")
    assert again.returncode == 0, again


def test_an_update_keeps_the_id_and_the_history(tmp_path: Path, daemon: Daemon) -> None:
    jobs = write(tmp_path / "jobs", {"a.toml": '[tick]\nschedule = "@every 1s"\ncommand = "true"\n'})
    assert plan(daemon, str(jobs))[0].returncode == 0
    (job,) = daemon.get("/v1/jobs").json()["jobs"]
    wait_for(lambda: daemon.executions(job["jobId"]), 20, what="a first run")
    write(jobs, {"a.toml": '[tick]\nschedule = "@every 2s"\ncommand = "true"\ntimeoutSec = 5\n'})
    res, changes = plan(daemon, str(jobs))
    assert res.returncode == 0 and changes[0]["action"] == "update" and changes[0]["jobId"] == job["jobId"], res.stderr
    assert set(changes[0]["fields"]) == {"schedule", "timeoutSec"}
    after = daemon.get(f"/v1/jobs/{job['jobId']}").json()
    assert (after["schedule"], after["timeoutSec"], after["managedBy"]) == ("@every 2s", 5, "apply")
    assert daemon.executions(job["jobId"])  # the history is the same job's
    assert set(actions(plan(daemon, str(jobs))[1]).values()) == {"unchanged"}


@pytest.mark.runs_no_jobs
def test_adopt_takes_over_a_job_made_by_hand(tmp_path: Path, daemon: Daemon) -> None:
    by_hand = daemon.add_job({"schedule": "@daily", "command": "true", "name": "backup"})
    jobs = write(tmp_path / "jobs", {"a.toml": '[backup]\nschedule = "@daily"\ncommand = "true"\n'})
    res, changes = plan(daemon, str(jobs), "--adopt")
    assert res.returncode == 0 and changes == [
        {"action": "adopt", "name": "backup", "jobId": by_hand["jobId"], "fields": ["managedBy"], "body": {"managedBy": "apply"}}
    ], res.stderr
    assert daemon.get(f"/v1/jobs/{by_hand['jobId']}").json()["managedBy"] == "apply"
    assert set(actions(plan(daemon, str(jobs))[1]).values()) == {"unchanged"}


@pytest.mark.runs_no_jobs
def test_a_member_left_out_of_a_table_goes_back_to_its_default(tmp_path: Path, daemon: Daemon) -> None:
    jobs = write(tmp_path / "jobs", {"a.toml": '[r]\nschedule = "@daily"\ncommand = "true"\n'
                                                'retryPolicy = { maxAttempts = 5, initialBackoffSec = 10 }\n'})
    assert plan(daemon, str(jobs))[0].returncode == 0
    write(jobs, {"a.toml": '[r]\nschedule = "@daily"\ncommand = "true"\nretryPolicy = { maxAttempts = 5 }\n'})
    res, changes = plan(daemon, str(jobs))
    assert res.returncode == 0 and actions(changes) == {"r": "update"}, res.stderr
    (job,) = daemon.get("/v1/jobs").json()["jobs"]
    assert job["retryPolicy"]["initialBackoffSec"] == 1 and job["retryPolicy"]["maxAttempts"] == 5
    assert set(actions(plan(daemon, str(jobs))[1]).values()) == {"unchanged"}


def test_a_one_off_that_has_run_is_not_created_again(tmp_path: Path, daemon: Daemon) -> None:
    # apply is idempotent for one-offs too: once run, the job is SUCCEEDED, not missing
    soon = datetime.now(UTC) + timedelta(seconds=2)
    jobs = write(tmp_path / "jobs", {"once.toml": f'[once]\nrunAt = "{soon.isoformat()}"\ncommand = "true"\n'})
    res, first = plan(daemon, str(jobs))
    assert res.returncode == 0 and actions(first) == {"once": "create"}, res.stderr
    job_id = first[0]["jobId"]
    wait_for(lambda: daemon.get(f"/v1/jobs/{job_id}").json()["status"] == "SUCCEEDED", 30, what="the one-off to run")
    res, again = plan(daemon, str(jobs))
    assert res.returncode == 0 and actions(again) == {"once": "unchanged"}, res.stdout
    assert len([j for j in daemon.get("/v1/jobs").json()["jobs"] if j["name"] == "once"]) == 1


@pytest.mark.runs_no_jobs
def test_a_watched_job_exports_to_toml_and_applies_back_unchanged(tmp_path: Path, daemon: Daemon) -> None:
    # a watched job has no schedule: its expectSuccessWithin is what makes it valid
    watched = daemon.cli("watch", "offsite-backup", "26h")
    assert watched.returncode == 0, watched.stderr
    exported = daemon.cli("export", "--format", "toml")
    assert exported.returncode == 0 and "Traceback" not in exported.stderr, exported.stderr
    assert "[offsite-backup]" in exported.stdout and 'expectSuccessWithin = "26h"' in exported.stdout, exported.stdout
    out = write(tmp_path / "exported", {"all.toml": exported.stdout})
    res, changes = plan(daemon, str(out), "--adopt")  # made by `watch`, not by apply
    assert res.returncode == 0 and [(c["action"], c["fields"]) for c in changes] == [("adopt", ["managedBy"])], res.stdout
    assert "remote worker" not in res.stderr, res.stderr  # it is pinged: it waits for no worker
    res, again = plan(daemon, str(out))
    assert res.returncode == 0 and actions(again) == {"offsite-backup": "unchanged"} and "no changes" in res.stderr, res.stdout


HOOKED = """
[hooked]
schedule = "@daily"
command = "true"
notify = [{ on = "failure", via = "webhook", url = "https://hooks.example/cw", secret = "0123456789abcdef" },
          { on = "dead", via = "email", to = ["ops@example.com"] }]
"""


@pytest.mark.runs_no_jobs
def test_a_job_with_a_webhook_rule_applies_then_applies_again_with_no_changes(tmp_path: Path, daemon: Daemon) -> None:
    # the daemon shows the secret as ********: the rule is compared by its ruleId, not its secret
    jobs = write(tmp_path / "jobs", {"a.toml": HOOKED})
    res, first = plan(daemon, str(jobs))
    assert res.returncode == 0 and actions(first) == {"hooked": "create"}, res.stderr
    (job,) = daemon.get("/v1/jobs").json()["jobs"]
    assert [r["via"] for r in job["notify"]] == ["webhook", "email"] and job["notify"][0]["secret"] == "********"
    res = daemon.cli("apply", str(jobs))
    assert res.returncode == 0 and "no changes" in res.stderr and "~" not in res.stdout, res.stdout + res.stderr
    # an export cannot write the secret: it says so, in the file and on stderr
    exported = daemon.cli("export", "--format", "toml")
    assert "hooked: 1 webhook rule not written" in exported.stdout and "1 webhook rule not exported" in exported.stderr
    # what the rule does still counts: another URL is an update, and so is the rule taken out
    write(jobs, {"a.toml": HOOKED.replace("hooks.example/cw", "hooks.example/other")})
    res, changes = plan(daemon, str(jobs), "--dry-run")
    assert res.returncode == 0 and [(c["action"], c["fields"]) for c in changes] == [("update", ["notify"])], res.stdout
    write(jobs, {"a.toml": '[hooked]\nschedule = "@daily"\ncommand = "true"\n'})
    res, changes = plan(daemon, str(jobs))
    assert res.returncode == 0 and actions(changes) == {"hooked": "update"}, res.stdout
    assert daemon.get(f"/v1/jobs/{job['jobId']}").json().get("notify") in (None, [])


@pytest.mark.runs_no_jobs
def test_a_paused_job_is_exported_with_a_word_that_apply_makes_it_active(tmp_path: Path, daemon: Daemon) -> None:
    daemon.add_job({"schedule": "@daily", "command": "true", "name": "resting"})
    assert daemon.cli("pause", "resting").returncode == 0
    exported = daemon.cli("export", "--format", "toml")
    assert exported.returncode == 0, exported.stderr
    assert "# resting is PAUSED here: apply creates it active" in exported.stdout
    assert "1 paused job: a job file has no state" in exported.stderr
    # still the same definition: applied back, nothing changes and the job stays paused
    out = write(tmp_path / "exported", {"all.toml": exported.stdout})
    res, changes = plan(daemon, str(out), "--adopt")
    assert res.returncode == 0 and [c["action"] for c in changes] == ["adopt"], res.stdout
    (job,) = daemon.get("/v1/jobs").json()["jobs"]
    assert job["status"] == "PAUSED"


def test_a_job_with_no_target_is_applied_with_a_note_that_it_waits_for_a_remote_worker(
    tmp_path: Path, daemon: Daemon
) -> None:
    # the API's minimal body: its executions wait in the default queue, which only a remote
    # worker serves; a file that forgot its command says so rather than waiting in silence
    jobs = write(tmp_path / "jobs", {"q.toml": '[nightly]\nschedule = "0 3 * * *"\npayload = { n = 1 }\n\n'
                                               '[hourly]\nschedule = "0 * * * *"\ncommand = "true"\n'})
    res = daemon.cli("apply", str(jobs))
    assert res.returncode == 0, res.stderr
    assert f"note: job 'nightly' ({jobs / 'q.toml'}:1) names no command, http, python or queue" in res.stderr
    assert "queue 'default' for a remote worker" in res.stderr and "hourly" not in res.stderr
    (nightly,) = [j for j in daemon.get("/v1/jobs").json()["jobs"] if j["name"] == "nightly"]
    assert nightly["target"] == {"queue": "default"}


@pytest.mark.runs_no_jobs
def test_an_export_says_which_chains_and_calendars_it_leaves_out(daemon: Daemon) -> None:
    # a chain names this daemon's job ids, which an import elsewhere does not have: the hint
    # names the jobs by their names, which hold there
    child = daemon.add_job({"schedule": "@daily", "command": "true", "name": "notify"})["jobId"]
    daemon.add_job({"schedule": "@daily", "command": "true", "name": "payroll", "onFailure": [child]})
    toml = daemon.cli("export", "--format", "toml")
    assert toml.returncode == 0, toml.stderr
    assert "# payroll is chained (--on-failure notify)" in toml.stdout and "1 chain not exported" in toml.stderr
    as_json = daemon.cli("export", "--format", "json")
    assert as_json.returncode == 0 and "onFailure" not in as_json.stdout, as_json.stdout
    assert "1 chain not exported" in as_json.stderr and "cronwheel chain payroll --on-failure notify" in as_json.stderr
    assert child not in as_json.stderr and "new ids" not in as_json.stderr, as_json.stderr
    # a child without a name can only be named by its id here
    anon = daemon.add_job({"schedule": "@daily", "command": "true"})["jobId"]
    assert daemon.cli("chain", "payroll", "--on-failure", "notify", "--on-failure", anon).returncode == 0
    as_json = daemon.cli("export", "--format", "json")
    assert f"cronwheel chain payroll --on-failure notify {anon} (with the new ids of the jobs without a name)" in as_json.stderr

    # a job observing a calendar: the JSON names it, and another daemon refuses the job until
    # it has a calendar of that name, so the export says which and how to carry it over
    assert daemon.cli("calendar", "set", "holidays", "--date", "2030-12-25").returncode == 0
    daemon.add_job({"schedule": "@daily", "command": "true", "name": "closed", "calendars": ["holidays"]})
    as_json = daemon.cli("export", "--format", "json")
    assert as_json.returncode == 0 and '"holidays"' in as_json.stdout, as_json
    assert "1 calendar not exported (holidays)" in as_json.stderr, as_json.stderr
    assert "cronwheel calendar show NAME" in as_json.stderr and "cronwheel calendar set NAME" in as_json.stderr


@pytest.mark.runs_no_jobs
def test_the_export_header_counts_the_jobs_it_writes(daemon: Daemon) -> None:
    daemon.add_job({"schedule": "@daily", "command": "true", "name": "named"})
    daemon.add_job({"schedule": "@daily", "command": "true"})  # no name: no table
    exported = daemon.cli("export", "--format", "toml")
    assert exported.returncode == 0, exported.stderr
    first = exported.stdout.splitlines()[0]
    assert first == "# cronwheel export: 1 job (1 not written: see '# skipped'); apply with: cronwheel apply FILE", first
    assert "# skipped j" in exported.stdout and "[named]" in exported.stdout
