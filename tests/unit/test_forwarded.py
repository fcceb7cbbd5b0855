"""Who the client is behind a trusted proxy (core/forwarded.py): the rightmost address that is
not a trusted proxy, never what the client wrote to its left; the headers of a peer that is not
trusted never read; what cannot be used falls back to the peer with a problem said; and the
per-address connection budget counted by that client (core/connections.py)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.connections import Budget
from cronwheel.core.forwarded import (
    Client,
    TrustedProxies,
    canonical,
    parse_trusted_proxies,
    parse_trusted_proxies_text,
    reads_line,
)
from cronwheel.core.limits import MAX_FORWARDED_HOPS

OURS = TrustedProxies(parse_trusted_proxies(["10.0.0.0/8", "2001:db8:1::/48", "127.0.0.1"]))
NONE = TrustedProxies()


@pytest.mark.parametrize(
    ("peer", "xff", "fwd", "client"),
    [
        # the worked example of the module's docstring
        ("10.0.0.2", "6.6.6.6, 203.0.113.7, 10.0.0.9", None, "203.0.113.7"),
        ("10.0.0.2", "203.0.113.7", None, "203.0.113.7"),
        ("10.0.0.2", "203.0.113.7:51234", None, "203.0.113.7"),
        ("10.0.0.2", "2001:db8:2::5", None, "2001:db8:2::5"),
        ("10.0.0.2", "[2001:db8:2::5]:443", None, "2001:db8:2::5"),
        ("10.0.0.2", "::ffff:203.0.113.7", None, "203.0.113.7"),
        ("10.0.0.2", "garbage, 203.0.113.7", None, "203.0.113.7"),  # what the client wrote is never read
        ("10.0.0.2", "10.0.0.7, 10.0.0.5", None, "10.0.0.7"),  # all ours: the leftmost
        ("10.0.0.2", " 203.0.113.7 ,10.0.0.5 ", None, "203.0.113.7"),
        ("10.0.0.2", "203.0.113.7, , 10.0.0.5,", None, "203.0.113.7"),  # empty items are none (RFC 9110)
        ("2001:db8:1::1", "198.51.100.1, 2001:db8:1::9", None, "198.51.100.1"),
        ("::ffff:127.0.0.1", "198.51.100.1", None, "198.51.100.1"),  # a dual-stack socket's IPv4 peer
        ("10.0.0.2", None, 'for=192.0.2.60;proto=http;by=203.0.113.43', "192.0.2.60"),
        ("10.0.0.2", None, 'For="[2001:db8:cafe::17]:4711"', "2001:db8:cafe::17"),
        ("10.0.0.2", None, 'for="_gazonk", for=198.51.100.17;by=10.0.0.2', "198.51.100.17"),
        ("10.0.0.2", None, 'for="a,b;c", for=198.51.100.17, for=10.0.0.3', "198.51.100.17"),
        ("10.0.0.2", None, 'for=198.51.100.17 ; proto=https ,, for=10.0.0.3', "198.51.100.17"),
        ("10.0.0.2", "198.51.100.17", "for=198.51.100.17", "198.51.100.17"),  # both, agreeing
        ("10.0.0.2", None, None, "10.0.0.2"),  # the proxy's own request (a health check)
    ],
)
def test_the_rightmost_untrusted_hop_is_the_client(peer: str, xff: str | None, fwd: str | None, client: str) -> None:
    got = OURS.client(peer, xff, fwd)
    assert got.address == client and got.problem is None, got


@pytest.mark.parametrize(
    ("xff", "fwd", "says"),
    [
        ("garbage", None, "X-Forwarded-For: the last hop is not an IP address: 'garbage'"),
        ("203.0.113.7, unknown", None, "the last hop is not an IP address: 'unknown'"),
        ("unknown, 10.0.0.3", None, "hop 2 from the right is not an IP address: 'unknown'"),
        (" , ", None, "X-Forwarded-For: no hop"),
        ("fe80::1%eth0", None, "not an IP address"),
        ("[203.0.113.7]", None, "not an IP address"),
        ("203.0.113.7:99999", None, "not an IP address"),
        ("proxy.example", None, "not an IP address"),
        (None, "for=unknown", "Forwarded: the last hop is not an IP address: 'unknown'"),
        (None, 'for="oops', "Forwarded: unterminated quoted string"),
        (None, "for", "expected name=value"),
        (None, "for=1.2.3.4;for=5.6.7.8", "'for' twice in one element"),
        (None, "proto=https", "Forwarded: the last hop is not an IP address: ''"),
        ("198.51.100.1", "for=198.51.100.2", "X-Forwarded-For and Forwarded name different clients (198.51.100.1 and 198.51.100.2)"),
        (", ".join(["10.0.0.1"] * (MAX_FORWARDED_HOPS + 1)), None, f"more than {MAX_FORWARDED_HOPS} trusted hops"),
    ],
)
def test_headers_that_cannot_be_used_leave_the_client_on_the_proxy(xff: str | None, fwd: str | None, says: str) -> None:
    got = OURS.client("10.0.0.2", xff, fwd)
    assert got.address == "10.0.0.2" and got.proxy == "10.0.0.2", got
    assert got.problem is not None and says in got.problem, got


def test_a_peer_that_is_not_trusted_has_its_headers_ignored() -> None:
    assert OURS.client("198.51.100.9", "203.0.113.7", "for=203.0.113.7") == Client("198.51.100.9")
    assert OURS.client("198.51.100.9", "garbage", 'for="') == Client("198.51.100.9")  # not even read
    assert NONE.client("10.0.0.2", "203.0.113.7", None) == Client("10.0.0.2")  # no list: nothing trusted
    assert OURS.client(None, "203.0.113.7", None) == Client(None)  # the local socket
    assert not NONE and OURS


def test_a_trusted_hop_is_not_trusted_across_families() -> None:
    mapped = TrustedProxies(parse_trusted_proxies(["::ffff:0:0/96"]))
    assert not mapped.trusts_peer("10.0.0.1")  # an IPv6 network never holds an IPv4 address
    assert OURS.trusts_peer("127.0.0.1") and not OURS.trusts_peer("127.0.0.2")
    assert not OURS.trusts_peer("not an address")


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("10.0.0.1/8", "trusted proxy '10.0.0.1/8' has host bits set (the network is 10.0.0.0/8)"),
        ("proxy.example", "trusted proxy 'proxy.example' is not an IPv4 or IPv6 address or network"),
        ("10.0.0.0/33", "trusted proxy '10.0.0.0/33' has a prefix length that is not 0-32 (IPv4) or 0-128 (IPv6)"),
        ("2001:db8::/129", "trusted proxy '2001:db8::/129' has a prefix length that is not"),
        ("fe80::1%eth0", "trusted proxy 'fe80::1%eth0': a zone id names an interface"),
        ("10.0.0.0/x", "trusted proxy '10.0.0.0/x' has a prefix length that is not"),
        ("/8", "trusted proxy '/8' is not an IPv4 or IPv6 address or network"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(entry: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_trusted_proxies_text(f"10.0.0.0/8, {entry}")
    assert says in str(caught.value), caught.value


def test_the_setting_as_text() -> None:
    assert parse_trusted_proxies_text(None) == () and parse_trusted_proxies_text("") == ()
    assert [str(n) for n in parse_trusted_proxies_text(" 10.0.0.0/8 ,,192.0.2.1, 2001:db8::/32")] == [
        "10.0.0.0/8", "192.0.2.1/32", "2001:db8::/32"]


# ---- properties: whatever a client writes, it cannot choose an address other than its own

_V4 = st.ip_addresses(v=4).map(str)
_UNTRUSTED = st.ip_addresses(network="198.51.100.0/24").map(str)
_TRUSTED = st.ip_addresses(network="10.0.0.0/8").map(str)
_JUNK = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(forged=st.lists(st.one_of(_V4, _JUNK), max_size=6), client=_UNTRUSTED,
       proxies=st.lists(_TRUSTED, max_size=4))
def test_what_a_client_writes_to_the_left_never_chooses_its_address(forged: list[str], client: str, proxies: list[str]) -> None:
    """The client sends any X-Forwarded-For it likes; our proxies append its address and each
    other's: the answer is its address."""
    header = ", ".join([*forged, client, *proxies])
    got = OURS.client("10.0.0.2", header, None)
    assert got.problem is None and got.address == str(ipaddress.ip_address(client)), (header, got)


@given(xff=st.one_of(st.none(), _JUNK), fwd=st.one_of(st.none(), _JUNK), peer=_UNTRUSTED)
def test_a_direct_client_is_always_its_peer(xff: str | None, fwd: str | None, peer: str) -> None:
    assert OURS.client(peer, xff, fwd) == Client(peer)


@given(xff=st.one_of(st.none(), _JUNK), fwd=st.one_of(st.none(), _JUNK))
def test_any_header_gives_an_address_never_an_exception(xff: str | None, fwd: str | None) -> None:
    got = OURS.client("10.0.0.2", xff, fwd)
    assert got.address is not None
    assert got.problem is None or got.address == "10.0.0.2"


@given(forged=st.lists(_UNTRUSTED, max_size=4), client=_UNTRUSTED, proxies=st.lists(_TRUSTED, max_size=4),
       port=st.integers(1, 65535))
def test_forwarded_reads_as_x_forwarded_for(forged: list[str], client: str, proxies: list[str], port: int) -> None:
    hops = [*forged, client, *proxies]
    fwd = ", ".join(f'for="{h}:{port}";proto=https' if i % 2 else f"for={h}" for i, h in enumerate(hops))
    assert OURS.client("10.0.0.2", None, fwd) == OURS.client("10.0.0.2", ", ".join(hops), None)


# ---- the per-address connection budget, counted by the client behind a proxy


def test_a_proxys_connection_counts_against_the_client_its_request_names() -> None:
    budget = Budget(total=10, per_client=2, per_caller=5)
    for _ in range(4):
        assert budget.admit(None) is None  # a proxy's: the total only
    assert budget.attribute(None, "198.51.100.1") is None
    assert budget.attribute(None, "198.51.100.1") is None
    assert budget.attribute(None, "198.51.100.1") == "per_client"  # its budget is spent...
    assert budget.attribute(None, "198.51.100.2") is None  # ...not its neighbour's
    assert budget.held_by_client("198.51.100.1") == 2 and budget.refused["per_client"] == 1
    # a pooled connection carries another client's request: it moves; a repeat changes nothing
    assert budget.attribute("198.51.100.2", "198.51.100.3") is None
    assert budget.attribute("198.51.100.3", "198.51.100.3") is None
    assert budget.held_by_client("198.51.100.2") == 0 and budget.held_by_client("198.51.100.3") == 1
    # authenticated: the tenant's from now on, the address's room given back
    assert budget.vouch("198.51.100.1", None, "acme") is None
    assert budget.held_by_client("198.51.100.1") == 1
    budget.release("198.51.100.1")
    budget.release(None, "acme")
    budget.release("198.51.100.3")
    budget.release(None)
    assert budget.open == 0 and budget.clients() == 0


@pytest.mark.parametrize(("peer", "key"), [
    ("::ffff:192.0.2.1", "192.0.2.1"), ("192.0.2.1", "192.0.2.1"), ("2001:db8::1", "2001:db8::1"),
    ("2001:DB8:0::1", "2001:db8::1"), ("not-an-address", "not-an-address"), (None, None), ("", ""),
])  # fmt: skip
def test_a_peer_is_keyed_by_the_address_it_is(peer: str | None, key: str | None) -> None:
    assert canonical(peer) == key


@pytest.mark.parametrize(("client", "line"), [
    ("192.0.2.1", "(client 192.0.2.1)"), ("::ffff:192.0.2.1", "(client 192.0.2.1)"),
    ("2001:db8:1:2:aaaa::1", "(client 2001:db8:1:2::/64)"), ("2001:db8:1:2:ffff:ffff:ffff:ffff", "(client 2001:db8:1:2::/64)"),
    ("2001:db8:1:3::1", "(client 2001:db8:1:3::/64)"), (None, "(client local)"),
])  # fmt: skip
def test_a_clients_token_checks_wait_in_the_line_of_its_address_or_its_ipv6_slash_64(client: str | None, line: str) -> None:
    assert reads_line(client) == line
