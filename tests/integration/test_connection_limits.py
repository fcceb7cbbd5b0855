"""Descriptor exhaustion, bounded, on loopback: a daemon started with a low file limit, and
more idle TCP connections than its budget allows from many client addresses. Beyond the
budget new connections are closed at once (and said so, in the log and /metrics); the local
Unix socket, with a budget of its own, still answers; an every-second job keeps its ticks."""

from __future__ import annotations

import itertools
import json
import resource
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.integration.test_idle_clients import ensure_fd_limit
from tests.support.daemon import Daemon
from tests.support.wait import wait_for

FILE_LIMIT = 1024  # the daemon's: TCP budget 576 in all, 256 per client address


def unix_get(d: Daemon, path: str) -> tuple[int, bytes]:
    """One request over the daemon's local socket (admin by file permission, no token)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(d.data_dir / "api.sock"))
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def metric(text: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}} " if want else f"{name} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_the_file_limit_is_raised_to_the_hard_limit_at_start(make_daemon: Any) -> None:
    """Started with a soft RLIMIT_NOFILE below the hard one (a login shell's 1024 under a
    hard 524288, say), the daemon takes the soft limit up to the hard one and sizes its
    connection budgets within it."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = 2048 if hard == resource.RLIM_INFINITY or hard >= 2048 else hard
    soft = hard // 4
    d: Daemon = make_daemon(workers=1, slots=1, nofile=(soft, hard))
    started = d.event("node.started")
    assert started is not None and started["fileLimit"] == hard, started
    assert started["maxConnections"] + started["maxLocalConnections"] <= hard
    with open(f"/proc/{d.pid}/limits") as f:  # what the process holds now, not only what it said
        line = next(x for x in f if x.startswith("Max open files"))
    assert line.split()[3:5] == [str(hard), str(hard)], line


def test_a_connection_flood_leaves_the_local_socket_and_the_ticks_alone(make_daemon: Any, tmp_path: Path) -> None:
    ensure_fd_limit(4096)
    d: Daemon = make_daemon(workers=1, slots=4, nofile=FILE_LIMIT)
    started = d.event("node.started")
    assert started is not None and started["fileLimit"] == FILE_LIMIT
    budget, per_client = started["maxConnections"], started["maxConnectionsPerClient"]
    assert budget < FILE_LIMIT and per_client <= budget
    job = d.add_job({"schedule": "* * * * * *", "command": "true"})["jobId"]
    wait_for(lambda: len(d.executions(job)) >= 2, 20, what="the every-second job to tick")

    host, port = urlsplit(d.url).hostname, urlsplit(d.url).port
    held: list[socket.socket] = []
    refused = 0
    try:
        # a client address per 200 connections (127.0.0.2, .3, ...): the total budget is
        # what runs out, not just the per-client one
        for i in range(FILE_LIMIT + 300):  # more than the daemon has descriptors
            s = socket.socket()
            s.bind((f"127.0.0.{2 + i // 200}", 0))
            s.settimeout(5)
            s.connect((host, port))
            held.append(s)
        # beyond the budget the daemon closed them at once: they read EOF (or a reset)
        for s in held[budget:]:
            try:
                refused += s.recv(1) == b""
            except (ConnectionResetError, TimeoutError):
                refused += 1
        assert refused >= FILE_LIMIT + 300 - budget - 10, refused
        # TCP is full: read over the local socket
        code, body = unix_get(d, f"/v1/jobs/{job}/executions?limit=200")
        assert code == 200
        before = len(json.loads(body)["executions"])
        wait_for(lambda: len(json.loads(unix_get(d, f"/v1/jobs/{job}/executions?limit=200")[1])["executions"]) >= before + 3,
                 20, interval=0.5, what="three more ticks while the flood is held")
        code, text = unix_get(d, "/metrics")
        assert code == 200
        assert metric(text.decode(), "cronwheel_http_connections_limited_total", listener="tcp", reason="total") >= 150
        assert metric(text.decode(), "cronwheel_http_connections", listener="unix") >= 1  # this very request
    finally:
        for s in held:
            s.close()
    # the flood is over: TCP answers again, no tick was skipped, one event said so (not 200)
    wait_for(lambda: d.get("/healthz", token=None).status == 200, 20, what="TCP to answer again")
    limited = d.events("http.connections_limited")
    assert 1 <= len(limited) <= 3 and limited[0]["refusedSinceLast"] >= 1, limited
    ticks = sorted(int(e["executionId"].rsplit(":", 1)[1]) for e in d.executions(job))
    assert all(b - a == 1000 for a, b in itertools.pairwise(ticks)), "every second kept its tick"
    assert not d.events("execution.skipped")
