"""Hostile peers on a real daemon's ``<data-dir>/worker.sock``: random bytes, truncated frames,
a 2^32-1 length prefix, deeply nested msgpack, protocol 1's maps, a second hello, frames
for executions the peer does not hold. Each such connection is closed; the daemon lives, its
memory does not balloon, and a real worker's lease is untouched throughout.

To misbehave *after* a proper hello the test needs an identity the pool issued: the daemon
runs with ``CRONWHEEL_WORKER_CMD`` pointing at ``tests/support/puppet_worker.py``, which
turns worker index 0 into a puppet that reports its id and waits, so the test connects in
its place (index 1 is a real worker)."""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronwheel.core.records import Completion, Outcome
from cronwheel.worker.framing import encode_frame
from cronwheel.worker.protocol import PROTOCOL_VERSION, Beats, Hello, Results
from cronwheel.worker.sockpath import unix_path
from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

PUPPET = REPO / "tests" / "support" / "puppet_worker.py"
RSS_GROWTH_LIMIT_KB = 64 * 1024


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def connect(d: Daemon, timeout: float = 5) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    with unix_path(d.data_dir / "worker.sock") as name:
        s.connect(name)
    return s


def send(s: socket.socket, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        s.sendall(data)


def closed_by_daemon(s: socket.socket, timeout: float) -> bool:
    """Read until the daemon closes the connection (True) or ``timeout`` passes (False).
    Frames it sends meanwhile (a welcome, an hb_ack) are skipped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if s.recv(65536) == b"":
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def read_frame(s: socket.socket) -> list[Any]:
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    (n,) = struct.unpack(">I", exactly(4))
    return list(msgpack.unpackb(exactly(n), raw=False))


def raw_frame(value: Any) -> bytes:
    """Any msgpack value behind a length prefix: what no encoder of ours would send."""
    body = msgpack.packb(value, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


def hello(worker_id: str) -> bytes:
    return bytes(encode_frame(Hello(PROTOCOL_VERSION, worker_id, 1, 1)))


def nested(head: list[Any], depth: int) -> bytes:
    """The frame ``head`` with one more, trailing element: an array nested ``depth`` deep
    (raw msgpack: the packer itself refuses such depths)."""
    body = bytes([0x90 | (len(head) + 1)]) + b"".join(msgpack.packb(x) for x in head) + b"\x91" * depth + b"\xc0"
    return struct.pack(">I", len(body)) + body


class Puppets:
    """The ids the pool gives worker index 0, one per generation."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.used: set[str] = set()

    def next(self, timeout: float = 40) -> str:
        def fresh() -> str | None:
            ids = self.path.read_text().split() if self.path.exists() else []
            new = [i for i in ids if i not in self.used]
            return new[-1] if new else None

        worker_id = wait_for(fresh, timeout, what="the next puppet worker id")
        self.used.update(self.path.read_text().split())
        return worker_id

    def take_over(self, d: Daemon) -> socket.socket:
        """Connect as the current puppet, say hello, get welcome."""
        worker_id = self.next()
        s = connect(d)
        s.sendall(hello(worker_id))
        welcome = read_frame(s)
        assert welcome[0] == "welcome", welcome
        return s


def test_hostile_worker_socket_peers_are_cut_off_and_harm_no_one(make_daemon: Any, tmp_path: Path) -> None:
    puppet_dir = tmp_path / "puppets"
    puppet_dir.mkdir()
    d: Daemon = make_daemon(workers=2, slots=4, env={
        "CRONWHEEL_WORKER_CMD": f"{sys.executable} {PUPPET}", "CWTEST_PUPPET_DIR": str(puppet_dir),
    })
    puppets = Puppets(puppet_dir / "ids")
    wait_for(lambda: any("-w1-" in e["worker"] for e in d.events("pool.worker_ready")), 30, what="the real worker")

    # a real job on the real worker, whose 1 s lease must be renewed by heartbeats throughout
    gate = tmp_path / "gate"
    job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done",
                     "leaseSec": 1, "retryPolicy": {"maxAttempts": 1}})["jobId"]
    running = wait_for(lambda: next((e for e in d.executions(job) if e["status"] == "RUNNING"), None), 20, what="the job")
    xid, real_worker = running["executionId"], running["workerId"]
    assert "-w1-" in real_worker and running["leaseEpoch"] == 1
    baseline = rss_kb(d.pid)

    # ---- before hello: anything but a proper hello for an issued id is cut off
    hostile = [
        struct.pack(">I", 0xFFFFFFFF) + b"\x00" * 64,  # 2^32-1 length prefix
        struct.pack(">I", 1 << 20) + b"\x81",  # 1 MiB announced: more than any hello
        struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1",  # bytes msgpack never uses
        nested(["hello", PROTOCOL_VERSION, "x", 1, 1], 3000),  # deeply nested msgpack
        raw_frame(["hello", PROTOCOL_VERSION, 12345, "many", 1]),  # wrong types
        raw_frame({1: "hello", "t": "hello"}),  # a map (protocol 1's shape), a non-string key
        raw_frame({"t": "hello", "v": 1, "worker_id": real_worker, "slots": 1, "pid": 1}),  # protocol 1's hello
        hello("stranger"),  # an id the pool never issued
        hello(real_worker),  # impersonating the real, connected worker
        bytes(encode_frame(Beats([(xid, 1)]))),  # not a hello
        bytes(encode_frame(Results([Completion(xid, None, 1, Outcome.SUCCEEDED)]))),
    ]
    for data in hostile:
        s = connect(d)
        send(s, data)
        assert closed_by_daemon(s, 5), data[:40]
        s.close()
    s = connect(d)  # a truncated header, then the end of the stream
    send(s, b"\x00\x00\x00")
    s.shutdown(socket.SHUT_WR)
    assert closed_by_daemon(s, 5)
    s.close()
    s = connect(d)  # a truncated frame left hanging: cut off when the hello deadline passes
    send(s, struct.pack(">I", 100) + b"\x85")
    assert closed_by_daemon(s, 15)
    s.close()

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.one_of(
        st.binary(max_size=2048),
        st.binary(max_size=512).map(lambda b: struct.pack(">I", len(b)) + b),
        st.recursive(st.none() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=20) | st.binary(max_size=20),
                     lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.integers(-(2**63), 2**63) | st.text(max_size=8), inner, max_size=5),
                     max_leaves=30).map(lambda v: raw_frame(["hello", v])),
        st.integers(0, 2**32 - 1).map(lambda n: struct.pack(">I", n)),
    ))
    def fuzz(data: bytes) -> None:
        s = connect(d)
        try:
            send(s, data)
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_WR)
            closed_by_daemon(s, 0.5)  # the daemon may wait for the rest of a frame: we leave
        finally:
            s.close()
        assert d.proc is not None and d.proc.poll() is None

    fuzz()

    # ---- after a proper hello: one violation and that connection is closed
    def attack(frames: bytes, why: str) -> None:
        s = puppets.take_over(d)
        try:
            send(s, frames)
            assert closed_by_daemon(s, 5), why
        finally:
            s.close()

    attack(hello("again"), "a second hello")
    attack(bytes(encode_frame(Results([Completion(xid, None, 1, Outcome.FAILED, 1, "forged")]))),
           "a result for another worker's execution")
    attack(raw_frame(["grant", [[xid]]]), "a daemon-to-worker frame")
    attack(struct.pack(">I", 0xFFFFFFFF), "a 2^32-1 length prefix")
    attack(nested(["hb", []], 3000), "nesting past any stack")
    attack(raw_frame({"t": "hb", "beats": [], 7: 7}), "a map with a non-string key (protocol 1's shape)")
    attack(raw_frame(["result", [[xid, None, 1, "failed", 1, "a NUL\x00", None]]]), "a NUL in a result's text")
    # a heartbeat for another's execution is answered "lost" and renews nothing
    s = puppets.take_over(d)
    try:
        s.sendall(encode_frame(Beats([(xid, 1)])))
        ack = read_frame(s)
        assert ack == ["hb_ack", [[xid, "lease_lost"]]]
    finally:
        s.close()

    assert [e for e in d.events("pool.protocol_error") if "result for an execution" in e.get("error", "")]
    lost = {e["worker"] for e in d.events("pool.worker_lost")} | {e["worker"] for e in d.events("worker.lost")}
    assert real_worker not in lost and all("-w0-" in w for w in lost)

    # ---- the daemon is fine, its memory did not balloon, the real lease was never touched
    assert d.get("/healthz", token=None).status == 200
    growth = rss_kb(d.pid) - baseline
    assert growth < RSS_GROWTH_LIMIT_KB, f"RSS grew by {growth} kB"
    (ex,) = d.executions(job)
    assert (ex["status"], ex["workerId"], ex["leaseEpoch"], ex["attempt"]) == ("RUNNING", real_worker, 1, 1)
    gate.touch()
    wait_for(lambda: d.executions(job)[0]["status"] == "SUCCEEDED", 30, what="the real job to finish")
    (ex,) = d.executions(job)
    assert ex["leaseEpoch"] == 1 and ex["attempt"] == 1
    assert not [e for e in d.events("lease.expired") if e.get("executionId") == xid]
    log = d.log_path.read_text(errors="replace")
    assert "Traceback" not in log
