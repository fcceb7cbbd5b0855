"""What every command shares: the ``Cli`` object (where the daemon is, how to authenticate to
it, a client for it), the click settings of every command, and how the client's errors become
messages and exit codes instead of tracebacks."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import pwd
import re
import sys
import time
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import click

from cronwheel.cli import render
from cronwheel.cli.client import (
    DEFAULT_TIMEOUT_SEC,
    ApiError,
    Client,
    ClientError,
    DaemonUnreachable,
)
from cronwheel.cli.exits import EX_UNAVAILABLE
from cronwheel.core.tenants import given_token

#: the settings of every command and group: -h as well as --help, and help text 100 wide
CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


_WHOLE_NUMBER = re.compile(r"\s*[+-]?[0-9]+\s*", re.ASCII)


class WholeNumber(click.IntRange):
    """click's IntRange, but for a value that is no whole number at all (``-n abc``,
    ``workers = "two"`` or ``2.5`` in the configuration file) it said "'two' is not a valid
    integer range": it says what is wanted, with the range. Only ASCII digits count: Python's
    ``int`` also reads ``1_000`` and ``٣`` (an Arabic-Indic three), which no other reader of the
    same setting (the API, the configuration file's TOML) would take."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):
            text = str(value)
            try:  # int() also refuses more than 4,300 digits
                value = int(text) if _WHOLE_NUMBER.fullmatch(text) else None
            except ValueError:
                value = None
            if value is None:
                self.fail(self.not_a_number(text), param, ctx)
        return super().convert(value, param, ctx)

    def not_a_number(self, value: Any) -> str:
        return f"{value!r} is not a whole number ({self._describe_range()})"


def default_data_dir() -> Path:
    """``$CRONWHEEL_DATA_DIR``, else systemd's ``$STATE_DIRECTORY`` (its first entry), else
    ``./.cronwheel``.

    Not ``cronwheel.daemon.options.default_data_dir``, though it reads the same variables: that
    one splits ``$CRONWHEEL_DATA_DIR`` on ':' as well, and takes a ``$STATE_DIRECTORY`` of
    ``:x`` as ``.``; here a ':' in ``$CRONWHEEL_DATA_DIR`` is part of the path (the daemon that
    ``cronwheel serve`` starts is handed this directory, so the two never disagree)."""
    if os.environ.get("CRONWHEEL_DATA_DIR"):
        return Path(os.environ["CRONWHEEL_DATA_DIR"])
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if state:
        return Path(state)
    return Path(".cronwheel")


def local_now_ms() -> int:
    """This machine's clock, in ms: what +offsets and "from now" count from."""
    return time.time_ns() // 1_000_000


class Cli:
    """What every command shares: where the daemon is, and a client for it."""

    def __init__(self, url: str | None, data_dir: Path, token: str | None, data_dir_unknown: str | None = None) -> None:
        self.data_dir = data_dir
        self.url = url or f"unix:{data_dir.absolute() / 'api.sock'}"
        self.token = token
        #: why the daemon cannot be found (the data directory's key of a broken file), if so:
        #: a command that needs the daemon refuses with it, exit status 2
        self.unknown = None if url else data_dir_unknown
        self.timeout = DEFAULT_TIMEOUT_SEC  #: --request-timeout
        self._client: Client | None = None

    def _token(self) -> str | None:
        """--token / CRONWHEEL_TOKEN, else (for a TCP URL) the daemon's ``<data-dir>/admin-token``
        when this user can read it: a local operator never copies a token by hand. The Unix
        socket needs none (it is admin by file permission). A ``localhost`` URL is then sent to
        the loopback address the daemon wrote, where the token is meant to go."""
        if self.token or self.url.startswith("unix:"):
            return self.token
        found = local_admin(self.data_dir, self.url)
        if found is None:
            return None
        token, self.url = found
        return token

    @property
    def client(self) -> Client:
        if self.unknown is not None:
            render.emit_error(self.unknown)
            sys.exit(2)
        if self._client is None:
            token = self._token()
            if token is not None:
                token = given_token(token)
                if token is None:
                    raise click.BadParameter("a token is printable ASCII, as `cronwheel token create` prints it; "
                                             "this one is not (a stray byte or line break?)", param_hint="'--token' / CRONWHEEL_TOKEN")
            try:
                self._client = Client(self.url, token, timeout=self.timeout)
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="'--url' / CRONWHEEL_URL") from None
        return self._client


def local_admin(data_dir: Path, url: str) -> tuple[str, str] | None:
    """The admin token of the daemon on ``data_dir``, if ``url`` is that very daemon, and the
    URL to send it to: a loopback address equal to the one it wrote to ``<data-dir>/http.addr``
    (``localhost`` names any loopback address), while the process whose pid is in
    ``<data-dir>/lock`` is alive and runs as the token file's owner. So the token is never
    sent to another machine, nor to whoever squats on the port of a daemon that is down; and
    a ``localhost`` URL is sent to the daemon's own address, not to whichever of 127.0.0.1 and
    ::1 the name resolves to first (another program may listen on the other)."""
    try:
        token_file = data_dir / "admin-token"
        token = token_file.read_text(encoding="ascii").strip()
        written = urlsplit((data_dir / "http.addr").read_text(encoding="ascii").strip())
        pid = int((data_dir / "lock").read_text(encoding="ascii").split()[0])
        target = urlsplit(url)
        host = (target.hostname or "").lower()
        if not token or target.port != written.port or written.hostname is None:
            return None
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            return None
        if Path("/proc").is_dir() and os.stat(f"/proc/{pid}").st_uid != token_file.stat().st_uid:
            return None
        if written.hostname in (host, "0.0.0.0", "::"):  # a wildcard bind serves loopback too
            address = _WILDCARD_LOOPBACK.get(written.hostname, host) if host == "localhost" else host
        elif host == "localhost" and ipaddress.ip_address(written.hostname).is_loopback:
            address = written.hostname
        else:
            return None
        netloc = f"[{address}]:{written.port}" if ":" in address else f"{address}:{written.port}"
        return token, target._replace(netloc=netloc).geturl()
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None


#: the loopback address of a wildcard bind that a ``localhost`` URL is sent to
_WILDCARD_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def lock_holder(data_dir: Path) -> tuple[int, bool] | None:
    """``(pid, stopped)`` of the live cronwheel process whose pid is in ``<data-dir>/lock``
    (``daemon/datadir.py`` writes it there while it holds the lock), else None: no lock, a
    pid left by a daemon that died, or one since reused by another program."""
    try:
        pid = int((data_dir / "lock").read_text(encoding="ascii").split()[0])
        if not Path(f"/proc/{pid}/cmdline").read_bytes().count(b"cronwheel"):
            return None
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace").rpartition(")")[2].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return None if state in ("Z", "X") else (pid, state in ("T", "t"))  # a zombie holds nothing


def out_of_reach(data_dir: Path) -> bool:
    """True when this user may not read the data directory's lock (nor reach its socket): a
    daemon may well run there, as a service's user, unseen from here."""
    try:
        (data_dir / "lock").read_bytes()
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def out_of_reach_note(data_dir: Path) -> str:
    """What a user who cannot enter a service's data directory can do instead: the TCP API,
    whose address is public, with a token of their own (the admin token stays in there)."""
    where = data_dir.absolute()
    try:
        st = where.stat()
        owner: str = str(st.st_uid)
        with contextlib.suppress(KeyError):
            owner = pwd.getpwuid(st.st_uid).pw_name
        whose = f" (it is {owner}'s, mode {st.st_mode & 0o777:04o})"
    except OSError:
        whose = ""
    return (
        f"A daemon may be running with the data directory {where}, but this user cannot reach its socket{whose}. "
        "Use its TCP API instead: set CRONWHEEL_URL to its address (`export CRONWHEEL_URL=$(cat "
        "/run/cronwheel/http.addr)` under the shipped systemd unit, else its --http address) and "
        f"CRONWHEEL_TOKEN to {_TOKEN_FOR_YOU}; or run the command as the daemon's user or root."
    )


#: where a user who cannot read the admin token gets one
_TOKEN_FOR_YOU = ("a token made for you by someone who can reach the daemon (`cronwheel token create --role admin "
                  "--name NAME`, or --tenant NAME for one tenant's jobs)")


pass_cli = click.make_pass_decorator(Cli)


def unreachable_exit(exc: DaemonUnreachable, prefix: str = "", app: Cli | None = None) -> NoReturn:
    render.emit_error(prefix + str(exc))
    where = ""
    if app is not None and (app.url == f"unix:{app.data_dir.absolute() / 'api.sock'}"
                            or local_admin(app.data_dir, app.url) is not None):
        # the data directory's daemon, by its socket (the default; ./.cronwheel is relative to
        # where you are) or by the address it published
        if out_of_reach(app.data_dir):  # a service's 0700 directory: say so, not "no daemon runs"
            render.emit_note(out_of_reach_note(app.data_dir))
            sys.exit(EX_UNAVAILABLE)
        holder = lock_holder(app.data_dir)
        if holder is not None:
            pid, stopped = holder
            render.emit_note(
                f"A daemon (pid {pid}) holds the data directory {app.data_dir.absolute()} but does not answer: "
                + (f"it is stopped (`kill -CONT {pid}` resumes it)." if stopped else
                   f"is it hung, or still starting? Its log says; `kill {pid}` stops it (then `cronwheel serve`).")
            )
            sys.exit(EX_UNAVAILABLE)
        where = f"No daemon runs with the data directory {app.data_dir.absolute()}. "
    render.emit_note(
        f"{where}Start one with `cronwheel serve` (or `make serve` in a source checkout); "
        "if the daemon uses another data directory, name it with --data-dir DIR or "
        "CRONWHEEL_DATA_DIR; or point --url / CRONWHEEL_URL at a running daemon."
    )
    sys.exit(EX_UNAVAILABLE)


#: words people bring from other tools (crontab, systemctl, kubectl, docker), and the
#: command that does it here. Click's own guess goes by spelling, and spelling misleads:
#: it offered `resume` for "remove" and `backfill` for "kill".
COMMAND_SYNONYMS = {
    "rm": "cancel", "remove": "cancel", "delete": "cancel", "del": "cancel", "kill": "cancel",
    "list": "ls", "jobs": "ls", "ps": "ls",
    "get": "show", "info": "show", "describe": "show", "inspect": "show",
    "edit": "update", "modify": "update",
    "stop": "pause", "disable": "pause", "suspend": "pause",
    "enable": "resume", "unpause": "resume",
    "trigger": "run", "exec": "run", "start": "run",
    "create": "add", "new": "add", "schedule": "add",
    "log": "logs", "output": "logs", "runs": "history", "executions": "history",
    "health": "status", "top": "status", "daemon": "serve",
}  # fmt: skip


class CliGroup(click.Group):
    """Turns client errors into messages and exit codes, never tracebacks."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command that is another tool's word for one of ours names ours, with its
        first line of help, instead of click's guess by spelling."""
        name = args[0] if args else None
        if name is not None and ctx.parent is None and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            ours = COMMAND_SYNONYMS.get(name.lower())
            command = None if ours is None else self.get_command(ctx, ours)
            if command is not None:
                ctx.fail(f"No such command {name!r}. Did you mean {ours!r}? ({ours}: {command.get_short_help_str(80)})")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DaemonUnreachable as exc:
            unreachable_exit(exc, app=ctx.find_object(Cli))
        except ApiError as exc:
            render.emit_error(exc.detail)
            app = ctx.find_object(Cli)
            if exc.status == 401 and app is not None and app.client.token is None and out_of_reach(app.data_dir):
                render.emit_note(
                    "The CLI sent no token: give one with --token or CRONWHEEL_TOKEN. The daemon's admin token is in "
                    f"its data directory ({app.data_dir.absolute() / 'admin-token'}), which this user cannot read: use "
                    f"{_TOKEN_FOR_YOU}."
                )
            elif exc.status == 401 and app is not None and app.client.token is None:
                render.emit_note(
                    "The CLI sent no token: give one with --token or CRONWHEEL_TOKEN. The daemon's admin token "
                    f"is in its data directory ({app.data_dir.absolute() / 'admin-token'}; another one is named "
                    "with --data-dir DIR or CRONWHEEL_DATA_DIR), sent on its own to the address of a daemon of "
                    "this machine that it wrote to http.addr there."
                )
            sys.exit(1)
        except ClientError as exc:
            render.emit_error(str(exc))
            sys.exit(1)

