"""Chains, backfill and calendars end to end: a real daemon, real workers, real kills."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from cronwheel.core.schedule import parse_instant
from tests.support.daemon import Daemon
from tests.support.wait import wait_for

FAST_RETRY = {"maxAttempts": 3, "initialBackoffSec": 0, "jitter": 0}


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _child(d: Daemon, out: Path, **extra: object) -> str:
    """A job with no schedule of its own that records what it was told about its parent."""
    cmd = (f'printf "%s %s %s " "$CRONWHEEL_PARENT_EXECUTION_ID" "$CRONWHEEL_PARENT_OUTCOME" '
           f'"$CRONWHEEL_EXECUTION_ID" >> {out}; cat >> {out}')  # fmt: skip
    return str(d.add_job({"schedule": "@triggered", "command": cmd, **extra})["jobId"])


def test_a_chain_whose_parent_worker_is_killed_mid_run_triggers_its_child_once(make_daemon, tmp_path: Path) -> None:
    d: Daemon = make_daemon(workers=2, slots=2)
    out, marker = tmp_path / "child.out", tmp_path / "first-attempt"
    child = _child(d, out)
    # attempt 1 leaves a marker and hangs (its worker is killed); attempt 2 sees it and succeeds
    parent = d.add_job({
        "runAt": "+0s", "onSuccess": [child], "retryPolicy": {**FAST_RETRY, "maxAttempts": 5}, "payload": {"batch": 7},
        "command": f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exec sleep 30",
    })["jobId"]
    wait_for(marker.exists, timeout=30, what="the parent's first attempt running")
    started = wait_for(lambda: d.event("execution.started", jobId=parent), what="execution.started of the parent")
    victims = d.worker_pids()
    assert victims
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    (pex,) = wait_for(lambda: [e for e in d.executions(parent) if e["status"] == "SUCCEEDED"] or None, timeout=60,
                      what="the parent succeeding on its retry")  # fmt: skip
    # attempt 2, or 3 when the retry went to the second worker before it was killed too
    assert pex["attempt"] >= 2 and pex["executionId"] == started["executionId"]
    d.wait_event("execution.retry_scheduled", executionId=pex["executionId"], outcome="lost")  # killed mid-run
    (kid,) = wait_for(lambda: [e for e in d.executions(child) if e["status"] == "SUCCEEDED"] or None, timeout=60,
                      what="the child succeeding")  # fmt: skip
    assert kid["executionId"] == f"{child}:{pex['executionId'].rsplit(':', 1)[1]}"  # (child, parent tick)
    assert kid["context"]["parent"] == {"executionId": pex["executionId"], "jobId": parent,
                                        "scheduledAt": pex["scheduledAt"], "outcome": "SUCCEEDED"}  # fmt: skip
    eid, outcome, own, payload = out.read_text().split(" ", 3)
    assert (eid, outcome, own) == (pex["executionId"], "SUCCEEDED", kid["executionId"])
    assert json.loads(payload) == {"parent": kid["context"]["parent"]}  # the child's payload (none) + its parent
    # the parent ran twice (at least once), the child once: one execution, one run
    assert len(d.executions(child)) == 1
    assert len([e for e in d.events("execution.started") if e["executionId"] == kid["executionId"]]) == 1
    d.wait_event("chain.triggered", executionId=kid["executionId"], parentExecutionId=pex["executionId"])


def test_a_failure_triggers_the_on_failure_child_after_the_retries(make_daemon, tmp_path: Path) -> None:
    d: Daemon = make_daemon()
    ok_out, fail_out = tmp_path / "ok.out", tmp_path / "fail.out"
    on_ok, on_fail = _child(d, ok_out), _child(d, fail_out)
    parent = d.add_job({"runAt": "+0s", "command": "exit 3", "retryPolicy": {**FAST_RETRY, "maxAttempts": 2},
                        "onSuccess": [on_ok], "onFailure": [on_fail]})["jobId"]  # fmt: skip
    (kid,) = wait_for(lambda: [e for e in d.executions(on_fail) if e["status"] == "SUCCEEDED"] or None, timeout=60,
                      what="the on-failure child")  # fmt: skip
    (pex,) = d.executions(parent)
    assert pex["status"] == "DEAD" and pex["attempt"] == 2
    assert fail_out.read_text().split(" ")[:2] == [pex["executionId"], "DEAD"]
    assert d.executions(on_ok) == [] and not ok_out.exists()
    assert kid["context"]["parent"]["outcome"] == "DEAD"


def test_a_cycle_is_refused_through_the_api_and_the_cli(daemon: Daemon) -> None:
    d = daemon
    a = d.add_job({"schedule": "@triggered", "command": "true"})["jobId"]
    b = d.add_job({"schedule": "@triggered", "command": "true", "onSuccess": [a]})["jobId"]
    r = d.request("PUT", f"/v1/jobs/{a}/chain", {"onFailure": [b]})
    assert r.status == 409, r
    assert r.json()["code"] == "chain_refused" and f"{a} -> {b} -> {a}" in r.json()["detail"]
    res = d.cli("chain", a, "--on-success", a)
    assert res.returncode == 1 and "cycle" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert d.get(f"/v1/jobs/{a}").json()["onSuccess"] == []
    r = d.request("PUT", f"/v1/jobs/{a}/chain", {"onSuccess": ["jnope"]})
    assert r.status == 409 and "no job" in r.json()["detail"]
    r = d.post("/v1/jobs", {"schedule": "@triggered", "command": "true", "onSuccess": ["jnope"]})
    assert r.status == 422 and r.json()["code"] == "unknown_reference" and r.json()["field"] == "onSuccess"


def test_a_backfill_of_a_past_range_run_twice_gives_one_execution_per_tick(daemon: Daemon) -> None:
    d = daemon
    job = d.add_job({"schedule": "*/10 * * * *", "command": "true", "name": "tenminutes"})["jobId"]
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    start = now - timedelta(hours=2)
    start = start.replace(minute=start.minute - start.minute % 10)
    end = start + timedelta(minutes=50)  # ticks :00 :10 … :50 of that hour: 6
    dry = d.post(f"/v1/jobs/{job}/backfill", {"from": _iso(start), "to": _iso(end), "dryRun": True})
    assert dry.status == 200 and dry.json()["ticks"] == 6 and dry.json()["created"] == 0
    first = d.cli("backfill", "tenminutes", "--from", _iso(start), "--to", _iso(end), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["created"] == 6
    again = d.post(f"/v1/jobs/{job}/backfill", {"from": _iso(start), "to": _iso(end)})
    assert again.status == 202 and again.json()["created"] == 0 and again.json()["existing"] == 6
    # (the job's own */10 tick runs too when the test crosses a ten-minute mark: not counted)
    wait_for(lambda: sum(e["status"] == "SUCCEEDED" and e["context"] == {"backfill": True} for e in d.executions(job)) == 6,
             timeout=60, what="the six backfilled runs")  # fmt: skip
    backfilled = [e for e in d.executions(job) if e["context"] == {"backfill": True}]
    assert sorted(e["scheduledAt"] for e in backfilled) == [_iso(start + timedelta(minutes=10 * i)).replace("Z", ".000Z")
                                                            for i in range(6)]  # fmt: skip
    assert all(e["priority"] == "batch" for e in backfilled)
    assert len({e["executionId"] for e in d.executions(job)}) == len(d.executions(job))
    # too large for one request: a clear refusal, nothing created
    every_second = d.add_job({"schedule": "* * * * * *", "command": "true"})["jobId"]
    big = d.post(f"/v1/jobs/{every_second}/backfill", {"from": _iso(now - timedelta(days=1)), "to": _iso(now)})
    assert big.status == 422 and big.json()["code"] == "backfill_too_large" and "10000" in big.json()["detail"]
    future = d.post(f"/v1/jobs/{job}/backfill", {"from": _iso(now), "to": _iso(now + timedelta(days=1))})
    assert future.status == 400 and "future" in future.json()["detail"]


def test_a_holiday_is_skipped_in_a_dst_changing_zone(daemon: Daemon) -> None:
    d = daemon
    zone = "America/New_York"  # changes its offset twice a year
    today = datetime.now(ZoneInfo(zone)).date()
    res = d.cli("calendar", "set", "holidays", "--date", today.isoformat(), "--date", "2027-03-14",
                "--description", "today and the spring-forward day")  # fmt: skip
    assert res.returncode == 0, res.stderr
    skipped = d.add_job({"schedule": "* * * * * *", "timezone": zone, "command": "true", "calendars": ["holidays"]})["jobId"]
    plain = d.add_job({"schedule": "* * * * * *", "timezone": zone, "command": "true"})["jobId"]
    wait_for(lambda: len(d.executions(skipped)) >= 2 and any(e["status"] == "SUCCEEDED" for e in d.executions(plain)),
             timeout=30, what="ticks of both jobs")  # fmt: skip
    rows = d.executions(skipped)
    assert rows and all(e["status"] == "SKIPPED" and e["reason"] == "calendar: holidays" for e in rows)
    # `cronwheel next` honours the calendar: the next runs are after today, in the job's zone
    nxt = d.cli("next", skipped, "-n", "2", "--json")
    assert nxt.returncode == 0, nxt.stderr
    first = datetime.fromisoformat(json.loads(nxt.stdout)[0].replace("Z", "+00:00")).astimezone(ZoneInfo(zone))
    assert first.date() > today and (first.hour, first.minute, first.second) == (0, 0, 0)
    up = d.get(f"/v1/jobs/{skipped}/upcoming?count=1&from=2027-03-13T23:59:59-05:00").json()
    # 2027-03-14 (23 hours long in New York) is excluded whole: the next run is 2027-03-15 00:00 EDT
    assert up["next"] == ["2027-03-15T04:00:00.000Z"]
    ahead = d.get(f"/v1/jobs/{skipped}/upcoming?count=1&from=%2B1d")  # +1d: a day from now, as the document says
    assert ahead.status == 200 and ahead.json()["next"][0] > nxt.stdout.split('"')[1], ahead.json()
    # the herd preview counts the plain job's 60 ticks of the coming minute, none of the other's
    # (unless that minute crosses midnight in New York, where the holiday ends)
    before = datetime.now(ZoneInfo(zone))
    herd = d.get("/v1/herd?window=60").json()
    if (before + timedelta(seconds=62)).date() == today:
        assert herd["ticks"] == 60, herd
    # a calendar in use cannot be deleted
    r = d.request("DELETE", "/v1/calendars/holidays")
    assert r.status == 409 and skipped in r.json()["detail"]


def test_the_readme_tour_of_calendars_backfill_and_chains_runs_as_written(daemon: Daemon) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = readme.split("Beyond cron: holidays, backfills, chains.", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.startswith("cronwheel ")]
    assert len(commands) == 6
    for line in commands:
        res = daemon.cli(*shlex.split(line.split("  #", 1)[0])[1:])
        assert res.returncode == 0, (line, res.stderr)
    payroll = daemon.cli("show", "payroll", "--json")
    job = json.loads(payroll.stdout)
    notify = json.loads(daemon.cli("show", "notify", "--json").stdout)
    assert job["calendars"] == ["holidays"] and job["onFailure"] == [notify["jobId"]]
    assert notify["schedule"] == "@triggered" and notify["nextRunAt"] is None


@pytest.mark.postgres
def test_two_nodes_on_postgres_chain_backfill_and_skip_once(make_daemon, postgres_dsn: str, tmp_path: Path) -> None:
    """In a cluster: a chain child runs once whichever node completes the parent, a backfill
    sent to both nodes creates each tick once, a calendar excludes ticks whichever node claims."""
    a = make_daemon("a", args=("--store", postgres_dsn, "--node-id", "a", "--bucket-lease-ms", "1500"))
    b = make_daemon("b", args=("--store", postgres_dsn, "--node-id", "b", "--bucket-lease-ms", "1500"))
    wait_for(lambda: sum((a.status().get("cluster") or {}).get("buckets", {}).values()) == 64
             and len((a.status().get("cluster") or {}).get("buckets", {})) == 2, 30, what="buckets split over a and b")  # fmt: skip
    out = tmp_path / "child.out"
    child = _child(a, out)
    parents = [b.add_job({"runAt": "+0s", "command": "true", "onSuccess": [child]})["jobId"] for _ in range(6)]
    wait_for(lambda: len([e for e in a.executions(child) if e["status"] == "SUCCEEDED"]) == 6, 60,
             what="one child run per parent")  # fmt: skip
    assert sorted(e["context"]["parent"]["jobId"] for e in a.executions(child)) == sorted(parents)
    assert len({e["executionId"] for e in a.executions(child)}) == 6

    job = a.add_job({"schedule": "*/10 * * * *", "command": "true"})["jobId"]
    start = (datetime.now(UTC) - timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    body = {"from": _iso(start), "to": _iso(start + timedelta(minutes=50))}
    created = [n.post(f"/v1/jobs/{job}/backfill", body).json()["created"] for n in (a, b, a, b)]
    assert created == [6, 0, 0, 0]
    assert len([e for e in b.executions(job) if e["context"] == {"backfill": True}]) == 6

    a.request("PUT", "/v1/calendars/always", {"windows": [{"start": "2000-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z"}]})
    skipped = [n.add_job({"schedule": "* * * * * *", "command": "true", "calendars": ["always"]})["jobId"] for n in (a, b)]
    wait_for(lambda: all(len(a.executions(j)) >= 2 for j in skipped), 30, what="ticks of the calendar jobs")
    for j in skipped:
        assert {(e["status"], e["reason"]) for e in b.executions(j)} == {("SKIPPED", "calendar: always")}


def test_bad_input_gets_a_problem_naming_the_field(daemon: Daemon) -> None:
    d = daemon
    job = d.add_job({"schedule": "0 * * * *", "command": "true"})["jobId"]
    cases = [
        ("PUT", "/v1/calendars/h", {"dates": ["2026-02-30"]}, 422, "dates[0]"),
        ("PUT", "/v1/calendars/h", {"windows": [{"start": "2026-01-02T00:00", "end": "2026-01-01T00:00"}]}, 422, "windows[0]"),
        ("PUT", "/v1/calendars/h", {"windows": [{"start": "x"}]}, 422, "windows[0]"),
        # outside 1970..9899: an offset near the year 1 or 9999 was a 500
        ("PUT", "/v1/calendars/h", {"windows": [{"start": "9999-12-31T22:00-05:00", "end": "9999-12-31T23:00-05:00"}]},
         422, "windows[0].start"),
        ("PUT", "/v1/calendars/h", {"windows": [{"start": "2026-01-01T00:00+01:00", "end": "9999-12-31T23:00-05:00"}]},
         422, "windows[0].end"),
        ("PUT", "/v1/calendars/h", {"windows": [{"start": "0001-01-01T00:00", "end": "0001-01-01T01:00"}]},
         422, "windows[0].start"),
        ("PUT", "/v1/calendars/h", {"dates": ["2026-12-25", "9999-12-25"]}, 422, "dates[1]"),
        ("PUT", "/v1/calendars/h", {"holidays": []}, 422, "holidays"),
        ("PUT", "/v1/calendars/h", [], 400, None),
        ("PUT", "/v1/calendars/bad%20name", {}, 422, "name"),
        ("GET", "/v1/calendars/nope", None, 404, None),
        ("POST", f"/v1/jobs/{job}/backfill", {"to": "2026-01-01T00:00:00Z"}, 422, "from"),
        ("POST", f"/v1/jobs/{job}/backfill", {"from": "yesterday", "to": "2026-01-01T00:00:00Z"}, 422, "from"),
        ("POST", f"/v1/jobs/{job}/backfill", {"from": "+0s", "to": "+0s"}, 422, "from"),
        ("POST", f"/v1/jobs/{job}/backfill", {"from": "0001-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, 422, "from"),
        ("POST", f"/v1/jobs/{job}/backfill", {"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, 422, "to"),
        ("POST", f"/v1/jobs/{job}/backfill", {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z", "dryRun": "yes"}, 422, "dryRun"),
        ("POST", "/v1/jobs/jnope/backfill", {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z"}, 404, None),
        ("PUT", f"/v1/jobs/{job}/chain", {"onSuccess": "j1"}, 422, "onSuccess"),
        ("PUT", f"/v1/jobs/{job}/chain", {"onSuccess": ["bad id!"]}, 422, "onSuccess[0]"),
        ("POST", "/v1/jobs", {"schedule": "0 * * * *", "command": "true", "calendars": ["nope"]}, 422, "calendars"),
        ("POST", "/v1/jobs", {"schedule": "0 * * * *", "command": "true", "calendars": "holidays"}, 422, "calendars"),
        ("POST", "/v1/jobs", {"runAt": "+1m", "command": "true", "activeUntil": "2030-01-01T00:00:00Z"}, 422, "activeUntil"),
        ("POST", "/v1/jobs", {"schedule": "0 * * * *", "command": "true", "activeFrom": "2030-01-02T00:00:00Z",
                              "activeUntil": "2030-01-01T00:00:00Z"}, 422, "activeUntil"),
        ("POST", "/v1/jobs", {"schedule": "0 * * * *", "command": "true", "activeUntil": "2001-01-01T00:00:00Z"}, 400, "schedule"),
        ("GET", f"/v1/jobs/{job}/upcoming?count=0", None, 400, "count"),
        # cron arithmetic from the year 1 answered ticks in the year 2: outside what cronwheel keeps
        ("GET", f"/v1/jobs/{job}/upcoming?from=0001-01-01T00:00:00Z", None, 400, "from"),
        ("POST", f"/v1/jobs/{job}/backfill", {"from": "1969-12-31T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, 422, "from"),
    ]  # fmt: skip
    for method, path, body, status, field in cases:
        r = d.request(method, path, body)
        assert r.status == status, (method, path, body, r)
        problem = r.json()
        assert problem["detail"] and "Traceback" not in problem["detail"], problem
        if field is not None:
            assert problem.get("field") == field, (path, body, problem)
    # the CLI checks a window with the API's own parser before sending it: a usage error
    res = d.cli("calendar", "set", "h", "--window", "0001-01-01T00:00+01:00/0001-01-01T01:00Z")
    assert res.returncode == 2 and "'--window'" in res.stderr and "1970" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "internal" not in res.stderr.lower(), res.stderr
    res = d.cli("calendar", "set", "h", "--window", "2026-01-01T00:00")
    assert res.returncode == 2 and "START/END" in res.stderr
    res = d.cli("backfill", job, "--from", "2026-01-01T00:00:00Z")
    assert res.returncode == 2 and "--to" in res.stderr


def test_a_backfill_is_cancelable(daemon: Daemon) -> None:
    d = daemon
    # a queue target: no remote worker polls it, so the backfilled runs wait, PENDING
    job = d.add_job({"schedule": "0 * * * *", "queue": "nobody", "name": "hourly"})["jobId"]
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    r = d.post(f"/v1/jobs/{job}/backfill", {"from": _iso(end - timedelta(hours=4)), "to": _iso(end)})
    assert r.status == 202 and r.json()["created"] == 5
    res = d.cli("backfill", "hourly", "--cancel")
    assert res.returncode == 0 and "Cancelled 5 backfill executions" in res.stdout, res.stderr
    rows = [e for e in d.executions(job) if e["context"] == {"backfill": True}]
    assert len(rows) == 5 and {(e["status"], e["reason"]) for e in rows} == {("CANCELLED", "backfill cancelled")}
    d.wait_event("backfill.cancelled", jobId=job, cancelled=5)


def test_backfill_shows_progress_on_a_terminal_and_splits_the_range(daemon: Daemon) -> None:
    d = daemon
    job = d.add_job({"schedule": "* * * * *", "queue": "nobody"})["jobId"]
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=1)
    start = end - timedelta(minutes=719)  # 720 ticks: two requests of at most 500
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2]), "CRONWHEEL_URL": d.url,
           "CRONWHEEL_DATA_DIR": str(d.data_dir)}  # fmt: skip
    env.pop("CRONWHEEL_TOKEN", None)
    master, slave = os.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "cronwheel", "backfill", job, "--from", _iso(start), "--to", _iso(end)],
                              stdout=subprocess.PIPE, stderr=slave, env=env, timeout=60, text=True)  # fmt: skip
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0 and "720 executions created" in proc.stdout
    assert b"backfill" in shown and b"720/720" in shown  # click's bar on the terminal
    posts = [e for e in d.events("job.backfilled") if e["jobId"] == job]
    assert [e["created"] for e in posts] == [500, 220]


def test_a_range_too_large_for_one_command_is_refused_before_anything_is_sent(daemon: Daemon) -> None:
    # an every-second job's two days: 172,800 ticks, counted up to the limit and refused
    job = daemon.add_job({"schedule": "* * * * * *", "queue": "nobody"})["jobId"]
    res = daemon.cli("backfill", job, "--from", "-2d", "--to", "-1h")
    assert res.returncode == 2, res
    assert "more than 100,000 ticks" in res.stderr and "backfill the range in parts" in res.stderr, res.stderr
    assert not [e for e in daemon.events("job.backfilled") if e["jobId"] == job]
    assert not [e for e in daemon.executions(job) if e["origin"] == "backfill"]  # its live ticks run as ever


def test_a_backfill_range_may_be_written_relative_to_now(daemon: Daemon) -> None:
    job = daemon.add_job({"schedule": "@hourly", "queue": "nobody"})["jobId"]
    res = daemon.cli("backfill", job, "--from", "-3h", "--to", "now", "--dry-run", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    # three hours back to now: both ends read from one clock, so exactly three hours, holding
    # three top-of-the-hour ticks (four when now is a top of the hour to the millisecond)
    assert parse_instant(out["to"]) - parse_instant(out["from"]) == 3 * 3_600_000, out
    assert out["ticks"] == len(out["plannedTicks"]) in (3, 4), out
    res = daemon.cli("backfill", job, "--from", "-30000d", "--to", "now")  # 82 years ago
    assert res.returncode == 2 and "before 1970" in res.stderr, res
    res = daemon.cli("backfill", job, "--from", "-3x", "--to", "now")
    assert res.returncode == 2 and "Invalid value for '--from'" in res.stderr and "Traceback" not in res.stderr, res
    res = daemon.cli("backfill", job, "--from", "3h", "--to", "now")  # the sign forgotten
    assert res.returncode == 2 and "'3h' is a duration: write -3h for that long ago" in res.stderr, res.stderr
    # the future is refused as given (it was refused quoting a tick, or not at all in a dry run)
    res = daemon.cli("backfill", job, "--from", "-3h", "--to", "+1d", "--dry-run")
    assert res.returncode == 2 and "'+1d' (" in res.stderr and "is in the future" in res.stderr, res.stderr
    # each end checked as given, in words that say what to write instead
    res = daemon.cli("backfill", job, "--from", "+2h", "--to", "now")
    assert res.returncode == 2 and "'+2h' (" in res.stderr and "the past (for that long ago: -2h)" in res.stderr, res.stderr
    res = daemon.cli("backfill", job, "--from", "-1h", "--to", "-2h")
    assert res.returncode == 2 and re.search(r"--to \(\S+Z\) is before --from \(\S+Z\)", res.stderr), res.stderr
    res = daemon.cli("backfill", job, "--from", "yesterday", "--to", "now")
    assert res.returncode == 2 and "'2026-12-01T10:00:00Z', now or -DURATION (that long ago, e.g. -7d)" in res.stderr, res.stderr
    res = daemon.cli("next", job, "--from", "yesterday")  # next also looks ahead
    assert res.returncode == 2 and "now, -DURATION (that long ago, e.g. -7d) or +DURATION (that long ahead)" in res.stderr, res.stderr
    res = daemon.cli("backfill", job, "--from", "2026-12-01", "--to", "now")
    assert res.returncode == 2 and "write 2026-12-01T00:00:00Z for midnight UTC" in res.stderr, res.stderr
    # a dry run after the real one (the same range, as instants) plans nothing: those ticks
    # have their executions now
    done = json.loads(daemon.cli("backfill", job, "--from", "-3h", "--to", "now", "--json").stdout)
    assert done["created"] == done["ticks"] in (3, 4), done
    span = ("--from", done["from"], "--to", done["to"], "--dry-run")
    again = json.loads(daemon.cli("backfill", job, *span, "--json").stdout)
    assert again["existing"] == again["ticks"] == done["ticks"] and again["plannedTicks"] == [], again
    words = daemon.cli("backfill", job, *span).stdout
    assert f"Would create 0 executions, {done['ticks']} ticks already had one" in words, words


def test_patch_runs_the_cycle_check_and_takes_the_new_fields(daemon: Daemon) -> None:
    d = daemon
    a = d.add_job({"schedule": "@triggered", "command": "true", "name": "a"})["jobId"]
    b = d.add_job({"schedule": "@triggered", "command": "true", "onSuccess": [a]})["jobId"]
    r = d.request("PATCH", f"/v1/jobs/{a}", {"onFailure": [b]})
    assert r.status == 409 and r.json()["code"] == "chain_refused", r
    res = d.cli("update", "a", "--on-success", b)
    assert res.returncode == 1 and "cycle" in res.stderr
    r = d.request("PATCH", f"/v1/jobs/{a}", {"calendars": ["nope"]})
    assert r.status == 422 and r.json()["code"] == "unknown_reference"
    assert d.request("PUT", "/v1/calendars/weekend", {"description": "w"}).status == 200
    r = d.request("PATCH", f"/v1/jobs/{b}", {"calendars": ["weekend"], "onSuccess": None})
    assert r.status == 200 and r.json()["calendars"] == ["weekend"] and r.json()["onSuccess"] == []
    r = d.request("PATCH", f"/v1/jobs/{a}", {"onFailure": [b]})  # no cycle any more
    assert r.status == 200 and r.json()["onFailure"] == [b]


@pytest.mark.runs_no_jobs
def test_the_calendar_listing_answers_what_each_calendar_answers(daemon: Daemon) -> None:
    """The listing sends the stored calendars on as they are (not rebuilt from 5,000 dates
    each); each item is what GET /v1/calendars/{name} answers for it."""
    bodies = {
        "holidays": {"dates": ["2026-12-26", "2026-12-25"], "windows": [{"start": "2026-12-24T22:00", "end": "2026-12-25T02:00"}],
                     "description": "xmas ☃"},
        "empty": {},
        "instants": {"windows": [{"start": "2026-12-24T21:00:00Z", "end": "2026-12-25T01:00:00+02:00"}]},
    }  # fmt: skip
    for name, body in bodies.items():
        r = daemon.request("PUT", f"/v1/calendars/{name}", body)
        assert r.status == 200, r
    listed = daemon.get("/v1/calendars").json()["calendars"]
    assert [c["name"] for c in listed] == sorted(bodies)
    for item in listed:
        assert item == daemon.get(f"/v1/calendars/{item['name']}").json()
    assert next(c for c in listed if c["name"] == "holidays")["dates"] == ["2026-12-25", "2026-12-26"]


@pytest.mark.runs_no_jobs
def test_a_listing_of_many_calendars_is_sent_a_few_at_a_time_and_whole(daemon: Daemon) -> None:
    """Read and sent 16 at a time (a thousand full calendars were ~200 MB of daemon memory per
    listing); the answer is the same one JSON document, in name order, every calendar once."""
    from cronwheel.api.calendars import LIST_READ_CALENDARS

    count = 2 * LIST_READ_CALENDARS + 3  # pages full, full, then short
    for i in range(count):
        assert daemon.request("PUT", f"/v1/calendars/c{i:03d}", {"dates": ["2026-12-25"]}).status == 200
    r = daemon.get("/v1/calendars")
    assert r.status == 200 and r.headers["Content-Type"] == "application/json; charset=utf-8"
    assert [c["name"] for c in r.json()["calendars"]] == [f"c{i:03d}" for i in range(count)]
    for i in range(LIST_READ_CALENDARS, count):  # left: exactly one full page, then a read of none
        assert daemon.request("DELETE", f"/v1/calendars/c{i:03d}").status == 204
    assert [c["name"] for c in daemon.get("/v1/calendars").json()["calendars"]] == [f"c{i:03d}" for i in range(LIST_READ_CALENDARS)]
    for i in range(LIST_READ_CALENDARS):
        assert daemon.request("DELETE", f"/v1/calendars/c{i:03d}").status == 204
    assert daemon.get("/v1/calendars").json() == {"calendars": []}


@pytest.mark.runs_no_jobs
def test_a_calendar_is_imported_from_an_ics_file(daemon: Daemon, tmp_path: Path) -> None:
    ics = tmp_path / "fr.ics"
    ics.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n"
        "BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20261225\r\nDTEND;VALUE=DATE:20261226\r\nSUMMARY:Noel\r\nEND:VEVENT\r\n"
        "BEGIN:VEVENT\r\nDTSTART:20261231T220000\r\nDTEND:20270101T020000\r\nSUMMARY:maintenance\r\nEND:VEVENT\r\n"
        "END:VCALENDAR\r\n"
    )
    out = daemon.cli("calendar", "import", "fr", str(ics))
    assert out.returncode == 0 and "1 date, 1 window" in out.stdout, (out.stdout, out.stderr)
    cal = daemon.get("/v1/calendars/fr").json()
    assert cal["dates"] == ["2026-12-25"] and cal["description"] == "fr.ics"
    assert [(w["start"], w["end"]) for w in cal["windows"]] == [("2026-12-31T22:00:00", "2027-01-01T02:00:00")]
    # a file cronwheel cannot read faithfully is refused whole, naming it
    (tmp_path / "rrule.ics").write_text(ics.read_text().replace("SUMMARY:Noel", "SUMMARY:Noel\r\nRRULE:FREQ=YEARLY"))
    bad = daemon.cli("calendar", "import", "fr2", str(tmp_path / "rrule.ics"))
    assert bad.returncode == 2 and "rrule.ics" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert daemon.get("/v1/calendars/fr2").status == 404


@pytest.mark.runs_no_jobs
def test_an_observed_calendar_is_kept_until_update_clears_it_from_the_job(daemon: Daemon) -> None:
    d = daemon
    assert d.cli("calendar", "set", "holidays", "--date", "2026-12-25").returncode == 0
    job = d.add_job({"schedule": "0 9 * * *", "command": "true", "name": "payroll", "calendars": ["holidays"]})
    refused = d.cli("calendar", "rm", "holidays")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"calendar 'holidays' is observed by job {job['jobId']}; take it out of its calendars" in refused.stderr
    assert "cronwheel update JOB --clear calendar" in refused.stderr
    both = d.cli("update", "payroll", "--clear", "calendar", "--calendar", "holidays")
    assert both.returncode == 2 and "contradict" in both.stderr, both.stderr
    cleared = d.cli("update", "payroll", "--clear", "calendar", "--clear", "env")
    assert cleared.returncode == 0, cleared.stderr
    after = d.get(f"/v1/jobs/{job['jobId']}").json()
    assert after["calendars"] == [] and after["schedule"] == "0 9 * * *" and after["name"] == "payroll"
    assert d.cli("calendar", "rm", "holidays").returncode == 0
    # every option --clear names is one the daemon takes away
    from cronwheel.cli.jobedit import CLEARABLE

    every = d.cli("update", "payroll", *[w for option in CLEARABLE for w in ("--clear", option)])
    assert every.returncode == 0, every.stderr
    assert d.get(f"/v1/jobs/{job['jobId']}").json()["schedule"] == "0 9 * * *"


def test_a_backfill_never_starves_live_work(make_daemon) -> None:
    """Two slots, a backfill of 120 slow past ticks (batch priority) queued at once, and an
    every-second job: the live ticks keep starting while the backfill still waits in the queue."""
    d: Daemon = make_daemon(workers=1, slots=2)
    old = d.add_job({"schedule": "* * * * * *", "command": "sleep 0.3", "name": "history"})["jobId"]
    assert d.post(f"/v1/jobs/{old}/pause").status == 200  # only its backfilled past ticks run
    now = datetime.now(UTC).replace(microsecond=0)
    r = d.post(f"/v1/jobs/{old}/backfill", {"from": _iso(now - timedelta(seconds=130)), "to": _iso(now - timedelta(seconds=11))})
    assert r.status == 202 and r.json()["created"] == 120, r
    live = d.add_job({"schedule": "* * * * * *", "command": "true", "name": "live"})["jobId"]

    def backfill_counts() -> tuple[int, int]:
        statuses = [e["status"] for e in d.executions(old, limit=200)]
        return statuses.count("PENDING"), sum(s in ("RUNNING", "SUCCEEDED") for s in statuses)

    ran = wait_for(lambda: (n := sum(e["status"] == "SUCCEEDED" for e in d.executions(live))) >= 3 and n,
                   60, interval=0.2, what="three live ticks to run")
    waiting, started = backfill_counts()
    assert waiting > 0, "the backfill drained before the live job ran: nothing was shown"
    assert started > 0, "the backfill itself runs meanwhile (batch tier, not stopped)"
    assert ran >= 3


def test_a_backfill_refused_half_way_says_what_it_made(daemon: Daemon) -> None:
    """The CLI sends a range in pieces of 500 ticks: when the daemon refuses one (here the
    tenant's submitBurst runs out), the pieces before it were made, and the CLI says how many
    before the refusal, rather than only the refusal."""
    import os
    import subprocess
    import sys

    assert daemon.cli("tenant", "add", "slow", "--rate", "0.001", "--burst", "600", "--allow-shell").returncode == 0
    token = daemon.cli("token", "create", "--tenant", "slow").stdout.splitlines()[0].strip()
    env = {**os.environ, **daemon.cli_env(), "CRONWHEEL_TOKEN": token, "CRONWHEEL_URL": daemon.url}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cronwheel", *args], capture_output=True, text=True, env=env, timeout=60)

    assert cli("add", "--name", "minutely", "* * * * *", "true").returncode == 0  # one token of 600
    res = cli("backfill", "minutely", "--from", "-999m", "--to", "now")  # ~1,000 ticks: 500 pass, 500 do not
    assert res.returncode == 1, res
    assert "the daemon refused the backfill after 500 of " in res.stderr and "500 executions created" in res.stderr
    assert "submits more than its quota" in res.stderr and "Traceback" not in res.stderr
