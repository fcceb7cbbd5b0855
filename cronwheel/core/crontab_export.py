"""Jobs back to files: the request that recreates a job (``export --format json``) and the
crontab that holds what a crontab can (``export --format crontab``). Pure: no I/O, no clock.

A crontab's settings lines apply to every job line below them and cannot be unset, so the
jobs are written in an order where each one's environment (and shell) extends the one before:
first the jobs with none, then the others by how many variables they set. When jobs set
different variables (one ``A``, another ``B``), the largest set of jobs that can line up that
way is written, and the others are left out with the reason, as is anything a crontab
cannot say (a one-off, a watched job, ``@every``, seconds, a non-command target, a user in a
user crontab, notification rules other than one email on failure, a name, a retry policy, a
timeout or any other member set to other than what an import gives it…). ``MAILTO=`` can be reset (``MAILTO=""``),
so it is written before each job whose mail differs from the one above. What is written
imports back (``cronwheel import-crontab``) to the jobs it came from: same schedule, zone,
command, standard input, environment, shell, user and mail on failure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cronwheel.core import schedule as sched
from cronwheel.core.crontab import MACROS, UTC, mailto_rule, split_percent
from cronwheel.core.jobfields import CARRIED_BACK
from cronwheel.core.model import JobSpec
from cronwheel.core.notify import RuleError, rule_from_json

#: the members of a job (as the API shows it) that a request may carry back
_REQUEST_FIELDS = CARRIED_BACK


def job_request(job: dict[str, Any], *, webhooks: bool = False) -> dict[str, Any]:
    """The ``POST /v1/jobs`` body that recreates ``job`` (an API job object): what
    ``export --format json`` writes and ``import`` reads back. ``webhooks``: keep the webhook
    rules as the answer shows them (secret hidden, with their ``ruleId``), which is what
    ``apply`` compares a file's rules with; such a body is never sent."""
    body = {k: job[k] for k in _REQUEST_FIELDS if job.get(k) is not None}
    if job.get("calendars"):  # by name: the importing daemon needs calendars of those names
        body["calendars"] = job["calendars"]
    # chains (onSuccess/onFailure) name job ids of this daemon: not exported
    if body.get("schedule") is not None:
        body.pop("runAt", None)
    if body.get("timezone") == UTC:
        del body["timezone"]
    if not body.get("env"):
        body.pop("env", None)
    target = job.get("target") or {}
    if "ping" not in target:  # a watched job is recreated by its window alone
        body.update(target)
    rules = [r if r.get("via") == "webhook" else {k: v for k, v in r.items() if k != "ruleId"}
             for r in job.get("notify") or [] if webhooks or r.get("via") != "webhook"]  # fmt: skip
    if rules:  # webhook rules stay behind: their secrets are never shown, so they cannot be exported
        body["notify"] = rules
    return body


def unexported_rules(job: dict[str, Any]) -> int:
    """Rules of ``job`` that ``job_request`` leaves out (webhooks: their secrets are hidden)."""
    return sum(1 for r in job.get("notify") or [] if r.get("via") == "webhook")


def unexported_chain(job: dict[str, Any], names: dict[str, str] | None = None) -> str | None:
    """The chain ``job_request`` leaves out, as ``cronwheel chain`` options (it names job ids
    of this daemon, which another gives other ids), or None when the job has none. ``names``
    (job id → name): a child that has a name is written by it, which holds on another daemon."""
    names = names or {}
    parts = [f"--{flag} {' '.join(names.get(c, c) for c in job[key])}"
             for key, flag in (("onSuccess", "on-success"), ("onFailure", "on-failure")) if job.get(key)]  # fmt: skip
    return " ".join(parts) or None


def job_names(jobs: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Job id → name, of the jobs (API job objects) that have a name."""
    return {str(j["jobId"]): str(j["name"]) for j in jobs if j.get("name")}


def observed_calendars(jobs: Iterable[dict[str, Any]]) -> list[str]:
    """The calendars the jobs observe, by name: a daemon importing them needs those first."""
    return sorted({c for j in jobs for c in j.get("calendars") or []})


@dataclass(frozen=True)
class _Form:
    """A job as crontab lines: the settings it needs above it and its own line."""

    job: dict[str, Any]
    zone: str
    env: dict[str, str]
    shell: str | None
    line: str
    mailto: tuple[str, ...] = ()


@dataclass
class CrontabExport:
    lines: list[str] = field(default_factory=list)
    skipped: list[tuple[dict[str, Any], str]] = field(default_factory=list)  #: (job, why)


def export_crontab(jobs: list[dict[str, Any]], *, system: bool = False) -> CrontabExport:
    """``jobs`` (API job objects) as a crontab: the user format, or with ``system`` the system
    format (a user field on each line, from the job's ``runAs``)."""
    out = CrontabExport()
    forms: list[_Form] = []
    for job in jobs:
        form, why = _form(job, system)
        if form is None:
            out.skipped.append((job, why or ""))
        else:
            forms.append(form)
    chain = _longest_chain(forms)
    zone, env, shell, mailto = UTC, dict[str, str](), None, tuple[str, ...]()
    for f in forms:
        if id(f) not in chain:
            out.skipped.append((f.job, "its environment or shell conflicts with other jobs' (a crontab cannot unset a "
                                       "variable or SHELL set for a job above it): export it on its own, or as JSON"))  # fmt: skip
    for f in sorted((f for f in forms if id(f) in chain), key=_signature_order):
        for name, value in f.env.items():
            if env.get(name) != value:
                out.lines.append(f"{name}={_quoted(value)}")
                env[name] = value
                if name == "TZ":  # import reads TZ as a zone too: CRON_TZ below puts it right
                    zone = value
        if f.shell != shell:
            assert f.shell is not None
            out.lines.append(f"SHELL={_quoted(f.shell)}")
            shell = f.shell
        if f.zone != zone:
            out.lines.append(f"CRON_TZ={f.zone}")
            zone = f.zone
        if f.mailto != mailto:
            out.lines.append(f"MAILTO={','.join(f.mailto)}" if f.mailto else 'MAILTO=""')
            mailto = f.mailto
        out.lines.append(f"# {job_label(f.job)}")
        out.lines.append(f.line)
    return out


_Signature = tuple[bool, frozenset[str]]  #: (sets a shell, the names of its variables)


def _signature(f: _Form) -> _Signature:
    return (f.shell is not None, frozenset(f.env))


def _signature_order(f: _Form) -> tuple[bool, int, list[str]]:
    return (f.shell is not None, len(f.env), sorted(f.env))


def _follows(a: _Signature, b: _Signature) -> bool:
    """May jobs of signature ``b`` come below those of ``a``: nothing ``a`` sets is missing in ``b``."""
    return a[1] <= b[1] and (b[0] or not a[0])


def _longest_chain(forms: list[_Form]) -> set[int]:
    """The forms (by ``id``) of the largest set of jobs whose signatures line up so that each
    job's settings extend the ones above it: the longest path through the signatures ordered
    by ``_follows``, weighted by their jobs (few distinct signatures: O(signatures²))."""
    count: dict[_Signature, int] = {}
    for f in forms:
        count[_signature(f)] = count.get(_signature(f), 0) + 1
    order = sorted(count, key=lambda s: (s[0], len(s[1]), sorted(s[1])))
    best: dict[_Signature, tuple[int, _Signature | None]] = {}  # jobs in the best chain from here, next
    for sig in reversed(order):
        tail = max(((best[t][0], t) for t in order if t != sig and _follows(sig, t) and t in best),
                   default=(0, None), key=lambda x: x[0])  # fmt: skip
        best[sig] = (count[sig] + tail[0], tail[1])
    starts = [s for s in order if _follows((False, frozenset()), s)]
    keep: set[_Signature] = set()
    at = max(starts, key=lambda s: best[s][0], default=None)
    while at is not None:
        keep.add(at)
        at = best[at][1]
    return {id(f) for f in forms if _signature(f) in keep}


#: the job's members (as the API shows them) that a crontab line cannot hold, at the value
#: an import of the line gives them: a job that sets any other is left out, for the export
#: must import back to the job it came from
_DEFAULTS = JobSpec(target={})
_CRONTAB_SILENT: dict[str, Any] = {
    "name": None, "payload": None, "retryPolicy": _DEFAULTS.retry.to_json(), "timeoutSec": _DEFAULTS.timeout_sec,
    "leaseSec": _DEFAULTS.lease_sec, "priority": _DEFAULTS.priority.label, "overlap": _DEFAULTS.overlap.value,
    "misfire": _DEFAULTS.misfire.value, "jitterSec": _DEFAULTS.jitter_sec, "misfireGraceSec": None,
    "expectSuccessWithin": None, "activeFrom": None, "activeUntil": None,
    "calendars": [], "onSuccess": [], "onFailure": [],
}  # fmt: skip


def unsayable_fields(job: dict[str, Any]) -> list[str]:
    """The members of ``job`` set to what no crontab line says (its name, a retry policy…)."""
    out = []
    for key, default in _CRONTAB_SILENT.items():
        value = job.get(key, default)
        if isinstance(default, list):  # an empty list and no list say the same
            value, default = value or None, None
        if value != default:
            out.append(key)
    return out


def job_label(job: dict[str, Any]) -> str:
    return f"{job['jobId']} ({job['name']})" if job.get("name") else str(job["jobId"])


def _form(job: dict[str, Any], system: bool) -> tuple[_Form | None, str | None]:
    schedule = job.get("schedule")
    target = job.get("target") or {}
    command = target.get("command")
    if "ping" in target:
        return None, "a watched job (pinged by `cronwheel ping` from the crontab that runs it) has no crontab form: use --format json"
    if not schedule:
        return None, "a one-off job (runAt) has no crontab form"
    if command is None:
        return None, "only command targets have a crontab form"
    if schedule.startswith("@"):
        if schedule.lower() not in MACROS:
            return None, f"{schedule.split()[0]} has no crontab form"
    elif len(schedule.split()) != 5:
        return None, "a 6-field (seconds) schedule has no crontab form"
    run_as = job.get("runAs")
    if system and run_as is None:
        return None, "it runs as the daemon's user, which a system crontab line cannot say: export it without --system"
    if not system and run_as is not None:
        return None, f"it runs as {run_as['user']}, which only a system crontab can say: export with --system"
    if run_as is not None and run_as.get("group") is not None:
        return None, f"it runs with group {run_as['group']}, which a crontab cannot say"
    env: dict[str, str] = dict(job.get("env") or {})
    if any(_quoted(v) is None for v in env.values()):
        return None, "an environment value with a line break has no crontab form"
    shell = job.get("shell")
    if shell is not None and _quoted(shell) is None:
        return None, "a shell path with a line break has no crontab form"
    zone = job.get("timezone") or UTC
    if "TZ" in env:
        try:
            sched.validate_timezone(env["TZ"])
        except ValueError:
            return None, f"TZ={env['TZ']} in its environment is not a zone, and import would read TZ= as one"
    field_text = _command_field(command, job.get("stdin"))
    if field_text is None:
        return None, "its command or standard input has no exact crontab form (line breaks, or a backslash before % or a newline)"
    mailto, why = _mailto(job.get("notify") or [])
    if why is not None:
        return None, why
    unsaid = unsayable_fields(job)
    if unsaid:
        return None, f"a crontab line cannot say its {', '.join(unsaid)}: use --format json (or toml)"
    user = f"{run_as['user']} " if run_as is not None else ""
    return _Form(job, zone, env, shell, f"{' '.join(schedule.split())} {user}{field_text}", mailto), None


def _mailto(rules: list[dict[str, Any]]) -> tuple[tuple[str, ...], str | None]:
    """A job's notification rules as a ``MAILTO=`` value, or why a crontab cannot say them:
    a crontab knows one rule, mail on failure, with the default rate limits."""
    if not rules:
        return (), None
    to = rules[0].get("to") or []
    as_written = {k: v for k, v in rules[0].items() if k != "ruleId"}
    if len(rules) == 1 and rules[0].get("via") == "email" and to and all("," not in a for a in to):
        try:
            if as_written == rule_from_json(mailto_rule(to)).to_json():
                return tuple(to), None
        except RuleError:  # not an address import would take back
            pass
    return (), "its notification rules have no crontab form (MAILTO= is one email rule on failure): export it as JSON"


def _quoted(value: str) -> str | None:
    """A value as import reads it back: bare when that keeps it, else in double quotes
    (import strips one pair of matching quotes). None: a crontab line cannot hold it."""
    if any(c in value for c in "\n\r\x00"):
        return None
    bare = value == value.strip() and not (len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'")
    return value if bare else f'"{value}"'


def _command_field(command: str, stdin: str | None) -> str | None:
    """The command (and ``%`` standard input) as written on a crontab line, checked by reading
    it back the way import does; None when no text reads back to exactly these."""
    if any(c in command for c in "\n\r\x00") or (stdin is not None and any(c in stdin for c in "\r\x00")):
        return None
    text = command.replace("%", "\\%")
    if stdin is not None:
        text += "%" + stdin.replace("%", "\\%").replace("\n", "%")
    read = split_percent(text.strip())
    if (read[0].rstrip(), read[1]) != (command, stdin):
        return None
    return text
