"""`cronwheel logs -f` across a restart of the daemon (systemctl restart), or a broken
connection to it, as `tail -F` follows a file that is replaced: the followers wait for the
daemon, say so once, and go on where they left off, nothing printed twice or skipped; Ctrl-C
still ends them at once.

A real daemon, its workers and the CLI, over the local socket (the same address after the
restart; the stop is SIGTERM with a short grace, so the run it finds is cut short and runs
again after the restart, as `run --wait`'s test has it), or over TCP through a relay whose
connections the test cuts while the daemon and the run go on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from tests.support.daemon import Daemon, reap
from tests.support.relay import Relay
from tests.support.wait import wait_for


class Pipe:
    """What a process writes to one of its pipes, read by a thread (tests wait on it)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.data = b""
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(4096):  # type: ignore[attr-defined]
            self.data += chunk

    @property
    def text(self) -> str:
        return self.data.decode()


def follower(d: Daemon, *args: str, url: str | None = None) -> tuple[subprocess.Popen[bytes], Pipe, Pipe]:
    """``cronwheel logs -f ARGS`` over the local socket (the same address after a restart), or
    over TCP at ``url`` (with the admin token)."""
    env = d.cli_env()
    env.pop("CRONWHEEL_URL")
    if url is not None:
        env.update(CRONWHEEL_URL=url, CRONWHEEL_TOKEN=d.admin_token)
    p = subprocess.Popen([sys.executable, "-m", "cronwheel", "logs", "-f", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert p.stdout is not None and p.stderr is not None
    return p, Pipe(p.stdout), Pipe(p.stderr)


def test_logs_f_rides_out_a_restart_printing_every_line_once(make_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    d: Daemon = make_daemon(args=("--grace-sec", "1"))
    release = tmp_path / "release"
    line = 'echo "epoch $CRONWHEEL_LEASE_EPOCH line {}"'
    cmd = f"{line.format(1)}; sleep 0.2; {line.format(2)}; while [ ! -e {release} ]; do sleep 0.05; done; {line.format(3)}"
    job = d.add_job({"runAt": "+0s", "command": cmd, "name": "slow", "retryPolicy": {"maxAttempts": 1}})
    [run] = wait_for(lambda: [e for e in d.executions(job["jobId"]) if e["status"] == "RUNNING"], what="the run")
    xid = run["executionId"]
    followers = {name: follower(d, *args) for name, args in
                 (("job", ("slow",)), ("execution", (xid,)), ("events", ("--json", "-n", "1")))}
    try:
        for name in ("job", "execution"):
            wait_for(lambda name=name: "epoch 1 line 2" in followers[name][1].text, what=f"the {name} follower's first lines")
        wait_for(lambda: followers["events"][1].text, what="the events follower's first event")

        assert d.stop() == 0  # the run is cut short after its 1 s grace, to run again after the restart
        for name, (p, _, err) in followers.items():
            wait_for(lambda err=err: "waiting for it to come back" in err.text, what=f"the {name} follower to wait")
            assert p.poll() is None, (name, err.text)  # not ended with the daemon (exit 69, before)
        d.start()
        for name in ("job", "execution"):
            wait_for(lambda name=name: "epoch 2 line 2" in followers[name][1].text, timeout=30, what=f"the {name} follower after the restart")
        release.touch()
        for name in ("job", "execution"):
            p, out, err = followers[name]
            assert p.wait(30) == 0, (name, err.text)
            # every line once: the first run's until it was cut short, then all of the one after the restart
            assert out.text == "".join(f"epoch {e} line {n}\n" for e, n in ((1, 1), (1, 2), (2, 1), (2, 2), (2, 3))), (name, out.text)
            assert err.text.count("waiting for it to come back") == 1, err.text  # said once
            assert "interrupted: the daemon stopped before it ended" in err.text and "the daemon is back" in err.text
            assert f"execution {xid}: SUCCEEDED, exit 0" in err.text, err.text
        assert "is SUCCEEDED: no execution to come" in followers["job"][2].text

        p, out, err = followers["events"]
        wait_for(lambda: any(r["event"] == "execution.succeeded" for r in records(out)), what="the events of the new daemon")
        assert p.poll() is None and err.text.count("the daemon closed the event stream") == 1, err.text
        events = records(out)
        # two logs, each printed once, without a gap: the old daemon's until it stopped (its
        # running execution cut short included), then the new one's from its first event
        [restart] = [i for i in range(1, len(events)) if events[i]["seq"] <= events[i - 1]["seq"]]
        old, new = events[:restart], events[restart:]
        assert [r["seq"] for r in old] == list(range(old[0]["seq"], old[-1]["seq"] + 1))
        assert [r["seq"] for r in new] == list(range(1, len(new) + 1))
        assert {"node.stopping", "execution.retry_scheduled"} <= {r["event"] for r in old}, [r["event"] for r in old]
        assert [r["event"] for r in new].count("node.started") == 1
        assert [r.get("leaseEpoch") for r in new if r["event"] == "execution.started"] == [2]
        p.send_signal(signal.SIGINT)  # Ctrl-C: at once, with the usual status
        assert p.wait(10) == 130
    finally:
        release.touch()
        for p, _, _ in followers.values():
            reap(p)


def records(out: Pipe) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.text.splitlines() if line.strip()]


def test_logs_f_rides_out_a_broken_connection_where_it_left_off(daemon: Daemon, tmp_path: Path) -> None:
    gates = [tmp_path / "gate-1", tmp_path / "gate-2"]
    cmd = "; ".join(f'while [ ! -e {g} ]; do sleep 0.05; done; echo "line {n}"' for n, g in ((2, gates[0]), (3, gates[1])))
    job = daemon.add_job({"runAt": "+0s", "command": 'echo "line 1"; ' + cmd, "name": "gated", "retryPolicy": {"maxAttempts": 1}})
    [run] = wait_for(lambda: [e for e in daemon.executions(job["jobId"]) if e["status"] == "RUNNING"], what="the run")
    xid = run["executionId"]
    target = urlsplit(daemon.url)
    relay = Relay((target.hostname or "127.0.0.1", target.port or 80))
    output, events = follower(daemon, "gated", url=relay.url), follower(daemon, "--json", "-n", "1", url=relay.url)
    try:
        wait_for(lambda: output[1].text == "line 1\n", what="the output follower's first line")
        wait_for(lambda: events[1].text, what="the events follower's first event")
        relay.cut()  # the network fails; the daemon and the run go on
        for p, _, err in (output, events):
            wait_for(lambda err=err: "waiting for it to come back" in err.text, what="the followers to wait")
            assert p.poll() is None, err.text  # not ended (exit 69, before)
        gates[0].touch()  # printed while no follower can see it
        wait_for(lambda: daemon.get(f"/v1/executions/{xid}/output").body == b"line 1\nline 2\n", what="line 2, live")
        meanwhile = daemon.add_job({"schedule": "0 0 1 1 *", "command": "true"})  # an event while cut off
        relay.mend()
        wait_for(lambda: "line 2" in output[1].text, what="the output follower to go on")
        gates[1].touch()
        p, out, err = output
        assert p.wait(30) == 0, err.text
        assert out.text == "line 1\nline 2\nline 3\n", out.text  # each once: resumed at the byte it had got to
        assert err.text.count("waiting for it to come back") == 1 and "the daemon is back" in err.text, err.text
        assert f"execution {xid}: SUCCEEDED, exit 0" in err.text

        p, out, err = events
        wait_for(lambda: any(r["event"] == "execution.succeeded" for r in records(out)), what="the events after the cut")
        seen = records(out)
        seqs = [r["seq"] for r in seen]
        assert seqs == list(range(seqs[0], seqs[-1] + 1)), seqs  # one log, every event once, none skipped
        assert [r.get("jobId") for r in seen if r["event"] == "job.created"] == [meanwhile["jobId"]]
        assert err.text.count("waiting for it to come back") == 1, err.text
        p.send_signal(signal.SIGINT)
        assert p.wait(10) == 130
    finally:
        for g in gates:
            g.touch()
        for p, _, _ in (output, events):
            reap(p)
        relay.close()


def test_logs_f_job_shows_every_run_that_started_while_it_could_not_look(daemon: Daemon) -> None:
    """A job's follower shows each run, also those that started and ended while it could not
    see the daemon (a restart, a broken connection) or between two of its looks: it showed the
    latest only, and the runs before it were skipped without a word."""
    job = daemon.add_job({"schedule": "@triggered", "command": 'echo "run $CRONWHEEL_EXECUTION_ID"', "name": "often"})

    def run_once() -> str:
        r = daemon.post(f"/v1/jobs/{job['jobId']}/trigger")
        assert r.status in (200, 201, 202), r
        xid = str(r.json()["executionId"])
        wait_for(lambda: daemon.get(f"/v1/executions/{xid}").json()["status"] == "SUCCEEDED", what=f"run {xid}")
        return xid

    target = urlsplit(daemon.url)
    relay = Relay((target.hostname or "127.0.0.1", target.port or 80))
    p, out, err = follower(daemon, "often", url=relay.url)
    try:
        wait_for(lambda: "waiting for the next execution" in err.text, what="the follower to wait")
        first = run_once()
        wait_for(lambda: f"run {first}\n" in out.text, what="the first run's output")
        relay.cut()
        wait_for(lambda: "waiting for it to come back" in err.text, what="the follower to wait for the daemon")
        meanwhile = [run_once() for _ in range(3)]  # each started and ended while it was cut off
        relay.mend()
        wait_for(lambda: f"run {meanwhile[-1]}\n" in out.text, what="the follower to go on")
        last = run_once()
        wait_for(lambda: f"run {last}\n" in out.text, what="the run after")
        # how it ended comes on stderr after its output, which stdout may show first
        wait_for(lambda: f"execution {last}: SUCCEEDED" in err.text, what="the run after's last line")
        assert out.text == "".join(f"run {x}\n" for x in (first, *meanwhile, last)), (out.text, err.text)
        for xid in (first, *meanwhile, last):
            assert err.text.count(f"execution {xid}: SUCCEEDED, exit 0") == 1, err.text
        p.send_signal(signal.SIGINT)
        assert p.wait(10) == 130
    finally:
        reap(p)
        relay.close()
