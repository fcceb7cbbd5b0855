"""The commands on executions (the durable record of one tick, and its attempts): ``history``,
``logs`` (the daemon's events, or an execution's output) and ``effect`` (a job records a side
effect of the current execution, once)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from cronwheel.cli import listing, render, views
from cronwheel.cli.client import ApiError
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, pass_cli
from cronwheel.cli.exits import EX_DUPLICATE, EX_FENCED
from cronwheel.cli.follow import follow_events, follow_output, target_of
from cronwheel.core import schedule as sched


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("-n", "--limit", type=WholeNumber(1, 100_000), default=20, show_default=True, help="At most N executions.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of executions.")
@pass_cli
def history(app: Cli, job: str, limit: int, as_json: bool) -> None:
    """A job's executions, newest first (lag = started - scheduled)."""
    ref = app.client.resolve_job(job)
    executions: list[dict[str, Any]] = []
    before = None
    while len(executions) < limit:
        page = app.client.list_executions(ref["jobId"], min(1000, limit - len(executions)), before)
        executions.extend(page["executions"])
        before = page.get("next")
        if not before:
            break
    if as_json:
        render.emit_json(executions)
        return
    render.emit_table(views.HISTORY_COLUMNS, views.history_rows(executions, ref.get("target")),
                      empty=f"no executions of {views.job_label(ref)} yet")
    note = views.backlog_note(executions, ref, app.url)
    if note:
        render.emit_note(note)


@click.command(context_settings=CONTEXT)
@click.argument("execution", required=False, metavar="[EXECUTION|JOB]", shell_complete=listing.complete_job)
@click.option("-f", "--follow", is_flag=True, help="Keep printing the daemon's events as they happen (Ctrl-C stops).")
@click.option("--job", metavar="JOB", shell_complete=listing.complete_job, help="Only the events of this job (id or name) and its executions.")
@click.option("--event", metavar="NAME", help="Only this event, or every event under a prefix ending in '.' (e.g. lease.).")
@click.option("--since", metavar="WHEN", help="Only events newer than this: a duration back (90s, 1h, 2d) or an RFC 3339 instant.")
@click.option("-n", "--lines", "count", type=WholeNumber(0, 10_000), metavar="N", help="Past events to print first. [default 20; 10 with -f]")
@click.option("--json", "as_json", is_flag=True, help="Events: one JSON object per line. An execution: it (with its output) as JSON.")
@pass_cli
def logs(
    app: Cli, execution: str | None, follow: bool, job: str | None, event: str | None, since: str | None,
    count: int | None, as_json: bool,
) -> None:
    """The daemon's event log, or the output of an execution.

    \b
      cronwheel logs [-f] [--job JOB] [--since 1h] [-n N]   the daemon's events: the tail, or follow
      cronwheel logs EXECUTION                              an execution's output (an id has a ':')
      cronwheel logs JOB                                    the output of a job's last execution that started
      cronwheel logs -f JOB                                 follow a job's output as it is printed:
                                                            the current execution's, then the next ones'
      cronwheel logs -f EXECUTION                           follow one execution's output

    Events are those the daemon logs as JSON lines (execution.started, lease.fenced, …),
    kept in memory for the last 10,000 (fewer past 16 MiB); a client too slow to keep up sees a stream.dropped
    line in place of what it missed.

    With -f, a daemon that stops or cannot be reached (a restart) is waited for, as tail -F
    waits for a file: said once on stderr (again after 1, 2, 4… minutes, up to hourly), then
    followed on where it left off, nothing shown twice or skipped. Ctrl-C stops (exit 130).
    """
    event_options = since is not None or count is not None or event is not None or job is not None
    if execution is not None and event_options:
        raise click.UsageError(
            "give an EXECUTION or JOB (its output) or event options (--job, --since, -n, --event), not both"
        )
    if execution is not None:
        if not follow:
            _execution_output(app, execution, as_json)
        elif as_json:
            raise click.UsageError("-f EXECUTION|JOB prints output as it comes: --json does not go with it")
        else:
            follow_output(app.client, execution)
        return
    if since is not None:
        _since(since)
    job_id = app.client.resolve_job(job)["jobId"] if job else None
    n = count if count is not None else (10 if follow else 20)

    def show(record: dict[str, Any]) -> None:
        if as_json:
            click.echo(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        else:
            click.echo(views.event_line(record))

    if follow:
        follow_events(app.client, show, job=job_id, event=event, since=since, n=n)
        return
    for record in app.client.events(job=job_id, event=event, since=since, n=n):
        show(record)


def _since(text: str) -> None:
    try:
        sched.parse_duration(text)
    except sched.ScheduleError:
        try:
            sched.parse_instant(text)
        except sched.ScheduleError:
            raise click.BadParameter(
                f"{text!r} is neither a duration (90s, 10m, 1h, 2d) nor an RFC 3339 instant", param_hint="'--since'"
            ) from None


def _execution_output(app: Cli, execution: str, as_json: bool) -> None:
    data = None
    target = None  # the job's, when it was named: an HTTP target's code is its response status
    if ":" in execution:  # an execution id (job names may hold ':' too: fall back to those)
        try:
            data = app.client.get_execution(execution)
        except ApiError as exc:
            if exc.status != 404:
                raise
    if data is None:
        try:
            job = app.client.resolve_job(execution)
        except ApiError as exc:
            if exc.status != 404 or ":" not in execution:
                raise
            # it looks like an execution id, so say that is what is missing
            render.emit_error(f"no execution {execution} (and no job of that name)")
            sys.exit(1)
        last = job.get("lastRun")  # the latest execution that started, never a tick claimed ahead
        if not last:
            # its executions may be many (claimed ahead, waiting for a worker): none has started
            render.emit_error(f"{views.job_label(job)} has no execution on record that started: no output to show "
                              f"(`cronwheel history {render.safe(job.get('name') or job['jobId'], newlines=False)}` lists any that wait)")
            sys.exit(1)
        data = app.client.get_execution(last["executionId"])
        target = job.get("target")
    if as_json:
        render.emit_json(data)
        return
    if target is None and data.get("exitCode") is not None:
        target = target_of(app.client, data)
    output = data.get("output")
    if output:
        render.emit_output(output)
    render.emit_note(views.attempt_ending(data, target) + ("" if output else " (no output)"))



@click.command(context_settings=CONTEXT)
@click.argument("key")
@click.option("--execution-id", envvar="CRONWHEEL_EXECUTION_ID", metavar="ID", help="[env CRONWHEEL_EXECUTION_ID]")
@click.option("--lease-epoch", envvar="CRONWHEEL_LEASE_EPOCH", type=WholeNumber(0), metavar="N", help="[env CRONWHEEL_LEASE_EPOCH]")
@click.option("--worker-id", envvar="CRONWHEEL_WORKER_ID", metavar="ID", help="[env CRONWHEEL_WORKER_ID]")
@pass_cli
def effect(app: Cli, key: str, execution_id: str | None, lease_epoch: int | None, worker_id: str | None) -> None:
    """Record a side effect KEY once for the current execution, from inside a job.

    A job's command gets CRONWHEEL_URL, CRONWHEEL_EXECUTION_ID, CRONWHEEL_LEASE_EPOCH and
    CRONWHEEL_WORKER_ID in its environment; this records KEY for that execution, fenced by
    the lease epoch, so a retried or zombie attempt can tell whether the effect already happened:

    \b
      if cronwheel effect "charge-$ORDER"; then charge "$ORDER"; fi

    \b
    Exit codes:
      0  recorded now: go ahead and perform the effect
      3  duplicate: an earlier attempt recorded it already; do not repeat it
      4  fenced: this attempt's lease is stale (another worker took over), or the
         worker id is not the lease's holder (or not given); stop now
      1  the execution does not exist, has recorded 10,000 effects already (the most
         one execution may; not recorded), or another error
      69 no daemon reachable
    """
    if not execution_id:
        raise click.UsageError("no execution: CRONWHEEL_EXECUTION_ID is not set (run this inside a job, or pass --execution-id)")
    if lease_epoch is None:
        raise click.UsageError("no lease epoch: CRONWHEEL_LEASE_EPOCH is not set (run this inside a job, or pass --lease-epoch)")
    try:
        # no worker id (a run by hand): not the lease's holder, so a new key is refused (4) and
        # only a recorded one is told (3), which is all such a caller may learn
        result = app.client.record_effect(execution_id, worker_id or "cli", lease_epoch, key)
    except ApiError as exc:
        if exc.status == 409:
            render.emit_note(f"cronwheel: effect {key!r} fenced: {exc.detail}")
            sys.exit(EX_FENCED)
        raise
    if result.get("duplicate"):
        render.emit_note(f"cronwheel: effect {key!r} already recorded (duplicate)")
        sys.exit(EX_DUPLICATE)
    render.emit_note(f"cronwheel: effect {key!r} recorded")

