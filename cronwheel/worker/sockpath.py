"""The name a Unix socket file is bound or connected by, however deep its directory."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

#: sun_path holds 108 bytes including the terminating NUL
UNIX_PATH_MAX = 107


@contextlib.contextmanager
def unix_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """The name to give bind()/connect() for the socket file ``path``: ``path`` itself when it
    fits in sun_path, else (Linux) the same file reached through ``/proc/self/fd/N/`` of an fd
    on its directory, valid inside the ``with`` block. Deep data directories (test temp dirs,
    long $STATE_DIRECTORY) then still work."""
    text = os.fspath(path)
    if len(os.fsencode(text)) <= UNIX_PATH_MAX:
        yield text
        return
    head, name = os.path.split(os.path.abspath(text))
    dirfd = os.open(head or "/", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_PATH", 0))
    try:
        short = f"/proc/self/fd/{dirfd}/{name}"
        if len(os.fsencode(short)) > UNIX_PATH_MAX or not os.path.isdir(f"/proc/self/fd/{dirfd}"):
            raise ValueError(f"socket path too long for AF_UNIX ({len(os.fsencode(text))} bytes): {text}")
        yield short
    finally:
        os.close(dirfd)
