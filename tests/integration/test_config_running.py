"""`cronwheel config` shows what the running daemon uses: its own flags and environment (a
systemd unit's ExecStart= and Environment=, which the operator's shell does not have) over
the file, what the file now sets otherwise and what applies it, and the file's values once a
SIGHUP has applied them. It used to resolve the file in the operator's shell, showing values
the daemon did not use. Real daemons, the real CLI."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

SECRET = "s3cret-pw"


def key_line(out: str, key: str) -> str:
    return next((line for line in out.splitlines() if line.startswith(f"{key} = ")), f"(no {key} line)")


def test_config_shows_the_running_daemon_s_flags_environment_and_what_the_file_would_change(
    tmp_path: Path, make_daemon: Callable[..., Daemon]
) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('grace_sec = 10\nretention = "30d"\nlog_level = "info"\nkeep_last = 5\n')
    # as a unit would start it: a flag and a variable the operator's shell knows nothing of
    d = make_daemon(args=("--config", str(conf), "--grace-sec", "300"),
                    env={"CRONWHEEL_RETENTION": "7d", "CRONWHEEL_SMTP_URL": f"smtp://cw:{SECRET}@127.0.0.1:1"})

    shown = d.cli("--config", str(conf), "config")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.startswith(f"# the running daemon's configuration (pid {d.pid}, "), out
    assert key_line(out, "grace_sec").endswith("# flag") and "300" in key_line(out, "grace_sec"), out
    assert key_line(out, "retention").startswith('retention = "7d"') and "# env CRONWHEEL_RETENTION" in out, out
    assert key_line(out, "keep_last").endswith(f"# {conf}:4"), out
    # what the daemon chose for a key set nowhere: its real worker count, not "not set"
    assert key_line(out, "workers").startswith(f"workers = {d.workers}"), out
    assert "smtp://cw:********@127.0.0.1:1" in out and SECRET not in out + shown.stderr, out
    answer = d.get("/v1/config")
    assert answer.status == 200 and SECRET.encode() not in answer.body, answer
    assert d.get("/v1/config", token=None).status == 401
    assert d.post("/v1/tenants", {"name": "acme"}).status == 201
    tenant = d.post("/v1/tokens", {"tenant": "acme", "role": "tenant"}).json()["token"]
    assert d.get("/v1/config", token=tenant).status == 403  # the node's, not a tenant's

    # the file edited, not yet reloaded: said as not in effect, with what applies it; a key
    # the daemon took from its flag is not, whatever the file says
    conf.write_text('grace_sec = 20\nretention = "30d"\nlog_level = "warning"\nkeep_last = 5\nslots = 64\n')
    out = d.cli("--config", str(conf), "config").stdout
    assert f'# not in effect: log_level = "warning" ({conf}:3); `systemctl reload cronwheel` (SIGHUP) applies it' in out, out
    assert "grace_sec" not in "".join(line for line in out.splitlines() if "not in effect" in line), out
    assert key_line(out, "log_level").startswith('log_level = "info"'), out
    pending = json.loads(d.cli("--config", str(conf), "config", "--json").stdout)
    assert pending["shows"] == "daemon" and pending["daemon"]["pid"] == d.pid, pending
    assert {p["key"]: p["applies"] for p in pending["pending"]} == {"log_level": "reload"}, pending

    os.kill(d.pid, signal.SIGHUP)
    wait_for(lambda: d.event("config.reloaded"), 20, what="config.reloaded")
    out = d.cli("--config", str(conf), "config").stdout
    assert key_line(out, "log_level").startswith('log_level = "warning"') and f"# {conf}:3" in key_line(out, "log_level"), out
    assert ", reloaded " in out.splitlines()[0] and "not in effect" not in out, out

    # no daemon: what serve started from this shell would use, and it says so
    d.stop()
    out = d.cli("--config", str(conf), "config").stdout
    assert out.startswith("# as `cronwheel serve` started from this shell would resolve it: the running daemon was not asked: cannot reach "), out
    assert key_line(out, "grace_sec").startswith("grace_sec = 20.0") and f"# {conf}:1" in out, out


@pytest.mark.runs_no_jobs
def test_a_refused_reload_of_a_url_with_a_password_does_not_log_the_password(
    tmp_path: Path, make_daemon: Callable[..., Daemon]
) -> None:
    """`config.reload_refused` quoted the running and the wanted `smtp_url` whole, password
    and all, into the journal; it says them as `cronwheel config` does."""
    conf = tmp_path / "cronwheel.toml"
    conf.write_text(f'smtp_url = "smtp://cw:{SECRET}@127.0.0.1:1"\n')
    d = make_daemon(args=("--config", str(conf)))
    conf.write_text('smtp_url = "smtp://cw:other-pw@127.0.0.1:1"\n')
    os.kill(d.pid, signal.SIGHUP)
    refused = wait_for(lambda: d.event("config.reload_refused", key="smtp_url"), 20, what="config.reload_refused")
    assert refused["running"] == refused["wanted"] == "smtp://cw:********@127.0.0.1:1", refused
    assert SECRET not in d.log_path.read_text() and "other-pw" not in d.log_path.read_text()


def test_jobs_and_notification_commands_do_not_get_the_daemon_s_cronwheel_variables(
    tmp_path: Path, make_daemon: Callable[..., Daemon]
) -> None:
    """The daemon's ``CRONWHEEL_`` variables are its settings (a store's URL with its password,
    an operator's token): its jobs and its notification commands, which may run as another
    account (``runAs``), got them all. They get what cronwheel sets for them, and the rest of
    the daemon's environment."""
    store = tmp_path / "elsewhere.db"
    d = make_daemon(env={"CRONWHEEL_STORE": str(store), "CRONWHEEL_TOKEN": "cw_" + SECRET, "CRONWHEEL_RETENTION": "7d",
                         "OPERATOR_SETTING": "kept"})  # fmt: skip
    run_env, rule_env = tmp_path / "run.env", tmp_path / "rule.env"
    d.add_job({"runAt": "+0s", "command": f"env > {run_env}.tmp; mv {run_env}.tmp {run_env}; exit 1",
               "retryPolicy": {"maxAttempts": 1},
               "notify": [{"on": "dead", "via": "command", "command": f"env > {rule_env}.tmp; mv {rule_env}.tmp {rule_env}"}]})
    wait_for(lambda: run_env.exists() and rule_env.exists(), 30, what="the job and its rule to write their environments")
    for written in (run_env, rule_env):
        names = {line.split("=", 1)[0] for line in written.read_text().splitlines() if "=" in line}
        text = written.read_text()
        assert SECRET not in text and str(store) not in text, (written.name, sorted(names))
        assert not names & {"CRONWHEEL_STORE", "CRONWHEEL_TOKEN", "CRONWHEEL_RETENTION"}, (written.name, sorted(names))
        assert "OPERATOR_SETTING=kept" in text.splitlines(), written.name
    names = {line.split("=", 1)[0] for line in run_env.read_text().splitlines()}
    assert {"CRONWHEEL_URL", "CRONWHEEL_EXECUTION_ID", "CRONWHEEL_JOB_ID"} <= names, sorted(names)
    assert "CRONWHEEL_NOTIFICATION_ID" in {line.split("=", 1)[0] for line in rule_env.read_text().splitlines()}
