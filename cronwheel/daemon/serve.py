"""``cronwheel serve``: one asyncio process per node (uvloop when available)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from cronwheel.api.app import make_app
from cronwheel.api.auth import Authenticator
from cronwheel.api.server import ConnectionGuard, GuardedAppRunner
from cronwheel.core.config import DEFAULT_SLOTS, combination_problems
from cronwheel.core.forwarded import TrustedProxies
from cronwheel.core.tenants import HostAllow
from cronwheel.daemon import startsignals
from cronwheel.daemon.configreport import ConfigReport
from cronwheel.daemon.datadir import publish_address, take_data_dir
from cronwheel.daemon.listeners import ListenError, bind_tcp, bind_unix
from cronwheel.daemon.options import (
    DEFAULT_HTTP,
    DaemonError,
    cli_for_jobs,
    connection_budgets,
    default_data_dir,
    parse_hostport,
    parse_http_allow,
    parse_size,
    parse_trusted_proxies,
    raise_fd_limit,
    refusal_status,
    retention_options,
    worker_cmd,
)
from cronwheel.daemon.reload import Reloader, live_appliers
from cronwheel.engine.channels import ChannelConfigError, MailConfig
from cronwheel.engine.cluster import NodeIdInUse
from cronwheel.engine.node import Node, NodeConfig
from cronwheel.obs.events import EventLog
from cronwheel.obs.heap import settle_heap
from cronwheel.obs.levels import journal_stream
from cronwheel.obs.logbridge import route_logging
from cronwheel.obs.metrics import NodeMetrics
from cronwheel.obs.systemd import Notifier
from cronwheel.store import StoreError, open_store

#: READY=1 waits at most this long for the scheduler's first load of the wheel
WHEEL_LOAD_TIMEOUT_SEC = 60.0
#: the API reader connection's SQLite page cache (the writer keeps the store's default): with
#: a million jobs registered, 16 MiB of it held 17 MiB more of the daemon's memory than 8, for
#: the same start-up (docs/benchmarks.md)
READER_CACHE_MIB = 8

class _HttpErrorEvents(logging.Handler):
    """aiohttp logs a request it cannot parse (a header over the limit, garbage on the port)
    with a traceback that quotes the offending bytes, which may be a token. Turn that into one
    event that says who and what kind of error, and nothing of the content."""

    def __init__(self, events: EventLog) -> None:
        super().__init__(logging.DEBUG)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        peer = record.args[0] if isinstance(record.args, tuple) and record.args else None
        self.events.emit(
            "http.bad_request", peer=str(peer) if peer is not None else None,
            error=type(exc).__name__ if exc is not None else record.levelname.lower(),
            status=getattr(exc, "code", None),
        )


def _http_logger(events: EventLog) -> logging.Logger:
    logger = logging.getLogger("cronwheel.http")
    logger.propagate = False
    logger.handlers = [_HttpErrorEvents(events)]
    logger.setLevel(logging.WARNING)
    return logger


async def serve(
    data_dir: Path,
    store_url: str | None,
    http: str,
    workers: int,
    slots: int,
    node_id: str | None,
    log_format: str,
    grace_sec: float,
    reaper_interval_ms: int = 1_000,
    reserved_high_slots: int = 0,
    claim_ahead_ms: int = 2_000,
    http_allow: str | None = None,
    trusted_proxies: str | None = None,
    retention: str | None = None,
    keep_last: int | None = None,
    dlq_keep_last: int | None = None,
    retention_interval_ms: int | None = None,
    ready: asyncio.Event | None = None,
    cluster: bool | None = None,
    bucket_lease_ms: int | None = None,
    disk_low: str | None = None,
    log_level: str = "info",
    reload: Any = None,
    running: dict[str, Any] | None = None,
    smtp_url: str | None = None,
    sendmail: str | None = None,
    mail_from: str | None = None,
    http_origin: str | None = None,
    report: ConfigReport | None = None,
) -> None:
    """``reload``: on SIGHUP, a callable returning the configuration as it now resolves, to
    compare with ``running`` (the values this daemon was started with; daemon/reload.py).
    ``report``: the configuration as resolved, with origins, for ``GET /v1/config``.
    ``http_origin``: where ``http`` was written (``FILE:LINE: key 'http'``), for a refusal."""
    if startsignals.stop_asked.is_set():  # nothing started yet: nothing to stop
        return
    # read (and unset) NOTIFY_SOCKET/WATCHDOG_* before any worker or job inherits them
    notifier = Notifier.from_environ()
    # the CLI refuses these first, naming the keys' files and lines (cli/config_checks.py)
    refused = combination_problems(
        {"cluster": cluster, "store": store_url, "workers": workers, "slots": slots, "reserved_high_slots":
         reserved_high_slots, "smtp_url": smtp_url, "sendmail": sendmail}, _flag, workers,
    )  # fmt: skip
    if refused:
        raise DaemonError(f"{_flag(refused[0][0])}: {refused[0][1]}")
    host, port = parse_hostport(http)
    allowed_hosts, proxies = parse_http_allow(http_allow), parse_trusted_proxies(trusted_proxies)
    disk_low_bytes = parse_size(disk_low, "--disk-low") if disk_low else None
    retention_opts = retention_options(retention, keep_last, retention_interval_ms, dlq_keep_last)
    fd_limit = raise_fd_limit()
    os.environ.pop("CRONWHEEL_SMTP_URL", None)  # read by the CLI; its password is no job's business
    try:
        mail = MailConfig.parse(smtp_url, sendmail, mail_from)
    except ChannelConfigError as exc:
        raise DaemonError(str(exc)) from None
    # Everything that can refuse the start comes first: the data directory's lock (a second
    # daemon), then the TCP address and the API socket. Only then are the store, the admin
    # token, the workers and the event log's first lines created.
    lock = take_data_dir(data_dir, store_url)
    sock_path = data_dir / "api.sock"
    try:
        tcp_sock = bind_tcp(host, port)
    except ListenError as exc:
        lock.close()
        raise DaemonError(f"{http_origin}: {exc}" if http_origin else str(exc), transient=exc.transient) from None
    try:
        unix_sock = bind_unix(sock_path)
    except ListenError as exc:
        tcp_sock.close()
        lock.close()
        raise DaemonError(str(exc), transient=exc.transient) from None
    try:
        await _serve_bound(
            notifier, tcp_sock, unix_sock, sock_path, data_dir, store_url, host, allowed_hosts, proxies,
            workers, slots, node_id, log_format, grace_sec, reaper_interval_ms, reserved_high_slots,
            claim_ahead_ms, retention_opts, ready, cluster, bucket_lease_ms, disk_low_bytes,
            fd_limit, log_level, reload, running, mail, report,
        )
    finally:
        tcp_sock.close()
        unix_sock.close()
        with contextlib.suppress(FileNotFoundError):
            sock_path.unlink()
        lock.close()


async def _serve_bound(
    notifier: Notifier, tcp_sock: socket.socket, unix_sock: socket.socket, sock_path: Path,
    data_dir: Path, store_url: str | None, host: str, allowed_hosts: HostAllow, proxies: TrustedProxies, workers: int,
    slots: int, node_id: str | None, log_format: str, grace_sec: float, reaper_interval_ms: int,
    reserved_high_slots: int, claim_ahead_ms: int, retention_opts: dict[str, int],
    ready: asyncio.Event | None, cluster: bool | None, bucket_lease_ms: int | None,
    disk_low_bytes: int | None, fd_limit: int, log_level: str, reload: Any,
    running_config: dict[str, Any] | None, mail: MailConfig | None, report: ConfigReport | None,
) -> None:  # fmt: skip
    # A stop asked for while the node starts is kept for when it has started, then done as any
    # other (daemon/startsignals.py)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if startsignals.stop_asked.is_set():
        stop.set()
    node_id = node_id or socket.gethostname()
    try:
        events = EventLog(node_id, fmt=log_format, level=log_level)
    except ValueError as exc:
        raise DaemonError(f"--log-level: {exc}") from None
    route_logging(events, events.level)
    report = (report or ConfigReport(None, {})).started_as(node_id, workers=workers, slots=slots, log_format=events.fmt,
                                                           log_level=events.level, data_dir=str(data_dir))
    bound = tcp_sock.getsockname()[1]
    # jobs find this cronwheel; workers log as we do (worker/eventlog.py takes the log settings
    # out of the jobs' environment)
    worker_env = {
        **cli_for_jobs(sys.argv[0] if sys.argv else "", sys.executable, os.environ.get("PATH", os.defpath)),
        "CRONWHEEL_LOG_LEVEL": events.level, "CRONWHEEL_LOG_FORMAT": events.fmt,
    }

    url = store_url or str(data_dir / "cronwheel.db")
    writer_store = open_store(url)
    migrated = writer_store.migrated  # the first handle migrates: an upgrade's schema work, or a new store's
    # read once, before the store's threads use its connection (a meta() on the loop raced them)
    store_kind = writer_store.meta().get("kind", "?")
    if migrated is not None:
        events.emit("store.migrated", store=store_kind, fromVersion=migrated.from_version,
                    toVersion=migrated.to_version, durationMs=migrated.duration_ms)
    # API reads (lists, counts for status and metrics) need no 256 MiB cache: with a million
    # jobs, counting them filled it and the daemon's RSS grew with the registered jobs
    reader_store = open_store(url, sqlite_cache_mib=READER_CACHE_MIB)
    shared = store_kind == "postgresql"
    if cluster is None:  # PostgreSQL turns it on (and cannot turn it off: serve refuses that)
        cluster = shared
    cluster_store = open_store(url) if cluster else None
    # PostgreSQL takes concurrent writers: results and claims get connections of their own
    completion_store = open_store(url) if shared else None
    claim_store = open_store(url) if shared else None
    config = NodeConfig(
        data_dir=data_dir,
        node_id=node_id,
        workers=workers,
        slots=slots,
        grace_sec=grace_sec,
        reaper_interval_ms=reaper_interval_ms,
        reserved_high_slots=reserved_high_slots,
        claim_ahead_ms=claim_ahead_ms,
        **retention_opts,
        api_url=f"unix:{sock_path.resolve()}",
        worker_cmd=worker_cmd(),
        worker_env=worker_env,
        address=f"{socket.gethostname()}:{bound}",
        **({"bucket_lease_ms": bucket_lease_ms} if bucket_lease_ms else {}),
        **({"disk_low_bytes": disk_low_bytes} if disk_low_bytes is not None else {}),
        http_allow=allowed_hosts,
        mail=mail,
    )
    node = Node(config, writer_store, reader_store, events, cluster_store=cluster_store,
                completion_store=completion_store, claim_store=claim_store)
    metrics = NodeMetrics(node, events)  # the node is its own StatsSource
    try:
        await node.start()
    except NodeIdInUse as exc:  # refused before it started anything: one line, exit 75 (it may stop)
        raise DaemonError(str(exc), transient=True) from None
    # the local operator's first credential: <data-dir>/admin-token, mode 0600 (docs/security.md)
    await node.ensure_admin_token(data_dir)

    auth = Authenticator(node, http_allow=allowed_hosts)
    app = make_app(node, tenant_resolver=auth, metrics=metrics, events=events, mail_transport=mail is not None,
                   config=report.as_json)
    guard = ConnectionGuard(events, **connection_budgets(fd_limit), proxies=proxies)
    metrics.http_guard = guard
    runner = GuardedAppRunner(app, guard, access_log=None, handle_signals=False, logger=_http_logger(events))
    await runner.setup()
    await web.SockSite(runner, unix_sock).start()
    await web.SockSite(runner, tcp_sock).start()
    http_url = f"http://[{host}]:{bound}" if ":" in host else f"http://{host}:{bound}"  # an IPv6 address in []
    publish_address(data_dir / "http.addr", f"{http_url}\n")
    runtime_dir = os.environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    if runtime_dir:  # systemd's RuntimeDirectory=: where local users find the API's address
        with contextlib.suppress(OSError):
            publish_address(Path(runtime_dir, "http.addr"), f"{http_url}\n")
    settle_heap()
    events.emit(
        "node.started", pid=os.getpid(), http=http_url, socket=str(sock_path),
        store=store_kind, dataDir=str(data_dir.resolve()), workers=workers, slots=slots, fileLimit=fd_limit,
        maxConnections=guard.tcp.total, maxConnectionsPerClient=guard.tcp.per_client,
        maxConnectionsPerCaller=guard.tcp.per_caller, maxLocalConnections=guard.local.total,
        trustedProxies=[str(net) for net in proxies.networks] or None,
    )

    if reload is not None:
        reloader = Reloader(events, reload, running_config or {}, live_appliers(events, node, auth, guard), report)
        loop.add_signal_handler(signal.SIGHUP, reloader.reload)
        if startsignals.reload_asked.is_set():  # a SIGHUP while it started: read the file now
            startsignals.reload_asked.clear()
            reloader.reload()
    if ready is not None:
        ready.set()
    # a slow store: say READY anyway after a while, the sweep catches up; a stop needs no wheel
    waits = [asyncio.ensure_future(node.scheduler.loaded.wait()), asyncio.ensure_future(stop.wait())]
    await asyncio.wait(waits, timeout=WHEEL_LOAD_TIMEOUT_SEC, return_when=asyncio.FIRST_COMPLETED)
    for wait in waits:
        wait.cancel()
    notifier.ready(await metrics.status_line())
    duties = loop.create_task(notifier.run(node.healthy, metrics.status_line), name="systemd-notify")
    await stop.wait()
    duties.cancel()
    await asyncio.gather(duties, return_exceptions=True)
    running = len(node.pool.in_flight()) if node.pool else 0
    notifier.stopping(f"stopping: draining {running} running executions (grace {grace_sec:g} s)")
    events.emit("node.stopping", graceSec=grace_sec, running=running,
                hurry="SIGTERM or Ctrl-C again ends the grace now" if running else None)

    def hurry() -> None:  # an operator who will not wait: the running are killed, as interrupted
        events.emit("node.stopping_now", running=len(node.pool.in_flight()) if node.pool else 0)
        node.hurry()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, hurry)
    # the API answers while the node drains, its event streams included: a follower sees the
    # running executions end; runner.cleanup ends the streams (on_shutdown) as it closes
    # KillMode=mixed: systemd waits for us while we drain, as long as we keep asking
    await notifier.extend_while(node.stop(), budget_sec=grace_sec + 30)
    metrics.close()
    await runner.cleanup()
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    events.emit("node.stopped")


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


#: how long a thread may hold the GIL while another waits for it (CPython's default is 5 ms).
#: The store's writer thread releases the GIL around SQLite work and must win it back from the
#: busy event loop each time: at 5 ms a 5,000-row batch took 4-5x longer next to a busy loop,
#: at 1 ms 1-2x (bench/bench_gil.py).
GIL_SWITCH_INTERVAL_S = 0.001


def _run(coro: Any) -> None:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    startsignals.hold()  # again: run_from_cli may be called without the command line
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def run_from_cli(
    data_dir: str | None = None,
    store: str | None = None,
    http: str = DEFAULT_HTTP,
    workers: int | None = None,
    slots: int = DEFAULT_SLOTS,
    node_id: str | None = None,
    log_format: str = "auto",
    grace_sec: float = 30.0,
    **extra: Any,
) -> int:
    path = Path(data_dir) if data_dir else default_data_dir()
    try:
        _run(
            serve(
                path, store, http, workers if workers is not None else max(1, os.cpu_count() or 1), slots, node_id,
                log_format, grace_sec, **{k: v for k, v in extra.items() if v is not None},
            )
        )
    except (DaemonError, StoreError) as exc:  # a bad value, a store it cannot open: one line
        _start_failed(str(exc), node_id)
        return refusal_status(exc)  # 2: lasting, not restarted; 75: a restart may cure it
    return 0


def _start_failed(problem: str, node_id: str | None) -> None:
    """Under systemd, the line is an event with its priority (``journalctl -p err`` shows it);
    elsewhere a plain sentence for the person who typed the command."""
    if journal_stream(sys.stderr):
        log = EventLog(node_id or socket.gethostname(), stream=sys.stderr, fmt="json", journal=True)
        log.emit("node.start_failed", error=problem)
        log.flush()
    else:
        print(f"cronwheel serve: {problem}", file=sys.stderr)
