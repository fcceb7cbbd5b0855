"""``cronwheel ping`` (a cron elsewhere reports its runs) and ``cronwheel notifications``
(what was told to whom, and the notifications' dead-letter queue)."""

from __future__ import annotations

import time
from typing import Any

import click

from cronwheel.cli import listing, render, views
from cronwheel.cli.away import Away
from cronwheel.cli.client import ApiError, Client, DaemonUnreachable
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, pass_cli
from cronwheel.core.limits import loads_checked
from cronwheel.worker.results import Tail

STATUSES = ("PENDING", "RUNNING", "SENT", "DEAD", "HELD")
#: a report refused for the tenant's submitRate is sent again after its Retry-After, this
#: many times, when that is at most PING_WAIT_MAX_SEC: a burst of runs ending together must
#: not lose one's report (nor turn `backup.sh && cronwheel ping backup || cronwheel ping
#: backup --fail` into a failure)
PING_RATE_RETRIES = 3
PING_WAIT_MAX_SEC = 60.0


def notify_fields(rules: tuple[str, ...], emails: tuple[str, ...], expect: str | None) -> dict[str, Any]:
    """``--notify JSON``, ``--notify-email ADDRESS`` and ``--expect-success-within`` as job fields
    (the daemon validates them and names the offending field)."""
    body: dict[str, Any] = {}
    parsed: list[Any] = []
    for text in rules:
        try:
            parsed.append(loads_checked(text, "the rule"))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--notify'") from None
    parsed += [{"on": "failure", "via": "email", "to": [addr]} for addr in emails]
    if parsed:
        body["notify"] = parsed
    if expect is not None:
        body["expectSuccessWithin"] = expect
    return body


@click.command(context_settings=CONTEXT)
@click.argument("name")
@click.argument("window", metavar="DURATION")
@click.option("--notify", "notify_rules", multiple=True, metavar="JSON", help="A notification rule (repeatable).")
@click.option("--notify-email", multiple=True, metavar="ADDRESS", help="Email ADDRESS when a run fails or is missed (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print {jobId} as JSON.")
@pass_cli
def watch(app: Cli, /, name: str, window: str, notify_rules: tuple[str, ...], notify_email: tuple[str, ...], as_json: bool) -> None:
    """Watch a cron that runs elsewhere: job NAME must report a success (`cronwheel ping
    NAME`) at least once per DURATION (e.g. 26h), or its rules are told `missed`.

    \b
    Example:
      cronwheel watch nightly-backup 26h --notify-email ops@example.com
      # in the crontab on the backup host:
      0 3 * * * backup.sh; cronwheel ping nightly-backup --exit-code $?
    """
    body: dict[str, Any] = {"name": name, **notify_fields(notify_rules, (), window)}
    body["notify"] = body.get("notify", []) + [
        {"on": on, "via": "email", "to": [addr]} for addr in notify_email for on in ("failure", "missed")
    ]
    created = app.client.create_job(body)
    if as_json:
        render.emit_json({"jobId": created.body["jobId"]})
        return
    click.echo(f"Watching job {created.body['jobId']} ({name}): expects a success ping every {window}")


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--start", "kind", flag_value="start", help="The run has started.")
@click.option("--fail", "kind", flag_value="fail", help="The run failed.")
@click.option("--success", "kind", flag_value="success", help="The run succeeded. [default]")
@click.option("--exit-code", type=int, metavar="N",
              help="The run's exit status: without --fail or --success, 0 reports a success and any other a fail.")
@click.option("--output", "output_file", type=click.File("rb"), metavar="FILE",
              help="Send the tail of FILE (- for standard input; its last 64 KiB, any bytes) as the run's output.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@pass_cli
def ping(app: Cli, /, job: str, kind: str | None, exit_code: int | None, output_file: Any, as_json: bool) -> None:
    """Report a run of JOB (its id or unique name) that ran elsewhere: in a crontab,

    \b
      0 3 * * * cronwheel ping backup --start; backup.sh; cronwheel ping backup --exit-code $?

    With --exit-code alone, the status decides: 0 is a success, any other a fail (so a
    success ping that cannot be sent is never reported as the run's failure, as
    `backup.sh && ping || ping --fail` would).

    A report the tenant's submission rate holds back is sent again when the daemon says
    (up to three times, when that is within a minute); one that finds no daemon listening (a
    restart) or a 503 (a store failover) is sent again for up to a minute.
    """
    if kind is None:
        kind = "fail" if exit_code not in (None, 0) else "success"
    if kind == "start" and (exit_code is not None or output_file is not None):
        raise click.UsageError("--start takes no --exit-code or --output")
    body: dict[str, Any] = {"status": kind}
    if exit_code is not None:
        body["exitCode"] = exit_code
    if output_file is not None:  # a log of any size and bytes: its tail, as a run's output is kept
        tail = Tail()
        while chunk := output_file.read(1 << 16):
            tail.add(chunk)
        body["output"] = tail.text()
    data = _send_ping(app.client, job, body)
    if as_json:
        render.emit_json(data)
        return
    ex = data.get("execution")
    click.echo(f"Pinged {data['jobId']}: {kind}" + (f" (execution {ex['executionId']})" if ex else ""))


def _send_ping(client: Client, job: str, body: dict[str, Any]) -> dict[str, Any]:
    """The ping, waiting out the tenant's submitRate (PING_RATE_RETRIES), and a daemon that is
    away (a restart: nothing listens; a store failover: 503) for up to AWAY_LIMIT_SEC. A
    report lost there would read as a missed run, or a failure never told. Only a ping that
    cannot have reached a daemon is sent again, so none counts twice."""
    retries = PING_RATE_RETRIES
    away = Away("sending the ping again")
    delay = 0.5
    while True:
        try:
            return client.ping(job, body)
        except DaemonUnreachable as exc:
            if not exc.never_sent or not away.bear(str(exc)):
                raise
        except ApiError as exc:
            if exc.status == 503:
                if not away.bear(exc.detail):
                    raise
            else:
                wait = exc.problem.get("retryAfterSec")
                if (exc.status != 429 or exc.problem.get("quota") != "submitRate" or retries == 0
                        or not isinstance(wait, (int, float)) or not 0 <= wait <= PING_WAIT_MAX_SEC):  # fmt: skip
                    raise
                retries -= 1
                render.emit_note(f"the tenant's submitRate holds the ping back: sending it again in {wait:.2f} s")
                time.sleep(wait)
                continue
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


@click.group(context_settings=CONTEXT, invoke_without_command=True)
@click.option("--job", metavar="JOB", shell_complete=listing.complete_job, help="Only this job's notifications (its id or unique name).")
@click.option("--status", type=click.Choice(STATUSES, case_sensitive=False), help="Only those in this status (DEAD: the dead-letter queue).")
@click.option("-n", "--limit", type=WholeNumber(1, 10_000), default=50, show_default=True, help="At most N, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of notifications.")
@click.pass_context
def notifications(ctx: click.Context, job: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """What cronwheel told whom: notifications, newest first."""
    if ctx.invoked_subcommand is not None:
        return
    app: Cli = ctx.obj
    job_id = app.client.resolve_job(job)["jobId"] if job else None
    found: list[dict[str, Any]] = []
    before = None
    while len(found) < limit:
        page = app.client.list_notifications(job_id, status, min(1000, limit - len(found)), before)
        found.extend(page["notifications"])
        before = page.get("next")
        if not before:
            break
    if as_json:
        render.emit_json(found)
        return
    rows = [[n["notificationId"], n["event"], n["rule"]["via"], n["status"], str(n["attempt"]),
             render.fmt_local(n.get("createdAt")), views.clipped(n.get("error") or "", 60)] for n in found]  # fmt: skip
    render.emit_table(("ID", "EVENT", "VIA", "STATUS", "ATTEMPT", "CREATED", "ERROR"), rows, empty="no notifications")


@notifications.command("replay", context_settings=CONTEXT)
@click.argument("notification_id")
@click.option("--json", "as_json", is_flag=True, help="Print the notification as JSON.")
@pass_cli
def notifications_replay(app: Cli, /, notification_id: str, as_json: bool) -> None:
    """Send a dead-lettered (or held back) notification again."""
    data = app.client.replay_notification(notification_id)
    if as_json:
        render.emit_json(data)
    else:
        click.echo(f"Replaying notification {data['notificationId']} ({data['status']})")


@notifications.command("purge", context_settings=CONTEXT)
@click.argument("notification_id")
@click.pass_obj
def notifications_purge(app: Any, notification_id: str) -> None:
    """Delete a dead-lettered notification for good."""
    app.client.purge_notification(notification_id)
    click.echo(f"Purged notification {notification_id}")


@click.command(context_settings=CONTEXT)
@click.argument("name")
@click.option("--notify", "notify_rules", multiple=True, metavar="JSON", help="A default rule (repeatable); replaces all of them.")
@click.option("--notify-email", multiple=True, metavar="ADDRESS", help="Email ADDRESS when a run fails (repeatable).")
@click.option("--clear", is_flag=True, help="Remove every default rule.")
@click.option("--json", "as_json", is_flag=True, help="Print the rules as JSON.")
@pass_cli
def tenant_notify(app: Cli, /, name: str, notify_rules: tuple[str, ...], notify_email: tuple[str, ...], clear: bool,
                  as_json: bool) -> None:  # fmt: skip
    """Show, or with --notify/--notify-email/--clear replace, tenant NAME's default
    notification rules: they apply to its jobs that have no rules of their own."""
    if clear and (notify_rules or notify_email):
        raise click.UsageError("--clear replaces the rules with none: give it alone")
    if clear or notify_rules or notify_email:
        data = app.client.set_tenant_notify(name, notify_fields(notify_rules, notify_email, None).get("notify", []))
    else:
        data = app.client.get_tenant_notify(name)
    if as_json:
        render.emit_json(data["notify"])
        return
    if not data["notify"]:
        click.echo(f"tenant {name} has no default notification rules")
    for rule in data["notify"]:
        click.echo(views.rule_summary(rule))
