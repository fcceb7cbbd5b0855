"""``cronwheel calendar …``, ``cronwheel backfill`` and ``cronwheel chain``: scheduling beyond
cron. Also the job options ``cronwheel add`` takes for them (``job_options``)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cronwheel.cli import listing, render
from cronwheel.cli.client import ApiError, path_segment
from cronwheel.cli.context import CONTEXT, Cli, local_now_ms, pass_cli
from cronwheel.cli.instants import calendar_spans, instant_around, instant_text
from cronwheel.core import schedule as sched
from cronwheel.core.backfill import job_ticks
from cronwheel.core.calendar import CalendarError
from cronwheel.core.ical import parse_ics
from cronwheel.core.instants import format_instant
from cronwheel.core.words import NotUtf8, counted, file_text

#: ticks per backfill request: well under the server's limit, small enough for a live progress bar
BACKFILL_CHUNK = 500
#: ticks one command sends: the range is counted before anything is sent (a minutely job's
#: ten years would be five million executions and minutes of counting); beyond, it is refused
BACKFILL_COMMAND_TICKS = 100_000
_JOB_FIELDS_KEY = "cronwheel.beyondcron.job_fields"


# ---------------------------------------------------------------- options of `cronwheel add`


def job_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --calendar, --active-from, --active-until, --on-success, --on-failure to a command;
    the command reads what they make with :func:`job_fields`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        fields: dict[str, Any] = {}
        calendars = kwargs.pop("calendars")
        if calendars:
            fields["calendars"] = list(calendars)
        for opt, key in (("active_from", "activeFrom"), ("active_until", "activeUntil")):
            value = kwargs.pop(opt)
            if value is not None:
                fields[key] = instant_text(value, f"'--{opt.replace('_', '-')}'")
        for opt, key in (("on_success", "onSuccess"), ("on_failure", "onFailure")):
            value = kwargs.pop(opt)
            if value:
                fields[key] = list(value)
        click.get_current_context().meta[_JOB_FIELDS_KEY] = fields
        return fn(*args, **kwargs)

    for decorator in reversed((
        click.option("--calendar", "calendars", multiple=True, metavar="NAME",
                     help="Skip the ticks this calendar excludes (repeatable; see `cronwheel calendar`)."),
        click.option("--active-from", metavar="INSTANT", help="No tick before this instant (RFC 3339 or +DURATION)."),
        click.option("--active-until", metavar="INSTANT", help="No tick after this instant; the job is then SUCCEEDED or FAILED by its last execution."),
        click.option("--on-success", multiple=True, metavar="JOB", shell_complete=listing.complete_job,
                     help="Run this job (id or name) when an execution ends SUCCEEDED (repeatable; a chain)."),
        click.option("--on-failure", multiple=True, metavar="JOB", shell_complete=listing.complete_job,
                     help="Run this job when an execution ends DEAD, its retries spent (repeatable)."),
    )):  # fmt: skip
        wrapper = decorator(wrapper)
    return wrapper


def job_fields(client: Any) -> dict[str, Any]:
    """The body fields the options of :func:`job_options` gave for this command (chain
    children named by id or unique name, sent as ids)."""
    fields = dict(click.get_current_context().meta.get(_JOB_FIELDS_KEY, {}))
    for key in ("onSuccess", "onFailure"):
        if key in fields:
            fields[key] = _job_ids(client, fields[key])
    return fields


def _job_ids(client: Any, refs: Any) -> list[str]:
    return [str(client.resolve_job(ref)["jobId"]) for ref in refs]


def upcoming_for_next(client: Any, job: dict[str, Any], count: int, after: int) -> list[int]:
    """``cronwheel next JOB`` for a job with calendars or an active window: the daemon
    evaluates them; the excluded stretches met on the way are noted on stderr."""
    data = client.request("GET", f"/v1/jobs/{path_segment(job['jobId'])}/upcoming", query={"count": count, "from": format_instant(after)})[2]
    for item in data.get("excluded", []):
        render.emit_note(f"note: ticks from {item['at']} until {item['until']} are excluded ({item['reason']})")
    return [sched.parse_instant(t) for t in data["next"]]


# ---------------------------------------------------------------- calendar


@click.group(context_settings=CONTEXT)
def calendar() -> None:
    """Calendars: named sets of excluded days and time windows that jobs observe.

    \b
    A job observing a calendar (`cronwheel add --calendar NAME`) records each tick the
    calendar excludes as SKIPPED (reason `calendar: NAME`) instead of running it. Dates and
    local windows are read in each job's own time zone.
    \b
    Examples:
      cronwheel calendar set holidays --date 2026-12-25 --date 2027-01-01
      cronwheel calendar set maint --window 2026-12-24T22:00/2026-12-25T02:00
      cronwheel calendar import holidays fr-holidays.ics
    """


_tenant_option = click.option("--tenant", metavar="NAME", help="The tenant the calendar belongs to (admin). [default: yours]")


def _path(name: str, tenant: str | None) -> tuple[str, dict[str, Any]]:
    return f"/v1/calendars/{path_segment(name)}", {"tenant": tenant}


@calendar.command("ls", context_settings=CONTEXT)
@_tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print the calendars as JSON.")
@pass_cli
def calendar_ls(app: Cli, /, tenant: str | None, as_json: bool) -> None:
    """List calendars."""
    data = app.client.request("GET", "/v1/calendars", query={"tenant": tenant})[2]
    if as_json:
        render.emit_json(data["calendars"])
        return
    rows = [(c["name"], c["tenant"], str(len(c["dates"])), str(len(c["windows"])), c.get("description") or "")
            for c in data["calendars"]]  # fmt: skip
    render.emit_table(["NAME", "TENANT", "DATES", "WINDOWS", "DESCRIPTION"], rows, empty="no calendars")


@calendar.command("show", context_settings=CONTEXT)
@click.argument("name")
@_tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print the calendar as JSON.")
@pass_cli
def calendar_show(app: Cli, /, name: str, tenant: str | None, as_json: bool) -> None:
    """Show one calendar."""
    path, query = _path(name, tenant)
    cal = app.client.request("GET", path, query=query)[2]
    if as_json:
        render.emit_json(cal)
        return
    render.emit_kv([("name", cal["name"]), ("tenant", cal["tenant"]), ("description", cal.get("description") or "-"),
                    ("dates", ", ".join(cal["dates"]) or "-"),
                    ("windows", ", ".join(f"{w['start']} .. {w['end']}" for w in cal["windows"]) or "-")])  # fmt: skip


def _save(app: Cli, name: str, tenant: str | None, body: dict[str, Any], as_json: bool) -> None:
    path, query = _path(name, tenant)
    cal = app.client.request("PUT", path, body, query=query)[2]
    if as_json:
        render.emit_json(cal)
    else:
        click.echo(f"Saved calendar {cal['name']}: {counted(len(cal['dates']), 'date')}, {counted(len(cal['windows']), 'window')}")


@calendar.command("set", context_settings=CONTEXT)
@click.argument("name")
@click.option("--date", "dates", multiple=True, metavar="YYYY-MM-DD", help="An excluded day, in each job's zone (repeatable).")
@click.option("--window", "windows", multiple=True, metavar="START/END",
              help="An excluded window [START, END): local 2026-12-24T22:00 or an instant with an offset (repeatable).")
@click.option("--description", metavar="TEXT", help="What the calendar is for.")
@_tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print the saved calendar as JSON.")
@pass_cli
def calendar_set(app: Cli, /, name: str, dates: tuple[str, ...], windows: tuple[str, ...], description: str | None,
                 tenant: str | None, as_json: bool) -> None:  # fmt: skip
    """Create or replace a calendar (its whole content: give every date and window)."""
    spans = calendar_spans(dates, windows)
    body: dict[str, Any] = {"dates": list(dates), "windows": spans}
    if description is not None:
        body["description"] = description
    _save(app, name, tenant, body, as_json)


@calendar.command("import", context_settings=CONTEXT)
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--description", metavar="TEXT", help="What the calendar is for. [default: the file name]")
@_tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print the saved calendar as JSON.")
@pass_cli
def calendar_import(app: Cli, /, name: str, file: Path, description: str | None, tenant: str | None, as_json: bool) -> None:
    """Create or replace a calendar from an iCalendar (.ics) file's events.

    All-day events become excluded days, timed events excluded windows (a floating time is
    read in each job's zone, a UTC or TZID time is an instant). RRULE is not interpreted: a
    file that uses it is refused; list each occurrence as its own event.
    """
    try:
        dates, windows = parse_ics(file_text(file.read_bytes()))
    except NotUtf8 as exc:
        raise click.BadParameter(f"{file}:{exc.line}: {exc}", param_hint="FILE") from None
    except CalendarError as exc:
        raise click.BadParameter(f"{file}: {exc}", param_hint="FILE") from None
    body = {"dates": sorted(set(dates)), "windows": [{"start": s, "end": e} for s, e in windows],
            "description": description if description is not None else file.name}  # fmt: skip
    _save(app, name, tenant, body, as_json)


@calendar.command("rm", context_settings=CONTEXT)
@click.argument("name")
@_tenant_option
@pass_cli
def calendar_rm(app: Cli, /, name: str, tenant: str | None) -> None:
    """Delete a calendar (refused while a job observes it)."""
    path, query = _path(name, tenant)
    try:
        app.client.request("DELETE", path, query=query)
    except ApiError as exc:
        if exc.status == 409:  # observed: say how, in this program's words
            render.emit_error(f"{exc.detail} (`cronwheel update JOB --clear calendar` takes a job's calendars away)")
            sys.exit(1)
        raise
    click.echo(f"Deleted calendar {name}")


# ---------------------------------------------------------------- backfill


def _chunks(job: dict[str, Any], start: int, end: int) -> list[tuple[int, int, int]]:
    """``(from, to, ticks)`` ranges of at most BACKFILL_CHUNK ticks covering [start, end]."""
    next_tick = job_ticks(job["schedule"], job["jobId"], job.get("timezone") or "UTC",
                          _ms(job.get("activeFrom")), _ms(job.get("activeUntil")))  # fmt: skip
    chunks: list[tuple[int, int, int]] = []
    first = t = next_tick(start - 1)
    n = 0
    last = t
    counted_ticks = 0
    while t is not None and t <= end:
        if counted_ticks == BACKFILL_COMMAND_TICKS:
            raise click.BadParameter(
                f"the range holds more than {BACKFILL_COMMAND_TICKS:,} ticks of {job['jobId']}'s schedule "
                f"({job['schedule']!r}), the most one backfill command sends; the first {BACKFILL_COMMAND_TICKS:,} "
                f"end at {format_instant(last)}: backfill the range in parts", param_hint="'--to'")  # fmt: skip
        counted_ticks += 1
        n += 1
        last = t
        if n == BACKFILL_CHUNK:
            assert first is not None
            chunks.append((first, last, n))
            first, n = None, 0
        t = next_tick(t)
        if first is None:
            first = t
    if n and first is not None and last is not None:
        chunks.append((first, last, n))
    return chunks


def _ms(text: str | None) -> int | None:
    return None if not text else sched.parse_instant(text)


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--from", "from_", metavar="INSTANT", help="First instant of the range: RFC 3339, or -DURATION ago (-7d).")
@click.option("--to", metavar="INSTANT", help="Last instant of the range, included, not after now: RFC 3339, -DURATION ago, or now.")
@click.option("--dry-run", is_flag=True, help="Show the ticks that would be created; create nothing.")
@click.option("--cancel", is_flag=True, help="Cancel the job's backfill executions that have not started yet.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@pass_cli
def backfill(app: Cli, /, job: str, from_: str | None, to: str | None, dry_run: bool, cancel: bool, as_json: bool) -> None:
    """Run a job for every tick of a past range that has no execution yet.

    Each tick of JOB's schedule in [--from, --to] (calendar exclusions and the active window
    applied) gets one execution at batch priority, so live work goes first; a tick that
    already has an execution is left alone, so running the same backfill twice creates
    nothing the second time. The range is sent in pieces of 500 ticks with a progress bar on
    a terminal; Ctrl-C stops sending (`--cancel` then cancels what has not run yet). One
    command sends at most 100,000 ticks: a larger range is refused before anything is sent.

    \b
    Examples:
      cronwheel backfill nightly --from 2026-11-01T00:00:00Z --to 2026-11-30T23:59:59Z --dry-run
      cronwheel backfill nightly --from -7d --to now
      cronwheel backfill nightly --cancel
    """
    client = app.client
    target = client.resolve_job(job)
    path = f"/v1/jobs/{path_segment(target['jobId'])}/backfill"
    if cancel:
        if from_ or to or dry_run:
            raise click.UsageError("--cancel takes no range and no --dry-run")
        data = client.request("DELETE", path)[2]
        if as_json:
            render.emit_json(data)
        else:
            click.echo(f"Cancelled {counted(data['cancelled'], 'backfill execution')} of {target['jobId']}")
        return
    if not from_ or not to:
        raise click.UsageError("give the range: --from INSTANT --to INSTANT (or --cancel)")
    now = local_now_ms()  # one reading for both ends: "-3h" to "now" is three hours exactly
    start, end = instant_around(from_, "'--from'", now, past_only=True), instant_around(to, "'--to'", now, past_only=True)
    if start > now:  # "+1h": a duration ahead where the range must be past
        ago = f" (for that long ago: -{from_.strip()[1:]})" if from_.strip().startswith("+") else ""
        raise click.BadParameter(f"{from_!r} ({format_instant(start)}) is in the future: a backfill fills the past{ago}",
                                 param_hint="'--from'")
    if end < start:
        raise click.BadParameter(f"--to ({format_instant(end)}) is before --from ({format_instant(start)})", param_hint="'--to'")
    if end > now:  # said of what was given, not of the last tick of the piece the daemon refuses
        raise click.BadParameter(f"{to!r} ({format_instant(end)}) is in the future: a backfill fills the past", param_hint="'--to'")
    if not target.get("schedule") or target["schedule"].strip().lower() == sched.TRIGGERED:
        raise click.UsageError(f"job {target['jobId']} has no recurring schedule to backfill")
    chunks = _chunks(target, start, end)
    total = {"ticks": 0, "created": 0, "existing": 0, "excluded": 0}
    planned: list[str] = []
    show = sys.stderr.isatty() and not as_json and len(chunks) > 1
    done = 0
    try:
        with click.progressbar(length=sum(c[2] for c in chunks), label="backfill", file=sys.stderr,
                               show_pos=True) if show else _NoBar() as bar:  # fmt: skip
            for lo, hi, n in chunks:
                body = {"from": format_instant(lo), "to": format_instant(hi), "dryRun": dry_run}
                data = client.request("POST", path, body)[2]
                for key in ("ticks", "created", "existing"):
                    total[key] += int(data[key])
                total["excluded"] += len(data["excluded"])
                planned += data.get("plannedTicks") or []
                done += n
                bar.update(n)
    except KeyboardInterrupt:
        render.emit_error(f"stopped after {done} of {counted(sum(c[2] for c in chunks), 'tick')}: {counted(total['created'], 'execution')} created; "
                          f"`cronwheel backfill {job} --cancel` cancels those not run yet")  # fmt: skip
        sys.exit(130)
    except ApiError:
        if done:  # the pieces before the refused one were made: say so before the refusal
            render.emit_note(f"the daemon refused the backfill after {done} of {counted(sum(c[2] for c in chunks), 'tick')}: "
                             f"{counted(total['created'], 'execution')} created; running the same backfill again later "
                             "creates only the rest")  # fmt: skip
        raise
    if as_json:
        render.emit_json({"jobId": target["jobId"], "from": format_instant(start), "to": format_instant(end), "dryRun": dry_run,
                          **total, **({"plannedTicks": planned} if dry_run else {})})  # fmt: skip
        return
    if dry_run:
        for t in planned:
            click.echo(t)
        click.echo(f"Would create {counted(total['ticks'] - total['existing'], 'execution')}, "
                   f"{counted(total['existing'], 'tick')} already had one, "
                   f"{counted(total['excluded'], 'stretch', 'stretches')} of ticks excluded by calendars")  # fmt: skip
    else:
        click.echo(f"Backfill of {target['jobId']}: {counted(total['created'], 'execution')} created, "
                   f"{counted(total['existing'], 'tick')} already had one, "
                   f"{counted(total['excluded'], 'stretch', 'stretches')} of ticks excluded by calendars")  # fmt: skip


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int) -> None:
        return None


# ---------------------------------------------------------------- chain


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.option("--on-success", multiple=True, metavar="JOB", shell_complete=listing.complete_job, help="Run this job (id or name) when an execution of JOB ends SUCCEEDED (repeatable).")
@click.option("--on-failure", multiple=True, metavar="JOB", shell_complete=listing.complete_job, help="Run this job (id or name) when an execution of JOB ends DEAD (repeatable).")
@click.option("--clear", is_flag=True, help="Remove JOB's chain.")
@click.option("--json", "as_json", is_flag=True, help="Print the updated job as JSON.")
@pass_cli
def chain(app: Cli, /, job: str, on_success: tuple[str, ...], on_failure: tuple[str, ...], clear: bool, as_json: bool) -> None:
    """Set the jobs JOB triggers when one of its executions ends (replaces its whole chain).

    A child runs once per tick of its parent, whatever the parent's retries or redeliveries,
    and sees the parent in CRONWHEEL_PARENT_* variables and its payload's "parent". A chain
    that would form a cycle is refused. A job with the schedule @triggered runs only so.
    """
    if clear == bool(on_success or on_failure):
        raise click.UsageError("give --on-success/--on-failure, or --clear")
    target = app.client.resolve_job(job)
    body = {"onSuccess": _job_ids(app.client, on_success), "onFailure": _job_ids(app.client, on_failure)}
    data = app.client.request("PUT", f"/v1/jobs/{path_segment(target['jobId'])}/chain", body)[2]
    if as_json:
        render.emit_json(data)
        return
    click.echo(f"Chain of {data['jobId']}: on success -> {', '.join(data['onSuccess']) or '-'}; "
               f"on failure -> {', '.join(data['onFailure']) or '-'}")  # fmt: skip
