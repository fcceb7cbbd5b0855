"""What ``cronwheel serve``'s options mean: addresses, sizes, durations and the budgets derived
from them, parsed once before anything starts (every refusal is a one-line ``DaemonError``)."""

from __future__ import annotations

import contextlib
import os
import resource
import shlex
import sys
import zipfile
from pathlib import Path

from cronwheel.core.config import size_bytes
from cronwheel.core.forwarded import TrustedProxies, parse_trusted_proxies_text
from cronwheel.core.limits import (
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_CALLER,
    MAX_CONNECTIONS_PER_CLIENT,
    MAX_LOCAL_CONNECTIONS,
)
from cronwheel.core.tenants import HostAllow, normalise_host

DEFAULT_HTTP = "127.0.0.1:7878"


#: ``cronwheel serve``'s exit status when it refuses to start for good: a restart would meet
#: the same refusal (a bad value, a data directory or store it may not use, a damaged store).
#: The unit's RestartPreventExitStatus=2 does not restart it.
EX_LASTING = 2
#: when it refuses for now (sysexits' EX_TEMPFAIL): the store not reachable yet, the port or
#: the data directory still held, its node id still heartbeating. The unit restarts it, as it
#: does a crash (exit 1): Restart=on-failure.
EX_TEMPFAIL = 75


class DaemonError(Exception):
    """A start-up problem to report in one line (bad flag value, data dir locked, port taken).
    ``transient``: a later start may succeed unchanged (exit 75), else it is lasting (exit 2)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


def refusal_status(exc: BaseException) -> int:
    """The exit status of a refused start: 75 when a restart may cure it, 2 when not."""
    return EX_TEMPFAIL if getattr(exc, "transient", False) else EX_LASTING


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


def worker_cmd() -> list[str] | None:
    """Inside a zipapp (``make dist``'s shiv build) a fresh interpreter cannot import the
    package: start workers through the zipapp itself (``cronwheel.pyz worker …``).
    ``$CRONWHEEL_WORKER_CMD`` (shell words) replaces the command, e.g. to start workers under
    ``nice``, ``setpriv`` or a sandbox; the pool appends ``--socket … --worker-id … --slots …``."""
    custom = os.environ.get("CRONWHEEL_WORKER_CMD", "").strip()
    if custom:
        return shlex.split(custom)
    app = sys.argv[0] if sys.argv else ""
    if app and os.path.isfile(app) and zipfile.is_zipfile(app):
        return [sys.executable, os.path.abspath(app), "worker"]
    return None


def cli_for_jobs(argv0: str, executable: str, path: str) -> dict[str, str]:
    """What every job's environment gets so that ``cronwheel effect`` (or any ``cronwheel``
    command) in a job runs this very cronwheel, wherever it is installed: ``CRONWHEEL_CLI``,
    an absolute command, and the directory of the ``cronwheel`` executable appended to
    ``PATH`` (appended: it never shadows the job's own commands, such as a venv's python3).
    A zipapp not named ``cronwheel`` gets ``CRONWHEEL_CLI`` (``python3 /path/app.pyz``) only."""
    if argv0 and os.path.isfile(argv0) and zipfile.is_zipfile(argv0) and os.path.basename(argv0) != "cronwheel":
        return {"CRONWHEEL_CLI": f"{shlex.quote(executable)} {shlex.quote(os.path.abspath(argv0))}"}
    for candidate in (argv0 if os.path.basename(argv0) == "cronwheel" else "",
                      os.path.join(os.path.dirname(executable), "cronwheel")):  # `python -m cronwheel serve`
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            script = os.path.abspath(candidate)
            break
    else:
        return {}
    env = {"CRONWHEEL_CLI": shlex.quote(script)}
    bindir = os.path.dirname(script)
    dirs = path.split(os.pathsep) if path else []
    if bindir not in dirs:
        env["PATH"] = os.pathsep.join([*dirs, bindir])
    return env


def parse_trusted_proxies(text: str | None) -> TrustedProxies:
    """``--trusted-proxies CIDR,...``: the reverse proxies whose forwarding headers name the
    client (core/forwarded.py). Not given, or empty: none, the headers are never read."""
    try:
        return TrustedProxies(parse_trusted_proxies_text(text))
    except ValueError as exc:
        raise DaemonError(f"--trusted-proxies: {exc}") from None


def parse_http_allow(text: str | None) -> HostAllow:
    """``--http-allow HOST,...``: hosts that tenants' HTTP targets may call. Not given (None):
    any host; given with no host in it (``http_allow = []``, ``--http-allow ''``): none, as
    an operator who writes an empty list means."""
    if text is None:
        return None
    hosts: list[str] = []
    for entry in (text or "").split(","):
        if not entry.strip():
            continue
        try:
            hosts.append(normalise_host(entry))
        except ValueError as exc:
            raise DaemonError(f"--http-allow: {exc}") from None
    return tuple(dict.fromkeys(hosts))


def raise_fd_limit() -> int:
    """Idle and slow clients each hold a descriptor: take the soft limit up to the hard one.
    Returns the soft limit in force."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 1 << 20 if soft == resource.RLIM_INFINITY else int(soft)


#: descriptors kept out of the connection budgets: store files, worker sockets, listeners
FD_RESERVE = 256


def connection_budgets(fd_limit: int) -> dict[str, int]:
    """The API's connection budgets within a file limit: the local socket's first (the
    operator's way in), the TCP connections' from what is left after ``FD_RESERVE``; a
    tenant at most an eighth of those, so that no one of them can hold them all."""
    spare = max(32, fd_limit - FD_RESERVE)
    local = min(MAX_LOCAL_CONNECTIONS, max(16, spare // 4))
    total = min(MAX_CONNECTIONS, max(16, spare - local))
    return {"max_connections": total, "max_per_client": min(MAX_CONNECTIONS_PER_CLIENT, total),
            "max_per_caller": min(MAX_CONNECTIONS_PER_CALLER, max(8, total // 8)), "max_local": local}


def retention_options(
    retention: str | None, keep_last: int | None, interval_ms: int | None = None, dlq_keep_last: int | None = None
) -> dict[str, int]:
    from cronwheel.core.schedule import ScheduleError, parse_duration

    out: dict[str, int] = {}
    if retention is not None:
        try:
            out["retention_ms"] = round(parse_duration(retention) * 1000)
        except ScheduleError as exc:
            raise DaemonError(f"--retention: {exc}") from None
    if keep_last is not None:
        out["keep_last"] = keep_last
    if dlq_keep_last is not None:
        out["dlq_keep_last"] = dlq_keep_last
    if interval_ms is not None:
        out["retention_interval_ms"] = interval_ms
    return out


def parse_size(text: str, flag: str) -> int:
    """``256M``, ``1G``, ``512MiB`` or plain bytes (core/config.py: the CLI checks the same)."""
    try:
        return size_bytes(text)
    except ValueError:
        raise DaemonError(f"{flag} must be a size like 256M, 1G or 1048576, not {text!r}") from None
