"""Email and command notifications, and pings from a shell script, on a real daemon:
a local SMTP sink (aiosmtpd) with STARTTLS and AUTH receives the email; a fake sendmail
program and a command rule are run for real; a crontab-like script's pings drive a job's
dead-man's window (success moves it, silence fires `missed`, a fail ping notifies)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.support.daemon import Daemon, free_port
from tests.support.receiver import WebhookReceiver
from tests.support.tls import self_signed_server
from tests.support.wait import wait_for

SECRET = "s3cret-for-the-hmac-signature"
PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"


class Sink:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    ok = isinstance(data, LoginPassword) and data.login == b"cron" and data.password == b"wheel-pass"
    return AuthResult(success=ok)


@pytest.fixture
def smtp_tls(tmp_path: Path) -> Iterator[tuple[Sink, int, Path]]:
    """An SMTP sink that requires STARTTLS before AUTH, with a certificate for 127.0.0.1."""
    context, cert = self_signed_server(tmp_path)
    sink, port = Sink(), free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                            authenticator=_authenticate, auth_require_tls=True, auth_required=True)  # fmt: skip
    controller.start()
    try:
        yield sink, port, cert
    finally:
        controller.stop()


def test_email_through_an_smtp_relay_with_starttls_and_auth(make_daemon: Callable[..., Daemon], smtp_tls) -> None:
    sink, port, cert = smtp_tls
    # the relay's URL (with its password) from the environment, which jobs must not inherit
    d = make_daemon(args=("--mail-from", "cron@example.com"), env={
        "SSL_CERT_FILE": str(cert), "CRONWHEEL_SMTP_URL": f"smtp://cron:wheel-pass@127.0.0.1:{port}?starttls=require"})
    d.add_job({"name": "nightly", "runAt": "+0s", "command": 'echo "disk full, relay ${CRONWHEEL_SMTP_URL:-unseen}"; exit 2',
               "retryPolicy": {"maxAttempts": 1},
               "notify": [{"on": "failure", "via": "email", "to": ["ops@example.com"]}]})  # fmt: skip
    wait_for(lambda: sink.messages, 30, what="an email at the sink")
    mail_from, rcpt, content = sink.messages[0]
    assert mail_from == "cron@example.com" and rcpt == ["ops@example.com"]
    text = content.decode()
    assert "Subject: [cronwheel] failure: nightly" in text and "disk full, relay unseen" in text
    assert "wheel-pass" not in text
    wait_for(lambda: d.event("notification.sent"), 10, what="the notification marked sent")
    assert len(sink.messages) == 1


def test_email_through_sendmail_and_a_command_rule(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    sendmail = tmp_path / "sendmail"
    outbox = tmp_path / "outbox.eml"
    # the file appears a moment before the mail is in it, as with `cat > file`, only always
    sendmail.write_text(f"#!/bin/sh\n: > {outbox}\nsleep 1\ncat >> {outbox}\n")
    sendmail.chmod(0o755)
    told = tmp_path / "told.json"
    d = make_daemon(args=("--sendmail", str(sendmail)))
    d.add_job({"runAt": "+0s", "command": "exit 1", "retryPolicy": {"maxAttempts": 1}, "notify": [
        {"on": "dead", "via": "email", "to": ["root@localhost"]},
        {"on": "dead", "via": "command", "command": f"cat > {told}"},
    ]})
    # `cat > file` creates the file before it writes to it: wait for what is written, not
    # for the file (a check between the two read an empty mail)
    wait_for(lambda: "To: root@localhost" in _text(outbox) and _json(told), 30, what="sendmail and the command")
    assert json.loads(told.read_text())["event"] == "dead"


def _text(path: Path) -> str:
    try:
        return path.read_text() if path.stat().st_size > 0 else ""
    except (FileNotFoundError, UnicodeDecodeError):  # not there yet, or cut inside a character
        return ""


def _json(path: Path) -> Any:
    """The file's JSON once it is all written, else None."""
    try:
        return json.loads(_text(path)) if _text(path) else None
    except ValueError:
        return None


def test_pings_from_a_shell_script_drive_the_window(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon(env={"PATH": PATH})
        hooks = [{"on": on, "via": "webhook", "url": rx.url, "secret": SECRET} for on in ("missed", "failure", "recovered")]
        r = d.post("/v1/jobs", {"name": "offsite-backup", "expectSuccessWithin": "3s", "notify": hooks})
        assert r.status == 201, r
        job_id = r.json()["jobId"]
        job = d.get(f"/v1/jobs/{job_id}").json()
        assert job["target"] == {"ping": {}} and job["nextRunAt"] is None and job["expectSuccessWithin"] == "3s"
        shown = d.cli("show", "offsite-backup").stdout
        assert re.search(r"^Schedule:\s+pinged, every 3s$", shown, re.M), shown
        assert re.search(r"^Target:\s+runs elsewhere, reports by ping$", shown, re.M) and "one-off" not in shown
        script = tmp_path / "backup.sh"  # what a crontab line on another box would run
        script.write_text(
            "#!/bin/sh\n"
            "cronwheel ping offsite-backup --start\n"
            "sh -c 'echo copied; [ \"$1\" = ok ] || exit 4' - \"$1\" > \"$0.log\" 2>&1\n"
            "cronwheel ping offsite-backup --exit-code $? --output \"$0.log\"\n"  # the status decides
        )
        script.chmod(0o755)
        env = {**os.environ, "PATH": PATH, "CRONWHEEL_DATA_DIR": str(d.data_dir)}
        env.pop("CRONWHEEL_URL", None)
        subprocess.run([str(script), "ok"], check=True, env=env, capture_output=True, timeout=60)
        [run] = d.executions(job_id)
        assert run["status"] == "SUCCEEDED" and run["reason"] == "ping: success"
        assert run["startedAt"] <= run["scheduledAt"] and run["lagMs"] is None, run  # no dispatch lag: it ran elsewhere
        assert d.get(f"/v1/executions/{run['executionId']}").json()["output"] == "copied\n"
        # silence: the window passes, `missed` is told once, and the job shows as overdue (on a
        # loaded machine the window may also have passed before the first success, told as
        # missed then: the listing is waited for, not read once)
        wait_for(lambda: [ds for ds in rx.unique().values() if ds[0].event == "missed"], 30, what="missed")

        def listing() -> str:
            return subprocess.run(["cronwheel", "ls"], env=env, capture_output=True, text=True, check=True).stdout

        wait_for(lambda: "OVERDUE" in listing(), 30, what="OVERDUE in cronwheel ls")
        wait_for(lambda: "cronwheel_overdue_jobs 1.0" in d.get("/metrics").body.decode(), 15, what="the overdue gauge")
        assert re.search(r"cronwheel_windows_missed_total [1-9]", d.get("/metrics").body.decode())
        status = json.loads(subprocess.run(["cronwheel", "status", "--json"], env=env, capture_output=True, text=True,
                                           check=True).stdout)  # fmt: skip
        assert status["notifications"]["overdueJobs"] == 1 and status["notifications"]["SENT"] >= 1
        # a failed run notifies; then a success recovers and clears the overdue mark
        subprocess.run([str(script), "bad"], check=True, env=env, capture_output=True, timeout=60)
        wait_for(lambda: [ds for ds in rx.unique().values() if ds[0].event == "failure"], 30, what="failure")
        failed = d.executions(job_id)[0]
        assert failed["status"] == "DEAD" and failed["reason"] == "ping: fail" and failed["exitCode"] == 4, failed
        subprocess.run([str(script), "ok"], check=True, env=env, capture_output=True, timeout=60)
        wait_for(lambda: [ds for ds in rx.unique().values() if ds[0].event == "recovered"], 30, what="recovered")
        assert not d.get(f"/v1/jobs/{job_id}").json()["window"]["overdue"]
        assert all(x.signed for ds in rx.unique().values() for x in ds)
        assert d.post(f"/v1/jobs/{job_id}/trigger").status == 409  # nothing to run here


def test_an_email_rule_on_a_daemon_without_mail_is_kept_with_a_warning(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    # kept, not refused: the README's tour watches a job with --notify-email on `make serve`,
    # which has no mail; the answer and the CLI say what that rule will do until mail is set up
    d = make_daemon()
    watched = d.cli("watch", "offsite-backup", "26h", "--notify-email", "ops@example.com")
    assert watched.returncode == 0 and "Watching job" in watched.stdout, watched.stderr
    # on failure and on missed: one warning naming both rules
    assert "warning: notify[0].to, notify[1].to: this daemon has no mail transport" in watched.stderr, watched.stderr
    assert watched.stderr.count("no mail transport") == 1, watched.stderr
    assert "--smtp-url" in watched.stderr and "--sendmail" in watched.stderr and "smtp_url" in watched.stderr
    mail = {"on": "dead", "via": "email", "to": ["ops@example.com"]}
    r = d.post("/v1/jobs", {"schedule": "@daily", "command": "true", "notify": [{"on": "dead", "via": "command", "command": "true"}, mail]})
    assert r.status == 201 and [w.split(":")[0] for w in r.json()["warnings"]] == ["notify[1].to"], r.json()
    r = d.post("/v1/jobs", {"schedule": "@daily", "command": "true"})
    assert r.status == 201 and "warnings" not in r.json()
    r = d.request("PATCH", f"/v1/jobs/{r.json()['jobId']}", {"notify": [mail]})
    assert r.status == 200 and r.json()["warnings"][0].startswith("notify[0].to: this daemon has no mail transport")
    # an import of a crontab with MAILTO= says it once, for all its jobs
    crontab = tmp_path / "mail.crontab"
    crontab.write_text("MAILTO=ann@example.com\n@daily one\n@daily two\n")
    res = d.cli("import-crontab", str(crontab))
    assert res.returncode == 0 and res.stderr.count("no mail transport") == 1 and "(2 jobs)" in res.stderr, res.stderr
    # a tenant's default rules alike (docs/notifications.md's `tenant notify`), then cleared
    res = d.cli("tenant", "notify", "default", "--notify-email", "ops@example.com")
    assert res.returncode == 0 and "on failure via email ops@example.com" in res.stdout, res.stderr
    assert "warning: notify[0].to: this daemon has no mail transport" in res.stderr, res.stderr
    r = d.request("PUT", "/v1/tenants/default/notify", {"notify": []})
    assert r.status == 200 and "warnings" not in r.json()

    # with a transport, nothing to say
    sendmail = tmp_path / "sendmail"
    sendmail.write_text("#!/bin/sh\ncat > /dev/null\n")
    sendmail.chmod(0o755)
    with_mail = make_daemon("with-mail", args=("--sendmail", str(sendmail)))
    r = with_mail.post("/v1/jobs", {"schedule": "@daily", "command": "true", "notify": [mail]})
    assert r.status == 201 and "warnings" not in r.json()
    r = with_mail.request("PUT", "/v1/tenants/default/notify", {"notify": [mail]})
    assert r.status == 200 and "warnings" not in r.json()


@pytest.mark.runs_no_jobs
def test_a_ping_sends_the_tail_of_any_log_however_large_and_whatever_its_bytes(daemon: Daemon, tmp_path: Path) -> None:
    """A backup's log in Latin-1, with a NUL, or megabytes of it: the ping is sent with the
    log's tail (bytes that are not UTF-8 marked U+FFFD, as a run's own output is), never lost
    to a decoding error."""
    d = daemon
    watched = d.cli("watch", "backup", "26h", "--json")
    assert watched.returncode == 0, watched.stderr
    log = tmp_path / "backup.log"
    log.write_bytes(b"x" * 3_000_000 + b"\nsaved 12 files\n\xe9t\xe9 \x00 done\n")
    res = d.cli("ping", "backup", "--exit-code", "0", "--output", str(log))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    (ex,) = d.executions(json.loads(watched.stdout)["jobId"])
    output = d.get(f"/v1/executions/{ex['executionId']}").json()["output"]
    assert output.endswith("\nsaved 12 files\n\ufffdt\ufffd \ufffd done\n") and 60_000 < len(output) <= 65_536, output[-80:]
