"""Which import entries are already there (core/importmatch.py): the very same job only, and
one job for one entry."""

from __future__ import annotations

from typing import Any

from cronwheel.core.importmatch import already_there


def job(job_id: str, **members: Any) -> dict[str, Any]:
    """An API job object as the daemon answers it (defaults spelled out)."""
    return {"jobId": job_id, "status": "ACTIVE", "timezone": "UTC", "target": {"queue": "sync"}, "payload": None,
            "retryPolicy": {"maxAttempts": 3}, "timeoutSec": 30.0, "priority": "default", "calendars": [],
            "notify": [], **members}  # fmt: skip


def test_a_job_alike_but_for_its_name_payload_or_calendars_is_another() -> None:
    us = job("j1", name="sync-us", schedule="0 9 * * *", payload={"region": "us"})
    entry = {"schedule": "0 9 * * *", "queue": "sync"}
    assert already_there([{**entry, "name": "sync-eu", "payload": {"region": "us"}}], [us]) == [None]
    assert already_there([{**entry, "name": "sync-us", "payload": {"region": "eu"}}], [us]) == [None]
    assert already_there([{**entry, "payload": {"region": "us"}, "calendars": ["holidays"]}], [us]) == [None]
    assert already_there([{**entry, "name": "sync-us", "payload": {"region": "us"}}], [us]) == ["j1"]
    # what the entry leaves out of its settings is not compared (a crontab line has no name)
    assert already_there([{**entry, "payload": {"region": "us"}, "timezone": "UTC"}], [us]) == ["j1"]
    assert already_there([{**entry, "payload": {"region": "us"}, "retryPolicy": {"maxAttempts": 4}}], [us]) == [None]


def test_one_job_is_there_for_one_entry_and_the_exact_one_first() -> None:
    plain = job("j1", schedule="@daily", target={"command": "x"})
    retried = job("j2", schedule="@daily", target={"command": "x"}, retryPolicy={"maxAttempts": 7})
    line = {"schedule": "@daily", "command": "x"}
    assert already_there([line, line, line], [plain]) == ["j1", None, None]
    # the bare line agrees with both, the one with retries with j2 only: each gets its own
    assert already_there([line, {**line, "retryPolicy": {"maxAttempts": 7}}], [retried, plain]) == ["j1", "j2"]


def test_a_schedule_is_compared_by_when_it_fires_not_how_it_is_written() -> None:
    daily = job("j1", schedule="@daily", target={"command": "x"})
    for same in ("0 0 * * *", "0 0 0 */1 * *", " 0  0 * * 0-7", "@midnight"):
        assert already_there([{"schedule": same, "command": "x"}], [daily]) == ["j1"], same
    for other in ("0 0 1 * *", "0 0 * * 1", "0 0 * * * *"):
        assert already_there([{"schedule": other, "command": "x"}], [daily]) == [None], other
    # in another zone, the same words fire at other instants
    assert already_there([{"schedule": "0 0 * * *", "command": "x", "timezone": "Europe/Paris"}], [daily]) == [None]
    # day-of-month and day-of-week OR-ed: the 1st and every Monday is not the 1st
    first = job("j2", schedule="0 0 1 * *", target={"command": "x"})
    assert already_there([{"schedule": "0 0 1 * 1", "command": "x"}], [first]) == [None]
    assert already_there([{"schedule": "0 0 1 JAN-DEC ?", "command": "x"}], [first]) == ["j2"]


def test_hashed_schedules_are_that_very_hash_only() -> None:
    # H hashes the job's id, which an imported line's new job does not share: H is H, never
    # the minute it came to for this job; @every's anchor likewise
    spread = job("j1", schedule="H 3 * * *", target={"command": "x"})
    assert already_there([{"schedule": "H(0-59) 3 * * *", "command": "x"}], [spread]) == ["j1"]
    assert already_there([{"schedule": "H 4 * * *", "command": "x"}], [spread]) == [None]
    minutes = [{"schedule": f"{m} 3 * * *", "command": "x"} for m in range(60)]
    assert already_there(minutes, [spread]) == [None] * 60
    every = job("j2", schedule="@every 5m", target={"command": "x"})
    assert already_there([{"schedule": "@every 300s", "command": "x"}], [every]) == ["j2"]
    assert already_there([{"schedule": "*/5 * * * *", "command": "x"}], [every]) == [None]


def test_one_offs_and_schedules_that_do_not_parse() -> None:
    once = job("j1", runAt="2030-01-01T00:00:00.000Z", target={"command": "x"})
    # an instant given as a schedule is the daemon's runAt; a relative one is never the same
    assert already_there([{"schedule": "2030-01-01T01:00:00+01:00", "command": "x"}], [once]) == ["j1"]
    assert already_there([{"runAt": "2030-01-01T00:00:00Z", "command": "x"}], [once]) == ["j1"]
    assert already_there([{"schedule": "+30s", "command": "x"}, {"runAt": "+30s", "command": "x"}], [once]) == [None, None]
    # text that does not parse is compared as text (the daemon refuses it), and never crashes
    daily = job("j2", schedule="@daily", target={"command": "x"})
    bad = [{"schedule": s, "command": "x"} for s in ("bogus", "0 0 30 2 *", "", 7, None, ["@daily"])]
    assert already_there(bad, [daily]) == [None] * len(bad)


def test_an_export_without_its_webhook_rules_is_the_job_it_came_from() -> None:
    """`export --format json` leaves webhook rules out (their secrets are never shown): a job
    with a webhook and an email rule came back as an entry with the email rule alone, and
    importing the export on the same daemon created that job a second time (a job with the
    webhook rule alone matched: its entry stated no rules)."""
    hook = {"on": "dead", "via": "webhook", "url": "https://hooks.example.com/cw", "secret": "********"}
    mail = {"on": "missed", "via": "email", "to": ["ops@example.com"]}
    both = job("j1", schedule="0 3 * * *", target={"command": "backup.sh"}, notify=[hook, mail])
    exported = {"schedule": "0 3 * * *", "command": "backup.sh", "notify": [mail]}
    assert already_there([exported], [both]) == ["j1"]
    # the rules it states still count: another rule, or none of the job's, is another job
    other = {"on": "failure", "via": "email", "to": ["ops@example.com"]}
    assert already_there([{**exported, "notify": [other]}], [both]) == [None]
    assert already_there([exported], [job("j2", schedule="0 3 * * *", target={"command": "backup.sh"}, notify=[hook])]) == [None]
