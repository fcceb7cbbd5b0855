"""engine.submission.Submitter's log of an outage, on a fake clock: every try of every
submission is a ``job.submit_retry``, but only the outage's first and then one a minute are
printed (with ``suppressed``), and one ``job.submit_recovered`` ends it (the first
submission committed after it)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cronwheel.core.clock import FakeClock
from cronwheel.engine.runner import StoreRunner
from cronwheel.engine.scheduler import Scheduler
from cronwheel.engine.submission import Submitter
from cronwheel.obs.events import EventLog
from cronwheel.store.base import StoreUnavailable
from cronwheel.store.sqlite import SqliteStore

DOWN = StoreUnavailable("postgresql store at db1:5432 unavailable: connection refused")


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[Submitter, FakeClock, EventLog, io.StringIO]]:
    clock, out = FakeClock(), io.StringIO()
    events = EventLog("n", out, fmt="json")
    runner = StoreRunner(SqliteStore.open(tmp_path / "cw.db"), "writer")
    scheduler = Scheduler(clock, runner, runner, events, on_claimed=lambda _x: None, on_replaced=lambda _x: None)
    yield Submitter(runner, runner, clock, events, scheduler, retry_ms=3_000), clock, events, out
    runner.close()


def printed(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_an_outage_is_a_retry_line_a_minute_and_one_recovery(parts: tuple[Submitter, FakeClock, EventLog, io.StringIO]) -> None:
    submitter, clock, events, out = parts
    for _ in range(130):  # 130 s of 30 submissions a second, each tried 6 times a second
        for i in range(180):
            submitter.retrying(f"j{i}", 1, 2, DOWN)
        clock.advance(1_000)
    submitter.store_answered()
    submitter.store_answered()  # later submissions: nothing more to say
    lines = printed(out)
    assert [(e["event"], e["level"], e.get("suppressed")) for e in lines] == [
        ("job.submit_retry", "warning", 0),
        ("job.submit_retry", "warning", 60 * 180 - 1),  # a minute later, with those held back
        ("job.submit_retry", "warning", 60 * 180 - 1),
        ("job.submit_recovered", "info", None),
    ]
    assert lines[0]["error"] == str(DOWN) and lines[0]["jobId"] == "j0" and lines[0]["attempt"] == 2
    assert lines[-1]["retries"] == 130 * 180 and lines[-1]["downMs"] == 130_000
    assert events.counts["job.submit_retry"] == 130 * 180  # every try is still counted


def test_the_next_outage_is_said_at_once(parts: tuple[Submitter, FakeClock, EventLog, io.StringIO]) -> None:
    submitter, clock, _events, out = parts
    submitter.store_answered()  # no outage: nothing to say
    submitter.retrying("j1", 3, 2, DOWN)
    clock.advance(2_000)
    submitter.store_answered()
    clock.advance(5_000)  # within the minute of the first outage's line
    submitter.retrying("j2", 1, 2, DOWN)
    assert [(e["event"], e.get("jobs"), e.get("downMs")) for e in printed(out)] == [
        ("job.submit_retry", 3, None), ("job.submit_recovered", None, 2_000), ("job.submit_retry", 1, None),
    ]
