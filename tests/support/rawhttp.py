"""HTTP/1.1 spoken by hand over a daemon's TCP port: what a test needs to hold connections
open, send a request's headers in pieces, and read one answer off a kept-alive connection."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from tests.support.daemon import Daemon


def connect(d: Daemon) -> socket.socket:
    parts = urlsplit(d.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def answer(s: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 answer with a Content-Length, read off a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before an answer: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        body += s.recv(65536)
    return int(lines[0].split(" ", 2)[1]), headers, body


def closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, TimeoutError):
        return True
