"""A herd is claimed before it is due (engine.scheduler + core.claimlead), on a real SQLite
store and a fake clock: no sleeping, no daemon.

With a fixed 2 s claim-ahead the tail of a 100,000-job second was claimed after its tick, so
those executions (and any ``high`` job among them) started late whatever their tier. The
scheduler now arms a herd second's jobs early enough for the claim to finish before the tick.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from cronwheel.core.claimlead import SAFETY
from cronwheel.core.clock import FakeClock
from cronwheel.core.ids import new_job_id
from cronwheel.core.model import Execution, JobSpec, OverlapPolicy
from cronwheel.core.records import NewJob
from cronwheel.engine.runner import StoreRunner
from cronwheel.engine.scheduler import Scheduler
from cronwheel.obs.events import EventLog
from cronwheel.store.sqlite import SqliteStore

T = 1_767_229_200_000  # 2026-01-01T01:00:00Z, a top of the hour
HERD = 25_000
TARGET = {"python": "cronwheel.worker.noop:noop"}
NEVER = 10**12  # ms: no sweep, no periodic reload, unless a test asks for one


def _scheduler(path: Path, clock: FakeClock, claimed: list[Execution]) -> Scheduler:
    writer = StoreRunner(SqliteStore.open(path), "writer")
    reader = StoreRunner(SqliteStore.open(path), "reader")
    return Scheduler(clock, writer, reader, EventLog("n1", io.StringIO(), fmt="json"), claimed.extend,
                     lambda _ids: None, claim_ahead_ms=2000, claim_batch=5000, sweep_ms=NEVER, reload_ms=NEVER)  # fmt: skip


def _close(sched: Scheduler) -> None:
    sched.writer.close()
    sched.reader.close()


def test_a_herd_is_claimed_before_its_tick_and_ordinary_jobs_keep_the_base_lead(tmp_path: Path) -> None:
    path = tmp_path / "cronwheel.db"
    store = SqliteStore.open(path)
    herd = [NewJob(new_job_id(), JobSpec(target=TARGET, run_at=T, tenant=f"t{i % 10}"), T) for i in range(HERD)]
    guarded_id = new_job_id()  # recurring, overlap forbid, in the herd second: claimed only at T
    guarded = NewJob(guarded_id, JobSpec(target=TARGET, schedule="* * * * * *", overlap=OverlapPolicy.FORBID), T)
    ordinary_id = new_job_id()  # alone in its second: the base lead
    ordinary = NewJob(ordinary_id, JobSpec(target=TARGET, run_at=T + 3000), T + 3000)
    jobs = [*herd, guarded, ordinary]
    for i in range(0, len(jobs), 5000):
        store.create_jobs(jobs[i : i + 5000], T - 60_000)
    store.close()

    clock = FakeClock(T - 20_000)
    claimed: list[Execution] = []
    sched = _scheduler(path, clock, claimed)

    async def scenario() -> None:
        assert await sched.work(clock.now_ms())  # the first turn loads the horizon (and sweeps once)
        assert claimed == []
        herd_lead = 2000 + int((HERD + 1) / sched.lead.rate * 1000 * SAFETY)
        assert herd_lead > 3000
        assert len(sched.wheel) == 2  # one entry per instant, however many jobs share it
        assert sched.wheel.deadline_of(T) == T - herd_lead
        assert sched.wheel.deadline_of(T + 3000) == T + 3000 - 2000
        assert sched.horizon_jobs == HERD + 2

        clock.advance(20_000 - herd_lead - 1)
        assert not await sched.work(clock.now_ms())  # not yet
        clock.advance(1)  # the herd's lead begins: the whole second is claimed
        assert await sched.work(clock.now_ms())
        assert len(claimed) == HERD
        assert {ex.scheduled_at for ex in claimed} == {T}
        assert all(ex.available_at >= T for ex in claimed)  # nothing becomes runnable early
        assert ordinary_id not in {ex.job_id for ex in claimed}
        # the guarded job was not claimed early: the wheel wakes again at its exact tick
        assert guarded_id not in {ex.job_id for ex in claimed}
        assert sched.wheel.deadline_of(T) == T
        assert sched.horizon_jobs == 2  # the guarded job and the ordinary one

        clock.advance(herd_lead - 1)
        assert not await sched.work(clock.now_ms())
        clock.advance(1)  # T: the guarded job's tick
        assert await sched.work(clock.now_ms())
        assert guarded_id in {ex.job_id for ex in claimed}

        clock.advance(1000)  # T + 1 s: the ordinary job's base lead begins
        assert await sched.work(clock.now_ms())
        assert ordinary_id in {ex.job_id for ex in claimed}

    try:
        asyncio.run(scenario())
    finally:
        _close(sched)


def test_a_reload_moves_only_what_changed_and_forgets_instants_nobody_is_due_at(tmp_path: Path) -> None:
    """The horizon is reloaded every few seconds while a herd waits in it: a herd whose lead
    grew is re-armed by it, a next run that moved is armed at its new instant and its old
    instant forgotten, and an instant re-armed at its tick after its early claim stays so
    (it is not claimed again for the reload's sake)."""
    path = tmp_path / "cronwheel.db"
    store = SqliteStore.open(path)
    herd = [NewJob(new_job_id(), JobSpec(target=TARGET, run_at=T), T) for _ in range(1200)]
    moved_spec = JobSpec(target=TARGET, run_at=T + 10_000)
    moved = NewJob(new_job_id(), moved_spec, T + 10_000)
    store.create_jobs([*herd, moved], T - 60_000)

    clock = FakeClock(T - 20_000)
    claimed: list[Execution] = []
    sched = _scheduler(path, clock, claimed)
    sched.lead.rate = 1000.0  # claims/s: 1,200 jobs in one second make a herd

    def herd_lead(count: int) -> int:
        return 2000 + int(count / sched.lead.rate * 1000 * SAFETY)

    async def scenario() -> None:
        await sched.work(clock.now_ms())
        assert sched.wheel.deadline_of(T) == T - herd_lead(1200)

        # the same second grows: its lead grows, and the reload re-arms the second by it
        later = [NewJob(new_job_id(), JobSpec(target=TARGET, run_at=T), T) for _ in range(800)]
        store.create_jobs(later, clock.now_ms())
        clock.advance(5000)
        await sched._reload(clock.now_ms())
        assert sched.wheel.deadline_of(T) == T - herd_lead(2000)
        assert sched.horizon_jobs == 2001

        # one job's next run moves in the store: its new instant is armed, the old forgotten
        store.update_job(moved.job_id, moved_spec, T + 15_000, True, clock.now_ms())
        clock.advance(5000)
        await sched._reload(clock.now_ms())
        assert sched.wheel.deadline_of(T + 15_000) == T + 15_000 - 2000
        assert T + 10_000 not in sched.wheel
        assert sorted(tick for tick, _ in sched.wheel.entries()) == [T, T + 15_000]

        clock.set(T - herd_lead(2000))  # the herd's lead: claimed, and woken again at T
        assert await sched.work(clock.now_ms())
        assert len(claimed) == 2000 and sched.wheel.deadline_of(T) == T
        # a herd second claimed early is not due to the store any more: a reload forgets it
        await sched._reload(clock.now_ms())
        assert T not in sched.wheel
        assert not await sched.work(clock.now_ms())

    try:
        asyncio.run(scenario())
    finally:
        store.close()
        _close(sched)


def test_an_instant_whose_lead_passed_is_claimed_at_once_and_woken_again_at_the_tick(tmp_path: Path) -> None:
    """A job scheduled (an API call) for an instant whose claim lead has already begun is
    claimed on the next turn; a guarded job among them waits for its tick, and the wheel
    wakes for it then. A reload in between neither loses that wake nor claims again."""
    path = tmp_path / "cronwheel.db"
    SqliteStore.open(path).close()
    clock = FakeClock(T - 10_000)
    claimed: list[Execution] = []
    sched = _scheduler(path, clock, claimed)
    store = SqliteStore.open(path)

    async def scenario() -> None:
        assert await sched.work(clock.now_ms())
        assert len(sched.wheel) == 0
        clock.set(T - 1000)  # inside the 2 s base lead of T
        soon, guarded = new_job_id(), new_job_id()
        store.create_jobs([NewJob(soon, JobSpec(target=TARGET, run_at=T), T),
                           NewJob(guarded, JobSpec(target=TARGET, schedule="* * * * * *",
                                                   overlap=OverlapPolicy.FORBID), T)], clock.now_ms())  # fmt: skip
        sched.job_scheduled(soon, T)
        sched.job_scheduled(guarded, T)
        assert await sched.work(clock.now_ms())  # its lead has passed: claimed at once
        assert [ex.job_id for ex in claimed] == [soon]
        assert sched.wheel.deadline_of(T) == T  # ... and woken again at the tick itself
        await sched._reload(clock.now_ms())
        assert sched.wheel.deadline_of(T) == T
        assert not await sched.work(clock.now_ms())
        clock.set(T)
        assert await sched.work(clock.now_ms())
        assert [ex.job_id for ex in claimed] == [soon, guarded]

    try:
        asyncio.run(scenario())
    finally:
        store.close()
        _close(sched)
