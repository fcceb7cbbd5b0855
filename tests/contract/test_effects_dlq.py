"""Contract: fenced side-effect records, and the dead-letter queue."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.core.model import ExecOrigin, ExecStatus, RetryPolicy
from cronwheel.core.records import Completion, EffectVerdict, LeaseVerdict, Outcome
from cronwheel.store import completions as store_completions
from cronwheel.store.base import Store
from tests.contract.conftest import HOUR, MIN, SEC, T0, claim_all, create, one_off, start
from tests.support.store_probe import list_effects


def running(store: Store, **kw: Any) -> tuple[str, int]:
    nj = one_off(T0, **kw)
    create(store, nj)
    [ex] = claim_all(store, T0).executions
    g = start(store, ex.execution_id, T0)
    return ex.execution_id, g.lease_epoch


def dead(store: Store, tenant: str = "default", error: str = "boom") -> str:
    eid, epoch = running(store, retry=RetryPolicy(max_attempts=1), tenant=tenant)
    assert store.record_effect(eid, "w1", epoch, "effect", T0) is EffectVerdict.RECORDED
    [res] = store.complete_executions(
        [Completion(eid, "w1", epoch, Outcome.FAILED, exit_code=2, error=error, output="out")], T0 + SEC
    )
    assert res.status is ExecStatus.DEAD
    return eid


# ---------------------------------------------------------------- effects


def test_effect_recorded_once_then_duplicate(store: Store) -> None:
    eid, epoch = running(store)
    assert store.record_effect(eid, "w1", epoch, "charge:42", T0 + 1) is EffectVerdict.RECORDED
    assert store.record_effect(eid, "w1", epoch, "charge:42", T0 + 2) is EffectVerdict.DUPLICATE
    assert store.record_effect(eid, "w1", epoch, "mail:1", T0 + 3) is EffectVerdict.RECORDED
    assert list_effects(store, eid) == [("charge:42", epoch, T0 + 1), ("mail:1", epoch, T0 + 3)]


def test_effect_with_a_stale_epoch_is_fenced(store: Store) -> None:
    eid, epoch = running(store, retry=RetryPolicy(max_attempts=3, initial_backoff_sec=0))
    assert store.record_effect(eid, "w1", epoch, "a", T0) is EffectVerdict.RECORDED
    store.expire_leases(T0 + HOUR, 10)  # the lease is lost; a new worker takes over
    g2 = start(store, eid, T0 + HOUR)
    # the zombie: a new key is fenced, an old key is still reported as a duplicate
    assert store.record_effect(eid, "w1", epoch, "b", T0 + HOUR) is EffectVerdict.FENCED
    assert store.record_effect(eid, "w1", epoch, "a", T0 + HOUR) is EffectVerdict.DUPLICATE
    # the current holder records, and sees the zombie's effect as a duplicate
    assert store.record_effect(eid, "w1", g2.lease_epoch, "b", T0 + HOUR) is EffectVerdict.RECORDED
    assert store.record_effect(eid, "w1", g2.lease_epoch, "a", T0 + HOUR) is EffectVerdict.DUPLICATE
    assert [(k, e) for k, e, _ in list_effects(store, eid)] == [("a", epoch), ("b", g2.lease_epoch)]


def test_effect_when_not_running_or_absent(store: Store) -> None:
    eid, epoch = running(store)
    store.complete_executions([Completion(eid, "w1", epoch, Outcome.SUCCEEDED)], T0 + 1)
    assert store.record_effect(eid, "w1", epoch, "late", T0 + 2) is EffectVerdict.FENCED
    assert store.record_effect("nope:1", "w1", 1, "k", T0) is EffectVerdict.NOT_FOUND
    assert list_effects(store, eid) == []
    assert list_effects(store, "nope:1") == []


def test_an_execution_records_at_most_max_effects_over_all_its_attempts(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bound is lowered to 3 here, as recording 10,000 effects per backend is slow; the
    count lives on the execution's row, so it holds across attempts."""
    monkeypatch.setattr(store_completions, "MAX_EFFECTS_PER_EXECUTION", 3)
    eid, epoch = running(store, retry=RetryPolicy(max_attempts=3, initial_backoff_sec=0))
    assert store.record_effect(eid, "w1", epoch, "a", T0) is EffectVerdict.RECORDED
    assert store.record_effect(eid, "w1", epoch, "b", T0) is EffectVerdict.RECORDED
    store.expire_leases(T0 + HOUR, 10)  # a second attempt takes over: the count goes on
    g2 = start(store, eid, T0 + HOUR)
    assert store.record_effect(eid, "w1", g2.lease_epoch, "a", T0 + HOUR) is EffectVerdict.DUPLICATE  # not counted
    assert store.record_effect(eid, "w1", g2.lease_epoch, "c", T0 + HOUR) is EffectVerdict.RECORDED
    assert store.record_effect(eid, "w1", g2.lease_epoch, "d", T0 + HOUR) is EffectVerdict.TOO_MANY
    # what was recorded is still told as such, and a stale epoch is still fenced first
    assert store.record_effect(eid, "w1", g2.lease_epoch, "c", T0 + HOUR) is EffectVerdict.DUPLICATE
    assert store.record_effect(eid, "w1", epoch, "e", T0 + HOUR) is EffectVerdict.FENCED
    assert [k for k, _, _ in list_effects(store, eid)] == ["a", "b", "c"]
    # another execution has a count of its own
    other, other_epoch = running(store)
    assert store.record_effect(other, "w1", other_epoch, "a", T0) is EffectVerdict.RECORDED


# ---------------------------------------------------------------- dead-letter queue


def test_list_dead_orders_paginates_and_scopes(store: Store) -> None:
    ids = sorted([dead(store, tenant="a") for _ in range(3)] + [dead(store, tenant="b")])
    listed = store.list_dead()
    assert [e.execution_id for e in listed] == ids
    assert all(e.status is ExecStatus.DEAD for e in listed)
    page = store.list_dead(limit=2)
    rest = store.list_dead(limit=10, after=page[-1].execution_id)
    assert [e.execution_id for e in page + rest] == ids
    assert {e.tenant for e in store.list_dead(tenant="a")} == {"a"}
    assert len(store.list_dead(tenant="b")) == 1
    assert store.list_dead(limit=0) == []
    assert store.count_executions(ExecStatus.DEAD) == 4
    assert store.count_executions(ExecStatus.DEAD, tenant="a") == 3


def test_replay_dead_starts_a_fresh_series_and_keeps_the_epoch_growing(store: Store) -> None:
    eid = dead(store, error="disk full")
    before = store.get_execution(eid)
    assert before is not None
    replayed = store.replay_dead(eid, T0 + HOUR)
    assert replayed is not None
    assert (replayed.status, replayed.attempt, replayed.available_at) == (ExecStatus.PENDING, 0, T0 + HOUR)
    assert before.origin is ExecOrigin.SCHEDULE and replayed.origin is ExecOrigin.REPLAY
    assert replayed.lease_epoch == before.lease_epoch
    assert replayed.reason is not None and "disk full" in replayed.reason and "replayed" in replayed.reason
    assert replayed.error is None and replayed.finished_at is None and replayed.worker_id is None
    assert store.get_execution(eid) == replayed
    assert store.list_dead() == []
    assert [e.execution_id for e in store.ready_executions(T0 + HOUR, 10)] == [eid]
    g = start(store, eid, T0 + HOUR)
    assert (g.attempt, g.lease_epoch, g.origin) == (1, before.lease_epoch + 1, ExecOrigin.REPLAY)
    # the old epoch stays fenced
    [old] = store.complete_executions([Completion(eid, "w1", before.lease_epoch, Outcome.SUCCEEDED)], T0 + HOUR)
    assert old.verdict is LeaseVerdict.LEASE_LOST


def test_replay_only_dead_and_own_tenant(store: Store) -> None:
    eid = dead(store, tenant="a")
    live, _ = running(store)
    assert store.replay_dead(live, T0) is None
    assert store.replay_dead("nope:1", T0) is None
    assert store.replay_dead(eid, T0, tenant="b") is None
    assert store.replay_dead(eid, T0, tenant="a") is not None
    assert store.replay_dead(eid, T0 + MIN) is None  # no longer DEAD


def test_purge_dead(store: Store) -> None:
    eid = dead(store, tenant="a")
    live, _ = running(store)
    assert store.purge_dead(live) is False
    assert store.purge_dead("nope:1") is False
    assert store.purge_dead(eid, tenant="b") is False
    assert store.purge_dead(eid, tenant="a") is True
    assert store.get_execution(eid) is None
    assert list_effects(store, eid) == []  # its effect records go with it
    assert store.purge_dead(eid) is False
    assert store.list_dead() == []
