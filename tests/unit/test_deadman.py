"""The dead-man's switch on a fake clock: the pure window logic (core.deadman), then the
window watcher (engine.notifications) over a real SQLite store, walked through a pause, a
run of failures and a downtime of every node, with no sleeping."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from cronwheel.core import deadman
from cronwheel.core import notify as nt
from cronwheel.core.clock import FakeClock
from cronwheel.core.model import JobSpec, JobStatus, RetryPolicy
from cronwheel.core.records import Completion, NewJob, Outcome, StartRequest
from cronwheel.engine.notifications import NotificationDeliverer
from cronwheel.engine.runner import StoreRunner
from cronwheel.obs.events import EventLog
from cronwheel.store.sqlite import SqliteStore

T0 = 1_767_225_600_000
MIN = 60_000
HOUR = 60 * MIN
DAY = 24 * HOUR


def test_the_docstrings_worked_example() -> None:
    w = deadman.armed(DAY, T0)
    assert w.deadline_at == T0 + DAY and deadman.check(w, T0 + DAY - 1) is None
    w = deadman.after_success(w, T0 + 22 * HOUR)
    assert w.deadline_at == T0 + DAY + 22 * HOUR
    missed = deadman.check(w, T0 + DAY + 22 * HOUR)  # paused meanwhile: nothing to see here
    assert missed is not None and missed.deadline_at == T0 + DAY + 22 * HOUR
    w = missed.window
    assert w.overdue_since == T0 + DAY + 22 * HOUR and w.deadline_at == T0 + 2 * DAY + 22 * HOUR
    assert deadman.overdue(w, T0 + 2 * DAY)
    # every node down from 2d 20:00 to 4d 03:00: one missed for the downtime, re-armed after now
    missed = deadman.check(w, T0 + 4 * DAY + 3 * HOUR)
    assert missed is not None and missed.deadline_at == T0 + 2 * DAY + 22 * HOUR
    assert missed.window.deadline_at == T0 + 4 * DAY + 22 * HOUR
    assert missed.window.overdue_since == T0 + DAY + 22 * HOUR  # overdue since the first miss
    w = deadman.after_success(missed.window, T0 + 4 * DAY + 5 * HOUR)
    assert w.deadline_at == T0 + 5 * DAY + 5 * HOUR and w.overdue_since is None
    assert not deadman.overdue(w, T0 + 5 * DAY)


def test_an_older_success_never_moves_the_deadline_back() -> None:
    w = deadman.after_success(deadman.armed(HOUR, T0), T0 + 50 * MIN)
    assert deadman.after_success(w, T0 + 10 * MIN).deadline_at == T0 + 110 * MIN


def test_a_clock_stepped_forward_fires_once() -> None:
    w = deadman.armed(HOUR, T0)
    missed = deadman.check(w, T0 + 365 * DAY)
    assert missed is not None and deadman.check(missed.window, T0 + 365 * DAY) is None


def test_windows_parse_and_format() -> None:
    assert nt.parse_window("26h") == 26 * HOUR and nt.format_window(26 * HOUR) == "26h"
    assert nt.parse_window(90) == 90_000 and nt.format_window(90_000) == "90s"
    for bad in ("0s", "soon", -5, True, "400d"):
        try:
            nt.parse_window(bad)
        except nt.RuleError as exc:
            assert exc.field == "expectSuccessWithin"
        else:
            raise AssertionError(bad)


def _watch(store: SqliteStore, clock: FakeClock) -> tuple[NotificationDeliverer, StoreRunner, io.StringIO]:
    out = io.StringIO()
    runner = StoreRunner(store, "writer")
    deliverer = NotificationDeliverer(clock, runner, EventLog("n", out, fmt="json"), owner="n-1",
                                      buckets=lambda: list(range(64)), http_allow=lambda _t: ())  # fmt: skip
    return deliverer, runner, out


def test_the_watcher_walks_a_window_through_pause_failure_and_downtime(tmp_path: Path) -> None:
    """A nightly job with a 26 h window, every node of it on a fake clock: paused, it is
    missed; failing, it is missed again a window later; after three days with every node
    down it is missed once; a success clears it. Each miss queues one notification."""
    clock = FakeClock(T0)
    rule = nt.rule_from_json({"on": "missed", "via": "command", "command": "true"})
    spec = JobSpec(target={"command": "backup"}, schedule="0 3 * * *", retry=RetryPolicy(max_attempts=1),
                   notify=(rule,), expect_success_within_ms=26 * HOUR)  # fmt: skip
    store = SqliteStore.open(tmp_path / "cw.db")
    store.create_jobs([NewJob("jbackup", spec, T0 + 3 * HOUR)], clock.now_ms())

    async def turn(deliverer: NotificationDeliverer) -> int:
        return await deliverer.check_windows()

    async def run() -> None:
        nonlocal store
        deliverer, runner, _ = _watch(store, clock)
        # day 1: paused before its first run
        store.set_job_status("jbackup", [JobStatus.ACTIVE], JobStatus.PAUSED, clock.now_ms())
        clock.advance(26 * HOUR - 1)
        assert await turn(deliverer) == 0
        clock.advance(1)
        assert await turn(deliverer) == 1 and await turn(deliverer) == 0
        # resumed, it runs at 03:00 and fails: the window is not moved by a failure
        store.set_job_status("jbackup", [JobStatus.PAUSED], JobStatus.ACTIVE, clock.now_ms(), next_run_at=T0 + 27 * HOUR)
        clock.set(T0 + 27 * HOUR)
        [ex] = store.claim_due(list(range(64)), clock.now_ms(), 10).executions
        [g] = store.start_executions([StartRequest(ex.execution_id, "w")], clock.now_ms())
        store.complete_executions([Completion(ex.execution_id, "w", g.lease_epoch, Outcome.FAILED)], clock.now_ms())
        clock.set(T0 + 52 * HOUR - 1)
        assert await turn(deliverer) == 0
        clock.set(T0 + 52 * HOUR)
        assert await turn(deliverer) == 1
        runner.close()
        # every node down for three days: the window is in the store, and fires once on return
        clock.set(T0 + 52 * HOUR + 3 * DAY)
        store = SqliteStore.open(tmp_path / "cw.db")
        deliverer, runner, _ = _watch(store, clock)
        assert await turn(deliverer) == 1 and await turn(deliverer) == 0
        job = store.get_job("jbackup")
        assert job is not None and deadman.overdue(job.window, clock.now_ms())
        # a success ends it: no longer overdue, the next deadline 26 h after it
        [ex2] = [e for e in store.claim_due(list(range(64)), clock.now_ms(), 10).executions]
        [g2] = store.start_executions([StartRequest(ex2.execution_id, "w")], clock.now_ms())
        store.complete_executions([Completion(ex2.execution_id, "w", g2.lease_epoch, Outcome.SUCCEEDED)], clock.now_ms())
        job = store.get_job("jbackup")
        assert job is not None and job.window is not None and not deadman.overdue(job.window, clock.now_ms())
        assert job.window.deadline_at == clock.now_ms() + 26 * HOUR
        missed = [n for n in store.list_notifications(job_id="jbackup") if n.event == "missed"]
        assert len(missed) == 3 and len({n.notification_id for n in missed}) == 3
        runner.close()

    asyncio.run(run())
