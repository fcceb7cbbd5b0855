"""Contract: what a method reported as done is there after closing and reopening the store."""

from __future__ import annotations

from cronwheel.core.model import ExecStatus, JobStatus, RetryPolicy
from cronwheel.core.records import Completion, CreateOutcome, EffectVerdict, Outcome
from cronwheel.store.base import Store
from tests.contract.conftest import (
    MIN,
    SEC,
    T0,
    StoreFactory,
    claim_all,
    create,
    new_job,
    one_off,
    start,
)
from tests.support.store_probe import list_effects, next_available_at, running_count


def test_everything_survives_close_and_reopen(store_factory: StoreFactory) -> None:
    s1 = store_factory()
    version = s1.schema_version()
    assert version >= 1
    keyed = new_job(key="k", request_hash="h", name="nightly", payload={"x": 1})
    paused = new_job()
    [cron_id, paused_id] = create(s1, keyed, paused)
    s1.set_job_status(paused_id, [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    flaky = one_off(T0, retry=RetryPolicy(max_attempts=1))
    create(s1, flaky)
    claim = claim_all(s1, T0)
    g = start(s1, f"{cron_id}:{T0}", T0)
    assert s1.record_effect(g.execution_id, "w1", g.lease_epoch, "k1", T0 + 1) is EffectVerdict.RECORDED
    gf = start(s1, f"{flaky.job_id}:{T0}", T0)
    s1.complete_executions([Completion(gf.execution_id, "w1", gf.lease_epoch, Outcome.FAILED, error="x")], T0 + 2)
    jobs_before = s1.list_jobs(limit=100)
    execs_before = {e.execution_id: s1.get_execution(e.execution_id) for e in claim.executions}
    s1.close()
    s1.close()  # idempotent

    s2 = store_factory()
    assert s2.schema_version() == version
    assert s2.list_jobs(limit=100) == jobs_before
    assert {eid: s2.get_execution(eid) for eid in execs_before} == execs_before
    running = s2.get_execution(g.execution_id)
    assert running is not None and running.status is ExecStatus.RUNNING and running.lease_epoch == g.lease_epoch
    assert list_effects(s2, g.execution_id) == [("k1", g.lease_epoch, T0 + 1)]
    assert [e.execution_id for e in s2.list_dead()] == [gf.execution_id]
    [replay] = s2.create_jobs([new_job(key="k", request_hash="h")], T0 + MIN)
    assert (replay.outcome, replay.job_id) == (CreateOutcome.REPLAYED, cron_id)
    # scheduling resumes from the stored next_run_at: the T0 tick is not claimed twice
    res = claim_all(s2, T0 + MIN)
    assert [e.execution_id for e in res.executions] == [f"{cron_id}:{T0 + MIN}"]
    assert running_count(s2) == 1
    assert s2.expire_leases(T0 + 2 * MIN + SEC, 10)[0].execution_id == g.execution_id


def test_two_handles_on_one_store_see_each_other(store_factory: StoreFactory) -> None:
    a, b = store_factory(), store_factory()
    [jid] = create(a, new_job())
    assert b.get_job(jid) is not None
    res_b = claim_all(b, T0)
    res_a = claim_all(a, T0)
    assert len(res_b.executions) == 1 and res_a.executions == []


def test_a_fresh_store_is_empty(store: Store) -> None:
    assert store.count_jobs() == 0
    assert store.count_executions() == 0
    assert store.next_due_at(list(range(64))) is None
    assert next_available_at(store) is None
    assert running_count(store) == 0
    assert isinstance(store.meta(), dict)
