"""``cronwheel ping`` (a cron elsewhere reports its runs) and ``cronwheel notifications``
(what was told to whom, and the notifications' dead-letter queue)."""

from __future__ import annotations

from typing import Any

import click

from cronwheel.cli import render

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
STATUSES = ("PENDING", "RUNNING", "SENT", "DEAD", "HELD")
#: the output tail a ping sends (the API keeps at most 64 KiB)
PING_OUTPUT_CHARS = 65_536


@click.command(context_settings=CONTEXT)
@click.argument("job")
@click.option("--start", "kind", flag_value="start", help="The run has started.")
@click.option("--fail", "kind", flag_value="fail", help="The run failed.")
@click.option("--success", "kind", flag_value="success", default=True, help="The run succeeded. [default]")
@click.option("--exit-code", type=int, metavar="N", help="The run's exit status (with --fail or --success).")
@click.option("--output", "output_file", type=click.File("r"), metavar="FILE",
              help="Send the tail of FILE (- for standard input) as the run's output.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_obj
def ping(app: Any, job: str, kind: str, exit_code: int | None, output_file: Any, as_json: bool) -> None:
    """Report a run of JOB (its id or unique name) that ran elsewhere: in a crontab,

        0 3 * * * cronwheel ping backup --start; backup.sh && cronwheel ping backup || cronwheel ping backup --fail --exit-code $?
    """
    if kind == "start" and (exit_code is not None or output_file is not None):
        raise click.UsageError("--start takes no --exit-code or --output")
    body: dict[str, Any] = {"status": kind}
    if exit_code is not None:
        body["exitCode"] = exit_code
    if output_file is not None:
        body["output"] = output_file.read()[-PING_OUTPUT_CHARS:]
    data = app.client.ping(job, body)
    if as_json:
        render.emit_json(data)
        return
    ex = data.get("execution")
    click.echo(f"Pinged {data['jobId']}: {kind}" + (f" (execution {ex['executionId']})" if ex else ""))


@click.group(context_settings=CONTEXT, invoke_without_command=True)
@click.option("--job", metavar="JOB", help="Only this job's notifications (its id or unique name).")
@click.option("--status", type=click.Choice(STATUSES, case_sensitive=False), help="Only those in this status (DEAD: the dead-letter queue).")
@click.option("-n", "--limit", type=click.IntRange(1, 10_000), default=50, show_default=True, help="At most N, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of notifications.")
@click.pass_context
def notifications(ctx: click.Context, job: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """What cronwheel told whom: notifications, newest first."""
    if ctx.invoked_subcommand is not None:
        return
    app = ctx.obj
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
             render.fmt_local(n.get("createdAt")), (n.get("error") or "")[:60]] for n in found]  # fmt: skip
    render.emit_table(("ID", "EVENT", "VIA", "STATUS", "ATTEMPT", "CREATED", "ERROR"), rows, empty="no notifications")


@notifications.command("replay", context_settings=CONTEXT)
@click.argument("notification_id")
@click.option("--json", "as_json", is_flag=True, help="Print the notification as JSON.")
@click.pass_obj
def notifications_replay(app: Any, notification_id: str, as_json: bool) -> None:
    """Send a dead-lettered (or held back) notification again."""
    data = app.client.replay_notification(notification_id)
    if as_json:
        render.emit_json(data)
    else:
        click.echo(f"Replaying notification {data['notificationId']} ({data['status']})")
