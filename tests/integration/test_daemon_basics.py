"""The product as a person meets it: a real `cronwheel serve`, real workers, real jobs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.wait import wait_for


def succeeded(daemon: Daemon, job_id: str) -> list[dict]:
    return [e for e in daemon.executions(job_id) if e["status"] == "SUCCEEDED"]


def test_every_second_cron_job_runs_once_per_tick(daemon: Daemon, tmp_path: Path):
    out = tmp_path / "ticks.txt"
    job = daemon.add_job({"schedule": "* * * * * *", "command": f'echo "$CRONWHEEL_SCHEDULED_AT $CRONWHEEL_LEASE_EPOCH" >> {out}'})
    assert set(job) >= {"jobId", "nextRunAt"}
    wait_for(lambda: len(succeeded(daemon, job["jobId"])) >= 4, timeout=30, what="4 successful ticks")
    daemon.request("DELETE", f"/v1/jobs/{job['jobId']}")
    executions = daemon.executions(job["jobId"])
    ok = [e for e in executions if e["status"] == "SUCCEEDED"]
    ticks = sorted(e["scheduledAt"] for e in ok)
    assert len(ticks) == len(set(ticks)), "one execution per tick"
    ids = [e["executionId"] for e in executions]
    assert len(ids) == len(set(ids))
    assert all(e["leaseEpoch"] == 1 and e["attempt"] == 1 for e in ok)
    # each tick ran exactly once: no tick appears twice in the file, and every success is there
    lines = out.read_text().splitlines()
    file_ticks = [line.split()[0] for line in lines]
    assert len(file_ticks) == len(set(file_ticks))
    assert len(file_ticks) >= len(ok)
    # consecutive ticks are one second apart (no tick skipped while it ran)
    ms = sorted(int(e["executionId"].rsplit(":", 1)[1]) for e in ok)
    assert all(b - a == 1000 for a, b in itertools.pairwise(ms))


def test_relative_one_off_runs_once_then_job_succeeds(daemon: Daemon, tmp_path: Path):
    out = tmp_path / "once.txt"
    res = daemon.cli("add", "--json", "+2s", "--", "sh", "-c", f"echo once >> {out}")
    assert res.returncode == 0, res.stderr
    job_id = json.loads(res.stdout)["jobId"]
    wait_for(lambda: succeeded(daemon, job_id), timeout=20, what="the one-off to run")
    wait_for(lambda: daemon.get(f"/v1/jobs/{job_id}").json()["status"] == "SUCCEEDED", timeout=10)
    assert out.read_text() == "once\n"
    assert len(daemon.executions(job_id)) == 1


def test_history_has_the_seed_api_shape(daemon: Daemon):
    job = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true"})
    wait_for(lambda: succeeded(daemon, job["jobId"]), timeout=20)
    r = daemon.get(f"/v1/jobs/{job['jobId']}/executions")
    assert r.status == 200
    (ex,) = r.json()["executions"]
    assert {"executionId", "status", "leaseEpoch", "startedAt", "finishedAt"} <= set(ex)
    assert ex["executionId"] == f"{job['jobId']}:946684800000"
    assert ex["startedAt"].endswith("Z") and ex["finishedAt"] >= ex["startedAt"]


@pytest.mark.runs_no_jobs
def test_idempotent_submission(daemon: Daemon):
    body = {"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"}
    first = daemon.post("/v1/jobs", body, headers={"Idempotency-Key": "k-1"})
    again = daemon.post("/v1/jobs", body, headers={"Idempotency-Key": "k-1"})
    assert first.status == again.status == 201
    assert first.json() == again.json()
    other = daemon.post("/v1/jobs", {**body, "command": "false"}, headers={"Idempotency-Key": "k-1"})
    assert other.status == 422
    assert other.headers["Content-Type"].startswith("application/problem+json")
    jobs = daemon.get("/v1/jobs").json()["jobs"]
    assert [j["jobId"] for j in jobs] == [first.json()["jobId"]]


def test_cancel_stops_future_runs(daemon: Daemon, tmp_path: Path):
    job = daemon.add_job({"schedule": "* * * * * *", "command": "true"})
    wait_for(lambda: succeeded(daemon, job["jobId"]), timeout=20)
    r = daemon.request("DELETE", f"/v1/jobs/{job['jobId']}")
    assert r.status == 200 and r.json()["status"] == "CANCELLED"
    again = daemon.request("DELETE", f"/v1/jobs/{job['jobId']}")  # the same answer; nothing happens twice
    assert again.status == 200 and again.json() == r.json()
    # claims and the cancel are serialised in the store: whatever was claimed before is listed now
    n = len(daemon.executions(job["jobId"]))
    marker = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true"})
    wait_for(lambda: succeeded(daemon, marker["jobId"]), timeout=20)  # the scheduler has moved on
    assert len(daemon.executions(job["jobId"])) == n
    assert all(e["status"] in ("SUCCEEDED", "CANCELLED") for e in daemon.executions(job["jobId"]))
    assert len([e for e in daemon.events("job.cancelled") if e["jobId"] == job["jobId"]]) == 1


def test_bad_schedule_is_a_400_naming_the_problem(daemon: Daemon):
    r = daemon.post("/v1/jobs", {"schedule": "61 * * * *", "command": "true"})
    assert r.status == 400
    assert "minute" in r.json()["detail"] and "61" in r.json()["detail"]
    res = daemon.cli("add", "0 0 30 2 *", "true")
    assert res.returncode != 0 and "never" in (res.stderr + res.stdout)
    assert "Traceback" not in res.stderr


def test_cronwheel_effect_inside_a_job_records_once_then_duplicate_then_fenced(daemon: Daemon, tmp_path: Path):
    import sys

    codes = tmp_path / "codes"
    env_dump = tmp_path / "env"
    effect = f"{sys.executable} -m cronwheel effect charge-42"
    job = daemon.add_job({
        "runAt": "2000-01-01T00:00:00Z",
        "command": f"{effect}; echo $? >> {codes}; {effect}; echo $? >> {codes}; env | grep ^CRONWHEEL_ > {env_dump}",
    })
    wait_for(lambda: succeeded(daemon, job["jobId"]), timeout=30, what="the job to finish")
    assert codes.read_text().split() == ["0", "3"]  # recorded, then a duplicate
    # the same call after the lease has ended (the execution SUCCEEDED): fenced, exit 4
    job_env = dict(line.split("=", 1) for line in env_dump.read_text().splitlines())
    import os
    import subprocess

    res = subprocess.run([sys.executable, "-m", "cronwheel", "effect", "charge-43"], env={**os.environ, **job_env},
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 4, (res.stdout, res.stderr)
    (ex,) = daemon.executions(job["jobId"])
    assert ex["leaseEpoch"] == int(job_env["CRONWHEEL_LEASE_EPOCH"])


def test_effect_calls_that_record_nothing_are_logged_once_a_minute(daemon: Daemon, tmp_path: Path):
    """A job asking for the same effect in a loop wrote a log line a call, though nothing was
    stored: the first duplicate is logged, the others are at debug level (still in the event
    ring that `cronwheel logs` reads, and counted)."""
    import json
    import sys

    codes = tmp_path / "codes"
    effect = f"{sys.executable} -m cronwheel effect same-key"
    job = daemon.add_job({"runAt": "2000-01-01T00:00:00Z",
                          "command": "; ".join([f"{effect}; echo $? >> {codes}"] * 5)})
    wait_for(lambda: succeeded(daemon, job["jobId"]), timeout=60, what="the job to finish")
    assert codes.read_text().split() == ["0", "3", "3", "3", "3"]
    assert len(daemon.events("effect.recorded")) == 1
    [logged] = daemon.events("effect.duplicate")
    assert logged["suppressed"] == 0 and logged["key"] == "same-key"
    res = daemon.cli("logs", "--event", "effect.duplicate", "--json", "-n", "100")
    assert [json.loads(line)["level"] for line in res.stdout.splitlines()] == ["info", "debug", "debug", "debug"]


def test_stale_results_repeated_are_a_warning_once_a_minute(daemon: Daemon):
    """A worker repeating a refused call (a stale epoch) in a loop wrote a warning a call; the
    first is logged, the others are at debug level and still counted."""
    import json

    job = daemon.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "sleep 3"})
    [running] = wait_for(lambda: [e for e in daemon.executions(job["jobId"]) if e["status"] == "RUNNING"], timeout=30,
                         what="the job to start")
    stale = {"workerId": "zombie", "leaseEpoch": running["leaseEpoch"] + 7, "outcome": "failed"}
    for _ in range(5):
        assert daemon.post(f"/v1/executions/{running['executionId']}/complete", stale).status == 409
    [logged] = wait_for(lambda: daemon.events("lease.fenced"), timeout=10, what="the warning")
    assert logged["executionId"] == running["executionId"] and logged["suppressed"] == 0
    res = daemon.cli("logs", "--event", "lease.fenced", "--json", "-n", "100")
    assert [json.loads(line)["level"] for line in res.stdout.splitlines()] == ["warning"] + ["debug"] * 4
    metrics = daemon.get("/metrics").body.decode()
    assert 'cronwheel_fenced_rejections_total{via="completion"} 5.0' in metrics


def test_an_execution_past_its_effects_bound_is_refused_with_a_reason(daemon: Daemon, tmp_path: Path):
    """Recording 10,000 effects over HTTP takes long: the count on the execution's row is set
    to one short of the bound, in the daemon's own SQLite file, while the job waits."""
    import sys

    import apsw

    from cronwheel.core.limits import MAX_EFFECTS_PER_EXECUTION

    go, codes, errors = tmp_path / "go", tmp_path / "codes", tmp_path / "errors"
    effect = f"{sys.executable} -m cronwheel effect"
    job = daemon.add_job({
        "runAt": "2000-01-01T00:00:00Z",
        "command": f"while [ ! -e {go} ]; do sleep 0.05; done; {effect} last; echo $? >> {codes}; "
                   f"{effect} one-too-many 2> {errors}; echo $? >> {codes}; {effect} last; echo $? >> {codes}",
    })
    [running] = wait_for(lambda: [e for e in daemon.executions(job["jobId"]) if e["status"] == "RUNNING"], timeout=30,
                         what="the job to start")
    conn = apsw.Connection(str(daemon.data_dir / "cronwheel.db"))
    conn.setbusytimeout(10_000)
    conn.execute("UPDATE executions SET effects = ? WHERE execution_id = ?",
                 (MAX_EFFECTS_PER_EXECUTION - 1, running["executionId"]))
    conn.close()
    go.touch()
    wait_for(lambda: succeeded(daemon, job["jobId"]), timeout=30, what="the job to finish")
    assert codes.read_text().split() == ["0", "1", "3"]  # the last place, refused, a duplicate still told
    assert f"has recorded {MAX_EFFECTS_PER_EXECUTION} effects" in errors.read_text()
    assert "Traceback" not in errors.read_text()


def test_serve_on_an_unusable_store_says_why_in_one_line(tmp_path: Path):
    import os
    import subprocess
    import sys

    from tests.support.daemon import REPO

    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_bytes(b"this is not a SQLite database, not even close" * 100)
    res = subprocess.run(
        [sys.executable, "-m", "cronwheel", "serve", "--data-dir", str(tmp_path / "d"), "--store", str(not_a_db), "--http", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert res.returncode == 2  # lasting: a restart finds the same file
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith("cronwheel serve:") and str(not_a_db) in res.stderr


def test_the_daemon_prunes_old_history_in_the_background(make_daemon):
    d = make_daemon(args=("--retention", "1s", "--keep-last", "2", "--retention-interval-ms", "300"))
    job = d.add_job({"schedule": "* * * * * *", "command": "true"})
    first = wait_for(lambda: sorted(e["executionId"] for e in succeeded(d, job["jobId"]))[:1], timeout=30)[0]
    # the earliest run is pruned once newer ones exist and it is older than the retention
    wait_for(lambda: first not in {e["executionId"] for e in d.executions(job["jobId"])}, timeout=30,
             what="the oldest execution pruned")
    d.wait_event("retention.pruned")
    # and the newest runs are kept
    assert len(succeeded(d, job["jobId"])) >= 1


def test_a_settled_job_leaves_the_store_once_the_retention_passed_it(make_daemon):
    d = make_daemon(args=("--retention", "1s", "--keep-last", "5", "--retention-interval-ms", "300"))
    one_off = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true", "name": "once"})
    kept = d.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"})
    wait_for(lambda: succeeded(d, one_off["jobId"]), timeout=30, what="the one-off to run")
    wait_for(lambda: d.get(f"/v1/jobs/{one_off['jobId']}").status == 404, timeout=30,
             what="the settled one-off to leave the store")
    assert d.wait_event("retention.pruned", jobs=1)
    assert d.get(f"/v1/jobs/{kept['jobId']}").status == 200  # a job with ticks to come stays
    assert d.cli("add", "--name", "once", "+1h", "true").returncode == 0  # its name is free again


@pytest.mark.runs_no_jobs
def test_a_revoked_token_leaves_the_store_once_the_retention_passed_it(make_daemon):
    """Tokens made and revoked per deploy or per CI run would otherwise pile up for good."""
    d = make_daemon(args=("--retention", "1s", "--retention-interval-ms", "300"))
    assert d.post("/v1/tenants", {"name": "acme"}).status == 201
    made = [d.post("/v1/tokens", {"tenant": "acme", "role": "worker"}).json() for _ in range(30)]
    for t in made[:20]:
        assert d.request("DELETE", f"/v1/tokens/{t['tokenId']}").status == 200
    # one pass may find some of them not yet a second old (revoking 20 takes a while on a
    # loaded machine) and a later pass the rest: 20 in all, never an event of 20 for sure
    wait_for(lambda: sum(e["tokens"] for e in d.events("retention.pruned")) >= 20, what="the 20 revoked tokens pruned")
    assert sum(e["tokens"] for e in d.events("retention.pruned")) == 20
    left = {t["tokenId"] for t in d.get("/v1/tokens").json()["tokens"] if t.get("tenant") == "acme"}
    assert left == {t["tokenId"] for t in made[20:]}  # the active ones stay
    assert d.get("/v1/status", token=made[0]["token"]).status == 401  # a pruned one is as refused as before
