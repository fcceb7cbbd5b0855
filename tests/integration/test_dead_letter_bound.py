"""The retention on a real daemon: each job keeps its newest dead letters and dead
notifications (``dlq_keep_last``), saying what it deleted, and the retention's keys changed by a
SIGHUP are the ones its next pass uses (a shortened interval too), not only the ones
``config.reloaded`` names."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import Daemon
from tests.support.wait import wait_for


def dead_letters(d: Daemon, job_id: str) -> list[str]:
    return sorted(e["executionId"] for e in d.executions(job_id) if e["status"] == "DEAD")


def test_a_job_that_keeps_failing_keeps_only_its_newest_dead_letters(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(args=("--dlq-keep-last", "2", "--retention-interval-ms", "300"))
    failing = d.add_job({"schedule": "* * * * * *", "command": "exit 3", "retryPolicy": {"maxAttempts": 1}})
    first = wait_for(lambda: dead_letters(d, failing["jobId"])[:1], 30, what="a first dead letter")[0]
    pruned = d.wait_event("dlq.pruned", timeout=30, jobId=failing["jobId"])
    assert pruned["level"] == "warning" and pruned["tenant"] == "default"
    assert pruned["count"] >= 1 and pruned["kept"] == 2, pruned
    wait_for(lambda: first not in dead_letters(d, failing["jobId"]), 30, what="the oldest dead letter gone")
    assert d.get("/v1/dlq?limit=100").status == 200
    assert d.wait_event("retention.pruned", timeout=30)["deadLetters"] >= 1


def test_a_sighup_changes_what_the_next_retention_pass_keeps(
    tmp_path: Path, make_daemon: Callable[..., Daemon]
) -> None:
    """The reload said it applied a new keep_last, but the retention kept the values it was
    started with until a restart."""
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('retention = "1s"\nkeep_last = 1000\ndlq_keep_last = 1000\nretention_interval_ms = 300\n')
    d = make_daemon(args=("--config", str(conf)))
    ok = d.add_job({"schedule": "* * * * * *", "command": "true"})
    failing = d.add_job({"schedule": "* * * * * *", "command": "exit 3", "retryPolicy": {"maxAttempts": 1}})
    wait_for(lambda: len([e for e in d.executions(ok["jobId"]) if e["status"] == "SUCCEEDED"]) >= 5, 60,
             what="five runs of the good job")
    wait_for(lambda: len(dead_letters(d, failing["jobId"])) >= 5, 60, what="five dead letters")

    conf.write_text('retention = "1s"\nkeep_last = 2\ndlq_keep_last = 3\nretention_interval_ms = 300\n')
    os.kill(d.pid, signal.SIGHUP)
    reloaded = d.wait_event("config.reloaded", timeout=20)
    assert set(reloaded["changed"]) == {"keep_last", "dlq_keep_last"}, reloaded
    pruned = d.wait_event("dlq.pruned", timeout=30, jobId=failing["jobId"])
    assert pruned["kept"] == 3, pruned
    # one a second go on running: the history is back at (about) its new bound after each pass
    wait_for(lambda: len(d.executions(ok["jobId"])) <= 4, 30, what="the good job's history cut to keep_last")


def test_a_job_whose_receiver_is_gone_keeps_only_its_newest_dead_notifications(
    make_daemon: Callable[..., Daemon],
) -> None:
    """Each failure of a job told to a receiver that is gone for good left a dead
    notification (up to its rule's maxPerHour) for ever: bounded per job as dead letters are."""
    d = make_daemon(args=("--dlq-keep-last", "2", "--retention-interval-ms", "300"))
    rule = {"on": "failure", "via": "webhook", "url": "http://127.0.0.1:9/nobody", "secret": "s3cret-for-the-hmac-signature",
            "maxAttempts": 1}
    failing = d.add_job({"schedule": "* * * * * *", "command": "exit 3", "retryPolicy": {"maxAttempts": 1},
                         "notify": [rule]})

    def dead() -> list[str]:
        found = d.get(f"/v1/notifications?jobId={failing['jobId']}&status=DEAD&limit=100").json()["notifications"]
        return sorted(n["notificationId"] for n in found)

    first = wait_for(lambda: dead()[:1], 30, what="a first dead notification")[0]
    pruned = d.wait_event("dlq.pruned", timeout=30, jobId=failing["jobId"], queue="notifications")
    assert pruned["level"] == "warning" and pruned["count"] >= 1 and pruned["kept"] == 2, pruned
    wait_for(lambda: first not in dead(), 30, what="the oldest dead notification gone")
    assert d.wait_event("retention.pruned", timeout=30)["deadNotifications"] >= 1


def test_a_sighup_that_shortens_the_retention_interval_is_not_waited_out(
    tmp_path: Path, make_daemon: Callable[..., Daemon]
) -> None:
    """The retention slept the old interval through before reading the new one: an hour, here."""
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('retention = "1s"\nkeep_last = 1\nretention_interval_ms = 3600000\n')
    d = make_daemon(args=("--config", str(conf)))
    job = d.add_job({"schedule": "* * * * * *", "command": "true"})
    wait_for(lambda: len(d.executions(job["jobId"])) >= 4, 60, what="four runs")
    conf.write_text('retention = "1s"\nkeep_last = 1\nretention_interval_ms = 300\n')
    os.kill(d.pid, signal.SIGHUP)
    assert set(d.wait_event("config.reloaded", timeout=20)["changed"]) == {"retention_interval_ms"}
    assert d.wait_event("retention.pruned", timeout=30)["executions"] >= 1


def test_the_dead_notifications_of_a_job_gone_go_once_the_retention_passed_them(
    make_daemon: Callable[..., Daemon],
) -> None:
    """The per-job bound held only while the job was there: a one-off that ran, whose receiver
    was gone, left the store with the retention and its dead notification stayed for good (a
    tenant churning such jobs piled them up without bound)."""
    d = make_daemon(args=("--retention", "1s", "--retention-interval-ms", "300"))
    rule = {"on": "success", "via": "webhook", "url": "http://127.0.0.1:9/nobody", "secret": "s3cret-for-the-hmac-signature",
            "maxAttempts": 1}
    once = d.add_job({"runAt": "2000-01-01T00:00:00Z", "command": "true", "notify": [rule]})

    def dead() -> list[dict]:
        found = d.get(f"/v1/notifications?jobId={once['jobId']}&status=DEAD&limit=100").json()["notifications"]
        return list(found)

    wait_for(dead, 30, what="the one-off's dead notification")
    wait_for(lambda: d.get(f"/v1/jobs/{once['jobId']}").status == 404, 30, what="the settled one-off gone")
    assert d.wait_event("retention.pruned", timeout=30, deadNotificationsOfGoneJobs=1)
    assert dead() == []
