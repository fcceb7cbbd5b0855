"""GET /v1/events and `cronwheel logs [-f]` against a real daemon."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import pytest

from tests.support.daemon import Daemon, reap
from tests.support.wait import wait_for


def ndjson(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


def ran(d: Daemon, job_id: str) -> bool:
    return any(e["status"] == "SUCCEEDED" for e in d.executions(job_id))


class Lines:
    """Lines of a pipe, read by a thread, so the test can wait on them with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self.closed = False
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))
        self.closed = True

    def having(self, text: str) -> list[str]:
        return [line for line in list(self.lines) if text in line]


@pytest.fixture
def follow(daemon: Daemon) -> Iterator[Callable[..., tuple[subprocess.Popen[str], Lines]]]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[subprocess.Popen[str], Lines]:
        p = daemon.cli_popen("logs", *args)
        procs.append(p)
        assert p.stdout is not None
        return p, Lines(p.stdout)

    yield start
    for p in procs:
        reap(p)


def test_tail_filters_by_job_event_since_and_n(daemon: Daemon) -> None:
    a = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true"})
    b = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true"})
    wait_for(lambda: ran(daemon, a["jobId"]) and ran(daemon, b["jobId"]), 20)

    r = daemon.get("/v1/events")
    assert r.status == 200 and r.headers["Content-Type"].startswith("application/x-ndjson")
    events = ndjson(r.body)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and {"node.started", "execution.started"} <= {e["event"] for e in events}

    only_a = ndjson(daemon.get(f"/v1/events?job={a['jobId']}").body)
    # runAt in the year 2000 is long missed: the one-off runs as a catch-up run
    assert [e["event"] for e in only_a if e["event"].startswith("execution.")] == [
        "execution.catch_up", "execution.started", "execution.succeeded"]
    assert all(e.get("jobId") == a["jobId"] or e["executionId"].startswith(a["jobId"] + ":") for e in only_a)
    assert {e["event"] for e in ndjson(daemon.get("/v1/events?event=execution.").body)} == {
        "execution.catch_up", "execution.started", "execution.succeeded"}
    assert len(ndjson(daemon.get("/v1/events?n=2").body)) == 2
    assert ndjson(daemon.get("/v1/events?n=0").body) == []
    assert ndjson(daemon.get("/v1/events?since=2099-01-01T00:00:00Z").body) == []
    everything = {e["seq"] for e in ndjson(daemon.get("/v1/events?n=10000").body)}
    assert everything <= {e["seq"] for e in ndjson(daemon.get("/v1/events?since=1h&n=10000").body)}
    # the cursor says where an answer starts; given back as `after`, the very next events come
    r = daemon.get("/v1/events?n=2")
    two = ndjson(r.body)
    log, _, before = r.headers["Cronwheel-Cursor"].partition(":")
    assert int(before) == two[0]["seq"] - 1 and ndjson(daemon.get(f"/v1/events?after={log}:{before}&n=0").body)[:2] == two
    assert ndjson(daemon.get(f"/v1/events?after={log}:{two[0]['seq']}").body)[0] == two[1]
    assert {e["jobId"] for e in ndjson(daemon.get(f"/v1/events?after={log}:0&job={b['jobId']}").body)} == {b["jobId"]}
    # another log's cursor (a daemon since restarted): all of this daemon's, from its first
    other = [e["seq"] for e in ndjson(daemon.get("/v1/events?after=0000000000000000:5").body)]
    assert other == list(range(1, len(other) + 1)) and len(other) >= len(events)
    for bad in ("since=yesterday", "n=-1", "n=99999", "follow=maybe", f"after={log}", "after=1:2", f"after={log}:x"):
        r = daemon.get(f"/v1/events?{bad}")
        assert r.status == 400 and r.json()["code"] == "invalid_query", (bad, r)
    # a seq of this log that it has not reached: refused, with or without follow (an empty
    # answer and that cursor back in the header would hide every event to come from a poller)
    for follow in ("0", "1"):
        r = daemon.get(f"/v1/events?after={log}:999999999999999999&follow={follow}")
        assert r.status == 400 and r.json()["field"] == "after" and "has no event 999999999999999999" in r.json()["detail"], r
    # an instant outside what cronwheel keeps is named as such, not as a malformed value
    for path in ("/v1/events?since=9900-01-01T00:00:00Z", "/v1/jobs/nope/executions?before=1969-12-31T23:59:59Z"):
        r = daemon.get(path)
        assert r.status == 400 and "outside 1970..9899" in r.json()["detail"], (path, r)


def test_follow_streams_new_events_then_ends_when_the_daemon_stops(daemon: Daemon) -> None:
    parts = urlsplit(daemon.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=20)
    auth = f"Authorization: Bearer {daemon.admin_token}\r\n".encode()
    sock.sendall(b"GET /v1/events?follow=1&n=1 HTTP/1.1\r\nHost: x\r\n" + auth + b"Connection: close\r\n\r\n")
    reader = sock.makefile("rb")
    status = reader.readline()
    assert b" 200 " in status
    while reader.readline() not in (b"\r\n", b""):
        pass  # headers
    received: list[dict[str, Any]] = []

    def read_chunks() -> None:  # chunked transfer encoding: size line, data, CRLF
        buf = b""
        while True:
            size_line = reader.readline()
            if not size_line or int(size_line.strip(), 16) == 0:
                return
            buf += reader.read(int(size_line.strip(), 16))
            reader.readline()
            *complete, buf = buf.split(b"\n")
            received.extend(json.loads(x) for x in complete if x.strip())

    t = threading.Thread(target=read_chunks, daemon=True)
    t.start()
    try:
        wait_for(lambda: len(received) >= 1, 10, what="the one past event")
        job = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true"})
        wait_for(lambda: any(e["event"] == "execution.succeeded" for e in received), 20, what="live events")
        assert any(e["event"] == "job.created" and e["jobId"] == job["jobId"] for e in received)
        seqs = [e["seq"] for e in received]
        assert seqs == sorted(set(seqs)), "no duplicates between the tail and the live events"
        assert daemon.stop(timeout=30) == 0  # an open follower does not hold the shutdown up
        t.join(10)
        assert not t.is_alive(), "the stream ended with the daemon"
        assert any(e["event"] == "node.stopping" for e in received)
    finally:
        reader.close()
        sock.close()


def test_cli_logs_tail_follow_and_execution_output(daemon: Daemon, follow) -> None:  # type: ignore[no-untyped-def]
    job = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "echo hello-from-job", "name": "hello"})
    wait_for(lambda: ran(daemon, job["jobId"]), 20)
    xid = daemon.executions(job["jobId"])[0]["executionId"]

    res = daemon.cli("logs", "-n", "5")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 5 and all(line[:4].isdigit() and line[23] == "Z" for line in lines)
    res = daemon.cli("logs", "--job", "hello", "--json")
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    assert [e["event"] for e in events] == ["job.created", "execution.catch_up", "execution.started", "execution.succeeded"]
    # an execution id (it has a ':') still shows the execution's output
    res = daemon.cli("logs", xid)
    assert res.returncode == 0 and res.stdout == "hello-from-job\n", res
    res = daemon.cli("logs", "hello")  # a job without event options: its latest run's output
    assert res.stdout == "hello-from-job\n"
    res = daemon.cli("logs", xid, "-f")  # following an execution that has ended: its output
    assert res.returncode == 0 and res.stdout == "hello-from-job\n", res
    res = daemon.cli("logs", xid, "--job", "hello")
    assert res.returncode == 2 and "not both" in res.stderr
    res = daemon.cli("logs", "--since", "yesterday")
    assert res.returncode == 2 and "--since" in res.stderr

    p, out = follow("-f", "--job", "hello", "-n", "1")
    q, every = follow("-f", "--json")
    # each has printed its tail, so each is subscribed: nothing from here on can be missed
    def tails() -> bool:
        for proc in (p, q):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else proc.returncode
        return bool(out.lines and every.lines)

    wait_for(tails, 20, what="both followers' tails")
    assert len(out.lines) == 1 and "execution.succeeded" in out.lines[0]
    out.lines.clear()
    other = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true", "name": "other"})
    wait_for(lambda: any(other["jobId"] in line and "execution.succeeded" in line for line in every.lines), 20, what="live events in -f --json")
    assert all(json.loads(line)["event"] for line in every.lines)
    assert daemon.post(f"/v1/jobs/{job['jobId']}/trigger").status == 202  # hello runs again
    wait_for(lambda: out.having("execution.succeeded"), 20, what="the --job follower to see its run")
    assert out.having("job.triggered") and out.having("execution.started")
    assert not any(other["jobId"] in line for line in out.lines), "the --job follower sees only its job"
    assert p.stderr is not None and q.stderr is not None
    errs = [Lines(p.stderr), Lines(q.stderr)]
    daemon.stop()
    # the daemon went away: they wait for it, as tail -F does (tests/chaos/test_logs_follow.py
    # follows them across a restart), saying so once
    for err in errs:
        wait_for(lambda err=err: err.having("the daemon closed the event stream (it is stopping); waiting"), 20,
                 what="the followers to say the daemon is gone")
    assert p.poll() is None and q.poll() is None
    p.send_signal(signal.SIGINT)  # Ctrl-C ends a follower that waits, at once
    assert p.wait(10) == 130


def test_logs_of_a_tick_that_did_not_run_says_why(daemon: Daemon) -> None:
    job = daemon.add_job({"schedule": "* * * * * *", "command": "sleep 3", "overlap": "forbid", "name": "slow"})
    skipped = wait_for(lambda: [e for e in daemon.executions(job["jobId"]) if e["status"] == "SKIPPED"], 20,
                       what="a tick skipped while the first run goes on")[0]
    res = daemon.cli("logs", skipped["executionId"])
    assert res.returncode == 0 and res.stdout == "", res
    assert f"{skipped['executionId']}: SKIPPED: {skipped['reason']} (no output)" in res.stderr
    assert skipped["reason"].startswith("overlap: ") and skipped["reason"].endswith(" still running")
    assert daemon.request("DELETE", f"/v1/jobs/{job['jobId']}").status == 200


def test_cli_logs_quotes_values_as_logfmt_so_a_line_reads_back(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('retention = "30d"\n')
    d = make_daemon(args=("--config", str(conf)))
    conf.write_text('retention = "7d"\n')
    os.kill(d.pid, signal.SIGHUP)
    reloaded = wait_for(lambda: d.event("config.reloaded"), 20, what="config.reloaded")
    res = d.cli("logs", "-n", "100")
    assert res.returncode == 0, res.stderr
    [line] = [x for x in res.stdout.splitlines() if " config.reloaded " in x]
    fields = line.split(None, 2)[2]
    pairs = re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|[^ ]*)', fields)
    assert " ".join(f"{k}={v}" for k, v in pairs) == fields, line
    got = {k: json.loads(v) if v.startswith('"') else v for k, v in pairs}
    assert got["summary"] == reloaded["summary"] == f"retention: 30d ({conf}:1) -> 7d ({conf}:1)", line
    assert json.loads(got["changed"]) == reloaded["changed"] and got["level"] == "info"
