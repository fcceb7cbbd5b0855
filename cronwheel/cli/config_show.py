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


def show(command: click.Command, parent: click.Context, file: cfg.FileValues, args: list[str], as_json: bool) -> None:
    """Print the keys, then (on standard error) what serve would refuse in them, and exit 2
    if anything; and what may stop serve but cannot be judged here (a warning)."""
    values = cfg.effective(command, parent, file, args)
    _print(command, file, values, as_json)
    resolved = cfg.settings(command, file, values)
    for text in warnings(resolved):
        render.emit_note(f"warning: {text}")
    found = refusals(resolved)
    for problem in found:
        render.emit_error(str(problem))
    if found:
        sys.exit(2)


def _print(command: click.Command, file: cfg.FileValues, values: dict[str, tuple[Any, str]], as_json: bool) -> None:
    options = cfg.config_keys(command)
    if as_json:
        render.emit_json({
            "file": str(file.path) if file.path else None,
            "keys": [
                {"key": k, "value": None if v is None else (v if isinstance(v, (bool, int, float)) else cfg.mask_secrets(str(v))),
                 "source": src, "env": options[k].envvar, "default": daemon_default(options[k])}
                for k, (v, src) in values.items()
            ],
        })
        return
    click.echo(f"# configuration file: {file.path or f'none ({cfg.DEFAULT_CONFIG} does not exist)'}")
    width = max(len(k) for k in values) + 3 + 28
    for key, (value, source) in values.items():
        if value is None:
            default = daemon_default(options[key])
            click.echo(f"# {key} is not set" + (f" (default: {default})" if default else ""))
            continue
        line = f"{key} = {_toml(value if isinstance(value, (bool, int, float)) else cfg.mask_secrets(str(value)))}"
        click.echo(f"{line:<{width}}  # {source}")


@click.command("config", context_settings={**CONTEXT, "ignore_unknown_options": True})
@click.argument("serve_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SERVE-OPTIONS]...")
@click.option("--json", "as_json", is_flag=True, help="Print {file, keys: [{key, value, source, env, default}]}.")
@click.pass_context
def config_command(ctx: click.Context, serve_args: tuple[str, ...], as_json: bool) -> None:
    """Print the daemon's effective configuration and where each value comes from.

    Each key of `cronwheel serve` comes from its flag, else its CRONWHEEL_<KEY> environment
    variable, else the configuration file (--config, $CRONWHEEL_CONFIG, else
    /etc/cronwheel/cronwheel.toml when it exists), else the daemon's default. Give serve's
    flags after `--` to see what they change. Keys are documented in cronwheel.toml(5).
    """
    root = ctx.find_root()
    serve = root.command.get_command(root, "serve") if isinstance(root.command, click.Group) else None
    assert serve is not None
    file = ctx.meta.get("cronwheel.config") or cfg.load_or_exit(serve, None)
    try:
        show(serve, root, file, list(serve_args), as_json)
    except click.UsageError as exc:
        raise click.UsageError(f"serve options: {exc.format_message()}") from None
