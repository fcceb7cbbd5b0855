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
    writer = StoreRunner(SqliteStore.open(path), "writer")
    reader = StoreRunner(SqliteStore.open(path), "reader")
    sched = Scheduler(clock, writer, reader, EventLog("n1", io.StringIO(), fmt="json"), claimed.extend, lambda _ids: None,
                      claim_ahead_ms=2000, claim_batch=5000)

    async def scenario() -> None:
        await sched._reload(clock.now_ms())
        herd_lead = 2000 + int((HERD + 1) / sched.lead.rate * 1000 * SAFETY)
        assert herd_lead > 3000
        assert sched.wheel.deadline_of(herd[0].job_id) == T - herd_lead
        assert sched.wheel.deadline_of(guarded_id) == T - herd_lead
        assert sched.wheel.deadline_of(ordinary_id) == T + 3000 - 2000

        clock.advance(20_000 - herd_lead)  # the herd's lead begins: the whole second is claimed
        fired = sched.wheel.advance(clock.now_ms())
        assert len(fired) == HERD + 1
        await sched._claim(clock.now_ms(), fired)
        assert len(claimed) == HERD
        assert {ex.scheduled_at for ex in claimed} == {T}
        assert all(ex.available_at >= T for ex in claimed)  # nothing becomes runnable early
        assert ordinary_id not in {ex.job_id for ex in claimed}
        # the guarded job was not claimed early; it waits in the wheel for its exact tick
        assert guarded_id not in {ex.job_id for ex in claimed}
        assert sched.wheel.deadline_of(guarded_id) == T

        clock.advance(herd_lead)  # T: the guarded job's tick
        fired = sched.wheel.advance(clock.now_ms())
        await sched._claim(clock.now_ms(), fired)
        assert guarded_id in {ex.job_id for ex in claimed}

        clock.advance(1000)  # T + 1 s: the ordinary job's base lead begins
        fired = sched.wheel.advance(clock.now_ms())
        await sched._claim(clock.now_ms(), fired)
        assert ordinary_id in {ex.job_id for ex in claimed}

    try:
        asyncio.run(scenario())
    finally:
        writer.close()
        reader.close()


def test_a_reload_leaves_armed_jobs_in_place_and_moves_only_what_changed(tmp_path: Path) -> None:
    """The horizon is reloaded every few seconds while a herd waits in it. A job armed where
    the reload would arm it again keeps its wheel entry (and so its place among the ties of
    its deadline); a job whose next run moved, and a herd whose lead grew, are re-armed."""
    path = tmp_path / "cronwheel.db"
    store = SqliteStore.open(path)
    herd = [NewJob(new_job_id(), JobSpec(target=TARGET, run_at=T), T) for _ in range(1200)]
    moved_spec = JobSpec(target=TARGET, run_at=T + 10_000)
    moved = NewJob(new_job_id(), moved_spec, T + 10_000)
    store.create_jobs([*herd, moved], T - 60_000)

    clock = FakeClock(T - 20_000)
    writer = StoreRunner(SqliteStore.open(path), "writer")
    reader = StoreRunner(SqliteStore.open(path), "reader")
    sched = Scheduler(clock, writer, reader, EventLog("n1", io.StringIO(), fmt="json"), lambda _ex: None,
                      lambda _ids: None, claim_ahead_ms=2000)  # fmt: skip
    sched.lead.rate = 1000.0  # claims/s: 1,200 jobs in one second make a herd

    def herd_lead(count: int) -> int:
        return 2000 + int(count / sched.lead.rate * 1000 * SAFETY)

    async def scenario() -> None:
        await sched._reload(clock.now_ms())
        assert {sched.wheel.deadline_of(j.job_id) for j in herd} == {T - herd_lead(1200)}

        # the same second grows: its lead grows, and the reload re-arms the whole second by it
        later = [NewJob(new_job_id(), JobSpec(target=TARGET, run_at=T), T) for _ in range(800)]
        store.create_jobs(later, clock.now_ms())
        clock.advance(5000)
        await sched._reload(clock.now_ms())
        ids = sorted(j.job_id for j in [*herd, *later])  # a reload arms ties in id order
        assert {sched.wheel.deadline_of(i) for i in ids} == {T - herd_lead(2000)}

        # something re-arms the first of them (an API call): it is now the last of the ties;
        # and one job's next run moves in the store
        sched.job_scheduled(ids[0], T)
        store.update_job(moved.job_id, moved_spec, T + 15_000, True, clock.now_ms())
        clock.advance(5000)
        await sched._reload(clock.now_ms())
        assert sched.wheel.deadline_of(moved.job_id) == T + 15_000 - 2000
        fired = sched.wheel.advance(T - herd_lead(2000))
        assert [key for _, key in fired] == [*ids[1:], ids[0]]  # the reload re-sequenced nothing

    try:
        asyncio.run(scenario())
    finally:
        store.close()
        writer.close()
        reader.close()
