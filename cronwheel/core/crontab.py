"""crontab(5) files to job requests, and jobs back to crontab lines (``cronwheel
import-crontab`` / ``cronwheel export``). Pure: no I/O, no clock.

A user crontab line is five time fields and a command, or a macro and a command::

    # m h  dom mon dow  command
    */5 *  *   *   *    /usr/local/bin/poll
    @daily              /usr/local/bin/rotate --keep 7

Import is strict where cron would do something cronwheel cannot (huey's lenient parser that
drops what it cannot read is what we avoid): an environment line (``MAILTO=…``, ``SHELL=…``),
``@reboot``, and an unescaped ``%`` (cron's "rest of the line is standard input") are errors
that name their line. ``\\%`` is a literal ``%``, as in cron. Cron's day-of-month/day-of-week
rule (either matches when both are restricted) is also cronwheel's, so a line keeps its
meaning.

Every entry gets an idempotency key derived from the file and the line's content (not its
number), so importing the same file again creates nothing new, and adding a line above
another does not duplicate it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from cronwheel.core import schedule as sched

#: the crontab(5) macros cronwheel runs; @reboot is not a time and is refused
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_ENV_LINE = re.compile(r"""^["']?[A-Za-z_][A-Za-z0-9_]*["']?\s*=""")
_FIVE_FIELDS = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)(?:\s+(.*))?$")
_MACRO_LINE = re.compile(r"^(@\S+)(?:\s+(.*))?$")
_PROBE_JOB_ID = "jcrontab"


@dataclass(frozen=True)
class Entry:
    """One job line of a crontab."""

    line_no: int
    schedule: str  #: the five fields joined by single spaces, or the macro
    command: str  #: as the shell will see it (``\\%`` unescaped)
    text: str  #: the line as written

    def request(self, timezone: str | None = None) -> dict[str, Any]:
        """The ``POST /v1/jobs`` body for this line."""
        body: dict[str, Any] = {"schedule": self.schedule, "command": self.command}
        if timezone and timezone != "UTC":
            body["timezone"] = timezone
        return body


@dataclass(frozen=True)
class LineError:
    line_no: int
    message: str
    text: str

    def __str__(self) -> str:
        return f"line {self.line_no}: {self.message}"


def parse_crontab(text: str, timezone: str = "UTC") -> tuple[list[Entry], list[LineError]]:
    """Every job line and every error (all of them, so a user fixes a file in one pass).
    Comments and blank lines are skipped. Schedules are validated in ``timezone``."""
    entries: list[Entry] = []
    errors: list[LineError] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            entries.append(_parse_line(line_no, line, raw, timezone))
        except ValueError as exc:
            errors.append(LineError(line_no, str(exc), raw))
    return entries, errors


def _parse_line(line_no: int, line: str, raw: str, timezone: str) -> Entry:
    if _ENV_LINE.match(line):
        name = line.split("=", 1)[0].strip().strip("\"'")
        raise ValueError(
            f"environment setting {name}=… is not supported: cronwheel jobs do not inherit crontab "
            f"variables; put it in the command ({name}=value command) or in the service's Environment="
        )
    if line.startswith("@"):
        m = _MACRO_LINE.match(line)
        assert m is not None
        macro, command = m.group(1).lower(), m.group(2)
        if macro == "@reboot":
            raise ValueError(
                "@reboot is not supported: cronwheel runs jobs at times, not at boot; "
                "use a systemd unit (a Type=oneshot service) for work at boot"
            )
        if macro not in MACROS:
            raise ValueError(f"unknown macro {m.group(1)!r}; expected one of {', '.join(MACROS)}")
        schedule = macro
    else:
        m = _FIVE_FIELDS.match(line)
        if m is None:
            raise ValueError(f"expected five time fields and a command, got {len(line.split())} field(s)")
        schedule, command = " ".join(m.groups()[:5]), m.group(6)
    if not command or not command.strip():
        raise ValueError(f"no command after the schedule {schedule!r}")
    try:
        sched.parse_schedule(schedule, _PROBE_JOB_ID, timezone)
    except sched.ScheduleError as exc:
        raise ValueError(str(exc)) from None
    return Entry(line_no, schedule, _unescape_percent(command.rstrip()), raw)


def _unescape_percent(command: str) -> str:
    out = []
    i = 0
    while i < len(command):
        c = command[i]
        if c == "\\" and command[i + 1 : i + 2] == "%":
            out.append("%")
            i += 2
            continue
        if c == "%":
            raise ValueError(
                "an unescaped '%' in a crontab command starts its standard input, which cronwheel "
                "does not support; write \\% for a literal %"
            )
        out.append(c)
        i += 1
    return "".join(out)


def idempotency_key(source: str, normalized: str, occurrence: int) -> str:
    """Stable for the same file and line content; ``occurrence`` tells identical lines apart
    (cron runs a line written twice twice)."""
    digest = hashlib.sha256(f"{source}\n{normalized}\n{occurrence}".encode()).hexdigest()
    return f"import-{digest[:40]}"


def keyed(source: str, entries: list[Entry]) -> list[tuple[Entry, str]]:
    """Each entry with its idempotency key."""
    seen: dict[str, int] = {}
    out = []
    for e in entries:
        normalized = f"{e.schedule}\t{e.command}"
        n = seen.get(normalized, 0)
        seen[normalized] = n + 1
        out.append((e, idempotency_key(source, normalized, n)))
    return out


# ---------------------------------------------------------------- JSON (cronwheel export --json)


def looks_like_json(text: str) -> bool:
    return text.lstrip().startswith("[")


def parse_json_requests(text: str) -> list[dict[str, Any]]:
    """The job bodies of a ``cronwheel export --json`` file. ValueError names what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValueError("a JSON import must be an array of job objects (as `cronwheel export --json` writes)")
    return data


def keyed_requests(bodies: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """Each body with a key derived from its content only: the same export imported twice,
    from wherever, creates each job once."""
    seen: dict[str, int] = {}
    out = []
    for body in bodies:
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        n = seen.get(canonical, 0)
        seen[canonical] = n + 1
        out.append((body, idempotency_key("json", canonical, n)))
    return out


# ---------------------------------------------------------------- export

#: the members of a job (as the API shows it) that a request may carry back
_REQUEST_FIELDS = (
    "name", "schedule", "runAt", "timezone", "payload", "retryPolicy", "timeoutSec", "leaseSec",
    "priority", "overlap", "misfire", "jitterSec", "expectSuccessWithin",
)


def job_request(job: dict[str, Any]) -> dict[str, Any]:
    """The ``POST /v1/jobs`` body that recreates ``job`` (an API job object): what
    ``export --json`` writes and ``import-crontab`` reads back."""
    body = {k: job[k] for k in _REQUEST_FIELDS if job.get(k) is not None}
    if body.get("schedule") is not None:
        body.pop("runAt", None)
    if body.get("timezone") == "UTC":
        del body["timezone"]
    target = job.get("target") or {}
    if "ping" not in target:  # a watched job is recreated by its window alone
        body.update(target)
    rules = [{k: v for k, v in r.items() if k != "ruleId"} for r in job.get("notify") or [] if r.get("via") != "webhook"]
    if rules:  # webhook rules stay behind: their secrets are never shown, so they cannot be exported
        body["notify"] = rules
    return body


def unexported_rules(job: dict[str, Any]) -> int:
    """Rules of ``job`` that ``job_request`` leaves out (webhooks: their secrets are hidden)."""
    return sum(1 for r in job.get("notify") or [] if r.get("via") == "webhook")


def crontab_line(job: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(line, None)`` for a job that a crontab can hold, else ``(None, why not)``."""
    schedule = job.get("schedule")
    command = (job.get("target") or {}).get("command")
    if not schedule:
        return None, "a one-off job (runAt) has no crontab form"
    if command is None:
        return None, "only command targets have a crontab form"
    if (job.get("timezone") or "UTC") != "UTC":
        return None, f"time zone {job['timezone']} needs an environment line, which import refuses"
    if schedule.startswith("@"):
        if schedule.lower() not in MACROS:
            return None, f"{schedule.split()[0]} has no crontab form"
    elif len(schedule.split()) != 5:
        return None, "a 6-field (seconds) schedule has no crontab form"
    if "\n" in command or "\r" in command:
        return None, "a command with a newline has no crontab form"
    return f"{' '.join(schedule.split())} {command.replace('%', chr(92) + '%')}", None
