"""``cronwheel serve``: one asyncio process per node (uvloop when available)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from cronwheel.api.app import make_app
from cronwheel.engine.node import Node, NodeConfig
from cronwheel.obs.events import EventLog
from cronwheel.store import open_store

DEFAULT_HTTP = "127.0.0.1:7878"


class DaemonError(Exception):
    """A start-up problem to report in one line (bad flag value, data dir locked, port taken)."""


def default_data_dir() -> Path:
    for var in ("CRONWHEEL_DATA_DIR", "STATE_DIRECTORY"):
        value = os.environ.get(var)
        if value:
            # systemd may pass several colon-separated directories; the first is ours
            return Path(value.split(":")[0])
    return Path(".cronwheel")


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise DaemonError(f"--http must be HOST:PORT (e.g. {DEFAULT_HTTP}), not {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _lock_data_dir(data_dir: Path) -> Any:
    lock = open(data_dir / "lock", "a+")  # noqa: SIM115 - held for the daemon's lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise DaemonError(f"another cronwheel serve is running on {data_dir} (lock held)") from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


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
    ready: asyncio.Event | None = None,
) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    lock = _lock_data_dir(data_dir)
    node_id = node_id or socket.gethostname()
    events = EventLog(node_id, fmt=log_format, quiet=frozenset({"scheduler.claimed"}))
    host, port = parse_hostport(http)

    url = store_url or str(data_dir / "cronwheel.db")
    writer_store = open_store(url)
    reader_store = open_store(url)
    config = NodeConfig(
        data_dir=data_dir,
        node_id=node_id,
        workers=workers,
        slots=slots,
        grace_sec=grace_sec,
        reaper_interval_ms=reaper_interval_ms,
        reserved_high_slots=reserved_high_slots,
        api_url=f"unix:{(data_dir / 'api.sock').resolve()}",
    )
    node = Node(config, writer_store, reader_store, events)
    await node.start()

    app = make_app(node)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    sock_path = data_dir / "api.sock"
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    unix_site = web.UnixSite(runner, str(sock_path))
    await unix_site.start()
    os.chmod(sock_path, 0o600)
    tcp_site = web.TCPSite(runner, host, port)
    try:
        await tcp_site.start()
    except OSError as exc:
        await node.stop()
        await runner.cleanup()
        raise DaemonError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = tcp_site._server.sockets[0].getsockname()[1] if tcp_site._server else port  # type: ignore[union-attr]
    (data_dir / "http.addr").write_text(f"http://{host}:{bound}\n")
    events.emit(
        "node.started", pid=os.getpid(), http=f"http://{host}:{bound}", socket=str(sock_path),
        store=writer_store.meta().get("kind", "?"), dataDir=str(data_dir.resolve()),
        workers=workers, slots=slots,
    )

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    await stop.wait()
    events.emit("node.stopping", graceSec=grace_sec)
    await runner.shutdown()
    await node.stop()
    await runner.cleanup()
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    events.emit("node.stopped")
    lock.close()


def _run(coro: Any) -> None:
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
    slots: int = 16,
    node_id: str | None = None,
    log_format: str = "auto",
    grace_sec: float = 30.0,
    **extra: Any,
) -> int:
    path = Path(data_dir) if data_dir else default_data_dir()
    try:
        _run(
            serve(
                path, store, http, workers or max(1, os.cpu_count() or 1), slots, node_id,
                log_format, grace_sec, **{k: v for k, v in extra.items() if v is not None},
            )
        )
    except DaemonError as exc:
        print(f"cronwheel serve: {exc}", file=sys.stderr)
        return 1
    return 0
