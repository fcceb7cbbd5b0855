"""The commands on jobs themselves: ``add``, ``ls``, ``show``, ``cancel``, ``pause``,
``resume`` and ``run`` (``update`` is ``jobedit``'s, beside the options it shares with
``add``)."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from cronwheel.cli import beyondcron as beyond
from cronwheel.cli import listing, render, views
from cronwheel.cli.away import Away, is_away
from cronwheel.cli.client import ApiError, DaemonUnreachable
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, local_now_ms, pass_cli
from cronwheel.cli.exits import EX_WAIT_TIMEOUT
from cronwheel.cli.jobedit import (
    definition_body,
    definition_options,
    duration,
    when_body,
    zone,
)
from cronwheel.core.limits import MAX_PAGE

#: an execution in one of these statuses has ended: `run --wait` waits for one
TERMINAL = frozenset({"SUCCEEDED", "DEAD", "CANCELLED", "SKIPPED"})
JOB_STATUSES = ("active", "paused", "cancelled", "succeeded", "failed")


@click.command(context_settings=CONTEXT)
@click.argument("schedule")
@click.argument("cmd", nargs=-1, metavar="[--] [CMD]...")
@definition_options
@click.option("--idempotency-key", metavar="KEY", help="Submitting twice with the same key creates one job.")
@click.option("--json", "as_json", is_flag=True, help="Print {jobId, nextRunAt} as JSON.")
@beyond.job_options
@pass_cli
def add(app: Cli, /, schedule: str, cmd: tuple[str, ...], idempotency_key: str | None, as_json: bool, **opts: Any) -> None:
    """Register a job.

    \b
    SCHEDULE is one of:
      a cron expression   '0 * * * *', '*/15 9-17 * * MON-FRI', 'H H * * *' (H: hashed offset)
      an interval         '@every 5m'
      a macro             @hourly @daily @weekly @monthly @yearly
      an instant          2026-12-01T10:00:00Z (a one-off)
      an offset           +90s, +2h (a one-off, from this machine's clock; the unit is required)

    The target is CMD (put it after `--` when it has options of its own; several words are
    shell-quoted, a single word is taken as a shell command line as is), or one of --http-url,
    --python, --queue. A name is unique among the tenant's jobs that are not cancelled: to
    change a job, use `cronwheel update`.

    \b
    Examples:
      cronwheel add '0 3 * * *' --name backup --tz Europe/Paris -- /usr/local/bin/backup --full
      cronwheel add @hourly 'curl -fsS https://example.com/ping | logger'
      cronwheel add '@every 30s' --http-url https://example.com/tick --http-method POST
    """
    body = when_body(schedule, opts["tz"])
    body.update(definition_body(cmd, target_required=True, **opts))
    name, tz = opts["name"], opts["tz"]
    body.update(beyond.job_fields(app.client))
    created = app.client.create_job(body, idempotency_key)
    if as_json:
        render.emit_json({"jobId": created.body["jobId"], "nextRunAt": created.body.get("nextRunAt")})
        return
    label = f"{created.body['jobId']} ({name})" if name else created.body["jobId"]
    if created.replayed:
        click.echo(f"Job {label} already exists (same idempotency key): nothing new was created")
    else:
        click.echo(f"Created job {label}")
    click.echo(f"Next run: {render.fmt_both(created.body.get('nextRunAt'), zone(tz) if tz and tz != 'UTC' else None)}")



@click.command("ls", context_settings=CONTEXT)
@click.option("--status", type=click.Choice(JOB_STATUSES, case_sensitive=False), help="Only jobs in this status.")
@click.option("--tenant", "tenant_name", metavar="NAME", help="Only this tenant's jobs (admin).")
@click.option("-n", "--limit", type=WholeNumber(1, 100_000), default=100, show_default=True, help="At most N jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of jobs.")
@pass_cli
def ls(app: Cli, status: str | None, tenant_name: str | None, limit: int, as_json: bool) -> None:
    """List jobs, ordered by id: when each runs next and how long is LEFT until then, and
    how long ago it LAST started (like `systemctl list-timers`)."""
    jobs: list[dict[str, Any]] = []
    after = None
    while len(jobs) < limit:
        page = app.client.list_jobs(status, min(MAX_PAGE, limit - len(jobs)), after, tenant_name)
        jobs.extend(page["jobs"])
        after = page.get("next")
        if not after:
            break
    if as_json:
        render.emit_json(jobs)
        return
    render.emit_table(listing.COLUMNS, listing.rows(jobs, local_now_ms()), empty="no jobs")


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pass_cli
def show(app: Cli, job: str, as_json: bool) -> None:
    """Show a job (JOB: its id or unique name)."""
    data = app.client.resolve_job(job)
    if as_json:
        render.emit_json(data)
        return
    tz = data.get("timezone")
    render.emit_kv(views.job_details(data, zone(tz) if tz and tz != "UTC" and data.get("schedule") else None))



def _job_action(app: Cli, ref: str, verb: str, as_json: bool) -> None:
    job = app.client.resolve_job(ref)
    call = {"cancel": app.client.cancel_job, "pause": app.client.pause_job, "resume": app.client.resume_job}[verb]
    result = call(job["jobId"])
    if as_json:
        render.emit_json(result)
        return
    past = {"cancel": "Cancelled", "pause": "Paused", "resume": "Resumed"}[verb]
    click.echo(f"{past} job {views.job_label(result)}")
    if verb == "resume":
        click.echo(f"Next run: {render.fmt_both(result.get('nextRunAt'))}")


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pass_cli
def cancel(app: Cli, job: str, as_json: bool) -> None:
    """Cancel a job: no more executions, and running ones are aborted."""
    _job_action(app, job, "cancel", as_json)


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pass_cli
def pause(app: Cli, job: str, as_json: bool) -> None:
    """Pause a job: no tick after now runs (executions already started go on)."""
    _job_action(app, job, "pause", as_json)


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pass_cli
def resume(app: Cli, job: str, as_json: bool) -> None:
    """Resume a paused job; its next run is computed from now."""
    _job_action(app, job, "resume", as_json)


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--wait", is_flag=True, help="Wait until the execution (with its retries) ends; exit with its exit code.")
@click.option("--timeout", metavar="DURATION", help="With --wait: give up after this long (exit 124).")
@click.option("--json", "as_json", is_flag=True, help="Print the execution as JSON.")
@pass_cli
def run(app: Cli, job: str, wait: bool, timeout: str | None, as_json: bool) -> None:
    """Trigger an execution of a job now, outside its schedule (the API's trigger).

    With --wait, the execution's output is printed when it ends and the exit status is the
    command's (0 on success; 128+N when killed by signal N); one that failed without an
    exit code (HTTP, Python, timeout, cancelled) exits 1; 124 when --timeout expires first.
    A daemon that stops answering meanwhile (a restart) is waited for, up to a minute: the
    execution is stored and runs when it is back.
    """
    limit = duration(timeout, "'--timeout'")
    if limit is not None and not wait:
        raise click.UsageError("--timeout goes with --wait")
    ref = app.client.resolve_job(job)
    execution = app.client.trigger_job(ref["jobId"])
    eid = execution["executionId"]
    if not wait:
        if as_json:
            render.emit_json(execution)
        else:
            click.echo(f"Triggered execution {eid}")
        return
    queue = (ref.get("target") or {}).get("queue")
    render.emit_note(f"Triggered execution {eid}, waiting for it to end…" + (
        f" (queue {queue!r}: it starts when a remote worker claims it, e.g. `{views.worker_hint(queue, app.url)}`)"
        if isinstance(queue, str) else ""))
    deadline = None if limit is None else time.monotonic() + limit
    delay = 0.2
    away = Away(f"still waiting: execution {eid} is stored and runs once the daemon is back")
    while execution.get("status") not in TERMINAL:
        if deadline is not None and time.monotonic() >= deadline:
            render.emit_error(f"execution {eid} still {execution.get('status')} after {timeout}")
            sys.exit(EX_WAIT_TIMEOUT)
        time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(delay * 1.5, 2.0)
        try:
            execution = app.client.get_execution(eid)
            away.over()
        except (DaemonUnreachable, ApiError) as exc:  # a GET: asking again is always safe
            if not is_away(exc) or not away.bear(str(exc)):
                raise
    if as_json:
        render.emit_json(execution)
    elif execution.get("output"):
        render.emit_output(execution["output"])
    status, code = execution.get("status"), execution.get("exitCode")
    detail = views.result_code(code, ref.get("target")) if code is not None else (execution.get("error") or execution.get("reason") or "")
    render.emit_note(f"execution {eid}: {status}" + (f" ({detail})" if detail else ""))
    sys.exit(_exit_status(status, code))


def _exit_status(status: str | None, code: int | None) -> int:
    if status == "SUCCEEDED":
        return 0
    if code is None or code == 0:
        return 1
    if code < 0:  # killed by a signal
        return min(128 - code, 255)
    return code if code <= 255 else 1

