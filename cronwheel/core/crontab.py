"""crontab(5) files to job requests (``cronwheel import-crontab``). Pure: no I/O, no clock.

Two formats. A user crontab (``crontab -l``) line is five time fields and a command, or a
macro and a command; a system crontab (``/etc/crontab``, ``/etc/cron.d/*``) has the user to
run as between the two::

    # m h  dom mon dow  [user]  command
    */5 *  *   *   *    root    /usr/local/bin/poll
    @daily                      /usr/local/bin/rotate --keep 7

Environment lines mean what cron means by them, for the job lines below them: ``CRON_TZ=``
and ``TZ=`` set the time zone the schedules are read in (``TZ`` is also in the commands'
environment, as cron passes it on), ``SHELL=`` the shell that runs the commands, and every
other assignment (``PATH=``, ``HOME=``, …) the commands' environment. ``MAILTO=`` (one address
or several, separated by commas) becomes an email notification rule on failure for the jobs
below it (``core.notify.email_rule``), and ``MAILTO=""`` turns it off again; cron mails any
output, cronwheel mails failures, whose output is in the mail. In a command, the text after the first
unescaped ``%`` is its standard input, a later ``%`` there is a newline, and ``\\%`` is a
literal ``%`` (crontab(5)).

A line that cannot be carried over (``@reboot``, a bad schedule, a zone that does not exist)
is skipped with its line number and the reason, and the rest is imported; the caller decides
whether anything skipped refuses the whole file (``--strict``).

Every entry gets an idempotency key derived from the job it defines (schedule, zone, command,
standard input, environment, shell, user), not from its line number or the file's path: the
same file imported again creates nothing new, adding a line above another does not duplicate
it, and a file written by ``cronwheel export --format crontab`` imports back to the jobs it
came from.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cronwheel.core import schedule as sched
from cronwheel.core.limits import loads_checked
from cronwheel.core.notify import RuleError, email_rule
from cronwheel.core.words import counted

#: the crontab(5) macros cronwheel runs; @reboot is not a time and is skipped
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
#: ``NAME = value``, the name optionally quoted (crontab(5)); anything else is a job line
_ENV_LINE = re.compile(r"""^(?:"([^"]*)"|'([^']*)'|([^\s="']+))\s*=(.*)$""")
_VALID_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VALID_USER = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?$")
_FIVE_FIELDS = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)(?:\s+(.*))?$")
_MACRO_LINE = re.compile(r"^(@\S+)(?:\s+(.*))?$")
_PROBE_JOB_ID = "jcrontab"
#: the lines that set a zone; TZ also stays in the environment, as cron hands it to commands
ZONE_NAMES = ("CRON_TZ", "TZ")
#: the default zone: a job in it carries no ``timezone`` member
UTC = "UTC"


@dataclass(frozen=True)
class Entry:
    """One job line of a crontab, with the settings of the lines above it."""

    line_no: int
    schedule: str  #: the five fields joined by single spaces, or the macro
    command: str  #: as the shell will see it (up to the first unescaped ``%``, ``\\%`` unescaped)
    text: str  #: the line as written
    timezone: str = UTC
    env: tuple[tuple[str, str], ...] = ()
    shell: str | None = None
    stdin: str | None = None
    user: str | None = None  #: a system crontab's user field
    mailto: tuple[str, ...] = ()  #: ``MAILTO=``: whom to mail when a run fails

    def request(self) -> dict[str, Any]:
        """The ``POST /v1/jobs`` body for this line."""
        body: dict[str, Any] = {"schedule": self.schedule, "command": self.command}
        if self.timezone != UTC:
            body["timezone"] = self.timezone
        if self.env:
            body["env"] = dict(self.env)
        if self.shell is not None:
            body["shell"] = self.shell
        if self.stdin is not None:
            body["stdin"] = self.stdin
        if self.user is not None:
            body["runAs"] = {"user": self.user}
        if self.mailto:
            body["notify"] = [mailto_rule(self.mailto)]
        return body


def mailto_rule(addresses: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """The notification rule a crontab's ``MAILTO=`` stands for, as a request writes it."""
    return {"on": "failure", "via": "email", "to": list(addresses)}


def mailto_addresses(value: str) -> tuple[str, ...]:
    """The addresses of a ``MAILTO=`` value (comma-separated, as cronie and Vixie cron read it).
    ValueError names what is wrong."""
    addresses = tuple(a.strip() for a in value.split(","))
    for address in addresses:
        try:
            email_rule(address)
        except RuleError:
            raise ValueError(f"{address[:100]!r} is not an email address (user@host)") from None
    try:
        email_rule(list(addresses))
    except RuleError as exc:
        raise ValueError(exc.detail.replace("notify[0].to", "MAILTO")) from None
    return addresses


@dataclass(frozen=True)
class LineError:
    """A line skipped (or, for a note, a setting not carried over), and why."""

    line_no: int
    message: str
    text: str

    def __str__(self) -> str:
        return f"line {self.line_no}: {self.message}"


@dataclass
class Parsed:
    entries: list[Entry] = field(default_factory=list)
    skipped: list[LineError] = field(default_factory=list)  #: lines that did not become jobs
    notes: list[LineError] = field(default_factory=list)  #: settings cronwheel does not carry over


@dataclass
class _Settings:
    """What the environment lines read so far say for the job lines below them."""

    timezone: str
    env: dict[str, str] = field(default_factory=dict)
    shell: str | None = None
    mailto: tuple[str, ...] = ()
    #: a setting that cannot be carried over makes the lines it governs wrong, not merely
    #: different: they are skipped, naming it (name → why)
    broken: dict[str, str] = field(default_factory=dict)


def parse_crontab(text: str, timezone: str = UTC, *, system: bool = False) -> Parsed:
    """Every job line, every skipped line and every note (all of them, so a user fixes a
    file in one pass). ``timezone`` is the zone of the lines above any ``CRON_TZ``/``TZ``;
    ``system``: the system format, with a user field. Comments and blank lines are skipped."""
    out = Parsed()
    settings = _Settings(timezone)
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        assignment = _ENV_LINE.match(line)
        if assignment is not None:
            _assign(settings, line_no, raw, assignment, out)
            continue
        try:
            out.entries.append(_parse_job(line_no, line, raw, settings, system))
        except ValueError as exc:
            out.skipped.append(LineError(line_no, str(exc), raw))
    return out


def _assign(settings: _Settings, line_no: int, raw: str, m: re.Match[str], out: Parsed) -> None:
    name = next(g for g in m.groups()[:3] if g is not None)
    value = _env_value(m.group(4))
    where = f"{name}= on line {line_no}"
    if name == "MAILTO":
        settings.mailto = ()
        if value:
            try:
                settings.mailto = mailto_addresses(value)
            except ValueError as exc:  # e.g. MAILTO=root, a local mailbox: the jobs still run
                out.notes.append(LineError(
                    line_no, f"MAILTO={value} is not carried over: {exc}; the jobs below are imported "
                    "without mail on failure (add it with `cronwheel update JOB --notify-email ADDRESS`)", raw,
                ))  # fmt: skip
        return
    if name in ZONE_NAMES:
        settings.broken.pop("zone", None)
        try:
            sched.validate_timezone(value)
        except ValueError as exc:
            settings.broken["zone"] = f"its zone ({where}) cannot be used: {exc}"
            out.skipped.append(LineError(line_no, f"{name}={value}: {exc}", raw))
        else:
            settings.timezone = value
        if name == "CRON_TZ":
            return
    if name == "SHELL":
        settings.broken.pop("shell", None)
        if not value.startswith("/"):
            settings.broken["shell"] = f"its shell ({where}) is not an absolute path"
            out.skipped.append(LineError(line_no, f"SHELL={value} is not an absolute path (e.g. /bin/bash)", raw))
        else:
            settings.shell = value
        return
    if not _VALID_ENV_NAME.fullmatch(name) or name.startswith("CRONWHEEL_"):
        why = "is reserved for the variables cronwheel sets" if name.startswith("CRONWHEEL_") else \
            "is not a variable name cronwheel can set (letters, digits and _, not starting with a digit)"
        out.skipped.append(LineError(line_no, f"{name} {why}; the jobs below run without it", raw))
        return
    if "\x00" in value:
        out.skipped.append(LineError(line_no, f"{name} holds a NUL character; the jobs below run without it", raw))
        return
    settings.env[name] = value


def _env_value(text: str) -> str:
    """crontab(5): blanks around the value are dropped; quotes (single or double, matching)
    keep the blanks inside them."""
    value = text.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _parse_job(line_no: int, line: str, raw: str, settings: _Settings, system: bool) -> Entry:
    if line.startswith("@"):
        m = _MACRO_LINE.match(line)
        assert m is not None
        macro, rest = m.group(1).lower(), m.group(2)
        if macro == "@reboot":
            raise ValueError(
                "@reboot is not carried over: cronwheel runs jobs at times, not at boot; "
                "use a systemd unit (a Type=oneshot service) for work at boot"
            )
        if macro not in MACROS:
            raise ValueError(f"unknown macro {m.group(1)!r}; expected one of {', '.join(MACROS)}")
        schedule = macro
    else:
        m = _FIVE_FIELDS.match(line)
        if m is None:
            raise ValueError(f"expected five time fields and a command, got {counted(len(line.split()), 'field')}")
        schedule, rest = " ".join(m.groups()[:5]), m.group(6)
    user = None
    if system:
        words = (rest or "").split(None, 1)
        user, rest = ([*words, "", ""])[:2]
        if not user:
            raise ValueError(f"no user after the schedule {schedule!r} (a system crontab line names the user to run as)")
        if not _VALID_USER.fullmatch(user) or len(user) > 32:
            raise ValueError(f"{user[:50]!r} is not a user name")
    if not rest or not rest.strip():
        raise ValueError(f"no command after the {'user' if system else 'schedule'} {user if system else schedule!r}")
    for why in settings.broken.values():
        raise ValueError(f"skipped because {why}")
    try:
        sched.parse_schedule(schedule, _PROBE_JOB_ID, settings.timezone)
    except sched.ScheduleError as exc:
        raise ValueError(str(exc)) from None
    command, stdin = split_percent(rest)
    if not command.strip():
        raise ValueError("no command before the standard input ('%')")
    return Entry(line_no, schedule, command.rstrip(), raw, settings.timezone, tuple(settings.env.items()),
                 settings.shell, stdin, user, settings.mailto)  # fmt: skip


def split_percent(text: str) -> tuple[str, str | None]:
    """A crontab command field as cron reads it: ``(command, standard input or None)``.

    In the command, ``\\%`` is a literal ``%`` (the backslash goes) and the first unescaped
    ``%`` ends it. In the standard input after it, an unescaped ``%`` is a newline and
    ``\\%`` a literal ``%``; other backslashes are kept, and no newline is added (the
    escapes are read exactly as cron's do_command.c reads them, which differ between the two
    parts: in the command a backslash-pair is kept as it is)."""
    cmd: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            cmd.append("%" if text[i + 1] == "%" else text[i : i + 2])
            i += 2
            continue
        if c == "%":
            break
        cmd.append(c)
        i += 1
    else:
        return "".join(cmd), None
    # cron's own loop: a backslash escapes the next character, a backslash included
    stdin: list[str] = []
    escaped = False
    for c in text[i + 1 :]:
        if escaped:
            if c != "%":
                stdin.append("\\")
        elif c == "%":
            c = "\n"
        escaped = c == "\\"
        if not escaped:
            stdin.append(c)
    if escaped:
        stdin.append("\\")
    return "".join(cmd), "".join(stdin)


def idempotency_key(kind: str, canonical: str, occurrence: int) -> str:
    """Stable for the same job; ``occurrence`` tells identical ones apart (cron runs a line
    written twice twice)."""
    digest = hashlib.sha256(f"{kind}\n{canonical}\n{occurrence}".encode()).hexdigest()
    return f"import-{digest[:40]}"


def keyed(entries: list[Entry]) -> list[tuple[Entry, str]]:
    """Each entry with its idempotency key, derived from the job it defines."""
    return [(e, key) for (_, key), e in zip(keyed_requests([e.request() for e in entries], "crontab"), entries, strict=True)]


# ---------------------------------------------------------------- JSON (cronwheel export --format json)


#: the column header of a system crontab's comments (Debian's /etc/crontab: ``# *  *  *  *  *
#: user-name command to be executed``; others: ``# m h dom mon dow user command``)
_SYSTEM_HEADER = re.compile(r"^\s*#.*\b(?:user|user-?name)\s+command\b", re.I)


def looks_like_system_format(text: str, entries: list[Entry], is_user: Callable[[str], bool]) -> bool:
    """Whether a crontab read in the user format was written in the system format: its
    comments have the system crontab's column header, or every job line's sixth field (the
    first word of the command as read) is a user of this machine with a command after it —
    which, read as the user format, would be run as a command (``root cd / && …``)."""
    if any(_SYSTEM_HEADER.match(line) for line in text.splitlines()):
        return True
    words = [e.command.split(None, 1) for e in entries]
    return bool(words) and all(len(w) == 2 and _VALID_USER.fullmatch(w[0]) and is_user(w[0]) for w in words)


def looks_like_json(text: str) -> bool:
    return text.lstrip().startswith("[")


def parse_json_requests(text: str) -> list[dict[str, Any]]:
    """The job bodies of a ``cronwheel export --json`` file. ValueError names what is wrong."""
    data = loads_checked(text, "the JSON")  # its ValueError says what is wrong, and where
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValueError("a JSON import must be an array of job objects (as `cronwheel export --json` writes)")
    return data


def keyed_requests(bodies: list[dict[str, Any]], kind: str = "json") -> list[tuple[dict[str, Any], str]]:
    """Each body with a key derived from its content only: the same export imported twice,
    from wherever, creates each job once."""
    seen: dict[str, int] = {}
    out = []
    for body in bodies:
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        n = seen.get(canonical, 0)
        seen[canonical] = n + 1
        out.append((body, idempotency_key(kind, canonical, n)))
    return out
