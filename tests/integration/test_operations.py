"""Operating a real daemon like a system service: the configuration file with its precedence,
SIGHUP reloads, and the log stream as journald would read it (priority prefixes, one schema
for the daemon and its workers)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cronwheel.obs.levels import SYSLOG_PRIORITY
from tests.support.daemon import REPO, Daemon
from tests.support.procs import open_files
from tests.support.wait import wait_for

_PREFIXED = re.compile(r"^<(\d)>(\{.*\})$")


def test_journald_priorities_select_the_right_lines(tmp_path: Path, make_daemon: Callable[..., Daemon]) -> None:
    """`journalctl -p warning` keeps lines whose <N> prefix is 4 or less: applied to the very
    stream the daemon and its workers wrote, it must select exactly the warnings and errors."""
    log = tmp_path / "node.log"
    log.touch()
    st = os.stat(log)
    d = make_daemon(env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
    ok = d.add_job({"runAt": "2020-01-01T00:00:00Z", "command": "true"})
    bad = d.add_job({"runAt": "2020-01-01T00:00:00Z", "command": "exit 3", "retryPolicy": {"maxAttempts": 1}})
    wait_for(lambda: d.event("execution.succeeded", jobId=ok["jobId"]), 30, what="the good job's success")
    wait_for(lambda: d.event("execution.dead_lettered", jobId=bad["jobId"]), 30, what="the bad job in the DLQ")
    d.stop()

    records: list[tuple[int, dict]] = []
    for line in log.read_text().splitlines():
        match = _PREFIXED.match(line)
        assert match, f"a line without a priority prefix reached the journal: {line!r}"
        record = json.loads(match.group(2))
        assert {"ts", "level", "event", "node"} <= set(record), record
        assert int(match.group(1)) == SYSLOG_PRIORITY[record["level"]], record
        records.append((int(match.group(1)), record))

    warning_or_worse = [r for p, r in records if p <= 4]
    assert {r["level"] for r in warning_or_worse} <= {"warning", "error", "critical"}
    assert any(r["event"] == "execution.dead_lettered" and r["jobId"] == bad["jobId"] for r in warning_or_worse)
    assert not any(r["event"] == "execution.succeeded" for r in warning_or_worse)
    assert any(r["event"] == "execution.succeeded" and r["jobId"] == ok["jobId"] for p, r in records if p == 6)
    # the workers' lines share the schema, the node and the stream
    node = next(r["node"] for _, r in records if r["event"] == "node.started")
    worker_lines = [r for _, r in records if r["event"].startswith("worker.")]
    assert worker_lines and all(r["node"] == node for r in worker_lines)


@pytest.mark.runs_no_jobs
def test_file_environment_and_flags_in_a_real_daemon(tmp_path: Path, make_daemon: Callable[..., Daemon]) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('node_id = "file-node"\ngrace_sec = 7\nslots = 9\n')
    d = make_daemon(args=("--config", str(conf)), env={"CRONWHEEL_NODE_ID": "env-node"})
    started = d.events("node.started")[0]
    assert started["node"] == "env-node"  # environment over file
    assert started["slots"] == d.slots  # the flag the test harness passes, over the file
    d.stop()
    assert d.events("node.stopping")[0]["graceSec"] == 7  # file over default


def test_sighup_applies_live_keys_and_refuses_the_rest(tmp_path: Path, make_daemon: Callable[..., Daemon]) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('log_level = "info"\nretention = "30d"\n')
    d = make_daemon(args=("--config", str(conf)))
    conf.write_text('log_level = "warning"\nretention = "7d"\nhttp_allow = ["api.example.com"]\n'
                    'grace_sec = 5\nslots = 99\n')
    os.kill(d.pid, signal.SIGHUP)
    done = wait_for(lambda: d.event("config.reloaded"), 20, what="config.reloaded")
    assert set(done["changed"]) == {"log_level", "retention", "http_allow"}
    assert done["changed"]["retention"] == {"from": "30d", "fromSource": f"{conf}:2", "to": "7d", "toSource": f"{conf}:2"}
    assert done["refused"] == ["grace_sec"]  # slots is a flag on the command line: it still wins
    refusal = d.event("config.reload_refused", key="grace_sec")
    assert refusal and refusal["level"] == "warning" and "restart" in refusal["reason"]
    # the value it runs with and the one the file wants, each in effect, with where it is from
    assert (refusal["running"], refusal["runningSource"], refusal["wanted"], refusal["wantedSource"]) == (
        "30", "default", 5, f"{conf}:4"), refusal

    # http_allow is in force for tenants without a list of their own
    assert d.post("/v1/tenants", {"name": "acme"}).status == 201
    token = d.post("/v1/tokens", {"tenant": "acme", "role": "tenant"}).json()["token"]

    def submit(url: str) -> int:
        return d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "http": {"url": url}}, token=token).status

    assert submit("https://api.example.com/x") == 201 and submit("https://elsewhere.example.org/") == 403

    # the new level is in force: info lines are no longer printed
    job = d.add_job({"schedule": "0 0 1 1 *", "command": "true"})
    conf.write_text('log_level = "warning"\nwrokers = 2\n')
    os.kill(d.pid, signal.SIGHUP)
    failed = wait_for(lambda: d.event("config.reload_failed"), 20, what="config.reload_failed")
    assert failed["level"] == "error" and failed["line"] == 2 and failed["key"] == "wrokers"
    assert d.event("job.created", jobId=job["jobId"]) is None
    assert d.status()  # still serving

    # back to info: the line that says so is printed (at the old level it would have been dropped)
    conf.write_text('log_level = "info"\n')
    os.kill(d.pid, signal.SIGHUP)
    back = wait_for(lambda: [e for e in d.events("config.reloaded") if "log_level" in e["changed"]][1:], 20,
                    what="the second config.reloaded")  # fmt: skip
    assert back[0]["changed"]["log_level"] == {"from": "warning", "fromSource": f"{conf}:1", "to": "info",
                                               "toSource": f"{conf}:1"}, back
    # keys the file no longer sets go back to their defaults, and the line says which they are
    assert back[0]["changed"]["retention"] == {"from": "7d", "fromSource": f"{conf}:2", "to": "30d",
                                               "toSource": "default"}, back
    assert f"retention: 7d ({conf}:2) -> 30d (default)" in back[0]["summary"], back
    assert "(default)" not in json.dumps(back[0]["changed"]), back


@pytest.mark.runs_no_jobs
def test_a_sighup_while_the_node_starts_is_kept_and_applied_once_it_has_started(
    tmp_path: Path, make_daemon: Callable[..., Daemon]
) -> None:
    """A SIGHUP before the reload handler existed took the default action: the daemon died
    without a word, which systemd counts as a clean exit (no restart). Here it comes while the
    node opens its store (held by another connection's write lock), with the file edited just
    before: the node starts, then reads the file again."""
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('retention = "30d"\n')
    d = make_daemon(args=("--config", str(conf)))
    d.stop()
    first_start = len(d.events())
    db = sqlite3.connect(d.data_dir / "cronwheel.db", isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    try:
        d.launch()
        assert d.proc is not None
        wait_for(lambda: any(p.name == "cronwheel.db" for p in open_files(d.pid)), what="the daemon to open its store")
        conf.write_text('retention = "7d"\n')
        d.proc.send_signal(signal.SIGHUP)
    finally:
        db.execute("ROLLBACK")
        db.close()

    def later(name: str) -> list[dict]:
        assert d.proc is not None and d.proc.poll() is None, f"the daemon died ({d.proc and d.proc.returncode}):\n{d.log_tail()}"
        return [e for e in d.events()[first_start:] if e["event"] == name]

    wait_for(lambda: later("node.started"), 30, what="the node to start")
    (reloaded,) = wait_for(lambda: later("config.reloaded"), 20, what="the SIGHUP's reload")
    assert reloaded["changed"] == {"retention": {"from": "30d", "fromSource": f"{conf}:1", "to": "7d",
                                                 "toSource": f"{conf}:1"}}, reloaded
    assert reloaded["summary"] == f"retention: 30d ({conf}:1) -> 7d ({conf}:1)", reloaded
    d.url = (d.data_dir / "http.addr").read_text().strip()  # this start's port
    assert d.status() and d.stop() == 0


def test_a_bad_config_file_stops_serve_before_anything_starts(tmp_path: Path) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('data_dir = "%s"\n\nworkers = "many"\n' % (tmp_path / "d"))
    res = subprocess.run(
        [sys.executable, "-m", "cronwheel", "serve", "--config", str(conf)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert res.returncode == 2
    assert f"{conf}:3: key 'workers': " in res.stderr and "Traceback" not in res.stderr
    assert res.stderr.startswith(f"error: {conf}:3: ")  # no journal: a sentence, no priority prefix
    assert not (tmp_path / "d").exists()



def test_under_systemd_a_bad_config_file_is_a_start_failed_event(tmp_path: Path) -> None:
    """The journal's reader filters by priority and parses JSON: a refused file is the same
    ``node.start_failed`` line as the daemon's other start-up failures, not plain text at info."""
    conf = tmp_path / "bad3.toml"
    conf.write_text('data_dir = "%s"\nworkers = 2.5\n' % (tmp_path / "d"))
    journal = tmp_path / "journal"
    with open(journal, "w") as stream:
        st = os.fstat(stream.fileno())
        res = subprocess.run(
            [sys.executable, "-m", "cronwheel", "serve", "--config", str(conf)], stdout=subprocess.DEVNULL,
            stderr=stream, timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO), "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}",
                 "CRONWHEEL_NODE_ID": "sched-9"},
        )
    assert res.returncode == 2
    (line,) = journal.read_text().splitlines()
    match = _PREFIXED.match(line)
    assert match, f"not an event line with its priority: {line!r}"
    record = json.loads(match.group(2))
    assert int(match.group(1)) == SYSLOG_PRIORITY[record["level"]] <= SYSLOG_PRIORITY["error"]
    assert {"ts", "level", "event", "node"} <= set(record)
    assert (record["event"], record["node"], record["line"], record["key"]) == ("node.start_failed", "sched-9", 2, "workers")
    assert record["error"].startswith(f"{conf}:2: key 'workers': ")
    assert not (tmp_path / "d").exists()

def test_what_python_code_prints_in_a_worker_is_an_event_line(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    job = d.add_job({"runAt": "2020-01-01T00:00:00Z", "python": "tests.support.callables:chatty"})
    wait_for(lambda: d.event("execution.succeeded", jobId=job["jobId"]), 30, what="the chatty job")
    wait_for(lambda: d.event("python.stderr"), 10, what="its stderr line")
    d.stop()
    lines = [line for line in d.log_path.read_text().splitlines() if line.strip()]
    records = []
    for line in lines:
        record = json.loads(line)  # no loose text: every line is an event
        assert {"ts", "level", "event", "node"} <= set(record), record
        records.append(record)
    printed = next(r for r in records if r["event"] == "python.stdout")
    assert printed["line"] == "hello from a callable" and printed["level"] == "info" and printed["worker"]
    logged = next(r for r in records if r["event"] == "log.thirdparty")
    assert logged["level"] == "warning" and logged["message"] == "careful: disk almost full"
    assert next(r for r in records if r["event"] == "python.stderr")["line"] == "a raw line on stderr"
