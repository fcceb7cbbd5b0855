"""Behind a reverse proxy (``trusted_proxies``): real daemons, real sockets from 127.0.0.1
playing the proxy, with and without 127.0.0.1 trusted. Trusted, the client its
X-Forwarded-For names is the one the budgets and the log lines count and name; not trusted
(the default, or a list that does not hold the peer) the header changes nothing, so a client
can never choose its address by writing one."""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_auth import problem, tenant_token
from tests.integration.test_connection_limits import metric, unix_get
from tests.integration.test_idle_clients import ensure_fd_limit
from tests.support.daemon import Daemon
from tests.support.rawhttp import answer, closed, connect
from tests.support.wait import wait_for

FILE_LIMIT = 2048  # budgets of 1536 connections in all, 256 per address: a flood a test can open
TRUST_LOCAL = ("--trusted-proxies", "127.0.0.1/32,::1")


def _budgets(d: Daemon) -> tuple[int, int]:
    started = d.event("node.started")
    assert started is not None, d.log_tail()
    return started["maxConnections"], started["maxConnectionsPerClient"]


@pytest.mark.runs_no_jobs
@pytest.mark.parametrize("trusted", [False, True], ids=["not trusted", "trusted"])
def test_one_client_flooding_the_proxy_does_not_close_another_clients_connection(make_daemon: Any, trusted: bool) -> None:
    """Client B, behind the proxy, is still sending its request's headers when client A, behind
    the same proxy, opens an address's whole budget of connections. Not trusted, the proxy is
    one address: A's last connection makes room by closing the oldest of that address's silent
    connections, B's, and A holds the budget (today's behaviour). Trusted, the proxy's
    connections are not one address's budget: B's request completes and is counted as B's."""
    ensure_fd_limit(4096)
    d: Daemon = make_daemon(nofile=FILE_LIMIT, args=TRUST_LOCAL if trusted else ())
    total, per_client = _budgets(d)
    assert per_client < total, (per_client, total)
    held: list[socket.socket] = []
    try:
        b = connect(d)
        held.append(b)
        b.sendall(b"GET /healthz HTTP/1.1\r\nHost: cronwheel\r\n")  # its headers, half sent
        wait_for(lambda: metric(unix_get(d, "/metrics")[1].decode(), "cronwheel_http_connections", listener="tcp") >= 1,
                 10, what="client B's connection to be open")
        for _ in range(per_client):  # client A: silent connections, as many as an address may hold
            held.append(connect(d))
        wait_for(lambda: metric(unix_get(d, "/metrics")[1].decode(), "cronwheel_http_connections", listener="tcp")
                 >= (per_client if not trusted else per_client + 1), 10, what="client A's connections to be open")
        if not trusted:
            assert closed(b), "the oldest silent connection of the address (B's) made room for A's"
            text = unix_get(d, "/metrics")[1].decode()
            assert metric(text, "cronwheel_http_header_timeouts_total") >= 1
            return
        b.sendall(b"X-Forwarded-For: 198.51.100.2\r\n\r\n")
        status, _headers, body = answer(b)
        assert status == 200 and json.loads(body)["status"] == "ok", body
        text = unix_get(d, "/metrics")[1].decode()
        assert metric(text, "cronwheel_http_header_timeouts_total") == 0
        assert metric(text, "cronwheel_http_connections_limited_total", listener="tcp", reason="per_client") == 0
        # A's connections, each carrying a request of A's: all of them served
        for s in held[1:4]:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: cronwheel\r\nX-Forwarded-For: 198.51.100.1\r\n\r\n")
            assert answer(s)[0] == 200
    finally:
        for s in held:
            s.close()


@pytest.mark.runs_no_jobs
def test_the_client_behind_a_trusted_proxy_is_named_and_counted(make_daemon: Any) -> None:
    """The audit line of a token names the client the proxy forwarded for, not the proxy; a
    tenant over its budget behind the proxy is refused naming that client; a header that cannot
    be used is served as the proxy's own address and logged once, however many come."""
    ensure_fd_limit(4096)
    d: Daemon = make_daemon(nofile=512, args=TRUST_LOCAL)
    assert d.event("node.started")["trustedProxies"] == ["127.0.0.1/32", "::1/128"]  # type: ignore[index]
    r = d.post("/v1/tokens", {"role": "metrics", "name": "scraper"},
               headers={"X-Forwarded-For": "203.0.113.99, 198.51.100.7"})
    assert r.status == 201, r
    created = d.wait_event("token.created", tokenId=r.json()["tokenId"])
    assert created["remote"] == "198.51.100.7", created  # the rightmost: the leftmost is the client's to write
    r = d.request("DELETE", f"/v1/tokens/{r.json()['tokenId']}", headers={"Forwarded": 'for="[2001:db8::7]:4711";proto=https'})
    assert r.status == 200, r
    assert d.wait_event("token.revoked")["remote"] == "2001:db8::7"

    for n in range(50):  # a flood of headers that cannot be used: served, one line
        r = d.get("/healthz", token=None, headers={"X-Forwarded-For": f"198.51.100.7, not-an-address-{n}"})
        assert r.status == 200, r
    r = d.get("/v1/whoami", headers={"X-Forwarded-For": "198.51.100.8", "Forwarded": "for=198.51.100.9"})
    assert r.status == 200, r  # two headers naming two clients: the proxy's own, not a 4xx
    text = unix_get(d, "/metrics")[1].decode()
    assert metric(text, "cronwheel_http_forwarded_invalid_total") == 51
    invalid = d.wait_event("http.forwarded_invalid")
    assert invalid["level"] == "warning" and invalid["peer"] == "127.0.0.1", invalid
    assert invalid["problem"] == "X-Forwarded-For: the last hop is not an IP address: 'not-an-address-0'", invalid
    assert len(d.events("http.forwarded_invalid")) == 1, d.events("http.forwarded_invalid")

    # a tenant holding its budget behind the proxy: the refusal names the client, and the proxy
    noisy = tenant_token(d, "noisy")
    per_caller = d.event("node.started")["maxConnectionsPerCaller"]  # type: ignore[index]
    held = []
    try:
        for _ in range(per_caller):
            s = connect(d)
            held.append(s)
            s.sendall(f"GET /v1/jobs HTTP/1.1\r\nHost: cronwheel\r\nAuthorization: Bearer {noisy}\r\n"
                      "X-Forwarded-For: 198.51.100.66\r\n\r\n".encode())
            assert answer(s)[0] == 200
        problem(d.get("/v1/jobs", token=noisy, headers={"X-Forwarded-For": "198.51.100.66"}), 429)
        limited = d.wait_event("http.connections_limited", reason="per_caller")
        assert limited["client"] == "198.51.100.66" and limited["proxy"] == "127.0.0.1", limited
    finally:
        for s in held:
            s.close()


@pytest.mark.runs_no_jobs
def test_an_ipv4_client_of_a_dual_stack_listener_is_its_ipv4_address(make_daemon: Any) -> None:
    """On ``--http [::]:PORT`` an IPv4 client's socket address is ``::ffff:127.0.0.1``; it was
    the key of its connection budget and the ``remote`` of its audit lines, another client than
    the same machine on an IPv4 listener or named by a proxy. It is 127.0.0.1."""
    d: Daemon = make_daemon(args=("--http", "[::]:0"))
    assert d.url.startswith("http://[::]:"), d.url
    d.url = "http://127.0.0.1:" + d.url.rsplit(":", 1)[1]  # the same listener, over IPv4
    r = d.post("/v1/tokens", {"role": "metrics", "name": "dual-stack"})
    assert r.status == 201, r
    assert d.wait_event("token.created", tokenId=r.json()["tokenId"])["remote"] == "127.0.0.1"


@pytest.mark.runs_no_jobs
@pytest.mark.parametrize("args", [(), ("--trusted-proxies", "192.0.2.0/24")], ids=["no setting", "another proxy"])
def test_a_client_that_is_not_a_trusted_proxy_cannot_choose_its_address(make_daemon: Any, args: tuple[str, ...]) -> None:
    """Without the setting, or with a list that does not hold the peer, the headers are never
    read: the client is its TCP peer whatever it writes, and a malformed header is not even
    looked at."""
    d: Daemon = make_daemon(args=args)
    forged = {"X-Forwarded-For": "198.51.100.7", "Forwarded": "for=198.51.100.7"}
    r = d.post("/v1/tokens", {"role": "metrics", "name": "forged"}, headers=forged)
    assert r.status == 201, r
    assert d.wait_event("token.created", tokenId=r.json()["tokenId"])["remote"] == "127.0.0.1"
    assert d.get("/healthz", token=None, headers={"X-Forwarded-For": "garbage"}).status == 200
    text = unix_get(d, "/metrics")[1].decode()
    assert metric(text, "cronwheel_http_forwarded_invalid_total") == 0
    assert d.events("http.forwarded_invalid") == []


def test_a_bad_trusted_proxy_refuses_the_start_naming_it(tmp_path: Any) -> None:
    d = Daemon(tmp_path / "node", workers=0, args=("--trusted-proxies", "10.0.0.0/8,10.0.0.1/8"))
    d.launch()
    assert d.proc is not None
    rc = d.proc.wait(60)
    out = d.log_path.read_text()
    assert rc == 2, out
    assert "--trusted-proxies" in out and "trusted proxy '10.0.0.1/8' has host bits set (the network is 10.0.0.0/8)" in out, out
    assert "Traceback" not in out


@pytest.mark.runs_no_jobs
def test_sighup_applies_a_new_list_and_refuses_a_bad_one(tmp_path: Path, make_daemon: Any) -> None:
    """``trusted_proxies`` is live: a reload that adds 127.0.0.1 makes its next requests'
    headers count; one with a bad entry is refused naming it, and the list in force stays."""
    conf = tmp_path / "cronwheel.toml"
    conf.write_text("")
    d: Daemon = make_daemon(args=("--config", str(conf)))

    def remote_of_a_new_token() -> str:
        r = d.post("/v1/tokens", {"role": "metrics"}, headers={"X-Forwarded-For": "198.51.100.7"})
        assert r.status == 201, r
        return str(d.wait_event("token.created", tokenId=r.json()["tokenId"])["remote"])

    assert remote_of_a_new_token() == "127.0.0.1"
    conf.write_text('trusted_proxies = ["127.0.0.0/8"]\n')
    os.kill(d.pid, signal.SIGHUP)
    d.wait_event("config.reloaded")
    assert remote_of_a_new_token() == "198.51.100.7"
    conf.write_text('trusted_proxies = ["127.0.0.1/8"]\n')
    os.kill(d.pid, signal.SIGHUP)
    failed = d.wait_event("config.reload_failed")
    assert "trusted proxy '127.0.0.1/8' has host bits set" in failed["error"] and failed["key"] == "trusted_proxies", failed
    assert remote_of_a_new_token() == "198.51.100.7"


@pytest.mark.runs_no_jobs
def test_a_tenants_creation_change_and_deletion_name_the_client_that_asked(make_daemon: Any) -> None:
    """As a token's: the audit lines of the admin's work on tenants name the client the trusted
    proxy forwarded for (they named nobody)."""
    d: Daemon = make_daemon(args=TRUST_LOCAL)
    assert d.post("/v1/tenants", {"name": "direct"}).status == 201
    assert d.wait_event("tenant.created", tenant="direct")["remote"] == "127.0.0.1"
    proxied = {"X-Forwarded-For": "198.51.100.7"}
    assert d.post("/v1/tenants", {"name": "acme"}, headers=proxied).status == 201
    assert d.wait_event("tenant.created", tenant="acme")["remote"] == "198.51.100.7"
    assert d.request("PATCH", "/v1/tenants/acme", {"weight": 2}, headers=proxied).status == 200
    updated = d.wait_event("tenant.updated", tenant="acme")
    assert (updated["remote"], updated["changed"]) == ("198.51.100.7", ["weight"]), updated
    assert d.request("DELETE", "/v1/tenants/acme", headers={"X-Forwarded-For": "198.51.100.8"}).status == 202
    assert d.wait_event("tenant.deleting", tenant="acme")["remote"] == "198.51.100.8"
