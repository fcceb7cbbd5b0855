"""``cronwheel export``: the active jobs out again, as a crontab, the JSON that
``cronwheel import`` reads (``cli/transfer.py``) or TOML job files for ``cronwheel apply``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from cronwheel.cli import jobs_as_code, render
from cronwheel.cli.context import CONTEXT, Cli, pass_cli
from cronwheel.core.crontab_export import (
    export_crontab,
    job_label,
    job_names,
    job_request,
    observed_calendars,
    unexported_chain,
    unexported_rules,
)
from cronwheel.core.words import counted


def _export_crontab(jobs: list[dict[str, Any]], system: bool) -> None:
    done = export_crontab(jobs, system=system)
    kind = "system crontab (with a user field)" if system else "crontab"
    flag = " --system" if system else ""
    tty = render.is_tty()

    def line_out(text: str) -> None:
        # tenants wrote these commands, inputs and environments: on a terminal their control
        # characters are shown as escapes; into a file exact (color=True: click would strip
        # what looks like ANSI styling from a pipe, and the file must import back the same)
        click.echo(render.safe(text) if tty else text, color=True)

    written = len(jobs) - len(done.skipped)  # as the TOML export's header: what the file holds
    not_written = f" ({len(done.skipped)} not written: see '# skipped')" if done.skipped else ""
    line_out(f"# cronwheel export, {counted(written, 'active job')} as a {kind}{not_written}; "
             f"import with: cronwheel import-crontab{flag} FILE")
    for job, why in done.skipped:
        line_out(f"# skipped {job_label(job)}: {why}")
    for line in done.lines:
        line_out(line)
    for job, why in done.skipped:  # on stderr too: a crontab piped to a file leaves nothing out silently
        render.emit_note(f"not in the crontab: {job_label(job)}: {why}")
    if done.skipped:
        render.emit_note(f"{counted(len(done.skipped), 'job')} {'has' if len(done.skipped) == 1 else 'have'} no crontab form: see the '# skipped' comments, or use --format json")


def _export_json(jobs: list[dict[str, Any]], system: bool) -> None:
    render.emit_json([job_request(j) for j in jobs])
    hooks = sum(unexported_rules(j) for j in jobs)
    if hooks:
        render.emit_note(f"{counted(hooks, 'webhook rule')} not exported: their secrets are never shown; add them again after importing")
    calendars = observed_calendars(jobs)
    if calendars:
        render.emit_note(f"{counted(len(calendars), 'calendar')} not exported ({', '.join(calendars)}): jobs observe "
                         f"{'it' if len(calendars) == 1 else 'them'} by name, and an import is refused until the other "
                         "daemon has them: see each with `cronwheel calendar show NAME` and create it there with "
                         "`cronwheel calendar set NAME --date … --window …` (or `cronwheel calendar import NAME FILE.ics`)")
    names = job_names(jobs)
    chained = [j for j in jobs if unexported_chain(j)]
    if chained:
        by_id = any(c not in names for j in chained for c in (j.get("onSuccess") or []) + (j.get("onFailure") or []))
        render.emit_note(f"{counted(len(chained), 'chain')} not exported (they name this daemon's job ids); after importing, "
                         + "; ".join(f"cronwheel chain {j.get('name') or j['jobId']} {unexported_chain(j, names)}" for j in chained[:5])
                         + (" …" if len(chained) > 5 else "") + (" (with the new ids of the jobs without a name)" if by_id else ""))


def _export_toml(jobs: list[dict[str, Any]], system: bool) -> None:
    jobs_as_code.export_toml(jobs)


#: ``export --format NAME``: each writes the given jobs to standard output
EXPORT_FORMATS: dict[str, Callable[[list[dict[str, Any]], bool], None]] = {
    "crontab": _export_crontab,
    "json": _export_json,
    "toml": _export_toml,
}


@click.command(context_settings=CONTEXT)
@click.option("--format", "fmt", type=click.Choice(sorted(EXPORT_FORMATS)), default="crontab", show_default=True,
              help="crontab: what a crontab can hold; json: everything but webhook secrets, chains and the calendars jobs observe, for `cronwheel import`; "
                   "toml: job files for `cronwheel apply`.")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@click.option("--system", is_flag=True, help="With --format crontab: the system format, a user field on each line (the jobs' runAs).")
@pass_cli
def export(app: Cli, /, fmt: str, as_json: bool, system: bool) -> None:
    """Print the active jobs as a crontab, JSON or TOML job files.

    The crontab keeps each job's schedule, zone (CRON_TZ=), command, standard input (%),
    environment (NAME=value), shell (SHELL=) and, with --system, user; it imports back to the
    same jobs. Jobs that a crontab cannot hold (one-offs, @every, seconds, HTTP/Python/queue
    targets, a user without --system, a watched job, a name or a retry policy, timeout or
    other setting a crontab line cannot say) are listed as comments, and named on standard
    error. --format json keeps everything
    a job was created with, for `cronwheel import FILE` on this or another daemon, but for
    webhook rules (their secrets are never shown), chains (job ids) and the calendars jobs
    observe (by name: another daemon needs them first); a note on standard error names
    them and how to carry them over. Paused,
    cancelled, succeeded and failed jobs are not exported, nor a one-off whose run has begun,
    except by --format toml, which writes the active and paused named jobs of the caller's
    tenant as files that `cronwheel apply` reads back to no change.
    """
    if fmt == "toml" and not as_json:  # what apply compares with: the caller's tenant's live jobs
        jobs = [j for j in jobs_as_code.tenant_jobs(app.client, jobs_as_code.caller_tenant(app.client)) if j.get("status") in ("ACTIVE", "PAUSED")]
    else:
        # a one-off whose run has begun is done; a watched job (a ping target) has neither a
        # schedule nor a next run, and is kept: json keeps everything, crontab says why not
        jobs = [j for j in app.client.iter_jobs("active")
                if j.get("schedule") or j.get("nextRunAt") or "ping" in (j.get("target") or {})]  # fmt: skip
    EXPORT_FORMATS["json" if as_json else fmt](jobs, system)
