"""A job whose runs nobody starts, under a running scheduler: on a fake clock and a real SQLite
store, no daemon, no sleeping. Its runs stop at the backlog bound, every later tick is
recorded SKIPPED (reason ``backlog``), and the log says so once a minute per job rather than
once a tick."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cronwheel.core.clock import FakeClock
from cronwheel.core.ids import new_job_id
from cronwheel.core.limits import MAX_WAITING_RUNS
from cronwheel.core.model import JobSpec
from cronwheel.core.records import NewJob
from tests.integration.test_clock_steps import TARGET, ticks, turn
from tests.integration.test_clock_steps import _scheduler as scheduler

T = 1_767_229_200_000  # 2026-01-01T01:00:00Z
SEC = 1000


def test_an_every_second_job_nobody_starts_stops_at_the_bound_and_logs_once_a_minute(tmp_path: Path) -> None:
    clock = FakeClock(T - SEC)
    held = new_job_id()
    sched, claimed, skipped, out, store = scheduler(
        tmp_path, [NewJob(held, JobSpec(target=TARGET, schedule="@every 1s"), T)], clock
    )
    seconds = MAX_WAITING_RUNS + 130

    async def scenario() -> None:
        for _ in range(seconds):
            clock.advance(SEC)
            await turn(sched, clock)

    asyncio.run(scenario())
    assert len(ticks(claimed, held)) == MAX_WAITING_RUNS  # nothing started any of them
    assert len(store.ready_executions(clock.now_ms(), 10_000)) == MAX_WAITING_RUNS
    assert len(skipped) == seconds - MAX_WAITING_RUNS
    assert {s["reason"] for s in skipped} == {f"backlog: {MAX_WAITING_RUNS} runs of this job are overdue and waiting to start"}
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    # 130 skipped ticks: a line at the first, then one a minute for the 59 held back since
    # (at debug level, which this log does not print)
    assert [r.get("suppressed") for r in lines if r["event"] == "execution.skipped"] == [0, 59, 59]
    assert sched.events.counts["execution.skipped"] == len(skipped)  # every one still counted
