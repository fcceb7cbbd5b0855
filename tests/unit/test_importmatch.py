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
