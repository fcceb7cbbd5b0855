"""Contract: a job's name is unique per tenant among live jobs, and a job is updated in place."""

from __future__ import annotations

import threading
from dataclasses import replace

from cronwheel.core.ids import execution_id
from cronwheel.core.model import ExecStatus, JobStatus, Priority, RetryPolicy, RunAs
from cronwheel.core.records import CreateOutcome, UpdateOutcome
from cronwheel.store.base import Store
from cronwheel.store.common import SUPERSEDED
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

# ---------------------------------------------------------------- names


def test_a_second_live_job_of_the_same_name_is_refused_naming_the_first(store: Store) -> None:
    [first] = create(store, new_job(name="ev"))
    [result] = store.create_jobs([new_job(name="ev")], T0)
    assert (result.outcome, result.job_id) == (CreateOutcome.NAME_TAKEN, first)
    assert [j.id for j in store.find_jobs_by_name("ev")] == [first]
    # another tenant may use the name; so may a job without one
    [other] = store.create_jobs([new_job(name="ev", tenant="acme"), new_job()], T0)[:1]
    assert other.outcome is CreateOutcome.CREATED


def test_names_within_one_batch_are_unique_too(store: Store) -> None:
    a, b, c = new_job(name="x"), new_job(name="x"), new_job(name="y")
    results = store.create_jobs([a, b, c], T0)
    assert [r.outcome for r in results] == [CreateOutcome.CREATED, CreateOutcome.NAME_TAKEN, CreateOutcome.CREATED]
    assert results[1].job_id == a.job_id
    assert store.get_job(b.job_id) is None


def test_an_idempotent_replay_is_answered_before_the_name_is_looked_at(store: Store) -> None:
    nj = new_job(name="ev", key="k1", request_hash="h")
    create(store, nj)
    [again] = store.create_jobs([replace(nj, job_id="jother")], T0)
    assert (again.outcome, again.job_id) == (CreateOutcome.REPLAYED, nj.job_id)


def test_cancelling_a_job_frees_its_name_and_lookups_prefer_the_live_holder(store: Store) -> None:
    [old] = create(store, new_job(name="ev"))
    assert store.cancel_job(old, T0) is not None
    [new] = create(store, new_job(name="ev"))
    assert [j.id for j in store.find_jobs_by_name("ev")] == [new, old]
    assert [j.id for j in store.find_jobs_by_name("ev", tenant="acme")] == []


def test_a_lookup_by_name_reads_a_bounded_number_of_namesakes(store: Store) -> None:
    """A name made and cancelled every day for years: the lookup reads the live holder and the
    newest namesakes, not one job per namesake."""
    cancelled = []
    for i in range(3):
        [jid] = create(store, new_job(name="daily"), now=T0 + i * MIN)
        assert store.cancel_job(jid, T0 + i * MIN + 1) is not None
        cancelled.append(jid)
    [live] = create(store, new_job(name="daily"), now=T0 + 5 * MIN)
    assert [j.id for j in store.find_jobs_by_name("daily", limit=2)] == [live, cancelled[-1]]
    assert [j.id for j in store.find_jobs_by_name("daily")] == [live, *reversed(cancelled)]


def test_finished_one_off_jobs_keep_their_name(store: Store) -> None:
    [jid] = create(store, one_off(T0, name="once"))
    claim_all(store, T0)
    [result] = store.create_jobs([new_job(name="once")], T0)
    assert (result.outcome, result.job_id) == (CreateOutcome.NAME_TAKEN, jid)


def test_concurrent_submissions_of_one_name_create_one_job(store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    outcomes: list[CreateOutcome] = []

    def submit(s: Store) -> None:
        barrier.wait()
        outcomes.append(s.create_jobs([new_job(name="race")], T0)[0].outcome)

    threads = [threading.Thread(target=submit, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == sorted([CreateOutcome.CREATED] + [CreateOutcome.NAME_TAKEN] * 3)
    assert len(stores[0].find_jobs_by_name("race")) == 1


# ---------------------------------------------------------------- update in place


def test_update_replaces_the_definition_and_keeps_id_and_history(store: Store) -> None:
    nj = new_job(name="ev", next_run_at=T0)
    create(store, nj)
    claim_all(store, T0)
    spec = replace(nj.spec, target={"command": "echo new"}, payload={"v": 2}, priority=Priority.HIGH,
                   retry=RetryPolicy(max_attempts=9), timeout_sec=5, lease_sec=7, jitter_sec=3,
                   managed_by="apply")  # the owner mark is part of the definition too
    result = store.update_job(nj.job_id, spec, None, False, T0 + SEC)
    assert result.outcome is UpdateOutcome.UPDATED and result.superseded == []
    job = store.get_job(nj.job_id)
    assert job is not None and job.spec == spec
    assert job.next_run_at == T0 + MIN  # not rescheduled: the claim's next tick stays
    assert job.updated_at == T0 + SEC and job.created_at == T0 - MIN
    assert [e.execution_id for e in store.list_executions(nj.job_id)] == [execution_id(nj.job_id, T0)]
    # the execution already queued runs the new definition
    grant = start(store, execution_id(nj.job_id, T0), T0 + 2 * SEC)
    assert (grant.target, grant.payload, grant.timeout_sec) == ({"command": "echo new"}, {"v": 2}, 5)


def test_update_sets_and_clears_the_process_setup(store: Store) -> None:
    nj = new_job(target={"command": "cat"}, env={"A": "1"}, shell="/bin/bash")
    create(store, nj)
    spec = replace(nj.spec, env={"A": "1", "B": "2"}, run_as=RunAs("nobody"), shell=None, stdin="in")
    assert store.update_job(nj.job_id, spec, None, False, T0).outcome is UpdateOutcome.UPDATED
    job = store.get_job(nj.job_id)
    assert job is not None and job.spec == spec
    cleared = replace(spec, env={}, run_as=None, stdin=None)
    assert store.update_job(nj.job_id, cleared, None, False, T0).outcome is UpdateOutcome.UPDATED
    job = store.get_job(nj.job_id)
    assert job is not None and (job.spec.env, job.spec.run_as, job.spec.shell, job.spec.stdin) == ({}, None, None, None)


def test_rescheduling_cancels_ticks_claimed_ahead_but_not_due_ones(store: Store) -> None:
    nj = new_job(schedule="*/20 * * * * *", next_run_at=T0)
    create(store, nj)
    store.claim_due(list(range(64)), T0, 100, ahead_ms=50 * SEC)  # T0, T0+20s, T0+40s claimed
    ahead = [e.execution_id for e in store.list_executions(nj.job_id)]
    assert len(ahead) == 3
    spec = replace(nj.spec, schedule="*/10 * * * *")
    result = store.update_job(nj.job_id, spec, T0 + 10 * MIN, True, T0 + 5 * SEC)
    assert result.outcome is UpdateOutcome.UPDATED
    assert result.superseded == sorted([execution_id(nj.job_id, T0 + 20 * SEC), execution_id(nj.job_id, T0 + 40 * SEC)])
    by_id = {e.execution_id: e for e in store.list_executions(nj.job_id)}
    assert by_id[execution_id(nj.job_id, T0)].status is ExecStatus.PENDING  # due already: runs
    for eid in result.superseded:
        assert by_id[eid].status is ExecStatus.CANCELLED and by_id[eid].reason == SUPERSEDED
    job = store.get_job(nj.job_id)
    assert job is not None and job.next_run_at == T0 + 10 * MIN and job.spec.schedule == "*/10 * * * *"


def test_a_finished_one_off_given_a_new_instant_is_scheduled_again(store: Store) -> None:
    nj = one_off(T0)
    create(store, nj)
    claim_all(store, T0)
    spec = replace(nj.spec, run_at=T0 + 10 * MIN)
    result = store.update_job(nj.job_id, spec, T0 + 10 * MIN, True, T0 + SEC)
    assert result.job is not None and result.job.status is JobStatus.ACTIVE
    assert result.job.next_run_at == T0 + 10 * MIN


def test_renaming_follows_the_name_rule(store: Store) -> None:
    a, b = new_job(name="a"), new_job(name="b")
    create(store, a, b)
    clash = store.update_job(b.job_id, replace(b.spec, name="a"), None, False, T0)
    assert (clash.outcome, clash.holder) == (UpdateOutcome.NAME_TAKEN, a.job_id)
    assert store.get_job(b.job_id).spec.name == "b"  # type: ignore[union-attr]
    # renaming frees the old name; keeping one's own name is no clash
    assert store.update_job(a.job_id, replace(a.spec, name="c"), None, False, T0).outcome is UpdateOutcome.UPDATED
    assert store.update_job(b.job_id, replace(b.spec, name="a"), None, False, T0).outcome is UpdateOutcome.UPDATED
    assert store.update_job(b.job_id, replace(b.spec, name="a", payload=1), None, False, T0).outcome is UpdateOutcome.UPDATED
    assert store.update_job(b.job_id, replace(b.spec, name=None), None, False, T0).outcome is UpdateOutcome.UPDATED
    assert store.create_jobs([new_job(name="a")], T0)[0].outcome is CreateOutcome.CREATED


def test_update_of_an_absent_cancelled_or_foreign_job_changes_nothing(store: Store) -> None:
    nj = new_job(tenant="acme")
    create(store, nj)
    assert store.update_job("jnosuch", nj.spec, None, False, T0).outcome is UpdateOutcome.NOT_FOUND
    assert store.update_job(nj.job_id, nj.spec, None, False, T0, tenant="other").outcome is UpdateOutcome.NOT_FOUND
    store.cancel_job(nj.job_id, T0)
    result = store.update_job(nj.job_id, replace(nj.spec, payload=5), T0, True, T0)
    assert result.outcome is UpdateOutcome.CANCELLED
    job = store.get_job(nj.job_id)
    assert job is not None and job.status is JobStatus.CANCELLED and job.spec.payload is None
