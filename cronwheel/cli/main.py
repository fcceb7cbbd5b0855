"""The ``cronwheel`` command: a person's first interface to the scheduler.

Every command except ``next SCHEDULE``, ``serve`` and ``worker`` talks to a running daemon
over its HTTP API (by default the Unix socket in the data directory). Exit codes: 0 ok,
1 the daemon refused (the problem's detail is printed) or the object is not found,
2 usage error, 69 no daemon reachable (EX_UNAVAILABLE); ``run --wait`` and ``effect`` have
their own, listed in their help.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import click

from cronwheel import __version__
from cronwheel.cli import beyondcron as beyond
from cronwheel.cli import config as cfg
from cronwheel.cli import jobs_as_code, listing, render
from cronwheel.cli.admin import local_admin_token, tenant, token
from cronwheel.cli.client import ApiError, Client, ClientError, DaemonUnreachable
from cronwheel.cli.follow import follow_output
from cronwheel.cli.jobedit import (
    CRON_FIELD,
    EXAMPLE_JOB_ID,
    definition_body,
    definition_options,
    update,
    when_body,
)
from cronwheel.cli.jobedit import duration as _duration
from cronwheel.cli.jobedit import local_now_ms as _local_now_ms
from cronwheel.cli.jobedit import schedule_error as _schedule_error
from cronwheel.cli.jobedit import zone as _zone
from cronwheel.cli.notify import notifications, ping, tenant_notify, watch
from cronwheel.cli.transfer import export, import_crontab
from cronwheel.core import herd
from cronwheel.core import schedule as sched
from cronwheel.core.config import ConfigError
from cronwheel.core.schedule import looks_like_instant
from cronwheel.obs.events import iso_ms

EX_UNAVAILABLE = 69
EX_DUPLICATE = 3
EX_FENCED = 4
EX_WAIT_TIMEOUT = 124
TERMINAL = frozenset({"SUCCEEDED", "DEAD", "CANCELLED", "SKIPPED"})
JOB_STATUSES = ("active", "paused", "cancelled", "succeeded", "failed")
_HASHED = re.compile(r"(?<![A-Za-z@])H(?![A-Za-z])")

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
#: `cronwheel import` sends this many jobs per POST /v1/jobs/batch (the API takes up to 1,000)


# ---------------------------------------------------------------- context


def default_data_dir() -> Path:
    """``$CRONWHEEL_DATA_DIR``, else systemd's ``$STATE_DIRECTORY`` (its first entry), else
    ``./.cronwheel``."""
    if os.environ.get("CRONWHEEL_DATA_DIR"):
        return Path(os.environ["CRONWHEEL_DATA_DIR"])
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if state:
        return Path(state)
    return Path(".cronwheel")


class Cli:
    """What every command shares: where the daemon is, and a client for it."""

    def __init__(self, url: str | None, data_dir: Path, token: str | None) -> None:
        self.data_dir = data_dir
        self.url = url or f"unix:{data_dir.absolute() / 'api.sock'}"
        self.token = token
        self._client: Client | None = None

    def _token(self) -> str | None:
        """--token / CRONWHEEL_TOKEN, else (for a TCP URL) the daemon's ``<data-dir>/admin-token``
        when this user can read it: a local operator never copies a token by hand. The Unix
        socket needs none (it is admin by file permission)."""
        if self.token or self.url.startswith("unix:"):
            return self.token
        return local_admin_token(self.data_dir, self.url)

    @property
    def client(self) -> Client:
        if self._client is None:
            try:
                self._client = Client(self.url, self._token())
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="'--url' / CRONWHEEL_URL") from None
        return self._client


pass_cli = click.make_pass_decorator(Cli)


def _unreachable_exit(exc: DaemonUnreachable, prefix: str = "", app: Cli | None = None) -> NoReturn:
    render.emit_error(prefix + str(exc))
    where = ""
    if app is not None and app.url == f"unix:{app.data_dir.absolute() / 'api.sock'}":
        # the default lookup: the data directory (./.cronwheel is relative to where you are)
        where = f"No daemon runs with the data directory {app.data_dir.absolute()}. "
    render.emit_note(
        f"{where}Start one with `cronwheel serve` (or `make serve` in a source checkout); "
        "if the daemon uses another data directory, name it with --data-dir DIR or "
        "CRONWHEEL_DATA_DIR; or point --url / CRONWHEEL_URL at a running daemon."
    )
    sys.exit(EX_UNAVAILABLE)


class _Group(click.Group):
    """Turns client errors into messages and exit codes, never tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DaemonUnreachable as exc:
            _unreachable_exit(exc, app=ctx.find_object(Cli))
        except ApiError as exc:
            render.emit_error(exc.detail)
            sys.exit(1)
        except ClientError as exc:
            render.emit_error(str(exc))
            sys.exit(1)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.option("--url", envvar="CRONWHEEL_URL", metavar="URL",
              help="The daemon: http://HOST:PORT or unix:/PATH. [env CRONWHEEL_URL; default unix:DATA_DIR/api.sock]")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="The daemon's data directory. [env CRONWHEEL_DATA_DIR, else $STATE_DIRECTORY, else ./.cronwheel]")
@click.option("--token", envvar="CRONWHEEL_TOKEN", metavar="TOKEN",
              help="Bearer token for the API. [env CRONWHEEL_TOKEN]")
@click.option("--config", "config_path", metavar="FILE",
              help="The configuration file (its data_dir tells commands where the daemon is). "
                   "[env CRONWHEEL_CONFIG; default /etc/cronwheel/cronwheel.toml when it exists]")
@click.version_option(__version__, "-V", "--version", prog_name="cronwheel")
@click.pass_context
def cli(ctx: click.Context, url: str | None, data_dir: Path | None, token: str | None, config_path: str | None) -> None:
    """cronwheel: a distributed job scheduler for cron and one-off jobs.

    \b
    Quick start:
      cronwheel serve &                                  # a daemon on ./.cronwheel
      cronwheel add '*/5 * * * *' --name tidy -- find /tmp -mtime +7 -delete
      cronwheel add +10m -- echo later                   # a one-off in 10 minutes
      cronwheel next 'H 3 * * 1-5' -n 3                  # no daemon needed
      cronwheel ls ; cronwheel history tidy ; cronwheel run tidy --wait

    Exit codes: 0 ok, 1 refused or not found, 2 usage error, 69 no daemon reachable.
    """
    # the file is read for every command: `serve` takes its keys, the others find the daemon
    # through its data_dir, so on an installed host `cronwheel ls` works from any directory
    file = cfg.NO_FILE if ctx.resilient_parsing else cfg.load_or_exit(serve, config_path)
    ctx.meta["cronwheel.config"] = file
    ctx.default_map = {"serve": file.values}
    ctx.obj = make_cli(url, data_dir, token, file)


def make_cli(url: str | None, data_dir: Path | None, token: str | None, file: cfg.FileValues) -> Cli:
    """The data dir: --data-dir, else $CRONWHEEL_DATA_DIR, else the file's data_dir, else
    $STATE_DIRECTORY, else ./.cronwheel."""
    if data_dir is None and not os.environ.get("CRONWHEEL_DATA_DIR") and file.values.get("data_dir"):
        data_dir = file.values["data_dir"]
    return Cli(url, data_dir or default_data_dir(), token)


def completion_client(params: dict[str, Any]) -> Client:
    """A client for the daemon the root command's options (and the configuration file) name,
    for shell completion, which runs without the group's callback."""
    try:
        file = cfg.load(serve, cfg.find_config(params.get("config_path")))
    except ConfigError:
        file = cfg.NO_FILE
    return make_cli(params.get("url"), params.get("data_dir"), params.get("token"), file).client


# ---------------------------------------------------------------- helpers


def _schedule_like(text: str) -> bool:
    """Could ``text`` only be meant as a schedule (not a job name)?"""
    words = text.split()
    if not words:
        return True
    return text.lstrip().startswith("@") or looks_like_instant(text) or bool(CRON_FIELD.match(words[0]))


def _job_label(job: dict[str, Any]) -> str:
    return render.safe(f"{job['jobId']} ({job['name']})" if job.get("name") else job["jobId"], newlines=False)


# ---------------------------------------------------------------- add


@cli.command(context_settings=CONTEXT)
@click.argument("schedule")
@click.argument("cmd", nargs=-1, metavar="[--] [CMD]...")
@definition_options
@click.option("--idempotency-key", metavar="KEY", help="Submitting twice with the same key creates one job.")
@click.option("--json", "as_json", is_flag=True, help="Print {jobId, nextRunAt} as JSON.")
@beyond.job_options
@pass_cli
def add(app: Cli, schedule: str, cmd: tuple[str, ...], idempotency_key: str | None, as_json: bool, **opts: Any) -> None:
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
    click.echo(f"Next run: {render.fmt_both(created.body.get('nextRunAt'), _zone(tz) if tz and tz != 'UTC' else None)}")


# ---------------------------------------------------------------- reading jobs


@cli.command("ls", context_settings=CONTEXT)
@click.option("--status", type=click.Choice(JOB_STATUSES, case_sensitive=False), help="Only jobs in this status.")
@click.option("--tenant", "tenant_name", metavar="NAME", help="Only this tenant's jobs (admin).")
@click.option("-n", "--limit", type=click.IntRange(1, 100_000), default=100, show_default=True, help="At most N jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of jobs.")
@pass_cli
def ls(app: Cli, status: str | None, tenant_name: str | None, limit: int, as_json: bool) -> None:
    """List jobs, ordered by id: when each runs next and how long is LEFT until then, and
    how long ago it LAST started (like `systemctl list-timers`)."""
    jobs: list[dict[str, Any]] = []
    after = None
    while len(jobs) < limit:
        page = app.client.list_jobs(status, min(1000, limit - len(jobs)), after, tenant_name)
        jobs.extend(page["jobs"])
        after = page.get("next")
        if not after:
            break
    if as_json:
        render.emit_json(jobs)
        return
    render.emit_table(listing.COLUMNS, listing.rows(jobs, _local_now_ms()), empty="no jobs")


@cli.command(context_settings=CONTEXT)
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
    render.emit_kv(render.job_details(data, _zone(tz) if tz and tz != "UTC" and data.get("schedule") else None))


@cli.command("next", context_settings=CONTEXT)
@click.argument("what", metavar="SCHEDULE|JOB", shell_complete=listing.complete_job)
@click.option("-n", "count", type=click.IntRange(1, 1000), default=5, show_default=True, help="How many fire times.")
@click.option("--tz", metavar="ZONE", help="Evaluate (and show) in this IANA zone. [default UTC, or the job's zone]")
@click.option("--from", "from_", metavar="INSTANT", help="Start after this instant (RFC 3339 or +DURATION). [default now]")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of RFC 3339 UTC instants.")
@pass_cli
def next_(app: Cli, what: str, count: int, tz: str | None, from_: str | None, as_json: bool) -> None:
    """Show when a schedule or a job fires next.

    A schedule is evaluated right here, no daemon needed; a job (id or name) is looked up
    on the daemon and evaluated with its own id, so H and @every offsets are its real ones.
    """
    zone = _zone(tz)
    now = _local_now_ms()
    start = now
    if from_ is not None:
        try:
            start = sched.parse_instant(from_, now)
        except sched.ScheduleError as exc:
            raise click.BadParameter(str(exc), param_hint="'--from'") from None

    fires: list[int] = []
    display_zone = zone
    if looks_like_instant(what):
        try:
            at = sched.parse_instant(what, now)
        except sched.ScheduleError as exc:
            raise click.BadParameter(str(exc), param_hint="SCHEDULE") from None
        fires = [at] if at > start else []
    else:
        job: dict[str, Any] = {}
        parsed: sched.Schedule | None = None
        try:
            parsed = sched.parse_schedule(what, EXAMPLE_JOB_ID, tz or "UTC")
        except sched.ScheduleError as exc:
            if _schedule_like(what):
                raise click.BadParameter(_schedule_error(what, exc), param_hint="SCHEDULE") from None
            job = _job_for_next(app, what, exc)
        if job and job.get("status") not in ("ACTIVE", None):
            render.emit_note(f"note: job {_job_label(job)} is {job['status']}: it does not run at these times")
        if parsed is not None:
            if parsed.kind == "every" or _HASHED.search(what):
                render.emit_note(
                    "note: H and @every offsets hash the job id; these times are for an example id "
                    "(each job gets its own offset, see `cronwheel next JOB`)"
                )
        elif job.get("schedule"):
            job_tz = tz or job.get("timezone") or "UTC"
            parsed = sched.parse_schedule(job["schedule"], job["jobId"], job_tz)
            if display_zone is None and job_tz != "UTC":
                display_zone = _zone(job_tz)
        else:  # a one-off job
            at_text = job.get("nextRunAt") or job.get("runAt")
            if at_text:
                at = sched.parse_instant(at_text)
                fires = [at] if at > start else []
        if job and (job.get("calendars") or job.get("activeFrom") or job.get("activeUntil")) and not tz:
            fires = beyond.upcoming_for_next(app.client, job, count, start)
            parsed = None
        if parsed is not None:
            t = start
            for _ in range(count):
                nxt = parsed.next_after(t)
                if nxt is None:
                    break
                fires.append(nxt)
                t = nxt

    if as_json:
        render.emit_json([iso_ms(f) for f in fires])
        return
    if not fires:
        render.emit_note("never fires after " + render.fmt_utc(render.ms_to_dt(start)))
        return
    for f in fires:
        dt = render.ms_to_dt(f)
        click.echo(f"{render.fmt_local(dt, display_zone)}  {render.fmt_utc(dt)}")


def _job_for_next(app: Cli, ref: str, schedule_exc: Exception) -> dict[str, Any]:
    try:
        return app.client.resolve_job(ref)
    except DaemonUnreachable as exc:
        _unreachable_exit(exc, f"{ref!r} is not a schedule ({schedule_exc}); to look it up as a job: ", app)
    except ApiError as exc:
        if exc.status == 404:
            render.emit_error(f"{ref!r} is neither a schedule ({schedule_exc}) nor a known job")
            sys.exit(1)
        raise


# ---------------------------------------------------------------- changing jobs


def _job_action(app: Cli, ref: str, verb: str, as_json: bool) -> None:
    job = app.client.resolve_job(ref)
    call = {"cancel": app.client.cancel_job, "pause": app.client.pause_job, "resume": app.client.resume_job}[verb]
    result = call(job["jobId"])
    if as_json:
        render.emit_json(result)
        return
    past = {"cancel": "Cancelled", "pause": "Paused", "resume": "Resumed"}[verb]
    click.echo(f"{past} job {_job_label(result)}")
    if verb == "resume":
        click.echo(f"Next run: {render.fmt_both(result.get('nextRunAt'))}")


@cli.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pass_cli
def cancel(app: Cli, job: str, as_json: bool) -> None:
    """Cancel a job: no more runs, and running ones are aborted."""
    _job_action(app, job, "cancel", as_json)


@cli.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pass_cli
def pause(app: Cli, job: str, as_json: bool) -> None:
    """Pause a job (runs already started go on)."""
    _job_action(app, job, "pause", as_json)


@cli.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
@pass_cli
def resume(app: Cli, job: str, as_json: bool) -> None:
    """Resume a paused job; its next run is computed from now."""
    _job_action(app, job, "resume", as_json)


@cli.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--wait", is_flag=True, help="Wait until the run (with its retries) ends; exit with its exit code.")
@click.option("--timeout", metavar="DURATION", help="With --wait: give up after this long (exit 124).")
@click.option("--json", "as_json", is_flag=True, help="Print the execution as JSON.")
@pass_cli
def run(app: Cli, job: str, wait: bool, timeout: str | None, as_json: bool) -> None:
    """Run a job now, outside its schedule.

    With --wait, the run's output is printed when it ends and the exit status is the
    command's (0 on success; 128+N when killed by signal N); a run that failed without an
    exit code (HTTP, Python, timeout, cancelled) exits 1; 124 when --timeout expires first.
    """
    limit = _duration(timeout, "'--timeout'")
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
    render.emit_note(f"Triggered execution {eid}, waiting for it to end…")
    deadline = None if limit is None else time.monotonic() + limit
    delay = 0.2
    while execution.get("status") not in TERMINAL:
        if deadline is not None and time.monotonic() >= deadline:
            render.emit_error(f"execution {eid} still {execution.get('status')} after {timeout}")
            sys.exit(EX_WAIT_TIMEOUT)
        time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(delay * 1.5, 2.0)
        execution = app.client.get_execution(eid)
    if as_json:
        render.emit_json(execution)
    elif execution.get("output"):
        render.emit_output(execution["output"])
    status, code = execution.get("status"), execution.get("exitCode")
    detail = f"exit {code}" if code is not None else (execution.get("error") or execution.get("reason") or "")
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


# ---------------------------------------------------------------- executions


@cli.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("-n", "--limit", type=click.IntRange(1, 100_000), default=20, show_default=True, help="At most N executions.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of executions.")
@pass_cli
def history(app: Cli, job: str, limit: int, as_json: bool) -> None:
    """A job's runs, newest first (lag = started - scheduled)."""
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
    render.emit_table(render.HISTORY_COLUMNS, render.history_rows(executions), empty=f"no runs of {_job_label(ref)} yet")


@cli.command(context_settings=CONTEXT)
@click.argument("execution", required=False, metavar="[EXECUTION|JOB]")
@click.option("-f", "--follow", is_flag=True, help="Keep printing the daemon's events as they happen (Ctrl-C stops).")
@click.option("--job", metavar="JOB", shell_complete=listing.complete_job, help="Only the events of this job (id or name) and its executions.")
@click.option("--event", metavar="NAME", help="Only this event, or every event under a prefix ending in '.' (e.g. lease.).")
@click.option("--since", metavar="WHEN", help="Only events newer than this: a duration back (90s, 1h, 2d) or an RFC 3339 instant.")
@click.option("-n", "--lines", "count", type=click.IntRange(0, 10_000), metavar="N", help="Past events to print first. [default 20; 10 with -f]")
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
      cronwheel logs JOB                                    the output of a job's last run that started
      cronwheel logs -f JOB                                 follow a job's output as it is printed:
                                                            the current run's, then the next runs'
      cronwheel logs -f EXECUTION                           follow one execution's output

    Events are those the daemon logs as JSON lines (execution.started, lease.fenced, …),
    kept in memory for the last 10,000; a client too slow to keep up sees a stream.dropped
    line in place of what it missed.
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
    try:
        for record in app.client.events(follow=follow, job=job_id, event=event, since=since, n=n):
            if as_json:
                click.echo(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
            else:
                click.echo(render.event_line(record))
    except KeyboardInterrupt:
        sys.exit(130)
    if follow:
        render.emit_note("the daemon closed the event stream (it is stopping)")


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
        last = job.get("lastRun")  # the latest run that started, never a tick claimed ahead
        if not last:
            render.emit_error(f"{_job_label(job)} has no run on record (none has started yet)")
            sys.exit(1)
        data = app.client.get_execution(last["executionId"])
    if as_json:
        render.emit_json(data)
        return
    output = data.get("output")
    if output:
        render.emit_output(output)
    code = data.get("exitCode")
    tail = f", exit {code}" if code is not None else ""
    err = f": {data['error']}" if data.get("error") else ""
    render.emit_note(f"execution {data['executionId']}: {data.get('status')}{tail}{err}" + ("" if output else " (no output)"))


# ---------------------------------------------------------------- dead-letter queue


@cli.group(context_settings=CONTEXT)
def dlq() -> None:
    """The dead-letter queue: runs that spent all their attempts."""


@dlq.command("ls", context_settings=CONTEXT)
@click.option("-n", "--limit", type=click.IntRange(1, 100_000), default=100, show_default=True, help="At most N entries.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of executions.")
@pass_cli
def dlq_ls(app: Cli, limit: int, as_json: bool) -> None:
    """List dead-lettered executions."""
    dead: list[dict[str, Any]] = []
    after = None
    while len(dead) < limit:
        page = app.client.list_dead(min(1000, limit - len(dead)), after)
        dead.extend(page["executions"])
        after = page.get("next")
        if not after:
            break
    if as_json:
        render.emit_json(dead)
        return
    render.emit_table(render.DLQ_COLUMNS, render.dlq_rows(dead), empty="the dead-letter queue is empty")


@dlq.command("replay", context_settings=CONTEXT)
@click.argument("execution_id")
@click.option("--json", "as_json", is_flag=True, help="Print the execution as JSON.")
@pass_cli
def dlq_replay(app: Cli, execution_id: str, as_json: bool) -> None:
    """Run a dead-lettered execution again, with a fresh series of attempts."""
    data = app.client.replay_dead(execution_id)
    if as_json:
        render.emit_json(data)
    else:
        click.echo(f"Replaying execution {data['executionId']} ({data.get('status')})")


@dlq.command("purge", context_settings=CONTEXT)
@click.argument("execution_id")
@pass_cli
def dlq_purge(app: Cli, execution_id: str) -> None:
    """Delete a dead-lettered execution."""
    app.client.purge_dead(execution_id)
    click.echo(f"Purged execution {execution_id}")


# ---------------------------------------------------------------- moving jobs in and out


def alias(command: click.Command, name: str) -> click.Command:
    """``command`` under a second name, whose help says so instead of repeating itself."""
    copied = copy.copy(command)
    copied.name = name
    copied.short_help = f"Another name for {command.name}."
    copied.help = f"Another name for `cronwheel {command.name}`.\n\n{command.help or ''}"
    return copied


cli.add_command(import_crontab)
cli.add_command(alias(import_crontab, "import"))
cli.add_command(export)


@cli.command(context_settings=CONTEXT)
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
      bash:  eval "$(cronwheel completion bash)"     (in ~/.bashrc)
      zsh:   eval "$(cronwheel completion zsh)"      (in ~/.zshrc)
      fish:  cronwheel completion fish > ~/.config/fish/completions/cronwheel.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None
    click.echo(cls(cli, {}, "cronwheel", "_CRONWHEEL_COMPLETE").source())


# ---------------------------------------------------------------- the node


@cli.command(context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@pass_cli
def status(app: Cli, as_json: bool) -> None:
    """The daemon's health: jobs, queue depths, workers, dispatch lag."""
    data = app.client.status()
    if as_json:
        render.emit_json(data)
        return
    render.emit_status(data)


@cli.command(context_settings=CONTEXT)
@click.argument("schedule", required=False)
@click.option("--window", default="1h", show_default=True, metavar="DURATION", help="How far ahead to look (1m to 1d).")
@click.option("--top", type=click.IntRange(1, 100), default=10, show_default=True, metavar="N", help="How many of the busiest seconds to show.")
@click.option("--threshold", type=click.IntRange(1), default=100, show_default=True, metavar="N", help="Hint when one second holds more than N ticks.")
@click.option("--tz", metavar="ZONE", help="With SCHEDULE: evaluate it in this IANA zone. [default UTC]")
@click.option("--json", "as_json", is_flag=True, help="Print the herd summary (or SCHEDULE's check) as JSON.")
@pass_cli
def lint(app: Cli, schedule: str | None, window: str, top: int, threshold: int, tz: str | None, as_json: bool) -> None:
    """Preview the coming hour's herd, or check one SCHEDULE.

    Without SCHEDULE: asks the daemon how many ticks of the active jobs fall in each second
    of the coming hour (--window), and shows the busiest seconds and a per-minute bar chart,
    with a hint when one second holds more than --threshold ticks.

    With SCHEDULE (no daemon needed): validates it, shows its next 5 runs, and suggests an
    H form for a top-of-hour expression such as '0 * * * *'.
    """
    if schedule is not None:
        _lint_schedule(schedule, tz, as_json)
        return
    secs = _duration(window, "'--window'") or 0
    if not 60 <= secs <= 86_400:
        raise click.BadParameter("must be between 1m and 1d", param_hint="'--window'")
    data = app.client.herd(int(secs), top)
    hint = _herd_hint(data, threshold)
    if as_json:
        render.emit_json({**data, "threshold": threshold, "hint": hint})
        return
    render.emit_herd(data)
    if hint:
        render.emit_note(hint)


def _herd_hint(data: dict[str, Any], threshold: int) -> str | None:
    busiest = data.get("busiest") or []
    if not busiest or busiest[0]["count"] <= threshold:
        return None
    first = busiest[0]
    pinned = [s["schedule"] for s in first.get("schedules", []) if herd.top_of_hour_suggestion(s["schedule"])]
    advice = "; ".join(f"{s!r} -> {herd.top_of_hour_suggestion(s)!r}" for s in pinned[:3])
    return (
        f"hint: {first['count']} ticks fall in the second {first['at']} (more than {threshold}): "
        "spread them with H in the schedule (the job id picks a stable minute/second)"
        + (f", e.g. {advice}" if advice else "")
        + ", or give the jobs a jitter window (jitterSec, `cronwheel add --jitter 30s`)"
    )


def _lint_schedule(text: str, tz: str | None, as_json: bool) -> None:
    _zone(tz)
    try:
        parsed = sched.parse_schedule(text, EXAMPLE_JOB_ID, tz or "UTC")
    except sched.ScheduleError as exc:
        if as_json:
            render.emit_json({"schedule": text, "valid": False, "error": _schedule_error(text, exc)})
            sys.exit(1)
        render.emit_error(f"invalid schedule {text!r}: {_schedule_error(text, exc)}")
        sys.exit(1)
    fires: list[int] = []
    t = _local_now_ms()
    for _ in range(5):
        nxt = parsed.next_after(t)
        if nxt is None:
            break
        fires.append(nxt)
        t = nxt
    suggestion = herd.top_of_hour_suggestion(text)
    hashed = parsed.kind == "every" or bool(_HASHED.search(text))
    if as_json:
        render.emit_json({
            "schedule": text, "valid": True, "timezone": tz or "UTC", "expression": parsed.expression,
            "next": [iso_ms(f) for f in fires], "hashed": hashed, "suggestion": suggestion,
        })
        return
    click.echo(f"ok: {text!r} is valid ({parsed.expression}, {tz or 'UTC'})")
    zone = _zone(tz)
    for f in fires:
        dt = render.ms_to_dt(f)
        click.echo(f"  {render.fmt_local(dt, zone)}  {render.fmt_utc(dt)}")
    if not fires:
        click.echo("  never fires again")
    if hashed:
        render.emit_note("note: H and @every offsets hash the job id; these times are for an example id")
    if suggestion:
        render.emit_note(
            f"hint: {text!r} fires at the top of the hour with everybody else's; "
            f"{suggestion!r} runs as often at a stable, per-job minute (see `cronwheel lint` for the herd)"
        )


@cli.command(context_settings=CONTEXT)
@click.argument("key")
@click.option("--execution-id", envvar="CRONWHEEL_EXECUTION_ID", metavar="ID", help="[env CRONWHEEL_EXECUTION_ID]")
@click.option("--lease-epoch", envvar="CRONWHEEL_LEASE_EPOCH", type=click.IntRange(0), metavar="N", help="[env CRONWHEEL_LEASE_EPOCH]")
@click.option("--worker-id", envvar="CRONWHEEL_WORKER_ID", metavar="ID", help="[env CRONWHEEL_WORKER_ID]")
@pass_cli
def effect(app: Cli, key: str, execution_id: str | None, lease_epoch: int | None, worker_id: str | None) -> None:
    """Record a side effect KEY once for the current run, from inside a job.

    A job's command gets CRONWHEEL_URL, CRONWHEEL_EXECUTION_ID, CRONWHEEL_LEASE_EPOCH and
    CRONWHEEL_WORKER_ID in its environment; this records KEY for that execution, fenced by
    the lease epoch, so a retried or zombie run can tell whether the effect already happened:

    \b
      if cronwheel effect "charge-$ORDER"; then charge "$ORDER"; fi

    \b
    Exit codes:
      0  recorded now: go ahead and perform the effect
      3  duplicate: an earlier attempt recorded it already; do not repeat it
      4  fenced: this run's lease is stale (another worker took over); stop now
      1  the execution does not exist, or another error
      69 no daemon reachable
    """
    if not execution_id:
        raise click.UsageError("no execution: CRONWHEEL_EXECUTION_ID is not set (run this inside a job, or pass --execution-id)")
    if lease_epoch is None:
        raise click.UsageError("no lease epoch: CRONWHEEL_LEASE_EPOCH is not set (run this inside a job, or pass --lease-epoch)")
    try:
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


# ---------------------------------------------------------------- daemon and worker (wired by the engine)


@cli.command(context_settings=CONTEXT)
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Where the embedded store and the sockets live. [default: the global --data-dir]")
@click.option("--store", type=cfg.STORE, metavar="URL", help="postgresql://… for a cluster. [default: SQLite in the data dir]")
@click.option("--http", "http", type=cfg.HOSTPORT, default="127.0.0.1:7878", show_default=True, metavar="HOST:PORT", help="TCP address of the HTTP API (the Unix socket is always served).")
@click.option("--workers", type=click.IntRange(0), metavar="N", help="Local worker processes. [default: the number of CPUs]")
@click.option("--slots", type=click.IntRange(1), metavar="N", help="Concurrent executions per worker. [default: 16]")
@click.option("--node-id", type=cfg.NODE_ID, metavar="ID", help="This node's id in a cluster. [default: the host name]")
@click.option("--log-format", type=click.Choice(["json", "console"]), help="[default: console on a TTY, else json]")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), help="Print events of this level and above. [default: info]")
@click.option("--config", metavar="FILE", is_eager=True, expose_value=False, callback=lambda ctx, _p, v: _serve_config(ctx, v),
              help="Read this configuration file (cronwheel.toml(5)). [env CRONWHEEL_CONFIG; default /etc/cronwheel/cronwheel.toml when it exists]")
@click.option("--grace-sec", type=click.FloatRange(0), metavar="SEC", help="On SIGTERM, how long running executions get to finish. [default: 30]")
@click.option("--reaper-interval-ms", type=click.IntRange(10), metavar="MS", help="How often expired leases are reaped. [default: 1000]")
@click.option("--reserved-high-slots", type=click.IntRange(0), metavar="N", help="Worker slots kept free for the high priority tier. [default: 0]")
@click.option("--claim-ahead-ms", type=click.IntRange(0, 60_000), metavar="MS", help="Claim due ticks this long before they are due. [default: 2000]")
@click.option("--retention", type=cfg.DURATION, metavar="DURATION", help="Prune finished executions older than this (e.g. 30d). [default: 30d]")
@click.option("--keep-last", type=click.IntRange(1), metavar="N", help="Always keep each job's N newest executions. [default: 1000]")
@click.option("--retention-interval-ms", type=click.IntRange(100), metavar="MS", help="How often the history is pruned. [default: 300000]")
@click.option("--http-allow", type=cfg.HOSTS, metavar="HOST,...", help="Hosts that tenants' HTTP targets may call (a tenant's own httpAllow wins). [default: any]")
@click.option("--cluster", is_flag=True, default=None, help="Cluster mode: lease time buckets in the store. [default: on with postgresql://]")
@click.option("--bucket-lease-ms", type=click.IntRange(300, 600_000), metavar="MS", help="Cluster mode: bucket lease TTL. [default: 10000]")
@click.option("--disk-low", type=cfg.SIZE, metavar="SIZE", help="Warn (store.disk_low) when the data dir's free space falls under this. [default: 256M]")
@click.option("--smtp-url", type=cfg.SMTP_URL, metavar="URL", envvar="CRONWHEEL_SMTP_URL", help="Send email notifications through this relay: smtp://[user:pass@]host[:port] (STARTTLS when offered; ?starttls=require to insist) or smtps://… [env CRONWHEEL_SMTP_URL: keeps the password out of the process list]")
@click.option("--sendmail", metavar="PATH", help="Send email notifications with this sendmail program instead (e.g. /usr/sbin/sendmail).")
@click.option("--mail-from", type=cfg.MAIL_FROM, metavar="ADDRESS", help="The sender of email notifications. [default: cronwheel@HOSTNAME]")
@click.pass_context
def serve(ctx: click.Context, /, data_dir: Path | None, **options: Any) -> None:
    """Run the daemon: scheduler, HTTP API and local workers (one per node).

    Every option is also a key of the configuration file and a CRONWHEEL_<KEY> environment
    variable (flag > environment > file > default; see cronwheel.toml(5) and `cronwheel
    config`). SIGHUP reads the file again and applies log_level, log_format, http_allow and
    the retention keys; other changes are refused until a restart.
    """
    app: Cli = ctx.obj
    try:
        from cronwheel.daemon.serve import run_from_cli
    except ImportError as exc:
        raise click.ClickException(f"the daemon is not available in this build: {exc}") from None
    given = {k: val for k, val in options.items() if val is not None}  # the daemon's defaults rule
    rc = run_from_cli(data_dir=str(data_dir or app.data_dir), **given, **cfg.reload_hooks(ctx))
    if isinstance(rc, int) and rc:
        sys.exit(rc)


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def worker(args: tuple[str, ...]) -> None:
    """Run a worker process (started by `cronwheel serve`; rarely by hand).

    With --url, a remote worker instead: `cronwheel worker --url URL --queue NAME
    --handler module:function [--concurrency N] [--token T]` claims the executions of queue
    targets over the HTTP API and runs them with the handler."""
    try:
        from cronwheel.worker.process import main as worker_main
    except ImportError as exc:
        raise click.ClickException(f"the worker is not available in this build: {exc}") from None
    rc = worker_main(list(args))
    if isinstance(rc, int) and rc:
        sys.exit(rc)


def _serve_config(ctx: click.Context, path: str | None) -> None:
    """`serve --config FILE`: this file's keys, instead of the one the group read."""
    if path is None or ctx.resilient_parsing:
        return
    file = cfg.load_or_exit(ctx.command, path)
    ctx.meta["cronwheel.config"] = file
    ctx.default_map = file.values


cfg.with_config_keys(serve)
cli.add_command(update)
tenant.add_command(tenant_notify, "notify")
cli.add_command(tenant)
cli.add_command(ping)
cli.add_command(watch)
cli.add_command(notifications)
cli.add_command(beyond.calendar)
cli.add_command(beyond.backfill)
cli.add_command(beyond.chain)
cli.add_command(token)
cli.add_command(cfg.config_command)
cli.add_command(jobs_as_code.apply)


def main() -> None:
    try:
        cli(prog_name="cronwheel")
    except BrokenPipeError:  # `cronwheel ls | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()
