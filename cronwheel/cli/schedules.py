"""The commands that evaluate schedules: ``next`` (when a schedule or a job fires) and ``lint``
(check one schedule, or preview the coming hour's herd). A SCHEDULE is evaluated right here,
with no daemon; a JOB and the herd are the daemon's."""

from __future__ import annotations

import re
import sys
from typing import Any

import click

from cronwheel.cli import beyondcron as beyond
from cronwheel.cli import listing, render, views
from cronwheel.cli.client import ApiError, DaemonUnreachable
from cronwheel.cli.context import (
    CONTEXT,
    Cli,
    WholeNumber,
    local_now_ms,
    pass_cli,
    unreachable_exit,
)
from cronwheel.cli.instants import instant_around
from cronwheel.cli.jobedit import (
    CRON_FIELD,
    EXAMPLE_JOB_ID,
    duration,
    schedule_error,
    zone,
)
from cronwheel.core import herd
from cronwheel.core import schedule as sched
from cronwheel.core.instants import format_instant
from cronwheel.core.schedule import looks_like_instant

#: an H field (a hashed offset) in a cron expression, not the H of a word or of @hourly
HASHED = re.compile(r"(?<![A-Za-z@])H(?![A-Za-z])")


def schedule_like(text: str) -> bool:
    """Could ``text`` only be meant as a schedule (not a job name)?"""
    words = text.split()
    if not words:
        return True
    return text.lstrip().startswith("@") or looks_like_instant(text) or bool(CRON_FIELD.match(words[0]))



@click.command("next", context_settings=CONTEXT)
@click.argument("what", metavar="SCHEDULE|JOB", shell_complete=listing.complete_job)
@click.option("-n", "count", type=WholeNumber(1, 1000), default=5, show_default=True, help="How many fire times.")
@click.option("--tz", metavar="ZONE", help="Evaluate (and show) in this IANA zone. [default UTC, or the job's zone]")
@click.option("--from", "from_", metavar="INSTANT", help="Start after this instant: RFC 3339, +DURATION, -DURATION ago, or now. [default now]")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of RFC 3339 UTC instants.")
@pass_cli
def next_(app: Cli, /, what: str, count: int, tz: str | None, from_: str | None, as_json: bool) -> None:
    """Show when a schedule or a job fires next.

    A schedule is evaluated right here, no daemon needed; a job (id or name) is looked up
    on the daemon and evaluated with its own id, so H and @every offsets are its real ones.
    """
    display_zone = zone(tz)
    now = local_now_ms()
    start = now
    if from_ is not None:
        start = instant_around(from_, "'--from'", now)

    fires: list[int] = []
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
            if schedule_like(what):
                raise click.BadParameter(schedule_error(what, exc), param_hint="SCHEDULE") from None
            job = _job_for_next(app, what, exc)
        if job and job.get("status") not in ("ACTIVE", None):
            render.emit_note(f"note: job {views.job_label(job)} is {job['status']}: it does not run at these times")
        if parsed is not None:
            if parsed.kind == "every" or HASHED.search(what):
                render.emit_note(
                    "note: H and @every offsets hash the job id; these times are for an example id "
                    "(each job gets its own offset, see `cronwheel next JOB`)"
                )
        elif job.get("schedule"):
            job_tz = tz or job.get("timezone") or "UTC"
            parsed = sched.parse_schedule(job["schedule"], job["jobId"], job_tz)
            if display_zone is None and job_tz != "UTC":
                display_zone = zone(job_tz)
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
        render.emit_json([format_instant(f) for f in fires])
        return
    if not fires:
        render.emit_note("never fires after " + render.fmt_utc(render.ms_to_dt(start)))
        return
    for f in fires:
        click.echo(render.fmt_both(render.ms_to_dt(f), display_zone))  # as add and show print a next run


def _job_for_next(app: Cli, ref: str, schedule_exc: Exception) -> dict[str, Any]:
    try:
        return app.client.resolve_job(ref)
    except DaemonUnreachable as exc:
        unreachable_exit(exc, f"{ref!r} is not a schedule ({schedule_exc}); to look it up as a job: ", app)
    except ApiError as exc:
        if exc.status == 404:
            render.emit_error(f"{ref!r} is neither a schedule ({schedule_exc}) nor a known job")
            sys.exit(1)
        raise



@click.command(context_settings=CONTEXT)
@click.argument("schedule", required=False)
@click.option("--window", default="1h", show_default=True, metavar="DURATION", help="How far ahead to look (1m to 1d).")
@click.option("--top", type=WholeNumber(1, 100), default=10, show_default=True, metavar="N", help="How many of the busiest seconds to show.")
@click.option("--threshold", type=WholeNumber(1), default=100, show_default=True, metavar="N", help="Hint when one second holds more than N ticks.")
@click.option("--tz", metavar="ZONE", help="With SCHEDULE: evaluate it in this IANA zone. [default UTC]")
@click.option("--json", "as_json", is_flag=True, help="Print the herd summary (or SCHEDULE's check) as JSON.")
@pass_cli
def lint(app: Cli, /, schedule: str | None, window: str, top: int, threshold: int, tz: str | None, as_json: bool) -> None:
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
    secs = duration(window, "'--window'") or 0
    if not 60 <= secs <= 86_400:
        raise click.BadParameter("must be between 1m and 1d", param_hint="'--window'")
    data = app.client.herd(int(secs), top)
    hint = _herd_hint(data, threshold)
    if as_json:
        render.emit_json({**data, "threshold": threshold, "hint": hint})
        return
    views.emit_herd(data)
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
    zone(tz)  # an unknown zone is a usage error before the schedule is looked at
    try:
        parsed = sched.parse_schedule(text, EXAMPLE_JOB_ID, tz or "UTC")
    except sched.ScheduleError as exc:
        if as_json:
            render.emit_json({"schedule": text, "valid": False, "error": schedule_error(text, exc)})
            sys.exit(1)
        render.emit_error(f"invalid schedule {text!r}: {schedule_error(text, exc)}")
        sys.exit(1)
    fires: list[int] = []
    t = local_now_ms()
    for _ in range(5):
        nxt = parsed.next_after(t)
        if nxt is None:
            break
        fires.append(nxt)
        t = nxt
    if not fires and parsed.kind != "never":  # (@triggered never fires by itself, by design)
        why = "it never fires after now, or not before the year 9900 (the latest instant allowed): add refuses it"
        if as_json:
            render.emit_json({"schedule": text, "valid": False, "error": why})
            sys.exit(1)
        render.emit_error(f"invalid schedule {text!r}: {why}")
        sys.exit(1)
    suggestion = herd.top_of_hour_suggestion(text)
    hashed = parsed.kind == "every" or bool(HASHED.search(text))
    if as_json:
        render.emit_json({
            "schedule": text, "valid": True, "timezone": tz or "UTC", "expression": parsed.expression,
            "next": [format_instant(f) for f in fires], "hashed": hashed, "suggestion": suggestion,
        })
        return
    click.echo(f"ok: {text!r} is valid ({parsed.expression}, {tz or 'UTC'})")
    shown_zone = zone(tz)
    for f in fires:
        dt = render.ms_to_dt(f)
        click.echo(f"  {render.fmt_local(dt, shown_zone)}  {render.fmt_utc(dt)}")
    if not fires:
        click.echo("  never fires by itself (run it with `cronwheel run`, or chain it)")
    if hashed:
        render.emit_note("note: H and @every offsets hash the job id; these times are for an example id")
    if suggestion:
        render.emit_note(
            f"hint: {text!r} fires at the top of the hour with everybody else's; "
            f"{suggestion!r} runs as often at a stable, per-job minute (see `cronwheel lint` for the herd)"
        )

