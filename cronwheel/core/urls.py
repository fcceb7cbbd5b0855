"""What counts as an http(s) URL, the same for a job's HTTP target and a webhook rule.

One rule for both, because a URL that one part of the API takes and another refuses reads as a bug:
at most ``max_chars`` characters, no spaces or unprintable characters (they would end up in a
request line), a port from 1 to 65535 if one is given, an ``http``/``https`` scheme, and a host
written one way only.

The host is what a tenant's allow-list judges (``core.tenants.host_allowed``, on the name as
written), while the worker's HTTP client connects to the host as *it* reads the URL: the two
must not differ. So a host is an IP address (IPv4 as four decimal numbers, IPv6 in brackets) or
an ASCII host name of plain labels, and nothing that some reader would turn into another
name: an IDNA name in Unicode (``ａpi`` is ``api`` once encoded), a final dot (which a virtual
host may not match), ``127.1`` or ``0x7f.1`` (the C resolver reads them as 127.0.0.1), a
percent-escape, or an IPv6 zone id (an interface of the worker's machine, not a host).
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple
from urllib.parse import SplitResult, urlsplit

#: a host name's label: letters, digits, hyphens and underscores (some internal DNS names and
#: container names have them), 1 to 63 of them, not starting or ending with a hyphen
LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
#: a last label that the C resolver and browsers read as (part of) an IPv4 address
NUMERIC_LABEL_RE = re.compile(r"[0-9]+|0x[0-9a-f]*")
DEFAULT_PORTS = {"http": 80, "https": 443}


class HttpUrl(NamedTuple):
    """A URL that ``http_url_problem`` took, as the worker's client will call it."""

    parts: SplitResult
    host: str  #: lower case; an IPv6 address in brackets, as a ``Host`` header writes it
    port: int  #: the URL's own, else the scheme's

    @property
    def has_userinfo(self) -> bool:
        return "@" in self.parts.netloc


def http_url_problem(url: str, max_chars: int) -> str | None:
    """Why ``url`` is not an absolute http(s) URL we can call, or None when it is: a phrase
    that follows the field's name (``http.url has port 0, …``)."""
    try:
        parse_http_url(url, max_chars)
    except ValueError as exc:
        return str(exc)
    return None


def parse_http_url(url: str, max_chars: int) -> HttpUrl:
    """``url`` as the worker will call it; ValueError with a phrase that follows the field's
    name when it is not an absolute http(s) URL we can call."""
    if len(url) > max_chars or any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError(f"must be at most {max_chars} characters, without spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"is not a valid URL: {exc}") from None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    _authority(parts.netloc)
    if port == 0:
        raise ValueError("has port 0, which no server can listen on: give a port from 1 to 65535, or none for the scheme's own")
    return HttpUrl(parts, _host(parts), port or DEFAULT_PORTS[parts.scheme])


def http_url_as_written(url: str) -> HttpUrl | None:
    """``url``'s host and port as written, unjudged (a URL saved before a rule of
    ``parse_http_url`` existed); None when it has no http(s) host at all."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname
    return HttpUrl(parts, f"[{host}]" if ":" in host else host, port or DEFAULT_PORTS[parts.scheme])


def _authority(netloc: str) -> None:
    """What readers split differently before the host: a backslash (browsers and curl end the
    host at it, this reader and the worker's client do not, and the client refuses it), and
    brackets in user information (which the client reads as an IPv6 host)."""
    if "\\" in netloc:
        raise ValueError(f"has a backslash in {netloc[:100]!r}, before its path, which some readers take for the end of "
                         "the host and others refuse: percent-encode it (%5C) or leave it out")  # fmt: skip
    userinfo = netloc.rpartition("@")[0]
    if "[" in userinfo or "]" in userinfo:
        raise ValueError(f"has '[' or ']' in its user information ({userinfo[:100]!r}), which the worker's client "
                         "reads as an IPv6 host: percent-encode them (%5B, %5D)")  # fmt: skip


#: a bracketed host as written: the brackets, then nothing but a port
_BRACKETED = re.compile(r"\[[^\[\]]*\](?::[0-9]*)?")


def _host(parts: SplitResult) -> str:
    host = parts.hostname or ""
    hostport = parts.netloc.rpartition("@")[2]
    if hostport.startswith("["):
        if not _BRACKETED.fullmatch(hostport):  # urlsplit reads [::1]x or [::1]] as ::1; the worker's client refuses them
            raise ValueError(f"has {hostport[:100]!r} as its host and port, which is neither [IPv6 address] nor "
                             "[IPv6 address]:port")  # fmt: skip
        if "%" in host:
            raise ValueError(f"has an IPv6 zone id ({host[host.index('%'):]!r}), which names a network interface of the "
                             "worker's machine, not a host: give the address alone")  # fmt: skip
        try:  # urlsplit takes an "IPvFuture" literal ([v1.x]) too, which no client calls
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"has [{host[:100]}] as its host, which is not an IPv6 address") from None
        return f"[{host}]"
    if not host.isascii():
        try:
            ascii_form = f" ({host.encode('idna').decode('ascii')!r})"
        except UnicodeError:
            ascii_form = ""
        raise ValueError(f"has a host name that is not ASCII ({host!r}): write it in its IDNA form{ascii_form}, "
                         "the one the allow-list and TLS certificates name")  # fmt: skip
    if host.endswith("."):
        raise ValueError(f"has a host name that ends with a dot ({host!r}): leave the dot out")
    labels = host.split(".")
    if len(host) > 253 or not all(LABEL_RE.fullmatch(label) for label in labels):
        raise ValueError(f"has {host[:100]!r} as its host, which is neither an IP address nor a host name (labels of "
                         "1 to 63 letters, digits, - and _, joined by single dots, 253 characters in all)")  # fmt: skip
    if NUMERIC_LABEL_RE.fullmatch(labels[-1]):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"has {host!r} as its host, which reads as an IPv4 address but is not one written as "
                             "four decimal numbers (such as 10.0.0.1)") from None  # fmt: skip
    return host
