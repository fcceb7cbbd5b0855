"""``cronwheel apply PATH…`` and ``cronwheel export --format toml``: a tenant's jobs kept in
TOML files under review, brought in line with them, and written back out.

The file format and the plan are in ``core/jobfiles.py``; values are checked by the API's own
parser before anything is sent, so ``--dry-run`` finds the same mistakes the daemon would.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from cronwheel.api.fields import ValidationError
from cronwheel.api.targets import DEFAULT_QUEUE
from cronwheel.api.validation import parse_job_body
from cronwheel.cli import render
from cronwheel.cli.client import ApiError, Client
from cronwheel.cli.context import CONTEXT, Cli
from cronwheel.core import jobfiles
from cronwheel.core import notify as nt
from cronwheel.core.config import ConfigError
from cronwheel.core.crontab_export import job_names, job_request, unexported_chain, unexported_rules
from cronwheel.core.jobfields import JOB_FIELDS, TARGET_KINDS
from cronwheel.core.limits import MAX_PAGE
from cronwheel.core.words import NotUtf8, counted, file_text

_SIGN = {"create": "+", "update": "~", "adopt": "~", "unchanged": "=", "delete": "-"}


#: relative instants are refused in files; a fixed clock keeps normalise() deterministic
_NOW_MS = int(time.time() * 1000)


def normalise(body: dict[str, Any]) -> Any:
    """What a body means, defaults filled in: the API's parser (tenant and clock fixed, so
    two bodies compare by their fields alone; the name and the owner mark are not compared)."""
    return parse_job_body({k: v for k, v in body.items() if k not in jobfiles.RESERVED_FIELDS}, now_ms=_NOW_MS)


def _rule_id(rule: dict[str, Any]) -> str:
    return nt.rule_from_json(rule).rule_id


def _files(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.toml") if p.is_file())
        else:
            yield path


def read_job_files(paths: Sequence[Path]) -> list[jobfiles.JobDef]:
    """Every job of every file (directories: their *.toml, sorted), each checked by the API's
    parser; ConfigError names the file, the line and the job."""
    jobs: list[jobfiles.JobDef] = []
    allowed = JOB_FIELDS
    for path in _files(paths):
        try:
            text = file_text(path.read_bytes())
        except OSError as exc:
            raise ConfigError(str(path), f"cannot read: {exc}") from None
        except NotUtf8 as exc:
            raise ConfigError(str(path), str(exc), line=exc.line) from None
        for job in jobfiles.parse_job_file(text, str(path), allowed):
            try:  # with its name: the table's name is checked as a body's would be
                parse_job_body({**job.body, "name": job.name}, now_ms=_NOW_MS)
            except ValidationError as exc:
                line = jobfiles.field_line(text, job.name, job.line, exc.field) if exc.field else job.line
                raise ConfigError(job.source, f"job {job.name!r}: {exc}", line, job.name) from None
            jobs.append(job)
    jobfiles.check_unique(jobs)
    return jobs


def caller_tenant(client: Client) -> str | None:
    """The caller's tenant (``GET /v1/whoami``): None for an admin. An older daemon, without
    that route: an admin may list the tenants, a tenant's token may not, and its tenant is
    then unknown ("?")."""
    try:
        me = client.whoami()
    except ApiError as exc:
        if exc.status != 404:
            raise
        try:
            client.list_tenants()
            return None
        except ApiError as refused:
            if refused.status not in (401, 403):
                raise
            return "?"
    return None if me.get("role") == "admin" else str(me.get("tenant") or "?")


def tenant_jobs(client: Client, tenant: str | None) -> list[dict[str, Any]]:
    """The jobs apply compares with: the caller's tenant's. A tenant token lists only its own;
    an admin lists every tenant's but creates in the default tenant, so it looks there."""
    admin = tenant is None
    jobs: list[dict[str, Any]] = []
    after = None
    while True:
        page = client.list_jobs(None, MAX_PAGE, after, "default" if admin else None)
        jobs.extend(page["jobs"])
        after = page.get("next")
        if not after:
            return jobs


#: the targets that run code as the daemon's user: a tenant needs allowShell for them
RUNS_CODE = ("command", "python")


def refusals(client: Client, tenant: str | None, changes: Sequence[jobfiles.Change]) -> dict[str, str]:
    """The changes the daemon would refuse for a grant the caller's tenant lacks, by job name
    (admins hold every grant): a command or python target needs allowShell (a job created, or
    one whose target changes), priority high needs allowHighPriority (a job left high may stay
    so)."""
    if tenant is None:
        return {}
    code = [c.name for c in changes if c.body is not None and any(k in c.body for k in RUNS_CODE)
            and (c.action == "create" or any(k in c.fields for k in (*TARGET_KINDS, "target")))]
    high = [c.name for c in changes if c.body is not None and c.body.get("priority") == "high"
            and (c.action == "create" or "priority" in c.fields)]
    if not code and not high:
        return {}
    try:
        grants = client.get_tenant(tenant)
    except ApiError:  # "?": an older daemon, which cannot say whose grants apply
        return {}
    refused: dict[str, str] = {}
    if not grants.get("allowHighPriority"):
        refused |= dict.fromkeys(high, f"priority high needs allowHighPriority, which tenant {tenant!r} has not "
                                       "(an admin grants it)")  # fmt: skip
    if not grants.get("allowShell"):
        refused |= dict.fromkeys(code, f"a command or python target needs allowShell, which tenant {tenant!r} has "
                                       "not (an admin grants it: it runs code as the daemon's user)")  # fmt: skip
    return refused


def show_plan(changes: Sequence[jobfiles.Change], as_json: bool) -> None:
    if as_json:
        render.emit_json([
            {"action": c.action, "name": c.name, "jobId": c.job_id, "fields": c.fields or None,
             "body": c.body}
            for c in changes
        ])
        return
    for c in changes:
        detail = f"  ({', '.join(c.fields)})" if c.fields else ""
        ident = f"  {c.job_id}" if c.job_id else ""
        click.echo(f"{_SIGN[c.action]} {c.action:<9} {c.name}{ident}{detail}")


def summary(changes: Sequence[jobfiles.Change]) -> str:
    count = {a: sum(c.action == a for c in changes) for a in _SIGN}
    if not count["create"] + count["update"] + count["adopt"] + count["delete"]:
        return f"no changes: {counted(count['unchanged'], 'job')} up to date"
    return (f"{count['create']} to create, {count['update'] + count['adopt']} to update"
            + (f" ({count['adopt']} adopted)" if count["adopt"] else "")
            + f", {count['delete']} to delete, {count['unchanged']} unchanged")


def carry_out(client: Client, changes: Sequence[jobfiles.Change], as_json: bool) -> int:
    """Make the changes, in the plan's order; returns how many failed (each said in one line).
    With --json the progress goes to stderr: stdout holds the plan alone."""
    failed = 0
    for c in changes:
        try:
            if c.action == "create":
                assert c.body is not None
                created = client.create_job(c.body)
                c.job_id = str(created.body["jobId"])
            elif c.action in ("update", "adopt"):
                assert c.job_id is not None and c.body is not None
                client.update_job(c.job_id, c.body)
            elif c.action == "delete":
                assert c.job_id is not None
                client.cancel_job(c.job_id)
            else:
                continue
        except ApiError as exc:
            failed += 1
            detail = exc.detail
            if c.action in ("update", "adopt") and exc.status in (404, 405) and "no job" not in detail:
                detail = "this daemon cannot update a job in place (PATCH /v1/jobs/{id}); upgrade it"
            render.emit_error(f"{c.action} {c.name}: {detail}")
            continue
        past = {"create": "created", "update": "updated", "adopt": "adopted", "delete": "deleted"}[c.action]
        (render.emit_note if as_json else click.echo)(f"{past:<9} {c.name}  {c.job_id}")
    return failed


@click.command("apply", context_settings=CONTEXT)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path), metavar="PATH...")
@click.option("--prune", is_flag=True, help="Also delete (cancel) jobs that apply created and no file defines any more.")
@click.option("--adopt", is_flag=True, help="Take over same-named jobs made by hand (e.g. after `export --format toml`).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as a JSON array of {action, name, jobId, fields, body}.")
@click.pass_context
def apply(ctx: click.Context, paths: tuple[Path, ...], prune: bool, adopt: bool, dry_run: bool, as_json: bool) -> None:
    """Bring the jobs in line with TOML files of job definitions.

    Each file holds one table per job, named by the job's name, with the fields of the API's
    job body (schedule or runAt, timezone, command / http / python / queue, payload,
    retryPolicy, timeoutSec, leaseSec, priority, overlap, misfire, jitterSec). A directory
    means its *.toml files. The plan says what is created, updated (the same job: its id and
    history are kept) or unchanged; with --prune, jobs that apply created and no file defines
    any more are deleted, and never a job made by hand; a same-named job made by hand is
    refused unless --adopt takes it over. Applying the same files twice changes nothing. It
    acts on the caller's tenant (its token), like every command.

    \b
      cronwheel apply jobs/ --dry-run      # review the plan
      cronwheel apply jobs/ --prune        # make it so
      cronwheel export --format toml > jobs/all.toml
    """
    app: Cli = ctx.obj
    try:
        desired = read_job_files(paths)
    except ConfigError as exc:
        render.emit_error(str(exc))
        sys.exit(2)
    for job in desired:
        # (a watched job, expectSuccessWithin and no schedule, runs nothing: it is pinged)
        if not any(k in job.body for k in (*TARGET_KINDS, "target", "expectSuccessWithin")):
            render.emit_note(f"note: job {job.name!r} ({job.where}) names no command, http, python or queue: its "
                             f"executions wait in queue {DEFAULT_QUEUE!r} for a remote worker "
                             f"(`cronwheel worker --url URL --queue {DEFAULT_QUEUE} --handler module:function`)")
    tenant = caller_tenant(app.client)
    try:
        changes = jobfiles.plan(desired, tenant_jobs(app.client, tenant), lambda j: job_request(dict(j), webhooks=True),
                                jobfiles.by_rule_identity(_rule_id, normalise), prune, adopt)  # fmt: skip
    except ValueError as exc:
        render.emit_error(str(exc))
        sys.exit(1)
    if dry_run or all(c.action == "unchanged" for c in changes):
        show_plan(changes, as_json)
        render.emit_note(f"plan: {summary(changes)} (dry run: nothing was changed)" if dry_run else summary(changes))
        refused = refusals(app.client, tenant, changes) if dry_run else {}
        for name, why in refused.items():
            render.emit_error(f"{name}: would be refused: {why}")
        if refused:
            sys.exit(1)
        return
    if not as_json:
        show_plan(changes, as_json)
    failed = carry_out(app.client, changes, as_json)
    if as_json:  # with the ids of the jobs just created
        show_plan(changes, as_json)
    render.emit_note(f"applied: {summary(changes)}" + (f"; {failed} failed" if failed else ""))
    if failed:
        sys.exit(1)


def export_toml(jobs: Sequence[dict[str, Any]]) -> None:
    """Active and paused jobs as job files that `cronwheel apply` reads back to no change;
    fields that only repeat a default are left out. A job needs a name to be a table."""
    out: list[str] = []  # written after the header, which counts what was written
    skipped = unwritten = paused = chained = 0
    names = job_names(jobs)  # a chain's children by name: another daemon gives them other ids
    for job in sorted(jobs, key=lambda j: (j.get("name") or "", j["jobId"])):
        label = job["jobId"]
        if not job.get("name"):
            skipped += 1
            out.append(f"\n# skipped {label}: it has no name (apply finds jobs by name)\n")
            continue
        body = {k: v for k, v in job_request(job).items() if k != "name"}
        if job.get("managedBy") != jobfiles.OWNER:
            out.append(f"\n# {job['name']} was made by hand: `cronwheel apply --adopt` takes it over")
        hooks = unexported_rules(job)
        if hooks:  # apply compares webhook rules too: left out here, they would be taken out
            unwritten += hooks
            out.append(f"\n# {job['name']}: {counted(hooks, 'webhook rule')} not written (secrets are never shown): "
                       "add them back with their secrets before applying, or apply removes them")
        try:
            table = jobfiles.job_table(str(job["name"]), jobfiles.compact(body, normalise))
        except jobfiles.NotToml as exc:
            skipped += 1
            out.append(f"\n# skipped {label} ({job['name']}): {exc} (its payload holds a null; use --format json)\n")
            continue
        chain = unexported_chain(job, names)
        if chain:  # apply leaves chains as they are: set by `cronwheel chain`, by job id
            chained += 1
            out.append(f"\n# {job['name']} is chained ({chain}): a job file has no chain; "
                       f"`cronwheel chain {job['name']} …` sets it where the jobs have other ids")
        if job.get("status") == "PAUSED":  # a job file says what a job is, not whether it runs now
            paused += 1
            out.append(f"\n# {job['name']} is PAUSED here: apply creates it active; `cronwheel pause {job['name']}` after")
        out.append("\n" + table)
    written = len(jobs) - skipped
    header = f"# cronwheel export: {counted(written, 'job')}" + (f" ({skipped} not written: see '# skipped')" if skipped else "")
    click.echo(header + "; apply with: cronwheel apply FILE")
    for part in out:
        click.echo(part, nl=False)
    if paused:
        render.emit_note(f"{counted(paused, 'paused job')}: a job file has no state, so apply creates "
                         f"{'it' if paused == 1 else 'them'} active (see the '# … is PAUSED' comments)")
    if skipped:
        render.emit_note(f"{counted(skipped, 'job')} {'has' if skipped == 1 else 'have'} no TOML form: see the '# skipped' comments")
    if unwritten:
        render.emit_note(f"{counted(unwritten, 'webhook rule')} not exported: their secrets are never shown; add them to the files again")
    if chained:
        render.emit_note(f"{counted(chained, 'chain')} not exported: a job file has no chain (see the '# … is chained' comments)")
