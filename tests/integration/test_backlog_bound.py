"""A job whose runs nobody starts, under a running scheduler: on a fake clock and a real SQLite
store, no daemon, no sleeping. Its runs stop at the backlog bound; the job is then held: it
is claimed once a minute, and one SKIPPED record (reason ``backlog``) and one log line stand
for each minute's ticks, until one of its runs starts."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

from cronwheel.core.clock import FakeClock
from cronwheel.core.ids import new_job_id
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_WAITING_RUNS
from cronwheel.core.model import JobSpec
from cronwheel.core.planning import backlog_look_again
from cronwheel.core.records import NewJob
from tests.contract.conftest import start
from tests.integration.test_clock_steps import TARGET, ticks, turn
from tests.integration.test_clock_steps import _scheduler as scheduler

T = 1_767_229_200_000  # 2026-01-01T01:00:00Z
SEC = 1000


def test_an_every_second_job_nobody_starts_is_held_at_the_bound_one_record_a_minute(tmp_path: Path) -> None:
    clock = FakeClock(T - SEC)
    held = new_job_id()
    sched, claimed, skipped, out, store = scheduler(
        tmp_path, [NewJob(held, JobSpec(target=TARGET, schedule="@every 1s"), T)], clock
    )
    seconds = MAX_WAITING_RUNS + 130

    async def run_for(n: int) -> None:
        for _ in range(n):
            clock.advance(SEC)
            await turn(sched, clock)

    asyncio.run(run_for(seconds))
    assert len(ticks(claimed, held)) == MAX_WAITING_RUNS  # nothing started any of them
    assert len(store.ready_executions(clock.now_ms(), 10_000)) == MAX_WAITING_RUNS
    # 130 seconds at the bound: a record at its 100th second, then one at each look (about a
    # minute apart), each for the ticks until the next look, where one a tick made 130 of them
    looks = [T + MAX_WAITING_RUNS * SEC]
    while looks[-1] <= clock.now_ms():
        looks.append(-(-backlog_look_again(held, looks[-1]) // SEC) * SEC)
    reason = "backlog: 100 runs of this job are overdue and waiting to start; {} ticks skipped from {} to {}"
    assert [(s["executionId"], s["reason"]) for s in skipped] == [
        (f"{held}:{a}", reason.format((b - a) // SEC, format_instant(a), format_instant(b - SEC)))
        for a, b in itertools.pairwise(looks)
    ]
    assert 2 <= len(skipped) <= 5
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["reason"] for r in lines if r["event"] == "execution.skipped"] == [s["reason"] for s in skipped]
    next_look = looks[-1]
    assert store.get_job(held).next_run_at == next_look  # type: ignore[union-attr]

    # one of its runs starts: the job runs again at its next look, not before
    start(store, f"{held}:{T}", clock.now_ms())
    asyncio.run(run_for((next_look - clock.now_ms()) // SEC - 1))
    assert len(ticks(claimed, held)) == MAX_WAITING_RUNS
    asyncio.run(run_for(2))
    assert ticks(claimed, held)[-1] == next_look
