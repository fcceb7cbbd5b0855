"""The configuration file and ``CRONWHEEL_<KEY>`` variables for ``cronwheel serve``, resolved
as serve resolves them (``cronwheel config`` prints them: config_show.py).

Every option of ``serve`` is a key (its long name with ``_``): the file and the environment
are two more layers under the command line, resolved by click itself (flag > environment >
file > default), and each value is checked by the option's own type, so the file cannot accept
what the flag would refuse. man 5 cronwheel.toml documents the keys.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import click
from click.core import ParameterSource

from cronwheel.cli import render
from cronwheel.cli.config_checks import Setting, refusals
from cronwheel.core.config import ConfigError, env_var, mask_secrets, parse, size_bytes
from cronwheel.core.forwarded import parse_trusted_proxies_text
from cronwheel.core.schedule import ScheduleError, parse_duration
from cronwheel.core.tenants import normalise_host
from cronwheel.core.words import NotUtf8, as_given, file_text, is_utf8
from cronwheel.obs.events import EventLog
from cronwheel.obs.levels import journal_stream

#: read when it exists and no --config / CRONWHEEL_CONFIG names another file. `make dist
#: SYSCONFDIR=DIR` (and so `make install SYSCONFDIR=DIR`) builds a single file whose shiv
#: preamble sets it to DIR/cronwheel/cronwheel.toml before the command line is read
DEFAULT_CONFIG = Path("/etc/cronwheel/cronwheel.toml")
CONFIG_ENV = "CRONWHEEL_CONFIG"


class _Checked(click.ParamType[str]):
    """Text the daemon parses, checked here so that a file, a variable and a flag are refused
    alike, with the key and line (the daemon still receives the text as written)."""

    def __init__(self, name: str, check: Any) -> None:
        self.name = name
        self.check = check

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not is_utf8(text):
            self.fail(f"'{as_given(text)}' is not valid UTF-8", param, ctx)
        try:
            self.check(text)
        except (ValueError, ScheduleError) as exc:
            self.fail(str(exc), param, ctx)
        return text


def _hostport(text: str) -> None:
    _, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:7878)")


def _hosts(text: str) -> None:
    for entry in text.split(","):
        if entry.strip():
            normalise_host(entry)


def _proxies(text: str) -> None:
    parse_trusted_proxies_text(text)  # the daemon's own parse (core/forwarded.py)


def _store(text: str) -> None:
    # the rules of store.open_store, said before anything starts (the store opens only then)
    if text.startswith(("postgresql://", "postgres://")):
        return
    if text.startswith("sqlite:"):
        if not text.startswith("sqlite:///") or len(text) == len("sqlite:///"):
            raise ValueError(f"{text!r} is not a SQLite URL (want sqlite:///path)")
    elif "://" in text:
        raise ValueError(f"unknown store URL scheme {text.split('://', 1)[0]!r} "
                         "(postgresql://…, sqlite:///PATH or a file path)")


def _smtp_url(text: str) -> None:
    # the rules of the mail channel (engine/channels.py MailConfig.parse)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValueError(f"{mask_secrets(text)!r}: {exc}") from None
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ValueError(f"{mask_secrets(text)!r} is not smtp://[user:pass@]host[:port] or smtps://…")


_ADDRESS = r"[^\s@<>()\[\]\\,;:\"]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?"
_SENDER = re.compile(rf"(?:{_ADDRESS}|[^<>@\x00-\x1f\x7f]*<{_ADDRESS}>)")


def _mail_from(text: str) -> None:
    # the From: header of every notification: one address, optionally with a display name
    if not _SENDER.fullmatch(text):
        raise ValueError(f"{text!r} is not an email address (user@host.example or 'Name <user@host.example>')")


def _node_id(text: str) -> None:
    # an empty id would fall back to the host name silently; a control character breaks log lines
    if not text.strip() or not text.isprintable():
        raise ValueError(f"{text!r} is not a node id (a non-empty name without control characters)")


class _Directory(click.Path):
    """A directory's path, not empty: ``data_dir = ""`` read as a path is the current
    directory, which serve would take as its data directory (and chmod 0700)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not str(value).strip():
            self.fail("is empty (as a path, the current directory): give the data directory's path, "
                      "e.g. /var/lib/cronwheel", param, ctx)
        return super().convert(value, param, ctx)


#: the most a request may wait for the daemon's answer (more is no timeout at all, in effect)
MAX_REQUEST_TIMEOUT_SEC = 86_400.0


def request_timeout(text: str) -> float:
    """``--request-timeout``: more than nothing, at most a day."""
    seconds = parse_duration(text)
    if not 0 < seconds <= MAX_REQUEST_TIMEOUT_SEC:
        raise ValueError(f"{text!r} is not a request timeout: more than 0 s and at most 1 d (e.g. 5s, 2m)")
    return seconds


DATA_DIR = _Directory(file_okay=False, readable=False, path_type=Path)
DURATION = _Checked("duration", parse_duration)
REQUEST_TIMEOUT = _Checked("duration", request_timeout)
HOSTPORT = _Checked("host:port", _hostport)
HOSTS = _Checked("hosts", _hosts)
PROXIES = _Checked("cidrs", _proxies)
SIZE = _Checked("size", size_bytes)
STORE = _Checked("store", _store)
SMTP_URL = _Checked("smtp url", _smtp_url)
MAIL_FROM = _Checked("address", _mail_from)
NODE_ID = _Checked("node id", _node_id)

def config_keys(command: click.Command) -> dict[str, click.Option]:
    """The keys of the file: every option of ``command`` but --help and --config."""
    return {
        p.name: p for p in command.params
        if isinstance(p, click.Option) and p.name and p.name not in ("help", "config")
    }


def with_config_keys(command: click.Command) -> click.Command:
    """Give each option its ``CRONWHEEL_<KEY>`` variable (click reads it when the flag is not
    given), and say so in the help."""
    for key, option in config_keys(command).items():
        option.envvar = env_var(key)
        option.show_envvar = True
    return command


def find_config(explicit: str | Path | None) -> Path | None:
    """--config / $CRONWHEEL_CONFIG (must exist; an empty value means none), else the default
    file when it exists."""
    if explicit is None:
        explicit = os.environ.get(CONFIG_ENV)
    if explicit is not None:
        if str(explicit) == "":
            return None
        path = Path(explicit)
        if not path.is_file():
            what = "a directory, not a file" if path.is_dir() else "no such file"
            raise ConfigError(str(path), f"{what} (from --config or $CRONWHEEL_CONFIG)")
        return path
    return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None


class FileValues:
    """The checked values of one configuration file, with the line of each."""

    def __init__(self, path: Path | None, values: dict[str, Any], lines: dict[str, int],
                 problems: tuple[ConfigError, ...] = ()) -> None:
        self.path = path
        self.values = values
        self.lines = lines
        #: its mistakes (``read``): the values are then the keys that are right, if any
        self.problems = problems

    @property
    def problem(self) -> ConfigError | None:
        """The first mistake, the one a refusal names."""
        return self.problems[0] if self.problems else None

    def unread(self, key: str) -> bool:
        """Is ``key``'s value unknown for a mistake (its own, or the file's: unreadable, not TOML)?"""
        return key not in self.values and any(problem.key in (None, key) for problem in self.problems)

    def where(self, key: str) -> str:
        return f"{self.path}:{self.lines.get(key, 0)}"


NO_FILE = FileValues(None, {}, {})


def load(command: click.Command, path: Path | None) -> FileValues:
    """Read and check ``path`` against ``command``'s options; ConfigError names file, line and
    key of the first problem."""
    file = _checked(command, path)
    if file.problem is not None:
        raise file.problem
    return file


def read(command: click.Command, explicit: str | Path | None) -> FileValues:
    """The file as a command that does not start the daemon reads it: its first mistake is
    kept (``FileValues.problem``) rather than raised, with the keys that are right."""
    try:
        return _checked(command, find_config(explicit))
    except ConfigError as exc:  # --config names no file
        return FileValues(None, {}, {}, (exc,))


def _checked(command: click.Command, path: Path | None) -> FileValues:
    if path is None:
        return NO_FILE
    keys = config_keys(command)
    problems: list[ConfigError] = []  # parse leaves unknown keys out, and says so here
    try:
        raw = parse(file_text(path.read_bytes()), str(path), keys, problems)
    except OSError as exc:
        return FileValues(path, {}, {}, (ConfigError(str(path), f"cannot read: {exc}"),))
    except NotUtf8 as exc:
        return FileValues(path, {}, {}, (ConfigError(str(path), str(exc), line=exc.line),))
    except ConfigError as exc:  # not TOML
        return FileValues(path, {}, {}, (exc,))
    ctx = click.Context(command, info_name=command.name)
    values: dict[str, Any] = {}
    for key, item in raw.items():
        option = keys[key]
        value = item.value
        if isinstance(value, list) and all(isinstance(v, str) for v in value) and option.type in (HOSTS, PROXIES):
            value = ",".join(value)  # http_allow = ["a.example", "b.example"], trusted_proxies = […]
        problem = _file_value_problem(option, value)
        try:
            if problem:
                raise click.BadParameter(problem)
            # the text the flag would be given: TOML's 2.5 or true for an integer is refused as
            # `--workers 2.5` is, not cast to 2 or 1
            values[key] = option.type_cast_value(ctx, value if option.is_flag else _as_text(value))
        except click.BadParameter as exc:
            problems.append(ConfigError(str(path), exc.message, item.line, key))
    lines = {k: v.line for k, v in raw.items() if k in values}
    return FileValues(path, values, lines, tuple(problems))


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _file_value_problem(option: click.Option, value: Any) -> str | None:
    """What the file's value cannot be for ``option`` whatever its text: a table or an array, a
    flag that is not true/false, a number or a boolean where a string is meant."""
    if isinstance(value, (list, dict)):
        return f"expected a single value, not {type(value).__name__}"
    if option.is_flag:
        return None if isinstance(value, bool) else "expected true or false"
    if isinstance(option.type, (click.types.IntParamType, click.types.FloatParamType)):
        return None  # numbers, and their text in quotes, are checked by the option's type
    if not isinstance(value, str):
        return f"expected a string in double quotes, not {_as_text(value)}"
    return None


def load_or_exit(command: click.Command, explicit: str | Path | None) -> FileValues:
    try:
        return load(command, find_config(explicit))
    except ConfigError as exc:
        _exit_refused(command, exc)


def check_or_exit(ctx: click.Context) -> dict[str, Setting]:
    """`serve`: refuse what the keys cannot be together (config_checks.py) before anything
    starts, as a bad file is refused: exit status 2, the key's file and line. Returns the
    keys, each with where it came from."""
    file: FileValues = ctx.meta.get("cronwheel.config", NO_FILE)
    if file.problem is not None:
        _exit_refused(ctx.command, file.problem)
    resolved = settings(ctx.command, file, effective(ctx.command, ctx.parent, file, given=given_on_command_line(ctx)))
    found = refusals(resolved)
    if found:
        _exit_refused(ctx.command, found[0])
    return resolved


def _exit_refused(command: click.Command, exc: ConfigError) -> NoReturn:
    ctx = click.get_current_context(silent=True)
    starting = ctx is not None and command.name in (ctx.command.name, ctx.invoked_subcommand)
    if starting and journal_stream(sys.stderr):
        _start_failed(exc)
    else:
        render.emit_error(str(exc))
    sys.exit(2)


def _start_failed(exc: ConfigError) -> None:
    """The daemon cannot start, under systemd: the line is the event the daemon's own start-up
    failures are (``node.start_failed``, with its priority), so ``journalctl -p err`` shows it
    and log shippers parse it. The file's node_id cannot be trusted, the environment's can."""
    node = os.environ.get(env_var("node_id")) or socket.gethostname()
    log = EventLog(node, stream=sys.stderr, fmt="json", journal=True)
    log.emit("node.start_failed", error=str(exc), file=exc.source, line=exc.line, key=exc.key)
    log.flush()


def effective(
    command: click.Command, parent: click.Context | None, file: FileValues, args: list[str] | None = None,
    given: dict[str, Any] | None = None,
) -> dict[str, tuple[Any, str]]:
    """Each key's value and where it came from ("flag", "env CRONWHEEL_X", "FILE:LINE",
    "default"), resolved by click exactly as ``serve`` resolves it. ``given``: values that came
    from the running daemon's command line (they outrank everything, as at start-up)."""
    ctx = command.make_context(command.name, list(args or []), parent=parent, default_map=file.values)
    file = chosen_file(ctx, file)
    out: dict[str, tuple[Any, str]] = {}
    for key, option in config_keys(command).items():
        value = ctx.params.get(key)
        source = ctx.get_parameter_source(key)
        if given is not None and key in given:
            out[key] = (given[key], "flag")
        elif source is ParameterSource.COMMANDLINE:
            out[key] = (value, "flag")
        elif source is ParameterSource.ENVIRONMENT:
            out[key] = (value, f"env {option.envvar}")
        elif source is ParameterSource.DEFAULT_MAP:
            out[key] = (value, file.where(key))
        else:
            out[key] = (value, "default")
    return out


def chosen_file(ctx: click.Context, file: FileValues) -> FileValues:
    """The file ``ctx``'s values came from: the one its own ``--config FILE`` named (``serve
    --config``, or ``cronwheel config -- --config FILE``: read by node.py's ``_serve_config``),
    else ``file``, the one the group read."""
    if ctx.get_parameter_source("config") is ParameterSource.COMMANDLINE:
        chosen: FileValues = ctx.meta.get("cronwheel.config", file)
        return chosen
    return file


def settings(command: click.Command, file: FileValues, resolved: dict[str, tuple[Any, str]]) -> dict[str, Setting]:
    """``effective``'s answer, each value with where it came from as a refusal names it."""
    keys = config_keys(command)
    out: dict[str, Setting] = {}
    for key, (value, source) in resolved.items():
        if source == "flag":
            out[key] = Setting(value, f"flag {keys[key].opts[0]}")
        elif file.path is not None and source == file.where(key):
            out[key] = Setting(value, source, str(file.path), file.lines.get(key))
        else:
            out[key] = Setting(value, source)
    return out


def given_on_command_line(ctx: click.Context) -> dict[str, Any]:
    return {
        key: ctx.params[key] for key in config_keys(ctx.command)
        if ctx.get_parameter_source(key) is ParameterSource.COMMANDLINE
    }


def reload_hooks(ctx: click.Context, origins: dict[str, str] | None = None) -> dict[str, Any]:
    """What ``serve`` hands the daemon for SIGHUP: the values it starts with, and how to
    resolve them again (the same file read anew; flags given at start-up still win).
    ``origins``: filled at each read with where each key now comes from."""
    file: FileValues = ctx.meta.get("cronwheel.config", NO_FILE)
    flags = given_on_command_line(ctx)
    command, parent = ctx.command, ctx.parent

    def read() -> dict[str, Any]:
        fresh = load(command, file.path)
        resolved = effective(command, parent, fresh, given=flags)
        found = refusals(settings(command, fresh, resolved))
        if found:  # what serve would refuse at start changes nothing now
            raise found[0]
        if origins is not None:
            origins.update({key: source for key, (_, source) in resolved.items()})
        return {key: value for key, (value, _) in resolved.items()}

    return {"reload": read, "running": {key: ctx.params.get(key) for key in config_keys(command)}}
