"""What ``cronwheel add`` and ``cronwheel update`` share: the options that define a job, and
the request body they build; and the ``update`` command itself (``PATCH /v1/jobs/{id}``)."""

from __future__ import annotations

import re
import shlex
import zoneinfo
from collections.abc import Callable
from typing import Any

import click

from cronwheel.cli import beyondcron as beyond
from cronwheel.cli import listing, render
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, local_now_ms, pass_cli
from cronwheel.cli.notify import notify_fields
from cronwheel.core import schedule as sched
from cronwheel.core.instants import format_instant
from cronwheel.core.jobfields import HTTP_METHODS, MISFIRES, OVERLAPS, PRIORITIES
from cronwheel.core.limits import RETRY_MAX_ATTEMPTS_RANGE, loads_checked
from cronwheel.core.model import MisfirePolicy, OverlapPolicy, Priority, RetryPolicy
from cronwheel.core.schedule import looks_like_instant

#: H and @every offsets hash the job id: offline answers are for this example id
EXAMPLE_JOB_ID = "jexample"
CRON_FIELD = re.compile(r"^[0-9*/,\-H()?]+$")


def zone(name: str | None, param: str = "'--tz'") -> zoneinfo.ZoneInfo | None:
    if name is None:
        return None
    try:
        return sched.validate_timezone(name)
    except sched.ScheduleError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from None


def duration(text: str | None, param: str) -> float | None:
    if text is None:
        return None
    try:
        return sched.parse_duration(text)
    except sched.ScheduleError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from None


def schedule_error(text: str, exc: Exception) -> str:
    hint = ""
    if len(text.split()) == 1 and CRON_FIELD.match(text.strip()) and not text.startswith("@"):
        hint = " (quote a cron expression as one argument: '*/5 * * * *')"
    return f"{exc}{hint}"


class _Option:
    """An option's names and settings, kept to be declared on both `add` and `update`."""

    def __init__(self, *names: str, **settings: Any) -> None:
        self.names = names
        self.settings = settings


#: "[default …]" at the end of an option's help
_DEFAULT_NOTE = re.compile(r" \[default[^\]]*\]$")
_DEFAULT_RETRY = RetryPolicy()
#: the options that define a job, in the order `--help` lists them (add and update alike);
#: their choices and ranges are the job body's (core/jobfields.py, core/limits.py)
_DEFINITION_OPTIONS = (
    _Option("--name", help="A unique, human name to refer to the job by."),
    _Option("--tz", metavar="ZONE", help="IANA time zone the schedule is evaluated in. [default UTC]"),
    _Option("--timeout", metavar="DURATION", help="Kill an attempt after this long (e.g. 90s, 10m, 2h). [default 1h]"),
    _Option("--max-attempts", type=WholeNumber(*RETRY_MAX_ATTEMPTS_RANGE), metavar="N", help=f"Attempts before the dead-letter queue. [default {_DEFAULT_RETRY.max_attempts}]"),
    _Option("--priority", type=click.Choice(PRIORITIES), help=f"Ready-queue tier. [default {Priority.DEFAULT.label}]"),
    _Option("--http-url", metavar="URL", help="Target: call this http(s) URL instead of a command."),
    _Option("--http-method", type=click.Choice(HTTP_METHODS, case_sensitive=False), help="Method for --http-url. [default GET]"),
    _Option("--header", "headers", multiple=True, metavar="'NAME: VALUE'", help="Header for --http-url (repeatable)."),
    _Option("--python", "python_ref", metavar="MOD:FN", help="Target: call this Python function in the worker."),
    _Option("--queue", metavar="NAME", help="Target: leave executions for remote workers polling this queue."),
    _Option("--payload", metavar="JSON", help="JSON value handed to every execution."),
    _Option("--overlap", type=click.Choice(OVERLAPS), help=f"When a tick comes while an execution is still running. [default {OverlapPolicy.ALLOW.value}]"),
    _Option("--misfire", type=click.Choice(MISFIRES), help=f"Ticks missed while no scheduler could claim them (daemon down, store unreachable). [default {MisfirePolicy.RUN_ONCE.value}]"),
    _Option("--misfire-grace", metavar="DURATION", help="How late a tick may start and still just run; later ones follow --misfire. [default: until the next tick, at most 60s]"),
    _Option("--jitter", metavar="DURATION", help="Spread each tick by a stable random delay up to this."),
    _Option("--lease", metavar="DURATION", help="Lease a worker holds between heartbeats. [default 60s]"),
    _Option("--notify", "notify_rules", multiple=True, metavar="JSON", help='A notification rule (repeatable; update: replaces them all), e.g. \'{"on": "dead", "via": "webhook", "url": "https://…", "secret": "…"}\'.'),
    _Option("--notify-email", multiple=True, metavar="ADDRESS", help="Email ADDRESS when an execution fails (repeatable; a rule on failure via email)."),
    _Option("--expect-success-within", "expect", metavar="DURATION", help="Dead-man's switch: notify `missed` when no execution succeeds for this long (e.g. 26h)."),
    _Option("--env", "env", multiple=True, metavar="NAME=VALUE", help="Set a variable in the command's environment (repeatable)."),
    _Option("--run-as", metavar="USER[:GROUP]", help="Run the command as this user (the daemon must run as root)."),
    _Option("--shell", metavar="PATH", help="Run the command with this shell's -c. [default /bin/sh]"),
    _Option("--stdin", metavar="TEXT", help="The command's standard input. [default the payload as JSON]"),
)


def definition_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options for `add`, with the defaults a new job gets."""
    for option in reversed(_DEFINITION_OPTIONS):
        fn = click.option(*option.names, **option.settings)(fn)
    return fn


def changed_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The same options for `update`, where one not given keeps the job's value: their help
    names no default, which would read as what an update without them sets."""
    for option in reversed(_DEFINITION_OPTIONS):
        help_text = _DEFAULT_NOTE.sub("", option.settings["help"])
        fn = click.option(*option.names, **{**option.settings, "help": help_text})(fn)
    return fn


def when_body(schedule: str, tz: str | None, hint: str = "SCHEDULE") -> dict[str, Any]:
    """``{"schedule": …}`` or ``{"runAt": …}`` for a SCHEDULE argument (or ``hint``: the
    option that gave it), checked here first so that a typo is answered without a daemon."""
    text = schedule.strip()
    if tz:  # a zone the schedule would be read in: its own mistake, named as such
        try:
            sched.validate_timezone(tz)
        except sched.ScheduleError as exc:
            raise click.BadParameter(str(exc), param_hint="'--tz'") from None
    if text.startswith("+"):
        try:
            return {"runAt": format_instant(sched.parse_instant(text, local_now_ms()))}
        except sched.ScheduleError as exc:
            raise click.BadParameter(str(exc), param_hint=hint) from None
    if looks_like_instant(text):
        try:
            sched.parse_instant(text)
        except sched.ScheduleError as exc:
            raise click.BadParameter(str(exc), param_hint=hint) from None
        return {"runAt": text}
    try:
        sched.parse_schedule(schedule, EXAMPLE_JOB_ID, tz or "UTC")
    except sched.ScheduleError as exc:
        raise click.BadParameter(schedule_error(schedule, exc), param_hint=hint) from None
    return {"schedule": schedule}


def definition_body(cmd: tuple[str, ...], *, target_required: bool, **opts: Any) -> dict[str, Any]:
    """The create/patch body members for CMD and the definition options given (None: not
    given). ``target_required``: exactly one target must be given (add), else at most one."""
    body: dict[str, Any] = {}
    zone(opts["tz"])
    if opts["tz"]:
        body["timezone"] = opts["tz"]
    http_url, python_ref, queue = opts["http_url"], opts["python_ref"], opts["queue"]
    targets = [t for t, given in (("CMD", cmd), ("--http-url", http_url), ("--python", python_ref), ("--queue", queue)) if given]
    if len(targets) > 1 or (target_required and not targets):
        raise click.UsageError(
            "give exactly one target: a command after the schedule (after `--` if it has options), "
            "or --http-url, --python or --queue" + (f"; got {', '.join(targets)}" if targets else "")
        )
    if cmd:
        if cmd[0] == "--":  # `add SCHEDULE -- -- cmd`: no program is named "--"
            raise click.BadParameter("the command starts with '--': give '--' once, before the command", param_hint="CMD")
        body["command"] = cmd[0] if len(cmd) == 1 else shlex.join(cmd)
    elif http_url:
        http: dict[str, Any] = {"url": http_url}
        if opts["http_method"]:
            http["method"] = opts["http_method"].upper()
        if opts["headers"]:
            hdrs = {}
            for h in opts["headers"]:
                key, sep, value = h.partition(":")
                if not sep or not key.strip():
                    raise click.BadParameter(f"{h!r} is not 'NAME: VALUE'", param_hint="'--header'")
                hdrs[key.strip()] = value.strip()
            http["headers"] = hdrs
        body["http"] = http
    elif python_ref:
        body["python"] = python_ref
    elif queue:
        body["queue"] = queue
    if (opts["http_method"] or opts["headers"]) and not http_url:
        raise click.UsageError("--http-method and --header go with --http-url")

    if opts["name"] is not None:
        body["name"] = opts["name"]
    if opts["payload"] is not None:
        try:
            body["payload"] = loads_checked(opts["payload"], "the payload")
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--payload'") from None
    if opts["timeout"] is not None:
        body["timeoutSec"] = duration(opts["timeout"], "'--timeout'")
    if opts["lease"] is not None:
        body["leaseSec"] = duration(opts["lease"], "'--lease'")
    if opts["jitter"] is not None:
        body["jitterSec"] = round(duration(opts["jitter"], "'--jitter'") or 0)
    if opts["misfire_grace"] is not None:
        body["misfireGraceSec"] = round(duration(opts["misfire_grace"], "'--misfire-grace'") or 0)
    if opts["max_attempts"] is not None:
        body["retryPolicy"] = {"maxAttempts": opts["max_attempts"]}
    for key in ("priority", "overlap", "misfire"):
        if opts[key] is not None:
            body[key] = opts[key]
    body.update(notify_fields(opts["notify_rules"], opts["notify_email"], opts["expect"]))
    body.update(_process_body(opts["env"], opts["run_as"], opts["shell"], opts["stdin"]))
    return body


def _process_body(env: tuple[str, ...], run_as: str | None, shell: str | None, stdin: str | None) -> dict[str, Any]:
    """--env, --run-as, --shell and --stdin as job members (the daemon checks them; in a
    patch, --env adds or replaces the variables named and keeps the others)."""
    body: dict[str, Any] = {}
    if env:
        variables = {}
        for item in env:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="'--env'")
            variables[key] = value
        body["env"] = variables
    if run_as is not None:
        user, _, group = run_as.partition(":")
        body["runAs"] = {"user": user, **({"group": group} if group else {})}
    if shell is not None:
        body["shell"] = shell
    if stdin is not None:
        body["stdin"] = stdin
    return body


#: what ``update --clear`` takes away: an option of ``add`` -> the job member it sets (a JSON
#: merge patch's null removes an optional member; its default applies again)
CLEARABLE = {
    "calendar": "calendars", "active-from": "activeFrom", "active-until": "activeUntil",
    "on-success": "onSuccess", "on-failure": "onFailure", "notify": "notify",
    "expect-success-within": "expectSuccessWithin", "jitter": "jitterSec", "misfire-grace": "misfireGraceSec",
    "env": "env", "run-as": "runAs", "shell": "shell", "stdin": "stdin", "payload": "payload",
}


@click.command(context_settings=CONTEXT)
@click.argument("job", shell_complete=listing.complete_job)
@click.argument("cmd", nargs=-1, metavar="[--] [CMD]...")
@click.option("--schedule", metavar="SCHEDULE", help="A new schedule, instant or +offset (as for add).")
@changed_options
@click.option("--clear", "cleared", multiple=True, type=click.Choice(sorted(CLEARABLE)), metavar="OPTION",
              help=f"Take away what this option of add set, back to its default (repeatable): {', '.join(sorted(CLEARABLE))}.")
@click.option("--json", "as_json", is_flag=True, help="Print the updated job as JSON.")
@beyond.job_options
@pass_cli
def update(app: Cli, /, job: str, cmd: tuple[str, ...], schedule: str | None, as_json: bool,
           cleared: tuple[str, ...], **opts: Any) -> None:
    """Change a job in place (JOB: its id or name): it keeps its id and its history.

    Only what is given changes; the options are those of `add`, plus --schedule. A new
    command goes after `--`. A new schedule, instant or time zone recomputes the next run
    from now; ticks already claimed ahead for the old schedule are cancelled (superseded).

    \b
    Examples:
      cronwheel update backup --schedule '30 2 * * *'
      cronwheel update backup -- /usr/local/bin/backup --incremental
      cronwheel update j1a2b3 --max-attempts 5 --priority high
      cronwheel update payroll --clear calendar   # observe no calendar any more
    """
    patch: dict[str, Any] = {}
    if schedule is not None:
        patch.update(when_body(schedule, opts["tz"], "'--schedule'"))
    patch.update(definition_body(cmd, target_required=False, **opts))
    patch.update(beyond.job_fields(app.client))
    for option in cleared:
        member = CLEARABLE[option]
        if member in patch:
            raise click.UsageError(f"--clear {option} and --{option} contradict each other: give one")
        patch[member] = None
    if not patch:
        raise click.UsageError("nothing to change: give --schedule, a command after `--`, an option of `add`, or --clear")
    current = app.client.resolve_job(job)
    result = app.client.update_job(current["jobId"], patch)
    if as_json:
        render.emit_json(result)
        return
    label = f"{result['jobId']} ({result['name']})" if result.get("name") else result["jobId"]
    click.echo(f"Updated job {label}")
    tz = result.get("timezone")
    click.echo(f"Next run: {render.fmt_both(result.get('nextRunAt'), zone(tz) if tz and tz != 'UTC' else None)}")
