"""Time as the user sees it, on a real daemon: catch-up after downtime follows the misfire
policy (one run under run_once, marked catch-up), and the dispatch-lag SLO counts scheduled
lateness only (not DLQ replays, manual triggers or retries)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from tests.integration.test_metrics import scrape, value
from tests.support.daemon import Daemon
from tests.support.wait import wait_for

CLAIM_AHEAD_MS = 2_000  #: the daemon's default --claim-ahead-ms


def _ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def test_an_every_second_job_catches_up_once_after_downtime(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(workers=1)
    job = d.add_job({"schedule": "* * * * * *", "command": "true", "name": "every-second"})  # misfire: run_once
    jid = job["jobId"]
    wait_for(lambda: sum(e["status"] == "SUCCEEDED" for e in d.executions(jid)) >= 2, timeout=20, what="two runs")
    assert d.stop() == 0
    stopped = int(time.time() * 1000)
    time.sleep(8)  # the downtime itself is what this test is about
    restarted = int(time.time() * 1000)
    d.start()
    wait_for(lambda: any(e["status"] == "SUCCEEDED" and _ms(e["scheduledAt"]) > restarted + 2_000
                         for e in d.executions(jid)), timeout=30, what="ordinary runs after the restart")  # fmt: skip

    history = d.executions(jid)
    catch_ups = [e for e in history if e["origin"] == "catch_up"]
    assert len(catch_ups) == 1, history
    [catch_up] = catch_ups
    assert catch_up["status"] == "SUCCEEDED"
    assert catch_up["reason"].startswith("catch-up: one run for ")
    # no tick of the downtime ran, beyond what the stop had claimed ahead and ran on its way out
    downtime = [e for e in history if stopped + CLAIM_AHEAD_MS + 1_000 <= _ms(e["scheduledAt"]) < _ms(catch_up["scheduledAt"])]
    assert downtime == [] or all(e["status"] == "SKIPPED" for e in downtime), downtime
    [skipped] = [e for e in history if e["status"] == "SKIPPED"]
    assert "ticks skipped" in skipped["reason"] and _ms(skipped["scheduledAt"]) < restarted
    # the stop ran the ticks it had claimed ahead: after the restart, the catch-up run is the
    # only run of a tick from before it
    late = [e for e in history if e["startedAt"] and _ms(e["scheduledAt"]) < restarted <= _ms(e["startedAt"])]
    assert late == [catch_up] or (late == [] and _ms(catch_up["scheduledAt"]) >= restarted), late
    # everything after the catch-up run is an ordinary tick again
    assert all(e["origin"] == "schedule" for e in history if _ms(e["scheduledAt"]) > _ms(catch_up["scheduledAt"]))
    [event] = d.events("execution.catch_up")
    assert event["executionId"] == catch_up["executionId"]
    assert d.wait_event("execution.started", executionId=catch_up["executionId"])["origin"] == "catch_up"
    # the history shows it
    res = d.cli("history", "every-second", "-n", "1000")
    assert res.returncode == 0, res.stderr
    assert "ORIGIN" in res.stdout and "catch-up" in res.stdout
    assert "SKIPPED (misfire)" in res.stdout  # why the downtime's ticks did not run, in a word


def test_replays_and_triggers_are_not_dispatch_lag(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(workers=1)
    # a one-off that fails slowly into the DLQ: replaying it starts it seconds after its tick
    failing = d.add_job({"runAt": "+0s", "command": "sleep 2; exit 3", "retryPolicy": {"maxAttempts": 1}})
    wait_for(lambda: d.get("/v1/dlq").json()["executions"], timeout=30, what="the job to be dead-lettered")
    [dead] = d.get("/v1/dlq").json()["executions"]
    assert dead["jobId"] == failing["jobId"]
    replay = d.cli("dlq", "replay", dead["executionId"])
    assert replay.returncode == 0, replay.stderr
    # a manual trigger of a job whose schedule is far away
    later = d.add_job({"schedule": "0 0 1 1 *", "command": "true"})
    assert d.post(f"/v1/jobs/{later['jobId']}/trigger").status in (200, 201, 202)

    def started() -> list[dict]:
        return d.events("execution.started")

    wait_for(lambda: len(started()) >= 3, timeout=30, what="first run, replay and trigger to start")
    origins = sorted(e["origin"] for e in started())
    assert origins == ["manual", "replay", "schedule"], origins
    replayed = next(e for e in started() if e["origin"] == "replay")
    assert replayed["lagMs"] >= 2_000  # late against its tick, but not scheduling lateness

    # only the one scheduled first attempt is dispatch lag: histogram, status, the dashboard's chart
    samples = scrape(d)
    assert value(samples, "cronwheel_dispatch_lag_seconds_count") == 1
    assert value(samples, "cronwheel_dispatch_lag_seconds_sum") < 2
    lag = d.status()["dispatchLagMs"]
    assert lag["samples"] == 1 and lag["max"] < 2_000, lag
    minutes = d.get("/v1/status/activity").json()["lagHistory"]["minutes"]
    assert sum(m["count"] for m in minutes) == 1
    assert max(m["max"] or 0 for m in minutes) < 2_000


def test_misfire_grace_is_set_shown_updated_and_checked(daemon: Daemon) -> None:
    res = daemon.cli("add", "--name", "g", "--misfire-grace", "30s", "@every 1m", "--", "true")
    assert res.returncode == 0, res.stderr
    job = daemon.get("/v1/jobs?name=g").json()["jobs"][0]
    assert job["misfireGraceSec"] == 30
    assert "Misfire grace:" in daemon.cli("show", "g").stdout
    r = daemon.request("PATCH", f"/v1/jobs/{job['jobId']}", {"misfireGraceSec": None})
    assert r.status == 200 and r.json()["misfireGraceSec"] is None, r  # back to the default
    r = daemon.post("/v1/jobs", {"schedule": "@every 1m", "command": "true", "misfireGraceSec": 90_000})
    assert r.status == 422 and r.json()["field"] == "misfireGraceSec", r


def test_ticks_claimed_ahead_before_a_crash_run_late_but_are_not_dispatch_lag(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(workers=1)
    job = d.add_job({"schedule": "* * * * * *", "command": "true", "name": "every-second"})
    jid = job["jobId"]
    wait_for(lambda: sum(e["status"] == "SUCCEEDED" for e in d.executions(jid)) >= 2, timeout=20, what="two runs")
    d.kill()  # its ticks claimed ahead (2 s) stay PENDING in the store
    time.sleep(4)  # the downtime itself is what this test is about
    restarted = int(time.time() * 1000)
    d.start()
    wait_for(lambda: any(e["status"] == "SUCCEEDED" and _ms(e["scheduledAt"]) > restarted + 2_000
                         for e in d.executions(jid)), timeout=30, what="ordinary runs after the restart")  # fmt: skip
    # a slow start turns the first ticks after the restart into catch-ups too: wait for two
    # ordinary ones, whichever they are
    wait_for(lambda: d.status()["dispatchLagMs"]["samples"] >= 2, timeout=30, what="two ordinary runs measured")
    late = [e for e in d.events("execution.started") if e.get("dueBeforeStart")]
    assert late, "the ticks claimed ahead before the crash ran on the restart"
    assert all(e["origin"] == "schedule" and e["attempt"] == 1 and e["lagMs"] >= 2_000 for e in late), late
    # their lateness is the downtime: neither the status, the histogram nor the chart count it
    lag = d.status()["dispatchLagMs"]
    assert lag["samples"] >= 2 and lag["max"] < 2_000, lag
    samples = scrape(d)
    assert value(samples, "cronwheel_dispatch_lag_seconds_bucket", le="2.5") == value(samples, "cronwheel_dispatch_lag_seconds_count")
    minutes = d.get("/v1/status/activity").json()["lagHistory"]["minutes"]
    assert max(m["max"] or 0 for m in minutes) < 2_000, minutes
