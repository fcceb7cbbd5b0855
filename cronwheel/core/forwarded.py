"""Who is the client behind a reverse proxy: the address a request's budgets, refusals and
log lines name. Pure: no I/O, no clock.

Without trusted proxies (the default) the client is the TCP peer and the forwarding headers
are never read. A peer inside ``trusted_proxies`` is a proxy that writes the hop it received
the request from into ``X-Forwarded-For`` (appended, comma-separated) or RFC 7239
``Forwarded: for=…``. Everything to the left of what our own proxies wrote was written by
the client, who may write anything: so the chain is walked **from the right**, skipping our
proxies, and the first hop that is not one of them is the client (the rightmost untrusted
address). The leftmost entry is never taken on its word. Worked example, trusting
``10.0.0.0/8``, a request from peer ``10.0.0.2`` with
``X-Forwarded-For: 6.6.6.6, 203.0.113.7, 10.0.0.9``::

    10.0.0.9     trusted (a second proxy of ours): go on left
    203.0.113.7  not trusted: the client; 6.6.6.6 (what the client wrote) is never read

When every hop is trusted, the leftmost is the client (a machine of the trusted network
itself). A hop that must be read but is not an address (``unknown``, an obfuscated
``_node``, garbage, a ``Forwarded`` element without ``for``) makes the header unusable: the client is then the
peer, as without the setting, and the problem is said (``Client.problem``). A client can
thus put itself on its proxy's address, never on anyone else's.

Both headers present: a proxy that writes one passes the other through as the client sent
it, and which one a proxy writes is not known here. So each is walked and they must agree;
if they do not, the peer is the client (a forged header cannot choose the address).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cronwheel.core.limits import MAX_FORWARDED_HOPS

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: characters of a header's offending part quoted in a problem
_QUOTED = 60


def parse_trusted_proxies(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDRs (``10.0.0.0/8``, ``2001:db8::/32``) or single addresses (``192.0.2.1``), each
    whole: ``10.0.0.1/8`` has host bits set and is refused rather than widened, since
    whoever wrote it meant either one address or a network and we cannot tell which.
    ValueError names the entry."""
    networks: list[IPNetwork] = []
    for raw in entries:
        entry = raw.strip()
        if not entry:
            continue
        try:
            network = ipaddress.ip_network(entry, strict=True)
        except ValueError as exc:
            why = str(exc).removeprefix(repr(entry)).strip(" :") or "not an address"
            if "host bits set" in why:
                why = f"has host bits set (the network is {ipaddress.ip_network(entry, strict=False)})"
            elif "does not appear to be" in why and "/" in entry and address(entry.partition("/")[0]) is not None:
                why = "has a prefix length that is not 0-32 (IPv4) or 0-128 (IPv6)"
            elif "does not appear to be" in why:
                why = "is not an IPv4 or IPv6 address or network (e.g. 10.0.0.0/8, 2001:db8::/32, 192.0.2.1)"
            raise ValueError(f"trusted proxy {entry!r} {why}") from None
        if "%" in entry:
            raise ValueError(f"trusted proxy {entry!r}: a zone id names an interface, not a network")
        networks.append(network)
    return tuple(networks)


def parse_trusted_proxies_text(text: str | None) -> tuple[IPNetwork, ...]:
    """The setting as the flag and the variable give it: comma-separated."""
    return parse_trusted_proxies((text or "").split(","))


def address(text: str) -> IPAddress | None:
    """An address as a socket or a header names it, IPv4-mapped IPv6 (``::ffff:192.0.2.1``,
    as a dual-stack listener reports an IPv4 peer) as the IPv4 address it is; None: not one."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def canonical(peer: str | None) -> str | None:
    """A peer's address as budgets and log lines key it: a dual-stack listener's
    ``::ffff:192.0.2.1`` is ``192.0.2.1``, the key the same client has on an IPv4 listener or
    behind a proxy that names it; anything that is no address, as it is."""
    ip = address(peer) if peer else None
    return peer if ip is None else str(ip)


def reads_line(client: str | None) -> str:
    """The line of reads (engine/fairturns.py) a client's token checks wait in: its IPv4
    address, or its IPv6 address's /64, the block one host or one LAN is given, so that one
    attacker's /64 (2^64 addresses) is one line, not one per address it picks."""
    ip = address(client) if client else None
    if isinstance(ip, ipaddress.IPv6Address):
        return f"(client {ipaddress.IPv6Network((int(ip) >> 64 << 64, 64))})"
    return f"(client {ip or client or 'local'})"


class TrustedProxies:
    """The networks whose peers' forwarding headers are read."""

    def __init__(self, networks: Iterable[IPNetwork] = ()) -> None:
        self.networks = tuple(networks)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.networks)

    def trusts_peer(self, peer: str | None) -> bool:
        ip = address(peer) if peer is not None and self.networks else None
        return ip is not None and self.trusts(ip)

    def client(self, peer: str | None, forwarded_for: str | None, forwarded: str | None) -> Client:
        """The client of a request from ``peer`` with these headers (each the header's lines
        joined with ``,``, None when absent)."""
        if not self.trusts_peer(peer) or (forwarded_for is None and forwarded is None):
            return Client(peer)
        peer = str(address(peer))  # type: ignore[arg-type]  # trusted: it is one
        walked: list[tuple[str, str | None, str | None]] = []
        if forwarded_for is not None:
            walked.append(("X-Forwarded-For", *self._walk(_xff_hops(forwarded_for))))
        if forwarded is not None:
            hops, problem = _forwarded_hops(forwarded)
            walked.append(("Forwarded", *((None, problem) if problem else self._walk(hops))))
        for header, _client, problem in walked:
            if problem is not None:
                return Client(peer, proxy=peer, problem=f"{header}: {problem}")
        found = {c for _h, c, _p in walked}
        if len(found) > 1:
            return Client(peer, proxy=peer, problem="X-Forwarded-For and Forwarded name different clients "
                                                     f"({' and '.join(sorted(str(c) for c in found))})")
        return Client(walked[0][1], proxy=peer)

    def _walk(self, hops: list[str]) -> tuple[str | None, str | None]:
        """(client, None) or (None, problem): the rightmost hop not trusted."""
        last: IPAddress | None = None
        for n, hop in enumerate(reversed(hops)):
            if n == MAX_FORWARDED_HOPS:
                return None, f"more than {MAX_FORWARDED_HOPS} trusted hops"
            ip = _node_address(hop)
            if ip is None:
                where = "the last hop" if n == 0 else f"hop {n + 1} from the right"
                return None, f"{where} is not an IP address: {hop[:_QUOTED]!r}"
            if not self.trusts(ip):
                return str(ip), None
            last = ip
        if last is None:
            return None, "no hop"
        return str(last), None  # all ours: the leftmost is a machine of the trusted network


@dataclass(frozen=True, slots=True)
class Client:
    """Whose request it is: ``address`` (None: unknown, e.g. a socket with no peer name);
    ``proxy``: the trusted peer it came through (None: it came directly); ``problem``: why
    the forwarding headers could not be used (the address is then the proxy's)."""

    address: str | None
    proxy: str | None = None
    problem: str | None = None


def _xff_hops(text: str) -> list[str]:
    # empty items are no hops (RFC 9110 §5.6.1: a recipient ignores them)
    return [hop for hop in (item.strip() for item in text.split(",")) if hop]


def _node_address(node: str) -> IPAddress | None:
    """A hop as the headers write it: ``192.0.2.1``, ``192.0.2.1:8080``, ``2001:db8::1``,
    ``[2001:db8::1]`` or ``[2001:db8::1]:8080``. None: not an address (``unknown``,
    ``_hidden``, a name, a zone id, junk)."""
    if "%" in node:
        return None  # a zone id is meaningful on the proxy's host only
    if node.startswith("["):
        inside, sep, rest = node[1:].partition("]")
        if not sep or (rest and not _is_port(rest)):
            return None
        ip = address(inside)
        return ip if isinstance(ip, ipaddress.IPv6Address) or (ip is not None and ":" in inside) else None
    ip = address(node)
    if ip is None and node.count(":") == 1:
        host, _, port = node.partition(":")
        ip = address(host) if _is_port(":" + port) else None
        return ip if isinstance(ip, ipaddress.IPv4Address) and "." in host else None
    return ip


def _is_port(text: str) -> bool:
    digits = text[1:]
    return text.startswith(":") and 0 < len(digits) <= 5 and digits.isascii() and digits.isdigit() and int(digits) <= 65535


_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _forwarded_hops(text: str) -> tuple[list[str], str | None]:
    """The ``for=`` of each element of a ``Forwarded`` header (RFC 7239 §4: elements
    separated by ``,``, pairs by ``;``, values a token or a quoted string), or a problem.
    Read from the left, as quoted strings may hold ``,``; an element without ``for`` has no
    hop to give and is a problem only if the walk reaches it (written as ``""``); an empty
    element is none."""
    hops: list[str] = []
    element: dict[str, str] = {}
    i, n = 0, len(text)

    def problem(why: str) -> tuple[list[str], str]:
        return [], f"{why} at character {i + 1}: {text[max(0, i - 20):i + 20]!r}"

    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] in ",;":  # an empty pair or element (RFC 7230's #rule allows them)
            pass
        elif i < n:
            start = i
            while i < n and text[i] in _TCHAR:
                i += 1
            name = text[start:i].lower()
            if not name or i >= n or text[i] != "=":
                return problem("expected name=value")
            i += 1
            if i < n and text[i] == '"':
                i += 1
                chars: list[str] = []
                while i < n and text[i] != '"':
                    if text[i] == "\\" and i + 1 < n:
                        i += 1
                    chars.append(text[i])
                    i += 1
                if i >= n:
                    return problem("unterminated quoted string")
                i += 1
                value = "".join(chars)
            else:
                start = i
                while i < n and text[i] in _TCHAR:
                    i += 1
                value = text[start:i]
                if not value:
                    return problem("expected a value")
            if name in element:
                return problem(f"{name!r} twice in one element")
            element[name] = value
            while i < n and text[i] in " \t":
                i += 1
        if i >= n or text[i] == ",":
            if element:  # an empty element is none (RFC 9110 §5.6.1)
                hops.append(element.get("for", ""))
            element = {}
            if i >= n:
                return hops, None
        elif text[i] != ";":
            return problem("expected ; or ,")
        i += 1
