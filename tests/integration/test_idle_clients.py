"""Slow and idle clients against a real daemon: idle TCP connections (and some that trickle
half a request) hold neither the API nor the workers' heartbeats up, and are closed once
they have not sent their headers within the header timeout."""

from __future__ import annotations

import resource
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

IDLE = 150  # with SLOW and the test's own calls, under the per-client budget (256)
SLOW = 50


def ensure_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise AssertionError(f"ulimit -n hard limit {hard} is below the {need} this test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def still_open(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        while s.recv(65536):  # an answer (a 401, a 408) may come first: read past it
            pass
        return False  # b"": the server closed it
    except BlockingIOError:
        return True  # nothing (more) to read: open and idle
    except OSError:
        return False


def value_of(d: Daemon, metric: str) -> float:
    for line in d.get("/metrics").body.decode().splitlines():
        if line.startswith(metric + " ") or line.startswith(metric + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{metric} not in /metrics")


def test_idle_and_slow_connections_do_not_block_the_api_or_heartbeats(make_daemon: Any, tmp_path: Path) -> None:
    ensure_fd_limit(IDLE + SLOW + 512)
    d: Daemon = make_daemon(workers=2, slots=4)
    parts = urlsplit(d.url)
    conns: list[socket.socket] = []
    try:
        for _ in range(IDLE):  # connected, then silent
            conns.append(socket.create_connection((parts.hostname, parts.port), timeout=10))
        for i in range(SLOW):  # half a request, then silent: a slowloris
            s = socket.create_connection((parts.hostname, parts.port), timeout=10)
            s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n" + (b"\r\n{" if i % 2 else b"X-Slow: "))
            conns.append(s)

        # a job whose lease (1 s) must be renewed by heartbeats several times to survive
        t0 = time.monotonic()
        job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "sleep 4", "leaseSec": 1,
                         "retryPolicy": {"maxAttempts": 1}})["jobId"]
        assert time.monotonic() - t0 < 5, "the submission answered promptly"
        wait_for(lambda: any(e["status"] == "RUNNING" for e in d.executions(job)), 20, what="the job to start")
        # the API answers while it runs (each call well under a second)
        for _ in range(10):
            t1 = time.monotonic()
            assert d.get("/v1/status").status == 200
            assert d.get(f"/v1/jobs/{job}").status == 200
            assert time.monotonic() - t1 < 2
        wait_for(lambda: d.executions(job)[0]["status"] == "SUCCEEDED", 30, what="the job to succeed")
        (ex,) = d.executions(job)
        assert ex["attempt"] == 1 and ex["leaseEpoch"] == 1, "heartbeats kept the lease: never lost or stolen"
        assert not d.events("lease.expired")
        # none that sent its headers late is held past the header timeout (10 s)
        wait_for(lambda: not any(still_open(s) for s in conns), 30, interval=0.5, what="the silent connections to be closed")
        assert value_of(d, "cronwheel_http_header_timeouts_total") >= IDLE + SLOW // 2
    finally:
        for s in conns:
            s.close()
    assert d.get("/healthz", token=None).status == 200
