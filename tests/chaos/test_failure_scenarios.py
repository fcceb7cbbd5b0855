"""The at-least-once failure scenarios, reproduced with real processes and real kills.

Every test ends with the consistency checker (tests/support/checker.py) over the whole
history: what clients were told, what the store holds, what the fenced ledger applied.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.checker import History, check
from tests.support.daemon import REPO, Daemon, assert_ran_once_unreaped, gated_run
from tests.support.procs import alive, open_files
from tests.support.wait import wait_for

LEDGER = REPO / "examples" / "fenced_ledger.py"


def ledger_rows(path: Path) -> list[list]:
    out = subprocess.run([sys.executable, str(LEDGER), str(path), "--dump"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["ledger"]


def ledger_job(ledger: Path, *, wait_file: Path | None = None, sleep: float = 0.0, **extra) -> dict:
    """A one-off job due now that (optionally waits, then) applies one fenced ledger effect."""
    pre = f"while [ ! -e {wait_file} ]; do sleep 0.02; done; " if wait_file else ""
    pre += f"sleep {sleep}; " if sleep else ""
    return {
        "runAt": "2000-01-01T00:00:00Z",
        "command": f"{pre}exec {sys.executable} {LEDGER} {ledger} charge 1",
        **extra,
    }


def all_executions(d: Daemon, job_ids) -> list[dict]:
    out = []
    for job_id in job_ids:
        for e in d.executions(job_id):
            out.append({**e, "jobId": job_id})
    return out


def terminal(d: Daemon, job_ids) -> bool:
    exs = all_executions(d, job_ids)
    return len({e["jobId"] for e in exs}) == len(set(job_ids)) and all(
        e["status"] in ("SUCCEEDED", "DEAD", "CANCELLED", "SKIPPED") for e in exs
    )


def history(d: Daemon, acknowledged: dict[str, str], ledger: Path) -> History:
    jobs = set()
    for job_id in set(acknowledged.values()):
        if d.get(f"/v1/jobs/{job_id}").status == 200:
            jobs.add(job_id)
    return History(acknowledged, all_executions(d, jobs), ledger_rows(ledger), jobs)


def pid_of_worker(d: Daemon, worker_id: str) -> int:
    ev = d.event("pool.worker_spawned", worker=worker_id)
    assert ev is not None, f"no spawn event for {worker_id}"
    return int(ev["pid"])


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


# ------------------------------------------------------------------------------------------
def test_worker_fleet_crash_mid_execution_redelivers_without_duplicate_effects(make_daemon, tmp_path):
    """Scenario 1: kill -9 every worker while executions are in flight."""
    d: Daemon = make_daemon(workers=2, slots=4)
    ledger = tmp_path / "ledger.db"
    gate = tmp_path / "go"
    acknowledged = {}
    for i in range(8):
        key = f"fleet-{i}"
        acknowledged[key] = d.add_job(
            ledger_job(ledger, wait_file=gate, leaseSec=1, retryPolicy={"maxAttempts": 5, "initialBackoffSec": 0.1}), key=key
        )["jobId"]
    wait_for(lambda: d.status()["workers"]["running"] == 8, timeout=30, what="8 executions in flight")
    victims = d.worker_pids()
    assert len(victims) == 2
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    # while the fleet is down: submissions and status reads still answer
    acknowledged["during-crash"] = d.add_job(ledger_job(ledger, wait_file=gate), key="during-crash")["jobId"]
    assert d.get("/v1/status").status == 200
    assert d.get(f"/v1/jobs/{acknowledged['fleet-0']}/executions").status == 200
    # the supervisor brings up new workers with new ids
    wait_for(lambda: set(d.worker_pids()).isdisjoint(victims) and len(d.worker_pids()) == 2, timeout=30, what="workers respawned")
    gate.touch()
    wait_for(lambda: terminal(d, acknowledged.values()), timeout=60, what="all executions terminal")
    h = history(d, acknowledged, ledger)
    assert check(h) == {}
    redelivered = [e for e in h.executions if e["leaseEpoch"] >= 2]
    assert len(redelivered) >= 8, "the 8 in-flight executions were redelivered with a new epoch"
    assert all(e["status"] == "SUCCEEDED" for e in h.executions)
    assert len(h.ledger) == 9


def test_zombie_worker_is_fenced(make_daemon, tmp_path):
    """Scenario 2: SIGSTOP a worker (and its job) past the lease; another worker finishes
    with epoch 2; SIGCONT: the zombie's heartbeat/completion get refused, its job is killed."""
    d: Daemon = make_daemon(workers=2, slots=1, args=("--reaper-interval-ms", "100"))
    ledger = tmp_path / "ledger.db"
    gate = tmp_path / "go"
    job = d.add_job(ledger_job(ledger, wait_file=gate, leaseSec=0.6, retryPolicy={"maxAttempts": 3, "initialBackoffSec": 0}))
    job_id = job["jobId"]
    first = wait_for(lambda: next((e for e in d.executions(job_id) if e["status"] == "RUNNING"), None), what="first run")
    assert first["leaseEpoch"] == 1
    zombie = pid_of_worker(d, first["workerId"])
    # RUNNING is the grant: the worker may not have started the job's shell yet
    zombie_jobs = wait_for(lambda: children(zombie), what="the job's shell, a child of the worker")
    os.kill(zombie, signal.SIGSTOP)
    for pid in zombie_jobs:
        os.killpg(pid, signal.SIGSTOP)  # the whole machine "pauses": worker and its job
    try:
        second = wait_for(
            lambda: next((e for e in d.executions(job_id) if e["status"] == "RUNNING" and e["leaseEpoch"] == 2), None),
            timeout=30, what="the execution stolen with epoch 2",
        )
        assert second["workerId"] != first["workerId"]
        gate.touch()
        wait_for(lambda: d.executions(job_id)[0]["status"] == "SUCCEEDED", timeout=30, what="epoch 2 finishes")
    finally:
        for pid in zombie_jobs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGCONT)
        os.kill(zombie, signal.SIGCONT)
    # the zombie wakes. Either the abort frame queued for it arrives first and it kills its
    # job before saying anything stale, or its stale heartbeat/result is refused (409) and it
    # kills its job then: both end with the zombie's job dead and nothing stale applied.
    wait_for(
        lambda: d.event("lease.fenced", executionId=first["executionId"], leaseEpoch=1)
        or d.event("worker.killed", executionId=first["executionId"], leaseEpoch=1),
        timeout=30, what="the zombie told that its lease is lost",
    )
    wait_for(lambda: not any(alive(p) for p in zombie_jobs), timeout=30, what="the zombie's job killed")
    (ex,) = d.executions(job_id)
    assert ex["status"] == "SUCCEEDED" and ex["leaseEpoch"] == 2
    rows = ledger_rows(ledger)
    assert len(rows) == 1 and rows[0][1] == 2, rows
    # the API refuses the stale epoch too
    r = d.post(f"/v1/executions/{first['executionId']}/heartbeat", {"workerId": first["workerId"], "leaseEpoch": 1})
    assert r.status == 409 and r.json()["reason"] == "lease_lost"
    r = d.post(f"/v1/executions/{first['executionId']}/complete", {"workerId": first["workerId"], "leaseEpoch": 1, "outcome": "failed"})
    assert r.status == 409
    assert d.executions(job_id)[0]["status"] == "SUCCEEDED"


def test_daemon_crash_during_idempotent_submissions_loses_nothing(make_daemon, tmp_path):
    """Scenario 3: kill -9 `serve` during a stream of idempotent submissions with client retries."""
    d: Daemon = make_daemon(workers=2, slots=8)
    ledger = tmp_path / "ledger.db"
    acknowledged: dict[str, str] = {}
    ticker = d.add_job({"schedule": "* * * * * *", "command": "true"}, key="ticker")["jobId"]
    stop = threading.Event()
    errors: list[str] = []

    def submit_stream() -> None:
        for i in range(150):
            key = f"sub-{i}"
            body = ledger_job(ledger)
            deadline = time.monotonic() + 60
            while True:  # retry until acknowledged: the client's half of "nothing lost"
                try:
                    r = d.post("/v1/jobs", body, headers={"Idempotency-Key": key})
                    if r.status == 201:
                        acknowledged[key] = r.json()["jobId"]
                        break
                    errors.append(f"{key}: {r}")
                    return
                except OSError:
                    pass
                if time.monotonic() > deadline or stop.is_set():
                    errors.append(f"{key}: never acknowledged")
                    return
                time.sleep(0.02)  # client retry backoff, not a synchronisation wait

    t = threading.Thread(target=submit_stream)
    t.start()
    wait_for(lambda: len(acknowledged) >= 40, timeout=60, what="40 acknowledged submissions")
    d.kill()
    crashed_at = time.time()
    d.start()
    t.join(120)
    stop.set()
    assert not errors, errors[:5]
    assert len(acknowledged) == 150
    wait_for(lambda: terminal(d, acknowledged.values()), timeout=90, what="every acknowledged job ran")
    h = history(d, acknowledged, ledger)
    assert check(h) == {}
    assert len(h.ledger) == 150
    # every due tick of the recurring job keeps running after the restart
    wait_for(
        lambda: any(e["status"] == "SUCCEEDED" and e["scheduledAt"] > time_iso(crashed_at + 1) for e in d.executions(ticker)),
        timeout=30, what="ticks after the restart",
    )
    d.stop()
    db = sqlite3.connect(d.data_dir / "cronwheel.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT count(*) FROM idempotency_keys").fetchone()[0] == 151
    db.close()


def time_iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts * 1000) % 1000:03d}Z"


# ------------------------------------------------------------------------------------------
def test_poison_pill_that_kills_its_worker_runs_exactly_max_attempts(make_daemon):
    d: Daemon = make_daemon(workers=2, slots=2)
    job = d.add_job({
        "runAt": "2000-01-01T00:00:00Z",
        "python": "tests.support.callables:crash_worker",
        "retryPolicy": {"maxAttempts": 3, "initialBackoffSec": 0.05, "multiplier": 2, "jitter": 0},
    })
    wait_for(lambda: d.executions(job["jobId"])[0]["status"] == "DEAD", timeout=60, what="the pill dead-lettered")
    (ex,) = d.executions(job["jobId"])
    assert ex["attempt"] == 3 and ex["leaseEpoch"] == 3
    started = [e for e in d.events("execution.started") if e["executionId"] == ex["executionId"]]
    assert [e["attempt"] for e in started] == [1, 2, 3]
    assert len(d.events("worker.lost")) >= 3
    dlq = d.get("/v1/dlq").json()["executions"]
    assert [e["executionId"] for e in dlq] == [ex["executionId"]]
    d.wait_event("execution.dead_lettered", executionId=ex["executionId"])


def test_retries_back_off_within_the_jitter_band_then_dlq_replay_succeeds(make_daemon, tmp_path):
    d: Daemon = make_daemon()
    flag = tmp_path / "fixed"
    policy = {"maxAttempts": 4, "initialBackoffSec": 0.2, "multiplier": 2, "jitter": 0.25, "maxBackoffSec": 10}
    job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": f"test -e {flag}", "retryPolicy": policy})
    wait_for(lambda: d.executions(job["jobId"])[0]["status"] == "DEAD", timeout=60, what="dead after 4 attempts")
    (ex,) = d.executions(job["jobId"])
    xid = ex["executionId"]
    assert ex["attempt"] == 4 and ex["exitCode"] == 1
    retries = [e for e in d.events("execution.retry_scheduled") if e["executionId"] == xid]
    starts = {e["attempt"]: e for e in d.events("execution.started") if e["executionId"] == xid}
    assert len(retries) == 3
    for n, retry in enumerate(retries, start=1):
        base = 0.2 * 2 ** (n - 1) * 1000
        logged = parse_ms(retry["ts"])
        # an instant, as every instant in the log is (it was epoch milliseconds)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", retry["availableAt"]), retry
        available = parse_ms(retry["availableAt"])
        # never earlier than the band allows (the store computed availableAt before this log line)
        assert available - logged <= base * 1.25 + 1
        # and the next attempt did not start before its backoff ended
        assert parse_ms(starts[n + 1]["ts"]) >= available - 1
        # the delays grow: each retry waits at least the lower band of its base
        assert available - parse_ms(starts[n]["ts"]) >= base * 0.75 - 1
    # replay from the DLQ after fixing the cause: a fresh series, history kept
    flag.touch()
    r = d.post(f"/v1/dlq/{xid}/replay")
    assert r.status in (200, 202), r
    wait_for(lambda: d.executions(job["jobId"])[0]["status"] == "SUCCEEDED", timeout=30, what="the replay succeeds")
    (ex,) = d.executions(job["jobId"])
    assert ex["attempt"] == 1 and ex["leaseEpoch"] == 5
    assert d.get("/v1/dlq").json()["executions"] == []


def test_cancel_aborts_a_running_execution_at_once(make_daemon, tmp_path):
    d: Daemon = make_daemon()
    job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "sleep 300"})
    running = wait_for(lambda: next((e for e in d.executions(job["jobId"]) if e["status"] == "RUNNING"), None))
    shell = wait_for(lambda: children(pid_of_worker(d, running["workerId"])), what="the job's process")
    r = d.request("DELETE", f"/v1/jobs/{job['jobId']}")
    assert r.status == 200
    wait_for(lambda: not any(alive(p) for p in shell), timeout=10, what="the job's process group killed")
    assert d.executions(job["jobId"])[0]["status"] == "CANCELLED"
    r = d.post(f"/v1/executions/{running['executionId']}/heartbeat", {"workerId": running["workerId"], "leaseEpoch": 1})
    assert r.status == 409 and r.json()["reason"] == "cancelled"


def parse_ms(ts: str) -> int:
    from datetime import datetime

    return round(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.mark.parametrize("policy", ["forbid", "replace"])
def test_overlap_policies(make_daemon, policy):
    d: Daemon = make_daemon(workers=1, slots=4)
    job = d.add_job({"schedule": "* * * * * *", "command": "sleep 2.5", "overlap": policy})
    wait_for(lambda: any(e["status"] in ("SKIPPED", "CANCELLED") for e in d.executions(job["jobId"])), timeout=30)
    d.request("DELETE", f"/v1/jobs/{job['jobId']}")
    exs = d.executions(job["jobId"])
    if policy == "forbid":
        skipped = [e for e in exs if e["status"] == "SKIPPED"]
        assert skipped and all("overlap" in e["reason"] for e in skipped)
        assert sum(1 for e in exs if e["status"] == "RUNNING") <= 1
    else:
        replaced = [e for e in exs if e["status"] == "CANCELLED" and "replaced" in (e["reason"] or "")]
        assert replaced


def test_restarted_node_fails_its_dead_workers_leases_at_once(make_daemon, tmp_path):
    """After kill -9 of `serve`, the executions its workers held are retried on restart
    without waiting out their (default, 60 s) lease."""
    d: Daemon = make_daemon(args=("--grace-sec", "1"))
    marker = tmp_path / "runs"
    job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": f"echo run >> {marker}; sleep 300",
                     "retryPolicy": {"maxAttempts": 2, "initialBackoffSec": 0}})
    first = wait_for(lambda: next((e for e in d.executions(job["jobId"]) if e["status"] == "RUNNING"), None))
    assert first["leaseEpoch"] == 1
    d.kill()
    d.start()
    # the lease would last another ~60 s; the restarted node re-runs it well before that
    again = wait_for(lambda: next((e for e in d.executions(job["jobId"]) if e["leaseEpoch"] == 2 and e["status"] == "RUNNING"), None),
                     timeout=30, what="the orphaned execution re-run with epoch 2")
    assert again["attempt"] == 2
    d.wait_event("node.recovered_leases", executions=1)


def test_run_wait_in_a_script_rides_out_a_restart(make_daemon, tmp_path):
    """`cronwheel run JOB --wait` while the daemon restarts (systemctl restart): the run is cut
    short by the stop and runs again after it, and the waiting command waits for that run and
    exits with its status, not with 69 (no daemon) the moment the daemon is gone."""
    d: Daemon = make_daemon(args=("--grace-sec", "1"))
    runs, release = tmp_path / "runs", tmp_path / "release"
    job = d.add_job({"schedule": "0 0 1 1 *", "command": f"echo run >> {runs}; while [ ! -e {release} ]; do sleep 0.05; done"})
    env = d.cli_env()
    env.pop("CRONWHEEL_URL")  # the local socket: the same address after the restart
    errors = tmp_path / "waiter.err"
    with errors.open("w") as stderr:
        waiter = subprocess.Popen([sys.executable, "-m", "cronwheel", "run", job["jobId"], "--wait"],
                                  stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    try:
        wait_for(runs.exists, what="the first run")
        assert d.stop() == 0  # the run is cut short after its 1 s grace
        # the daemon stays away until the waiting command has asked and found nobody: it asks
        # every 2 s at most, so a quick restart could fall between two questions unseen
        wait_for(lambda: "still waiting: execution" in errors.read_text(), timeout=30,
                 what="the waiting command to find the daemon away")
        d.start()
        wait_for(lambda: runs.read_text().count("run") == 2, timeout=30, what="the run again after the restart")
        release.touch()
        waiter.communicate(timeout=60)
    finally:
        release.touch()
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    err = errors.read_text()
    assert waiter.returncode == 0, err
    assert "still waiting: execution" in err and ": SUCCEEDED" in err, err


@pytest.mark.runs_no_jobs
def test_a_ping_sent_while_the_daemon_restarts_is_recorded_once(make_daemon, tmp_path):
    """A crontab's `cronwheel ping JOB --exit-code $?` that lands in a restart is sent again
    once the daemon listens: a lost report would later read as a missed run."""
    d: Daemon = make_daemon()
    watched = d.cli("watch", "offsite", "26h", "--json")
    assert watched.returncode == 0, watched.stderr
    job_id = json.loads(watched.stdout)["jobId"]
    env = d.cli_env()
    env.pop("CRONWHEEL_URL")  # the local socket: the same address after the restart
    assert d.stop() == 0
    err = tmp_path / "ping.err"
    with open(err, "w") as sink:
        pinger = subprocess.Popen([sys.executable, "-m", "cronwheel", "ping", "offsite", "--exit-code", "0"],
                                  stdout=subprocess.DEVNULL, stderr=sink, env=env)
    try:
        wait_for(lambda: "sending the ping again" in err.read_text(), what="the ping to find no daemon")
        d.start()
        assert pinger.wait(60) == 0, err.read_text()
    finally:
        if pinger.poll() is None:
            pinger.kill()
            pinger.wait()
    assert [e["status"] for e in d.executions(job_id)] == ["SUCCEEDED"]


def test_a_second_sigterm_ends_the_grace_at_once(make_daemon, tmp_path):
    """Ctrl-C twice: the first stop waits for the running execution (here up to 600 s), the
    second kills it now; it runs again after the restart, interrupted, costing no attempt."""
    d: Daemon = make_daemon(args=("--grace-sec", "600"))
    marker, hold = tmp_path / "runs", tmp_path / "hold"
    hold.touch()  # each run lasts while it is there: removed at the end, so the last stop is quick
    job = d.add_job({"runAt": "+0s", "command": f"echo run >> {marker}; while [ -e {hold} ]; do sleep 0.1; done",
                     "retryPolicy": {"maxAttempts": 1}})  # fmt: skip
    wait_for(marker.exists, what="the run")
    assert d.proc is not None
    d.proc.send_signal(signal.SIGTERM)
    stopping = wait_for(lambda: d.event("node.stopping"), what="the stop to begin")
    assert stopping["running"] == 1 and "again" in stopping["hurry"], stopping
    d.proc.send_signal(signal.SIGTERM)
    assert d.proc.wait(60) == 0  # not the 600 s grace
    assert d.event("node.stopping_now")["running"] == 1
    d.start()
    again = wait_for(lambda: next((e for e in d.executions(job["jobId"]) if e["leaseEpoch"] == 2), None),
                     timeout=30, what="the interrupted run again")  # fmt: skip
    assert again["attempt"] == 2 and "interrupted" in (again.get("reason") or ""), again
    hold.unlink()
    assert d.stop() == 0


def test_a_killed_node_s_command_runs_are_ended_before_their_retries_start(make_daemon, tmp_path):
    """kill -9 the daemon and its workers (the OOM killer, a crash, no systemd to clean up):
    the command runs in their own sessions live on. The restarted node fails those leases
    and kills the runs first, so that a run does not go on beside its retry."""
    d: Daemon = make_daemon(workers=1, args=("--grace-sec", "1"))
    pids = tmp_path / "pids"
    d.add_job({"runAt": "+0s", "command": f"echo $$ >> {pids}; exec sleep 300",
               "retryPolicy": {"maxAttempts": 2, "initialBackoffSec": 0.1}})  # fmt: skip
    # the shell makes the file before echo writes to it
    first = wait_for(lambda: pids.exists() and int(pids.read_text().split()[0]), what="the run")
    node = [d.pid, *d.worker_pids()]
    for sig in (signal.SIGSTOP, signal.SIGKILL):  # all at once: none may clean up after another
        for pid in node:
            os.kill(pid, sig)
    d.kill()  # reaps it
    assert alive(first), "the run outlived its node"
    d.start()
    wait_for(lambda: not alive(first), timeout=20, what="the old run to be killed")
    assert d.wait_event("pool.worker_orphans_killed")["groups"] == 1
    retry = wait_for(lambda: len(pids.read_text().split()) == 2 and int(pids.read_text().split()[1]), timeout=20,
                     what="the retry")
    assert alive(retry) and not alive(first)


def test_a_killed_daemon_leaves_no_worker_and_no_command_behind_even_a_worker_whose_loop_is_blocked(make_daemon, tmp_path):
    """kill -9 of `serve` alone: its worker, whose event loop a callable blocks (time.sleep in
    a coroutine), cannot hear its socket close; it used to outlive its daemon, idle, with the
    command it ran, for as long as the callable blocked. It notices the hang-up from a thread
    of its own, and ends at its stop deadline, its command's process group killed."""
    d: Daemon = make_daemon(workers=1)
    pids, started = tmp_path / "pids", tmp_path / "blocking"
    d.add_job({"runAt": "+0s", "command": f"echo $$ >> {pids}; exec sleep 300"})
    command = wait_for(lambda: pids.exists() and int(pids.read_text().split()[0]), what="the command")
    d.add_job({"runAt": "+0s", "python": "tests.support.callables:blocks_the_loop",
               "payload": {"started": str(started), "sec": 300}})  # fmt: skip
    wait_for(started.exists, what="the callable to block its worker's loop")
    [worker] = d.worker_pids()
    try:
        d.kill()
        wait_for(lambda: not alive(worker) and not alive(command), timeout=60,
                 what="the worker and its command to end after their daemon")  # fmt: skip
    finally:
        for pid in (worker, command):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_node_stopped_longer_than_a_lease_does_not_reap_its_live_runs(make_daemon, tmp_path):
    """SIGSTOP (or a paused VM, or swapping) stops the daemon, not its workers: their
    heartbeats wait in the socket while the leases run out. Resumed, the node notices the
    stall and spares those leases until the beats are read: the run ends once, at epoch 1.
    It used to reap them first, killing live runs and counting their beats as zombies'."""
    d: Daemon = make_daemon()
    job_id, release = gated_run(d, tmp_path, leaseSec=2)
    os.kill(d.pid, signal.SIGSTOP)
    try:
        time.sleep(5)  # the stall itself is what this test is about: over twice the lease
    finally:
        os.kill(d.pid, signal.SIGCONT)
    assert d.wait_event("node.stalled")["stalledMs"] >= 4_000
    release.touch()
    assert_ran_once_unreaped(d, job_id)


@pytest.mark.runs_no_jobs
def test_a_stop_asked_for_while_the_node_starts_is_done_once_it_has_started(make_daemon):
    """systemctl restart just after a start: a SIGTERM while the node opens its store (held
    here by another connection's write lock) waits for the start to finish, then stops the
    node as any stop does. It used to kill the half-started node, leaving its workers behind."""
    d: Daemon = make_daemon()
    d.stop()
    first_start = len(d.events())
    db = sqlite3.connect(d.data_dir / "cronwheel.db", isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    d.launch()
    assert d.proc is not None
    wait_for(lambda: any(path.name == "cronwheel.db" for path in open_files(d.pid)), what="the daemon to open its store")
    d.proc.send_signal(signal.SIGTERM)
    db.execute("ROLLBACK")
    db.close()
    assert d.proc.wait(30) == 0, d.log_tail()
    lifecycle = [e["event"] for e in d.events()[first_start:] if e["event"].startswith("node.")]
    assert lifecycle == ["node.started", "node.stopping", "node.stopped"], lifecycle


def test_a_run_cut_short_by_a_graceful_stop_runs_again_and_costs_no_attempt(make_daemon, tmp_path):
    """SIGTERM (systemctl restart) lets runs finish for --grace-sec, then kills what is left:
    those runs are not the job's failures. A job with no retries is not dead-lettered by a
    restart; its run starts again after it."""
    d: Daemon = make_daemon(args=("--grace-sec", "1"))
    marker = tmp_path / "runs"
    job = d.add_job({"runAt": "+0s", "command": f"echo run >> {marker}; sleep 300", "retryPolicy": {"maxAttempts": 1}})
    wait_for(lambda: marker.exists(), what="the first run")
    assert d.stop() == 0
    d.start()
    again = wait_for(lambda: next((e for e in d.executions(job["jobId"]) if e["leaseEpoch"] == 2 and e["status"] == "RUNNING"), None),
                     timeout=30, what="the interrupted execution run again with epoch 2")  # fmt: skip
    assert again["attempt"] == 2 and "interrupted" in (again.get("reason") or ""), again
    assert d.get("/v1/dlq").json()["executions"] == []
    assert d.get(f"/v1/jobs/{job['jobId']}").json()["status"] == "ACTIVE"
    wait_for(lambda: marker.read_text().count("run") == 2, what="the second run's start")
