"""The ready queue's order: tiers first, then deficit round robin across tenants."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from cronwheel.core.fairness import FairQueue, may_take_slot, neighbour_reserve


def drain(q: FairQueue[str], **kw) -> list[str]:
    out = []
    while (item := q.pop(**kw)) is not None:
        out.append(item)
    return out


def test_higher_tier_always_first():
    q: FairQueue[str] = FairQueue(tiers=3)
    for i in range(5):
        q.push(2, "a", f"batch{i}")
    q.push(0, "b", "urgent")
    q.push(1, "c", "normal")
    assert drain(q)[:2] == ["urgent", "normal"]


def test_noisy_tenant_does_not_starve_small_one():
    q: FairQueue[str] = FairQueue(tiers=1)
    for i in range(100_000):
        q.push(0, "noisy", f"n{i}")
    for i in range(100):
        q.push(0, "small", f"s{i}")
    order = [q.pop() for _ in range(200)]
    # alternate: the small tenant's 100 executions are all out within the first 200 pops
    assert sum(1 for x in order if x and x.startswith("s")) == 100
    assert len(q) == 100_000 - 100


def test_weights_share_pops_proportionally():
    weights = {"gold": 3.0, "bronze": 1.0}
    q: FairQueue[str] = FairQueue(tiers=1, weight=weights.__getitem__)
    for i in range(1000):
        q.push(0, "gold", f"g{i}")
        q.push(0, "bronze", f"b{i}")
    first = Counter(x[0] for x in (q.pop() for _ in range(400)) if x)
    assert first == {"g": 300, "b": 100}


def test_fractional_weight_still_served():
    q: FairQueue[str] = FairQueue(tiers=1, weight=lambda t: 0.25)
    q.push(0, "slow", "x")
    assert q.pop() == "x"


def test_quota_predicate_skips_tenant_without_dropping():
    q: FairQueue[str] = FairQueue(tiers=1)
    q.push(0, "full", "f1")
    q.push(0, "free", "r1")
    q.push(0, "free", "r2")
    got = drain(q, may_take=lambda t: t != "full")
    assert got == ["r1", "r2"]
    assert len(q) == 1  # kept, waiting for the tenant's quota
    assert q.pop() == "f1"


def test_max_tier_limits_to_urgent_tiers():
    q: FairQueue[str] = FairQueue(tiers=3)
    q.push(2, "a", "batch")
    assert q.pop(max_tier=0) is None
    q.push(0, "a", "high")
    assert q.pop(max_tier=0) == "high"
    assert q.pop() == "batch"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from("abcd"), st.integers()), max_size=200))
def test_every_item_popped_exactly_once_in_tier_order_and_fifo_per_tenant(pushes):
    q: FairQueue[tuple[int, str, int]] = FairQueue(tiers=3, weight=lambda t: {"a": 0.5, "b": 1, "c": 2, "d": 3}[t])
    for i, (tier, tenant, _) in enumerate(pushes):
        q.push(tier, tenant, (tier, tenant, i))
    out = drain(q)
    assert sorted(x[2] for x in out) == list(range(len(pushes)))
    assert [x[0] for x in out] == sorted(x[0] for x in out)  # tiers never interleave backwards
    for tenant in "abcd":  # FIFO within a tenant and tier
        for tier in range(3):
            seq = [x[2] for x in out if x[1] == tenant and x[0] == tier]
            assert seq == sorted(seq)
    assert len(q) == 0


def test_a_tenants_depth_counts_every_tier_and_follows_pops():
    q = FairQueue(tiers=3)
    for tier, tenant in [(0, "a"), (2, "a"), (2, "a"), (1, "b")]:
        q.push(tier, tenant, f"{tenant}{tier}")
    assert (q.depth_of("a"), q.depth_of("b"), q.depth_of("nobody")) == (3, 1, 0)
    assert q.pop() == "a0" and q.depth_of("a") == 2
    assert q.depth_by_tenant() == {"a": 2, "b": 1}


def test_a_shared_node_keeps_slots_for_a_neighbour_running_nothing():
    assert neighbour_reserve(32, 1) == 0, "one tenant may fill its node"
    assert neighbour_reserve(1, 5) == 0, "a node of one slot keeps none back"
    assert [neighbour_reserve(slots, 2) for slots in (2, 4, 16, 32, 64)] == [1, 1, 1, 2, 4]
    assert may_take_slot(running=30, free=3, reserve=2), "beyond the reserve: anyone"
    assert not may_take_slot(running=30, free=2, reserve=2), "the reserve: not a tenant already running"
    assert may_take_slot(running=0, free=1, reserve=2), "the reserve: a tenant running nothing here"
    assert may_take_slot(running=5, free=1, reserve=0), "no reserve: the last slot too"


def test_taking_a_tenant_out_keeps_its_order_and_the_others_turns():
    q = FairQueue(tiers=3)
    for i in range(3):
        q.push(1, "a", f"a{i}")
        q.push(1, "b", f"b{i}")
        q.push(1, "c", f"c{i}")
    q.push(0, "b", "b-urgent")
    q.push(2, "b", "b-bulk")
    assert q.pop() == "b-urgent"
    assert q.pop() == "a0"  # a's turn taken: b is next in the round
    assert q.take_tenant("b") == ["b0", "b1", "b2", "b-bulk"]  # most urgent tier first, FIFO in each
    assert q.take_tenant("nobody") == []
    assert len(q) == 5 and q.depth_of("b") == 0
    assert [q.pop() for _ in range(5)] == ["c0", "a1", "c1", "a2", "c2"]
    assert q.pop() is None and len(q) == 0
