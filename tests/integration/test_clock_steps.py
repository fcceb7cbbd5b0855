"""The wall clock steps an hour forward or back (an NTP step, a VM resumed) under a running
scheduler: on a fake clock and a real SQLite store, no daemon, no sleeping.

* Forward: the ticks now in the past follow the job's misfire policy (run_once: the latest
  runs, the others are recorded skipped; skip: none runs), and the next ticks fire on time.
* Back: no tick runs twice (the hour is lived again, its ticks are not), and timers keep
  working: a job created after the step fires by the new clock, not an hour late.
* The dispatcher: after a step back a backoff keeps its instant (it does not fire at once);
  after a step forward the reaper waits before expiring leases.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from cronwheel.core.clock import FakeClock, StepDetector
from cronwheel.core.ids import new_job_id
from cronwheel.core.model import Execution, JobSpec, MisfirePolicy
from cronwheel.core.records import NewJob
from cronwheel.engine.dispatchloop import DEAF_REAP_PAUSE_SEC
from cronwheel.engine.runner import StoreRunner
from cronwheel.engine.scheduler import Scheduler
from cronwheel.obs.events import EventLog
from cronwheel.store.sqlite import SqliteStore
from tests.unit.test_dispatcher_tenants import ex, make

T = 1_767_229_200_000  # 2026-01-01T01:00:00Z
HOUR = 3_600_000
TARGET = {"python": "cronwheel.worker.noop:noop"}


def _scheduler(tmp_path: Path, jobs: list[NewJob], clock: FakeClock) -> tuple[Scheduler, list[Execution], list[Execution], io.StringIO, SqliteStore]:
    path = tmp_path / "cronwheel.db"
    store = SqliteStore.open(path)
    store.create_jobs(jobs, clock.now_ms())
    out = io.StringIO()
    claimed: list[Execution] = []
    skipped: list[Execution] = []
    sched = Scheduler(clock, StoreRunner(store, "writer"), StoreRunner(SqliteStore.open(path), "reader"),
                      EventLog("n1", out, fmt="json"), claimed.extend, lambda _ids: None, claim_ahead_ms=0)
    original = sched.events.emit

    def emit(event: str, **fields: object) -> dict[str, object]:
        if event == "execution.skipped":
            skipped.append(fields)  # type: ignore[arg-type]
        return original(event, **fields)

    sched.events.emit = emit  # type: ignore[method-assign]
    return sched, claimed, skipped, out, store


async def turn(sched: Scheduler, clock: FakeClock) -> None:
    """One scheduler turn at the clock's time (what ``Scheduler.run`` does, minus waiting)."""
    await sched.work(clock.now_ms())


def ticks(claimed: list[Execution], job_id: str) -> list[int]:
    return sorted(e.scheduled_at for e in claimed if e.job_id == job_id)


def test_a_step_forward_follows_the_misfire_policy_and_the_next_ticks_fire(tmp_path: Path) -> None:
    clock = FakeClock(T - 1000)
    once, skip = new_job_id(), new_job_id()
    jobs = [NewJob(once, JobSpec(target=TARGET, schedule="* * * * *", misfire=MisfirePolicy.RUN_ONCE), T),
            NewJob(skip, JobSpec(target=TARGET, schedule="* * * * *", misfire=MisfirePolicy.SKIP), T)]
    sched, claimed, skipped, out, _ = _scheduler(tmp_path, jobs, clock)

    async def scenario() -> None:
        await turn(sched, clock)
        clock.advance(1000)  # T: both run
        await turn(sched, clock)
        assert ticks(claimed, once) == [T] and ticks(claimed, skip) == [T]
        clock.set(T + HOUR + 500)  # the wall clock jumps an hour ahead
        clock.advance(500)
        await turn(sched, clock)
        assert ticks(claimed, once) == [T, T + HOUR], "run_once: the latest missed tick runs, once"
        assert ticks(claimed, skip) == [T, T + HOUR], "the tick that is due now (not missed) runs"
        assert any("misfire" in str(s.get("reason", "")) for s in skipped), skipped
        # timers keep working: the next minute fires on time
        clock.advance(60_000)
        await turn(sched, clock)
        assert ticks(claimed, once)[-1] == T + HOUR + 60_000 and ticks(claimed, skip)[-1] == T + HOUR + 60_000
        ids = [e.execution_id for e in claimed]
        assert len(ids) == len(set(ids))
        stepped = [json.loads(line) for line in out.getvalue().splitlines() if '"clock.stepped"' in line]
        assert len(stepped) == 1 and stepped[0]["stepMs"] == HOUR + 500

    asyncio.run(scenario())


def test_a_step_back_runs_no_tick_twice_and_new_timers_fire_by_the_new_clock(tmp_path: Path) -> None:
    clock = FakeClock(T - 1000)
    minutely = new_job_id()
    sched, claimed, _, out, store = _scheduler(
        tmp_path, [NewJob(minutely, JobSpec(target=TARGET, schedule="* * * * *"), T)], clock)

    async def scenario() -> None:
        await turn(sched, clock)
        clock.advance(1000)
        await turn(sched, clock)
        assert ticks(claimed, minutely) == [T]
        clock.set(T - HOUR)  # the wall clock goes back an hour
        await turn(sched, clock)
        # a one-off created after the step, due 30 s from the new now
        fresh = new_job_id()
        store.create_jobs([NewJob(fresh, JobSpec(target=TARGET, run_at=T - HOUR + 30_000), T - HOUR + 30_000)], clock.now_ms())
        sched.job_scheduled(fresh, T - HOUR + 30_000)
        await turn(sched, clock)  # the poke: a turn at once (nothing is due yet)
        for _ in range(5):  # live the repeated hour's first minutes again
            clock.advance(30_000)
            await turn(sched, clock)
        assert ticks(claimed, fresh) == [T - HOUR + 30_000], "a new timer fires by the new clock"
        assert ticks(claimed, minutely) == [T], "no tick of the repeated hour runs (again)"
        clock.set(T + 60_000)  # the clock catches up: the next tick after T fires once
        await turn(sched, clock)
        assert ticks(claimed, minutely) == [T, T + 60_000]
        stepped = [json.loads(line) for line in out.getvalue().splitlines() if '"clock.stepped"' in line]
        assert stepped and stepped[0]["stepMs"] == -HOUR

    asyncio.run(scenario())


def test_the_dispatcher_keeps_backoff_instants_and_pauses_the_reaper_after_a_step() -> None:
    async def main() -> None:
        d, _pool, _ = make({}, {})
        clock: FakeClock = d.clock  # type: ignore[assignment]
        now = clock.now_ms()
        d.check_clock(now)
        clock.set(now - HOUR)  # back an hour
        assert d.check_clock(clock.now_ms()) == -HOUR
        later = ex("t", 1)
        later.available_at = clock.now_ms() + 5_000  # a backoff: 5 s from the new now
        d.add([later])
        assert d.delayed.entries() == [(later.execution_id, later.available_at)] and not len(d.queue), \
            "it waits for its instant"
        clock.advance(5_000)
        fired = d.delayed.advance(clock.now_ms())
        assert fired == [later.execution_id], "and fires at it"
        clock.set(clock.now_ms() + HOUR)  # forward an hour
        assert d.check_clock(clock.now_ms()) == HOUR
        # the leases that ran out in the jump are spared until live ones have renewed
        before_the_step = clock.now_ms() - HOUR
        assert d.reap_cutoff.cutoff(clock.now_ms(), clock.monotonic()) == before_the_step
        clock.advance(int(DEAF_REAP_PAUSE_SEC * 1000))
        assert d.reap_cutoff.cutoff(clock.now_ms(), clock.monotonic()) == clock.now_ms()
        await d.stop()

    asyncio.run(main())


def test_the_step_detector() -> None:
    steps = StepDetector(tolerance_ms=2000)
    assert steps.observe(10_000, 1.0) == 0
    assert steps.observe(11_000, 2.0) == 0  # both moved a second
    assert steps.observe(12_500, 2.0) == 0  # 1.5 s: within the tolerance (a slow turn, NTP slew)
    assert steps.observe(12_500 + 3_600_000, 3.0) == 3_599_000
    assert steps.observe(12_500, 4.0) == -3_601_000
