"""The daemon's listening sockets, bound before anything else is created.

``cronwheel serve`` takes its TCP address and its Unix socket first, right after the data
directory's lock: a busy port or a second daemon then stops the start with one clear line,
before an admin token, a store, workers or an ``api.sock`` exist. The bound sockets are
handed to the HTTP server later (``aiohttp.web.SockSite``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path
from typing import Any

from cronwheel.worker.sockpath import UNIX_PATH_MAX, unix_path


class ListenError(Exception):
    """An address that cannot be listened on, said in one line. ``transient``: it may be
    free later (in use, not yet configured, a name server that did not answer)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


#: bind() errors that another try may not meet: the port still held (a daemon stopping,
#: TIME_WAIT), an address the host has not configured yet (at boot, before the network)
_TRANSIENT_BIND = (errno.EADDRINUSE, errno.EADDRNOTAVAIL)


def bind_tcp(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror}; give --http HOST:PORT",
                          transient=exc.errno == socket.EAI_AGAIN) from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart reuses TIME_WAIT ports
        sock.bind(addr)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            other = _other(host, port, family, addr)
            raise ListenError(
                f"cannot listen on {where}: the address is already in use (another cronwheel serve, "
                f"or another program); pick another with --http {other} or, through the environment "
                f"(as under `make serve`), CRONWHEEL_HTTP={other}", transient=True,
            ) from None
        raise ListenError(f"cannot listen on {where}: {exc.strerror}; pick another with --http HOST:PORT",
                          transient=exc.errno in _TRANSIENT_BIND) from None
    sock.setblocking(False)
    return sock


#: how many ports after a busy one are tried for a free one to suggest
_PORTS_TRIED = 20


def _other(host: str, port: int, family: int, addr: tuple[Any, ...]) -> str:
    """``HOST:PORT`` with a port of ``host`` found free just now (bound and let go, as the
    daemon binds: SO_REUSEADDR), among the few after ``port``; else port 0 (any free port)."""
    free = 0
    for candidate in range(port + 1, min(port + 1 + _PORTS_TRIED, 65536)):
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((addr[0], candidate, *addr[2:]))
            free = candidate
            break
    return f"[{host}]:{free}" if ":" in host else f"{host}:{free}"


def bind_unix(path: Path, mode: int = 0o600, backlog: int = 1024) -> socket.socket:
    """A listening Unix socket at ``path``, mode ``mode``. A file left there by a daemon that
    died is removed first: the caller holds the data directory's lock, so no live daemon
    owns it."""
    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    except OSError as exc:  # a directory of that name, a file of another user's in a shared dir
        raise ListenError(f"cannot create the API socket {path}: {exc.strerror} (remove what is there)") from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o777 & ~mode)  # never visible with wider permissions, even briefly
    try:
        # a path longer than sun_path's 107 bytes is bound through /proc/self/fd, as the
        # worker socket is (a deep --data-dir, a long $STATE_DIRECTORY)
        with unix_path(path) as name:
            sock.bind(name)
    except ValueError:  # too long, and no /proc to shorten it through
        sock.close()
        raise ListenError(
            f"cannot create the API socket {path}: its path is {len(os.fsencode(path))} bytes, more than a Unix "
            f"socket's {UNIX_PATH_MAX} on this system; give the daemon a shorter --data-dir"
        ) from None
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot create the API socket {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old_umask)
    os.chmod(path, mode)
    sock.listen(backlog)
    sock.setblocking(False)
    return sock
