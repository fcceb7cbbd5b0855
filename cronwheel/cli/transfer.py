"""``cronwheel import-crontab`` (alias ``import``): jobs in from crontab files and ``export``
files (``cli/exporting.py`` writes them)."""

from __future__ import annotations

import json
import pwd
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from cronwheel.cli import jobs_as_code, progress, render, views
from cronwheel.cli.client import ApiError, DaemonUnreachable
from cronwheel.cli.context import CONTEXT, Cli, pass_cli
from cronwheel.core import crontab
from cronwheel.core import schedule as sched
from cronwheel.core.importmatch import already_there
from cronwheel.core.words import NotUtf8, counted, file_text

#: jobs per POST /v1/jobs/batch of an import
IMPORT_BATCH = 500
#: the largest file an import reads (a JSON export of ~100,000 jobs): more is refused unread
MAX_IMPORT_BYTES = 64 << 20


def read_import(file: Any, name: str) -> str:
    """The text of an import's FILE: at most MAX_IMPORT_BYTES, UTF-8 (a line that is not is
    named, with how to convert it), without a leading byte-order mark (which would hide that
    an export's JSON is JSON). Exits 1 otherwise."""
    data = file.read(MAX_IMPORT_BYTES + 1)
    if len(data) > MAX_IMPORT_BYTES:
        render.emit_error(f"{name}: larger than {MAX_IMPORT_BYTES >> 20} MiB: split it, or check that it is a crontab")
        sys.exit(1)
    try:
        return file_text(bytes(data))
    except NotUtf8 as exc:
        render.emit_error(f"{name}:{exc.line}: {exc}")
        sys.exit(1)


def refusal(body: dict[str, Any], now_ms: int) -> str | None:
    """Why the daemon would refuse ``body`` as a job (the API's own checks, run here for a dry
    run), or None."""
    from cronwheel.api.validation import (
        parse_job_body,  # (the API's checks: only a dry run needs them)
    )
    from cronwheel.core.limits import json_problem

    bad = json_problem(body)
    if bad is not None:
        return f"{bad.path or 'the job'} {bad.why}"
    try:
        parse_job_body(body, now_ms=now_ms)
    except ValueError as exc:
        return str(exc)
    return None


def system_format_path(path: Path) -> bool:
    """Files cron reads in the system format (with a user field): /etc/crontab and the files
    of a cron.d directory (also a copy of one, kept under a directory named cron.d)."""
    return (path.name == "crontab" and path.parent.name == "etc") or path.parent.name == "cron.d"


def _is_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class _Plan:
    """One job to create: where it comes from (``line 7``), its body and idempotency key."""

    where: str
    line_no: int | None
    body: dict[str, Any]
    key: str


@click.command("import-crontab", context_settings=CONTEXT,
               short_help="Create jobs from a crontab file (or from export --format json).")
@click.argument("file", type=click.File("rb"), metavar="FILE")
@click.option("--dry-run", is_flag=True, help="Show, line by line, the job each line would become; create nothing.")
@click.option("--tz", metavar="ZONE", help="Zone of the lines above any CRON_TZ=/TZ= line. [default UTC]")
@click.option("--system/--user", "system", default=None,
              help="The system format (a user field after the schedule) or the user format. [default: system for /etc/crontab and cron.d files; a warning for another file that looks like one]")
@click.option("--strict", is_flag=True, help="All or nothing: if any line cannot be carried over, import none.")
@click.option("--json", "as_json", is_flag=True, help="Print one object per line as a JSON array: {where, line, jobId, created} or {where, line, skipped}.")
@pass_cli
def import_crontab(app: Cli, /, file: Any, dry_run: bool, tz: str | None, system: bool | None, strict: bool, as_json: bool) -> None:
    """Create a job for each line of a crontab file (FILE, or - for standard input).

    FILE holds crontab(5) lines: five time fields or a macro (@hourly, @daily, @weekly,
    @monthly, @yearly), then (system format) the user to run as, then the command. Lines
    keep what cron gives them: CRON_TZ= and TZ= set the zone of the lines below, SHELL= their
    shell, other NAME=value lines their environment, and a % in a command starts its standard
    input. A line that cannot be carried over (@reboot, a user that does not exist) is
    skipped with its line number and reason, the rest is imported, and the exit status is 1.
    MAILTO= becomes an email rule on failure for the jobs below it; a setting that cannot be
    carried over (MAILTO=root, a local mailbox) is named with its line number, the jobs below
    it are imported without it, and the exit status is 1 too. A file written by
    `cronwheel export --format json` is accepted too.

    A job that is there already is not created again: a live job of yours that is the very
    job a line or entry defines (the same schedule, zone, target and payload, input,
    environment, shell, user and calendars, and the name and other settings it states),
    however it was created; one job is there for one line only. A schedule is the same when
    it fires at the same times, however it is written (@daily is 0 0 * * *; an H field or
    an @every interval, which hash the job id, only as the very same one). Each job's idempotency key
    comes from what it defines, so importing the same file again, or an exported copy of
    it, creates nothing new:

    \b
      crontab -l > my.crontab && cronwheel import-crontab --dry-run my.crontab
      cronwheel import-crontab my.crontab
      cronwheel import-crontab /etc/cron.d/certbot      # system format: runs as its user
    """
    if tz:
        try:
            sched.validate_timezone(tz)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--tz'") from None
    name = getattr(file, "name", "-")
    name = "-" if name == "<stdin>" else name
    text = read_import(file, name)
    skipped: list[dict[str, Any]] = []  # {where, line, skipped}

    def skip(line_no: int | None, where: str, reason: str) -> None:
        skipped.append({"where": where, "line": line_no, "skipped": reason})
        if not as_json:
            render.emit_error(f"{name}:{line_no}: {reason}" if line_no else f"{name}: {where}: {reason}")

    from_json = crontab.looks_like_json(text)
    if from_json:
        try:
            bodies = crontab.parse_json_requests(text)
        except ValueError as exc:
            render.emit_error(f"{name}: {exc}")
            sys.exit(1)
        plans = [_Plan(f"job {i + 1}", None, body, key) for i, (body, key) in enumerate(crontab.keyed_requests(bodies))]
        notes: list[crontab.LineError] = []
    else:
        chosen = system is not None
        if system is None:
            path = Path(name)  # as given (a link in cron.d counts) or where it leads
            system = name != "-" and (system_format_path(path.absolute()) or system_format_path(path.resolve()))
        parsed = crontab.parse_crontab(text, tz or crontab.UTC, system=system)
        if not system and not chosen and crontab.looks_like_system_format(text, parsed.entries, _is_user):
            # a copy of /etc/crontab kept elsewhere: read as a user crontab, `root` would be
            # the first word of every command, so nothing is guessed: the caller says which
            render.emit_error(f"{name}: this looks like a system crontab (user field): use --system to read the field "
                              "after the schedule as the user to run as, or --user to read it as a user crontab; "
                              "nothing was imported")
            sys.exit(2)
        for err in parsed.skipped:
            skip(err.line_no, f"line {err.line_no}", err.message)
        notes = parsed.notes
        for note in notes:
            render.emit_note(f"{name}:{note.line_no}: {note.message}")
        if strict and (parsed.skipped or notes):
            render.emit_note(f"--strict: {counted(len(parsed.skipped) + len(notes), 'line')} cannot be carried over: nothing was imported")
            sys.exit(1)
        plans = [_Plan(f"line {e.line_no}", e.line_no, e.request(), key) for e, key in crontab.keyed(parsed.entries)]
    if dry_run:  # what the daemon would refuse is skipped here too, with its reason
        now_ms = int(time.time() * 1000)
        runnable = []
        for plan in plans:
            why = refusal(plan.body, now_ms)
            if why is None:
                runnable.append(plan)
            else:
                skip(plan.line_no, plan.where, why)
        there: list[dict[str, Any]] = []  # compared with the daemon's jobs when one answers
        try:
            plans, _ = _not_there_yet(app, runnable, lambda plan, job_id, _: there.append(
                {"where": plan.where, "line": plan.line_no, "alreadyThere": job_id}))
            compared = ""
        except (DaemonUnreachable, ApiError) as exc:
            plans, compared = runnable, f"; not compared with the daemon's jobs: {exc}"
        _show_plan(plans, skipped + there, as_json)
        render.emit_note(f"{counted(len(plans), 'job')} would be created" + ("" if compared else f", {len(there)} already there")
                         + (f", {counted(len(skipped), 'line')} skipped" if skipped else "")
                         + f" (dry run: nothing was created; users are checked by the daemon at import{compared})")
        sys.exit(1 if skipped or notes else 0)

    results: list[dict[str, Any]] = []

    def report(plan: _Plan, job_id: str, replayed: bool) -> None:
        results.append({"where": plan.where, "line": plan.line_no, "jobId": job_id, "created": not replayed})
        if not as_json:
            click.echo(f"{plan.where}: {'already there as' if replayed else 'created'} {job_id}")

    plans, live = _not_there_yet(app, plans, report)
    for plan, outcome in _create(app, plans, name, strict):
        outcome = _really_there(app, plan, outcome, {r["jobId"] for r in results}, live)
        if isinstance(outcome, str):
            skip(plan.line_no, plan.where, outcome)
        else:
            report(plan, *outcome)
    if as_json:
        render.emit_json(sorted(results + skipped, key=lambda r: r["line"] or 0))
    new = sum(r["created"] for r in results)
    summary = f"{counted(new, 'job')} created, {len(results) - new} already there"
    if skipped:
        summary += f", {counted(len(skipped), 'job' if from_json else 'line')} skipped (listed above" + (")" if as_json else ", with their reasons)")
    if notes:
        summary += f"; {counted(len(notes), 'setting')} not carried over"
    render.emit_note(summary)
    if skipped or notes:  # what was not carried over, jobs or settings: the exit status says so
        sys.exit(1)


def _show_plan(plans: list[_Plan], skipped: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        rows = [{"where": p.where, "line": p.line_no, "job": p.body, "idempotencyKey": p.key} for p in plans]
        render.emit_json(sorted(rows + skipped, key=lambda r: r["line"] or 0))
        return
    for row in skipped:
        if "alreadyThere" in row:
            click.echo(f"{row['where']}: already there as {row['alreadyThere']}")
    for p in plans:
        b = p.body
        when = b.get("schedule") or b.get("runAt")
        what = b.get("command") or views.target_summary({k: b[k] for k in ("http", "python", "queue") if k in b})
        click.echo(render.safe(f"{p.where}: {when}  {what}", newlines=False))
        details = [("zone", b.get("timezone") or "UTC")]
        if b.get("runAs"):
            details.append(("user", b["runAs"]["user"]))
        if b.get("shell"):
            details.append(("shell", b["shell"]))
        details += [("env", f"{k}={v}") for k, v in (b.get("env") or {}).items()]
        if b.get("stdin") is not None:
            details.append(("stdin", json.dumps(b["stdin"], ensure_ascii=False)))
        details += [("notify", f"{r['via']} {', '.join(r.get('to') or [])} on {r['on']}") for r in b.get("notify") or []]
        for key, value in details:
            click.echo(f"    {key}: {render.safe(value, newlines=False)}")


def _not_there_yet(app: Cli, plans: list[_Plan], report: Callable[[_Plan, str, bool], None]) -> tuple[list[_Plan], dict[str, Any]]:
    """The plans whose job is not there yet, and the caller's live jobs by id; each other plan
    is reported as already there: a live job of the caller's is that very job
    (``core.importmatch``), however it was created: by `add` (no idempotency key), or imported
    from another kind of file (a crontab line's key is not its JSON export's)."""
    live = {str(j["jobId"]): j for j in jobs_as_code.tenant_jobs(app.client, jobs_as_code.caller_tenant(app.client)) if j.get("status") in ("ACTIVE", "PAUSED")}
    new: list[_Plan] = []
    for plan, job_id in zip(plans, already_there([p.body for p in plans], list(live.values())), strict=True):
        if job_id is None:
            new.append(plan)
        else:
            report(plan, job_id, True)
    return new, live


def _really_there(app: Cli, plan: _Plan, outcome: tuple[str, bool] | str, taken: set[str], live: dict[str, Any]) -> tuple[str, bool] | str:
    """``outcome`` of creating ``plan`` with its idempotency key, unless the key answered with
    a job that is no longer the one it created from this entry: changed since (so another
    entry of this import may stand for it), or cancelled. Then it is created anew, keyless."""
    if isinstance(outcome, str) or not outcome[1] or outcome[0] in taken:
        return outcome if isinstance(outcome, str) or not outcome[1] else _create_anew(app, plan)
    job = live.get(outcome[0])
    try:  # not listed: created since (this import retried, or another), or cancelled
        job = job if job is not None else app.client.get_job(outcome[0])
    except ApiError:
        return _create_anew(app, plan)
    if job.get("status") in ("ACTIVE", "PAUSED") and job.get("updatedAt") == job.get("createdAt"):
        return outcome
    return _create_anew(app, plan)


def _create_anew(app: Cli, plan: _Plan) -> tuple[str, bool] | str:
    try:
        return app.client.create_job(plan.body).body["jobId"], False
    except ApiError as exc:
        return exc.detail


def _create(app: Cli, plans: list[_Plan], name: str, strict: bool) -> list[tuple[_Plan, tuple[str, bool] | str]]:
    """Each plan with ``(job id, replayed)`` or the daemon's reason for refusing it: one
    request and one commit per IMPORT_BATCH jobs; line by line if a batch is refused as a
    whole (a runAs user that does not exist, a target the token may not use), except with
    ``strict``, where that refusal ends the import (the daemon validates a batch whole before
    it creates any of its jobs)."""
    out: list[tuple[_Plan, tuple[str, bool] | str]] = []
    for start in progress.steps(range(0, len(plans), IMPORT_BATCH), total=len(plans), per_step=IMPORT_BATCH, what="importing"):
        chunk = plans[start : start + IMPORT_BATCH]
        try:
            answers = app.client.create_jobs([(p.body, p.key) for p in chunk])
        except ApiError as exc:
            if strict:
                render.emit_error(f"{name}: {exc.detail}")
                done = "nothing" if start == 0 else "only the first " + counted(start, "job")
                render.emit_note(f"--strict: {done} imported")
                sys.exit(1)
            answers = None
        if answers is not None:
            for p, res in zip(chunk, answers, strict=True):
                if res.get("status") in (200, 201):
                    out.append((p, (str(res["jobId"]), res["status"] == 200)))
                else:
                    out.append((p, str(res.get("detail") or res.get("code"))))
            continue
        for p in chunk:
            try:
                created = app.client.create_job(p.body, p.key)
            except ApiError as exc:
                out.append((p, exc.detail))
                continue
            out.append((p, (created.body["jobId"], created.replayed)))
    return out
