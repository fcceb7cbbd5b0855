"""The ``cronwheel`` command: a person's first interface to the scheduler.

Every command except ``next SCHEDULE``, ``serve`` and ``worker`` talks to a running daemon
over its HTTP API (by default the Unix socket in the data directory). Exit codes: 0 ok,
1 the daemon refused (the problem's detail is printed) or the object is not found,
2 usage error, 69 no daemon reachable (EX_UNAVAILABLE); ``run --wait`` and ``effect`` have
their own, listed in their help (the table is ``exits``).

This module is the root group, its global options and the registration of every command;
the commands live in the modules named for what they act on (``jobs``, ``schedules``,
``executions``, ``dlq``, ``node``, …).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import select
import sys
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import click

from cronwheel.cli import config as cfg
from cronwheel.cli import config_show, render
from cronwheel.cli.client import Client
from cronwheel.cli.context import CONTEXT, Cli, CliGroup, default_data_dir
from cronwheel.cli.exits import EX_PIPE_CLOSED
from cronwheel.cli.node import serve, status, worker


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``, as click's version_option prints it, the version read only then."""
    if not value or ctx.resilient_parsing:
        return
    import cronwheel

    click.echo(f"cronwheel, version {cronwheel.__version__}")
    ctx.exit()


@click.group(cls=CliGroup, context_settings=CONTEXT)
@click.option("--url", envvar="CRONWHEEL_URL", metavar="URL",
              help="The daemon: http://HOST:PORT or unix:/PATH. [env CRONWHEEL_URL; default unix:DATA_DIR/api.sock]")
@click.option("--data-dir", type=cfg.DATA_DIR, metavar="DIR",
              help="The daemon's data directory. [env CRONWHEEL_DATA_DIR, else $STATE_DIRECTORY, else ./.cronwheel]")
@click.option("--token", envvar="CRONWHEEL_TOKEN", metavar="TOKEN",
              help="Bearer token for the API. [env CRONWHEEL_TOKEN]")
@click.option("--request-timeout", type=cfg.REQUEST_TIMEOUT, envvar="CRONWHEEL_REQUEST_TIMEOUT", metavar="DURATION",
              help="Give up on a daemon that has not answered a request within this long (e.g. 5s, 2m); "
                   "following output or events waits on. [env CRONWHEEL_REQUEST_TIMEOUT; default 30s]")
@click.option("--config", "config_path", metavar="FILE",
              help="The configuration file (its data_dir tells commands where the daemon is). "
                   f"[env CRONWHEEL_CONFIG; default {cfg.DEFAULT_CONFIG} when it exists]")
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
@click.pass_context
def cli(ctx: click.Context, url: str | None, data_dir: Path | None, token: str | None, request_timeout: str | None,
        config_path: str | None) -> None:
    """cronwheel: a distributed job scheduler for cron and one-off jobs.

    \b
    Quick start:
      cronwheel serve &                                  # a daemon on ./.cronwheel
      cronwheel add '*/5 * * * *' --name tidy -- find /srv/app/cache -mtime +7 -delete
      cronwheel add +10m -- echo later                   # a one-off in 10 minutes
      cronwheel next 'H 3 * * 1-5' -n 3                  # no daemon needed
      cronwheel ls ; cronwheel history tidy ; cronwheel run tidy --wait

    Exit codes: 0 ok, 1 refused or not found, 2 usage error, 69 no daemon reachable,
    141 the output's reader went away (`cronwheel ls | head -1`).
    """
    # the file is read for every command: `serve` takes its keys, the others find the daemon
    # through its data_dir, so on an installed host `cronwheel ls` works from any directory.
    # A mistake in it refuses `serve` and `config` (their own checks), and the commands that
    # need the data_dir it hides (Cli.client); the others go on after one warning.
    file = cfg.NO_FILE if ctx.resilient_parsing else cfg.read(serve, config_path)
    if file.problem is not None and ctx.invoked_subcommand not in REFUSED_BY_A_MISTAKE:
        render.emit_note(f"warning: {file.problem} (ignored here; `cronwheel serve` refuses to start with it)")
    ctx.meta["cronwheel.config"] = file
    ctx.default_map = {"serve": file.values}
    ctx.obj = make_cli(url, data_dir, token, file)
    if request_timeout is not None:
        ctx.obj.timeout = cfg.request_timeout(request_timeout)


#: the commands that say nothing of the file's mistake up front: ``serve`` and ``config``
#: refuse with it (their own checks), a worker reads nothing of it (the daemon starts them)
REFUSED_BY_A_MISTAKE = frozenset({"serve", "config", "worker"})


def make_cli(url: str | None, data_dir: Path | None, token: str | None, file: cfg.FileValues) -> Cli:
    """The data dir: --data-dir, else $CRONWHEEL_DATA_DIR, else the file's data_dir, else
    $STATE_DIRECTORY, else ./.cronwheel."""
    unknown = None
    if data_dir is None and not os.environ.get("CRONWHEEL_DATA_DIR"):
        data_dir = file.values.get("data_dir")
        if file.unread("data_dir"):
            source = file.problem.source if file.problem else file.path
            unknown = (f"the daemon's data directory is set in {source}, which cannot be used as it stands (see "
                       "the warning above): fix it, or give --data-dir or --url")
    return Cli(url, data_dir or default_data_dir(), token, data_dir_unknown=unknown)


def completion_client(params: dict[str, Any]) -> Client:
    """A client for the daemon the root command's options (and the configuration file) name,
    for shell completion, which runs without the group's callback."""
    file = cfg.read(serve, params.get("config_path"))
    return make_cli(params.get("url"), params.get("data_dir"), params.get("token"), file).client


def alias(command: click.Command, name: str) -> click.Command:
    """``command`` under a second name, whose help says so instead of repeating itself."""
    copied = copy.copy(command)
    copied.name = name
    copied.short_help = f"Another name for {command.name}."
    # dedented first: click strips the common indentation of a docstring, which a line of our
    # own at the margin would leave in place
    copied.help = f"Another name for `cronwheel {command.name}`.\n\n{inspect.cleandoc(command.help or '')}"
    return copied


@cli.command(context_settings=CONTEXT)
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
      bash:  eval "$(cronwheel completion bash)"     (in ~/.bashrc)
      zsh:   eval "$(cronwheel completion zsh)"      (in ~/.zshrc)
      fish:  cronwheel completion fish > ~/.config/fish/completions/cronwheel.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None
    click.echo(cls(cli, {}, "cronwheel", "_CRONWHEEL_COMPLETE").source())


class _Commands(MutableMapping[str, click.Command]):
    """The root group's commands, each one's module imported when the command is first looked
    up: ``serve`` (and each worker's start) then loads none of the client commands, nor
    ``cronwheel ls`` the others. Listing the names loads nothing; help, which shows each
    one's first line, loads them all."""

    def __init__(self, loaded: MutableMapping[str, click.Command],
                 loaders: dict[str, Callable[[], click.Command]]) -> None:
        self._loaded = dict(loaded)
        self._loaders = dict(loaders)

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded and name in self._loaders:
            self._loaded[name] = self._loaders.pop(name)()
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaders.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if self._loaders.pop(name, None) is None:
            del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._loaded
        yield from (name for name in list(self._loaders) if name not in self._loaded)

    def __len__(self) -> int:
        return len(self._loaded.keys() | self._loaders.keys())


def _from(module: str, attribute: str) -> Callable[[], click.Command]:
    def load() -> click.Command:
        command: click.Command = getattr(importlib.import_module(f"cronwheel.cli.{module}"), attribute)
        return command
    return load


def _tenant() -> click.Command:
    """``tenant``, with its ``notify`` subcommand (which lives with the other notify commands)."""
    from cronwheel.cli.admin import tenant
    from cronwheel.cli.notify import tenant_notify

    tenant.add_command(tenant_notify, "notify")
    return tenant


def _import() -> click.Command:
    from cronwheel.cli.transfer import import_crontab

    return alias(import_crontab, "import")


#: every command, by name, and where it lives
_COMMANDS: dict[str, Callable[[], click.Command]] = {
    **{name: _from("jobs", name) for name in ("add", "ls", "show")},
    "update": _from("jobedit", "update"),
    **{name: _from("jobs", name) for name in ("cancel", "pause", "resume", "run")},
    "next": _from("schedules", "next_"), "lint": _from("schedules", "lint"),
    **{name: _from("executions", name) for name in ("history", "logs", "effect")},
    "dlq": _from("dlq", "dlq"), "status": lambda: status, "serve": lambda: serve, "worker": lambda: worker,
    "import-crontab": _from("transfer", "import_crontab"), "export": _from("exporting", "export"),
    **{name: _from("notify", name) for name in ("ping", "watch", "notifications")},
    **{name: _from("beyondcron", name) for name in ("calendar", "backfill", "chain")},
    "tenant": _tenant, "token": _from("admin", "token"), "whoami": _from("admin", "whoami"), "config": lambda: config_show.config_command,
    "apply": _from("jobs_as_code", "apply"), "import": _import, "backup": _from("backup", "backup"),
}
cli.commands = _Commands(cli.commands, _COMMANDS)


def main() -> None:
    try:
        cli(prog_name="cronwheel")
    except BrokenPipeError:  # `cronwheel ls | head`
        _pipe_closed()
    except SystemExit as exc:
        if exc.code == 1 and _reader_gone():  # click's own handling of a closed pipe exits 1
            _pipe_closed()
        raise


def _reader_gone() -> bool:
    """Standard output is a pipe whose reader has closed it (poll says POLLERR)."""
    try:
        poll = select.poll()
        poll.register(sys.__stdout__.fileno() if sys.__stdout__ else 1, 0)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError):
        return False


def _pipe_closed() -> None:
    """Exit as a program killed by SIGPIPE would, saying nothing more to the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
    sys.exit(EX_PIPE_CLOSED)


if __name__ == "__main__":
    main()
