"""An HTTP call that got no answer, in words its owner can act on: what the HTTP target's
failed run and a webhook's failed delivery say.

aiohttp's own text names its internals (``Cannot connect to host h:80 ssl:default [Connect call
failed ('h', 80)]``): ``ssl:default`` on a plain ``http://`` URL reads as a TLS problem, and
asyncio's "connect call failed" hides the errno that says whether nothing listens there or a
firewall dropped the packet."""

from __future__ import annotations

import os

import aiohttp


def http_failure(exc: BaseException) -> str:
    """``exc``, raised by an aiohttp client call before any answer, as one line."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert = exc.certificate_error
        why = getattr(cert, "verify_message", None) or str(cert)
        return f"the TLS certificate of {_where(exc.host, exc.port)} was not accepted: {why}"
    if isinstance(exc, aiohttp.ClientConnectorSSLError | aiohttp.ClientSSLError):
        tls = exc.os_error  # an ssl.SSLError: its errno is OpenSSL's, not the system's
        return f"the TLS handshake with {_where(exc.host, exc.port)} failed: {tls.strerror or tls}"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"cannot resolve the host {exc.host}: {_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect to {_where(exc.host, exc.port)}: {_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection before it answered"
    if isinstance(exc, aiohttp.TooManyRedirects):
        last = exc.history[-1].url if exc.history else exc.request_info.real_url
        return f"too many redirects (the last from {last})"
    if isinstance(exc, aiohttp.InvalidURL):
        return f"not a URL that can be called: {str(exc.url)[:200]}"
    return f"{type(exc).__name__}: {exc}"


def _where(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host  # an IPv6 address
    return shown if port is None else f"{shown}:{port}"


def _reason(error: OSError) -> str:
    """The errno's own words (``Connection refused``), which asyncio's connect replaces with
    a generic "Connect call failed"; the message as it is when there is no errno."""
    if error.errno is not None and error.errno > 0:
        return os.strerror(error.errno)
    return error.strerror or str(error) or type(error).__name__
