"""Tenants behind one address (a NAT, a reverse proxy): one of them holding connections open
(authenticated and idle, or silent) does not lock its neighbours out. Real daemon, real
sockets, all from 127.0.0.1, with a file limit low enough for budgets a test can spend: 192
connections in all and per address, 24 per tenant."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from tests.integration.test_auth import problem, tenant_token
from tests.integration.test_connection_limits import metric, unix_get
from tests.integration.test_idle_clients import ensure_fd_limit
from tests.support.daemon import Daemon
from tests.support.rawhttp import answer, closed, connect
from tests.support.wait import wait_for

FILE_LIMIT = 512


def _budgets(d: Daemon) -> tuple[int, int, int]:
    started = d.event("node.started")
    assert started is not None, d.log_tail()
    return started["maxConnections"], started["maxConnectionsPerClient"], started["maxConnectionsPerCaller"]


def _get(s: socket.socket, path: str, token: str | None) -> None:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: cronwheel\r\n{auth}\r\n".encode())


@pytest.mark.runs_no_jobs
def test_a_tenant_holding_connections_spends_its_own_budget_not_its_neighbours(make_daemon: Any) -> None:
    """The noisy tenant opens as many kept-alive connections as the address may have, each
    with one authenticated request: past its own budget it gets 429 too_many_connections and
    the connection is closed; the quiet tenant, at the same address, is still served."""
    ensure_fd_limit(4096)
    d: Daemon = make_daemon(workers=1, slots=1, nofile=FILE_LIMIT)
    _total, per_client, per_caller = _budgets(d)
    assert per_caller < per_client, (per_caller, per_client)
    noisy, quiet = tenant_token(d, "noisy"), tenant_token(d, "quiet")
    held: list[socket.socket] = []
    statuses: list[int] = []
    try:
        for _ in range(per_client):
            s = connect(d)
            held.append(s)
            _get(s, "/v1/jobs", noisy)
            status, headers, body = answer(s)
            statuses.append(status)
            if status == 429:
                refused = json.loads(body)
                assert refused["code"] == "too_many_connections", refused
                assert "tenant 'noisy'" in refused["detail"] and f"{per_caller} connections" in refused["detail"], refused
                assert headers.get("retry-after") == "1" and headers.get("connection") == "close", headers
                assert closed(s)
        assert statuses.count(200) == per_caller and statuses.count(429) == per_client - per_caller, statuses
        # the neighbour behind the same address: served, and its own connections kept alive
        r = d.get("/v1/jobs", token=quiet)
        assert r.status == 200, r
        s = connect(d)
        held.append(s)
        for _ in range(2):
            _get(s, "/v1/jobs", quiet)
            assert answer(s)[0] == 200
        # the noisy tenant's kept connections still serve it; a new one still does not
        _get(held[0], "/v1/jobs", noisy)
        assert answer(held[0])[0] == 200
        problem(d.get("/v1/jobs", token=noisy), 429)
        code, text = unix_get(d, "/metrics")
        assert code == 200
        assert metric(text.decode(), "cronwheel_http_connections_limited_total", listener="tcp",
                      reason="per_caller") >= per_client - per_caller
        limited = d.wait_event("http.connections_limited", reason="per_caller")
        assert limited["caller"] == "noisy" and limited["perCaller"] == per_caller, limited
    finally:
        for s in held:
            s.close()
    # its connections closed, the noisy tenant is served again
    assert d.get("/v1/jobs", token=noisy).status == 200


def test_silent_connections_from_an_address_do_not_keep_its_next_client_out(make_daemon: Any) -> None:
    """A tenant that opens the address's whole budget of connections and sends nothing on
    them (no token to count them against) would lock everyone behind that address out for
    the header timeout, again and again: a new connection from the address closes the oldest
    silent one instead. An answer to a connection nobody vouched for (a 401) closes it."""
    ensure_fd_limit(4096)
    d: Daemon = make_daemon(workers=1, slots=1, nofile=FILE_LIMIT)
    _total, per_client, _per_caller = _budgets(d)
    quiet = tenant_token(d, "quiet")
    silent = [connect(d) for _ in range(per_client)]
    try:
        for _ in range(3):
            r = d.get("/v1/jobs", token=quiet)
            assert r.status == 200, r
        assert closed(silent[0]) and closed(silent[1]), "the oldest silent connections made room"
        code, text = unix_get(d, "/metrics")
        assert code == 200 and metric(text.decode(), "cronwheel_http_header_timeouts_total") >= 3
        # without a token: answered, then closed, holding the address's budget no longer
        s = connect(d)
        silent.append(s)
        _get(s, "/v1/jobs", None)
        status, headers, _body = answer(s)
        assert status == 401 and headers.get("connection") == "close", headers
        assert closed(s)
    finally:
        for s in silent:
            s.close()


def test_a_tenant_following_many_streams_spends_its_own_budget(make_daemon: Any) -> None:
    """Followed output streams (``cronwheel logs -f``) of a run that has not started stay
    open: the noisy tenant holds its whole budget with them, its next stream is refused with
    429, and the quiet tenant behind the same address follows its own."""
    ensure_fd_limit(4096)
    d: Daemon = make_daemon(workers=1, slots=1, nofile=FILE_LIMIT)
    _total, _per_client, per_caller = _budgets(d)
    noisy, quiet = tenant_token(d, "noisy"), tenant_token(d, "quiet")

    def waiting_run(token: str) -> str:  # a queue target's run waits for a remote worker: its output too
        job = d.post("/v1/jobs", {"schedule": "@yearly", "queue": "nobody"}, token=token).json()["jobId"]
        r = d.post(f"/v1/jobs/{job}/trigger", token=token)
        assert r.status == 202, r
        return str(r.json()["executionId"])

    noisy_run, quiet_run = waiting_run(noisy), waiting_run(quiet)
    streams: list[socket.socket] = []
    try:
        for _ in range(per_caller):
            s = connect(d)
            streams.append(s)
            _get(s, f"/v1/executions/{noisy_run}/output?follow=1", noisy)
        wait_for(lambda: metric(unix_get(d, "/metrics")[1].decode(), "cronwheel_http_connections", listener="tcp")
                 >= per_caller, 20, what="the noisy tenant's streams to be open")
        s = connect(d)
        streams.append(s)
        _get(s, f"/v1/executions/{noisy_run}/output?follow=1", noisy)
        status, _headers, body = answer(s)
        assert status == 429 and json.loads(body)["code"] == "too_many_connections", body
        s = connect(d)
        streams.append(s)
        _get(s, f"/v1/executions/{quiet_run}/output?follow=1", quiet)
        s.settimeout(10)
        head = s.recv(65536)
        assert head.startswith(b"HTTP/1.1 200"), head
    finally:
        for s in streams:
            s.close()
