"""What an HTTP target's failed run and a webhook's failed delivery say when no answer came:
real aiohttp calls against real local sockets, each failure made for real."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from pathlib import Path

import aiohttp
import pytest

from cronwheel.worker.httpfailures import http_failure
from tests.support.tls import self_signed_server


async def failure_of(url: str, **kw: object) -> str:
    async with aiohttp.ClientSession() as session:
        try:
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=10), **kw) as resp:
                raise AssertionError(f"{url} answered {resp.status}")
        except aiohttp.ClientError as exc:
            return http_failure(exc)


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


def serve(handle: object, wrap: ssl.SSLContext | None = None) -> int:
    """A one-connection-at-a-time TCP server on a thread: ``handle(conn)`` per connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def loop() -> None:
        while True:
            conn, _ = listener.accept()
            try:
                if wrap is not None:
                    conn = wrap.wrap_socket(conn, server_side=True)
                handle(conn)
            except (OSError, ssl.SSLError):
                pass
            finally:
                conn.close()

    threading.Thread(target=loop, daemon=True).start()
    port: int = listener.getsockname()[1]
    return port


def read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk


def test_nothing_listening_names_the_address_and_the_errno() -> None:
    port = closed_port()
    assert asyncio.run(failure_of(f"http://127.0.0.1:{port}/")) == f"cannot connect to 127.0.0.1:{port}: Connection refused"


def test_an_ipv6_address_is_bracketed() -> None:
    text = asyncio.run(failure_of(f"http://[::1]:{closed_port()}/"))
    assert text.startswith("cannot connect to [::1]:"), text  # refused, or no IPv6 on this machine


def test_a_name_that_does_not_resolve() -> None:
    text = asyncio.run(failure_of("http://no-such-host.invalid/"))
    assert text.startswith("cannot resolve the host no-such-host.invalid: "), text


def test_a_server_that_hangs_up_without_answering() -> None:
    port = serve(read_request)
    assert asyncio.run(failure_of(f"http://127.0.0.1:{port}/")) == "the server closed the connection before it answered"


def test_https_to_a_plain_http_port_is_a_tls_handshake_failure() -> None:
    def plain_answer(conn: socket.socket) -> None:  # a plain HTTP server's answer to a TLS hello
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    port = serve(plain_answer)
    text = asyncio.run(failure_of(f"https://127.0.0.1:{port}/"))
    assert text.startswith(f"the TLS handshake with 127.0.0.1:{port} failed: "), text
    assert "ssl:default" not in text


def test_a_certificate_nobody_signed_says_why_it_was_refused(tmp_path: Path) -> None:
    context, _ = self_signed_server(tmp_path)
    port = serve(read_request, wrap=context)
    text = asyncio.run(failure_of(f"https://127.0.0.1:{port}/"))
    assert text == f"the TLS certificate of 127.0.0.1:{port} was not accepted: self-signed certificate", text


@pytest.mark.parametrize("url", ["http://:80/", "http://127.0.0.1:99999/"])
def test_a_url_that_cannot_be_called(url: str) -> None:
    assert asyncio.run(failure_of(url)) == f"not a URL that can be called: {url}"


def test_too_many_redirects_names_the_last_hop() -> None:
    def redirect(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    port = serve(redirect)
    text = asyncio.run(failure_of(f"http://127.0.0.1:{port}/", max_redirects=2))
    assert text == f"too many redirects (the last from http://127.0.0.1:{port}/again)", text
