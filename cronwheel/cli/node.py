"""The commands of a node: ``serve`` (the daemon), ``worker`` (one worker process, or a remote
worker) and ``status`` (the daemon's health). The daemon and the worker are imported when
they start, so the other commands never load them."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import click

from cronwheel.cli import config as cfg
from cronwheel.cli import config_show, render, views
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, pass_cli


@click.command(context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@pass_cli
def status(app: Cli, as_json: bool) -> None:
    """The daemon's health: jobs, queue depths, workers, dispatch lag."""
    data = app.client.status()
    if as_json:
        render.emit_json(data)
        return
    views.emit_status(data)



#: bounds that catch a typo before it starts 100,000 processes or waits forever on SIGTERM
MAX_WORKERS = 1024
MAX_SLOTS = 100_000
MAX_GRACE_SEC = 86_400.0


class _Seconds(click.FloatRange):
    """A number of seconds. click's FloatRange lets nan through (every comparison with it is
    false), and says "'1m' is not a valid float range" of a duration: both refused here, in
    the type, saying what is wanted, so a file's value is refused naming its file and line."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds (such as 30 or 90.5; a duration like 1m is not taken here)",
                      param, ctx)  # fmt: skip
        if math.isnan(number):
            self.fail(f"{value} is not a number of seconds", param, ctx)
        return super().convert(number, param, ctx)


class _Millis(WholeNumber):
    """A whole number of milliseconds: "'1s' is not a valid integer range" said what is wanted."""

    def not_a_number(self, value: Any) -> str:
        return f"{value!r} is not a whole number of milliseconds (such as 2000; a duration like 2s is not taken here)"


@click.command(context_settings=CONTEXT)
@click.option("--data-dir", type=cfg.DATA_DIR, metavar="DIR",
              help="Where the embedded store and the sockets live. [default: the global --data-dir]")
@click.option("--store", type=cfg.STORE, metavar="URL", help="postgresql://… for a cluster. [default: SQLite in the data dir]")
@click.option("--http", "http", type=cfg.HOSTPORT, default="127.0.0.1:7878", show_default=True, metavar="HOST:PORT", help="TCP address of the HTTP API (the Unix socket is always served).")
@click.option("--workers", type=WholeNumber(0, MAX_WORKERS), metavar="N", help="Local worker processes. [default: the number of CPUs]")
@click.option("--slots", type=WholeNumber(1, MAX_SLOTS), metavar="N", help="Concurrent executions per worker. [default: 16]")
@click.option("--node-id", type=cfg.NODE_ID, metavar="ID", help="This node's id in a cluster. [default: the host name]")
@click.option("--log-format", type=click.Choice(["json", "console"]), help="[default: console on a TTY, else json]")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), help="Print events of this level and above. [default: info]")
@click.option("--config", metavar="FILE", is_eager=True, expose_value=False, callback=lambda ctx, _p, v: _serve_config(ctx, v),
              help=f"Read this configuration file (cronwheel.toml(5)). [env CRONWHEEL_CONFIG; default {cfg.DEFAULT_CONFIG} when it exists]")
@click.option("--grace-sec", type=_Seconds(0, MAX_GRACE_SEC), metavar="SEC",
              help="On SIGTERM, how long running executions get to finish (a second SIGTERM or Ctrl-C ends it at once). [default: 30]")
@click.option("--reaper-interval-ms", type=_Millis(10), metavar="MS", help="How often expired leases are reaped. [default: 1000]")
@click.option("--reserved-high-slots", type=WholeNumber(0), metavar="N", help="Worker slots kept free for the high priority tier (fewer than workers x slots). [default: 0]")
@click.option("--claim-ahead-ms", type=_Millis(0, 60_000), metavar="MS", help="Claim due ticks this long before they are due. [default: 2000]")
@click.option("--retention", type=cfg.DURATION, metavar="DURATION", help="Prune finished executions older than this (e.g. 30d), settled jobs (a one-off that ran, a cancelled job) once all of theirs are, and tokens revoked before it. [default: 30d]")
@click.option("--keep-last", type=WholeNumber(1), metavar="N", help="Always keep each job's N newest executions, while the job is kept. [default: 1000]")
@click.option("--dlq-keep-last", type=WholeNumber(1), metavar="N", help="Keep each job's N newest dead letters and dead notifications; older ones are deleted (dlq.pruned). [default: 1000]")
@click.option("--retention-interval-ms", type=_Millis(100), metavar="MS", help="How often the history is pruned. [default: 300000]")
@click.option("--http-allow", type=cfg.HOSTS, metavar="HOST,...", help="Hosts that tenants' HTTP targets (their redirects too) and webhooks may call, and their email rules' recipients' domains (a tenant's own httpAllow wins); given but empty: none. [default: any]")
@click.option("--trusted-proxies", type=cfg.PROXIES, metavar="CIDR,...", help="Reverse proxies (IPv4/IPv6 networks or addresses) whose X-Forwarded-For / Forwarded headers name the client: its address is then the one budgets and log lines use (the rightmost hop that is not one of these). [default: none, the headers are ignored]")
@click.option("--cluster", is_flag=True, default=None, help="Cluster mode: lease time buckets in the store (always on with postgresql://). [default: on with postgresql://]")
@click.option("--bucket-lease-ms", type=_Millis(300, 600_000), metavar="MS", help="Cluster mode: bucket lease TTL. [default: 10000]")
@click.option("--disk-low", type=cfg.SIZE, metavar="SIZE", help="Warn (store.disk_low) when the data dir's free space falls under this. [default: 256M]")
@click.option("--smtp-url", type=cfg.SMTP_URL, metavar="URL", envvar="CRONWHEEL_SMTP_URL", help="Send email notifications through this relay: smtp://[user:pass@]host[:port] (STARTTLS when offered; ?starttls=require to insist) or smtps://…; set it in the environment to keep its password out of the process list.")
@click.option("--sendmail", metavar="PATH", help="Send email notifications with this sendmail program instead of --smtp-url (e.g. /usr/sbin/sendmail).")
@click.option("--mail-from", type=cfg.MAIL_FROM, metavar="ADDRESS", help="The sender of email notifications. [default: cronwheel@HOSTNAME]")
@click.pass_context
def serve(ctx: click.Context, /, data_dir: Path | None, **options: Any) -> None:
    """Run the daemon: scheduler, HTTP API and local workers (one per node).

    Every option is also a key of the configuration file and a CRONWHEEL_<KEY> environment
    variable (flag > environment > file > default; see cronwheel.toml(5) and `cronwheel
    config`). SIGHUP reads the file again and applies log_level, log_format, http_allow,
    trusted_proxies and the retention keys; other changes are refused until a restart.

    Exit status: 0 stopped; 1 crashed; 2 the start was refused for good (a mistake in the
    configuration, a data directory or store it may not use: the systemd unit does not
    restart it); 75 refused for now (the store not reachable yet, the port or the data
    directory still held: the unit restarts it).
    """
    app: Cli = ctx.obj
    try:
        from cronwheel.daemon import startsignals

        startsignals.hold()  # before the daemon's imports: a SIGHUP or SIGTERM then is kept, not fatal
        from cronwheel.daemon.serve import run_from_cli
    except ImportError as exc:
        raise click.ClickException(f"the daemon is not available in this build: {exc}") from None
    http = cfg.check_or_exit(ctx)["http"]
    # a host that does not resolve is found only when serve listens: say where it was written
    origin = http.written("http")
    given = {k: val for k, val in options.items() if val is not None}  # the daemon's defaults rule
    origins: dict[str, str] = {}
    root = ctx.find_root().params
    report = config_show.daemon_report(ctx, None if data_dir else _data_dir_origin(root.get("data_dir")), origins)
    rc = run_from_cli(data_dir=str(data_dir or app.data_dir), **given, **cfg.reload_hooks(ctx, origins),
                      http_origin=origin, report=report)
    if isinstance(rc, int) and rc:
        sys.exit(rc)


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def worker(ctx: click.Context, args: tuple[str, ...]) -> None:
    """Run a worker process (started by `cronwheel serve`; rarely by hand).

    With --url, a remote worker instead: `cronwheel worker --url URL --queue NAME
    --handler module:function [--concurrency N] [--token T]` claims the executions of queue
    targets over the HTTP API and runs them with the handler. The daemon's http(s) URL and
    the token may come as for every command: `cronwheel --url URL --token T worker …`, or
    CRONWHEEL_URL and CRONWHEEL_TOKEN."""
    try:
        from cronwheel.worker.process import main as worker_main
    except ImportError as exc:
        raise click.ClickException(f"the worker is not available in this build: {exc}") from None
    root = ctx.find_root().params
    rc = worker_main(with_root_options(list(args), root.get("url"), root.get("token")))
    if isinstance(rc, int) and rc:
        sys.exit(rc)


def with_root_options(argv: list[str], url: str | None, token: str | None) -> list[str]:
    """A worker's arguments with the root command's ``--url`` (or CRONWHEEL_URL) and
    ``--token`` (or CRONWHEEL_TOKEN) in front, when they name an HTTP daemon and the worker's
    own arguments name none: a remote worker finds its daemon as every other command does.
    A ``unix:`` URL is no remote worker's, and a local worker (``--socket``) takes neither."""

    def given(option: str) -> bool:
        return any(a == option or a.startswith(option + "=") for a in argv)

    if not url or url.startswith("unix:") or given("--url") or given("--socket"):
        return argv
    root = ["--url", url]
    if token is not None and not given("--token"):
        root += ["--token", token]
    return root + argv


def _data_dir_origin(global_flag: Path | None) -> str:
    """Where serve's data directory comes from when no layer of its own sets it."""
    if global_flag is not None:
        return "flag cronwheel --data-dir"
    return "default ($STATE_DIRECTORY)" if os.environ.get("STATE_DIRECTORY") else "default (./.cronwheel)"


def _serve_config(ctx: click.Context, path: str | None) -> None:
    """`serve --config FILE`: this file's keys, instead of the one the group read."""
    if path is None or ctx.resilient_parsing:
        return
    file = cfg.load_or_exit(ctx.command, path)
    ctx.meta["cronwheel.config"] = file
    ctx.default_map = file.values


cfg.with_config_keys(serve)
