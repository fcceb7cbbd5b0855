"""`cronwheel config`: the daemon's configuration as ``serve`` resolves it, where each value
comes from, and what ``serve`` would refuse in it."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import click

from cronwheel.cli import config as cfg
from cronwheel.cli import render
from cronwheel.cli.config_checks import refusals, warnings
from cronwheel.cli.context import CONTEXT
from cronwheel.core.config import mask_secrets

_DEFAULT_IN_HELP = re.compile(r"\[default:? ([^\]]+)\]")


def daemon_default(option: click.Option) -> str | None:
    """What the daemon uses when a key is not set anywhere (as its help says)."""
    if isinstance(option.default, (str, int, float)) and not isinstance(option.default, bool):
        return str(option.default)
    found = _DEFAULT_IN_HELP.search(option.help or "")
    return found.group(1) if found else None


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def show(command: click.Command, parent: click.Context, file: cfg.FileValues, args: list[str], as_json: bool,
         why: str = "") -> None:
    """Print the keys as serve started here would resolve them (``why``: why not the running
    daemon's), then (on standard error) what serve would refuse in them, and exit 2 if
    anything; and what may stop serve but cannot be judged here (a warning)."""
    values = cfg.effective(command, parent, file, args)
    file = parent.meta.get("cronwheel.config", file)  # serve's own --config among ``args`` named another
    _print(command, file, values, as_json, why)
    _refuse(cfg.settings(command, file, values))


def _print(command: click.Command, file: cfg.FileValues, values: dict[str, tuple[Any, str]], as_json: bool,
           why: str) -> None:
    options = cfg.config_keys(command)
    if as_json:
        render.emit_json({
            "shows": "local", "why": why or None,
            "file": str(file.path) if file.path else None,
            "keys": [
                {"key": k, "value": _shown(v),
                 "source": src, "env": options[k].envvar, "default": daemon_default(options[k])}
                for k, (v, src) in values.items()
            ],
        })
        return
    if why:
        click.echo(f"# as `cronwheel serve` started from this shell would resolve it: {why}")
    click.echo(f"# configuration file: {file.path or f'none ({cfg.DEFAULT_CONFIG} does not exist)'}")
    _print_keys(command, values)


def _print_keys(command: click.Command, values: dict[str, tuple[Any, str]]) -> None:
    options = cfg.config_keys(command)
    width = max(len(k) for k in values) + 3 + 28
    for key, (value, source) in values.items():
        if value is None:
            default = daemon_default(options[key])
            click.echo(f"# {key} is not set" + (f" (default: {default})" if default else ""))
            continue
        line = f"{key} = {_toml(_shown(value))}"
        click.echo(f"{line:<{width}}  # {source}")


def daemon_report(ctx: click.Context, data_dir_source: str | None, origins: dict[str, str]) -> Any:
    """`serve`: the configuration it starts with, for its ``GET /v1/config``: each key's value
    (a URL's password masked) and origin; the daemon fills in what it chooses itself."""
    from cronwheel.daemon.configreport import ConfigReport

    file: cfg.FileValues = ctx.meta.get("cronwheel.config", cfg.NO_FILE)
    options = cfg.config_keys(ctx.command)
    keys = {}
    for key, (value, source) in cfg.effective(ctx.command, ctx.parent, file, given=cfg.given_on_command_line(ctx)).items():
        if key == "data_dir" and value is None and data_dir_source:
            source = data_dir_source
        keys[key] = {"value": _shown(value), "source": source, "env": options[key].envvar,
                     "default": daemon_default(options[key])}
    return ConfigReport(str(file.path) if file.path else None, keys, origins, _shown)


def _shown(value: Any) -> Any:
    """A value as `cronwheel config` and ``GET /v1/config`` show it: a URL's password masked."""
    return None if value is None else value if isinstance(value, (bool, int, float)) else mask_secrets(str(value))


def _ask_daemon(root: click.Context) -> tuple[dict[str, Any] | None, str]:
    """The running daemon's configuration, or None and why not."""
    from cronwheel.cli.client import ApiError, ClientError

    try:
        client = root.obj.client
        data = client.request("GET", "/v1/config")[2]
    except ApiError as exc:
        return None, f"the daemon at {root.obj.url} did not show it ({exc.status}: {exc.detail})"
    except ClientError as exc:
        return None, f"the running daemon was not asked: {exc}"  # names the URL and why
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        return None, f"the daemon at {root.obj.url} answered no configuration"
    return data, client.url


def _pending(resolved: dict[str, tuple[Any, str]], running: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The keys the file sets otherwise than the daemon runs with them (``resolved``: the file
    as this shell reads it, under the daemon's flags; keys the daemon took from a flag or its
    environment are its own), and what applies each."""
    from cronwheel.daemon.reload import LIVE_KEYS

    out = []
    for key, (value, source) in resolved.items():
        entry = running.get(key)
        theirs = str(entry.get("source", "")) if entry else "flag"
        if theirs == "flag" or theirs.startswith("env ") or source.startswith(("flag", "env ")):
            continue
        if source == "default" and theirs.startswith("default"):
            continue
        if _toml(_shown(value)) != _toml(entry.get("value") if entry else None):
            out.append({"key": key, "value": _shown(value), "source": source,
                        "applies": "reload" if key in LIVE_KEYS else "restart"})
    return out


def show_running(command: click.Command, parent: click.Context, file: cfg.FileValues, data: dict[str, Any],
                 url: str, as_json: bool) -> None:
    """The daemon's own configuration, then what the file (as this shell reads it) would
    change, and what serve would refuse in it at the next start (exit 2)."""
    running = {str(e.get("key")): e for e in data["keys"] if isinstance(e, dict)}
    same_file = str(file.path) if file.path else None
    flags = {k: e["value"] for k, e in running.items() if e.get("source") == "flag"}
    resolved = cfg.effective(command, parent, file, given=flags)
    pending = _pending(resolved, running) if same_file == data.get("file") else []
    if as_json:
        render.emit_json({"shows": "daemon", "daemon": {k: data.get(k) for k in ("pid", "node", "startedAt", "reloadedAt")}
                          | {"url": url}, "file": data.get("file"), "keys": list(running.values()), "pending": pending})
    else:
        reloaded = f", reloaded {data['reloadedAt']}" if data.get("reloadedAt") else ""
        click.echo(f"# the running daemon's configuration (pid {data.get('pid')}, node {data.get('node')}, started "
                   f"{data.get('startedAt')}{reloaded}), asked at {url}")
        click.echo(f"# configuration file: {data.get('file') or 'none'}")
        if same_file != data.get("file"):
            click.echo(f"# (this shell reads {same_file or 'no file'}: give --config FILE to compare with the daemon's)")
        _print_keys(command, {k: (e.get("value"), str(e.get("source"))) for k, e in running.items()})
        for p in pending:
            how = "`systemctl reload cronwheel` (SIGHUP) applies it" if p["applies"] == "reload" else "a restart applies it"
            set_to = "is not set" if p["value"] is None else f"= {_toml(p['value'])}"
            click.echo(f"# not in effect: {p['key']} {set_to} ({p['source']}); {how}")
    _refuse(cfg.settings(command, file, resolved), "at the next start: ")


def _refuse(resolved: dict[str, Any], prefix: str = "") -> None:
    for text in warnings(resolved):
        render.emit_note(f"warning: {text}")
    found = refusals(resolved)
    for problem in found:
        render.emit_error(f"{prefix}{problem}")
    if found:
        sys.exit(2)


#: the help names the file this build reads: `make dist SYSCONFDIR=DIR` sets DEFAULT_CONFIG in
#: a preamble that runs before this module is imported
_HELP = """Print the daemon's effective configuration and where each value comes from.

    When a daemon answers (the one the data directory names, as for every command), this is
    what it runs with, its own flags and environment included (a systemd unit's ExecStart=
    and Environment=), each key's origin (flag, env CRONWHEEL_<KEY>, FILE:LINE, default),
    then what the configuration file now sets otherwise (a reload or a restart applies it).
    With no daemon, with --local, or with serve's flags after `--`, it is what `cronwheel
    serve` started from this shell would use: its flag, else its CRONWHEEL_<KEY> environment
    variable, else the configuration file (--config, $CRONWHEEL_CONFIG, else DEFAULT_CONFIG
    when it exists), else the daemon's default. Either way what serve would refuse in the
    file is said, and exits 2. Keys are documented in cronwheel.toml(5).
    """


@click.command("config", context_settings={**CONTEXT, "ignore_unknown_options": True},
               help=_HELP.replace("DEFAULT_CONFIG", str(cfg.DEFAULT_CONFIG)))
@click.argument("serve_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SERVE-OPTIONS]...")
@click.option("--local", is_flag=True, help="Resolve it here, as `cronwheel serve` started from this shell would, "
              "without asking the running daemon.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {shows, daemon, file, keys: [{key, value, source, env, default}], pending}.")
@click.pass_context
def config_command(ctx: click.Context, serve_args: tuple[str, ...], local: bool, as_json: bool) -> None:
    root = ctx.find_root()
    serve = root.command.get_command(root, "serve") if isinstance(root.command, click.Group) else None
    assert serve is not None
    file = ctx.meta.get("cronwheel.config") or cfg.load_or_exit(serve, None)
    if file.problem is not None and not any(a.split("=")[0] == "--config" for a in serve_args):
        render.emit_error(str(file.problem))  # what serve would refuse: the check this command is
        sys.exit(2)
    why = "--local" if local else "serve's options after --"
    if not local and not serve_args:
        data, why = _ask_daemon(root)
        if data is not None:
            show_running(serve, root, file, data, why, as_json)
            return
    try:
        show(serve, root, file, list(serve_args), as_json, why)
    except click.UsageError as exc:
        raise click.UsageError(f"serve options: {exc.format_message()}") from None
