"""``ClaimTurns``: which tenants' queued runs a shared remote worker (of no tenant) is given."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.claimturns import REMEMBERED, Candidate, ClaimTurns


def backlog(tenant: str, n: int, tier: int = 1, first_at: int = 0) -> list[Candidate]:
    return [Candidate(f"{tenant}-{i}", tenant, tier, first_at + i) for i in range(n)]


def serve(turns: ClaimTurns, queues: dict[str, list[Candidate]], claims: int, per_claim: int = 1) -> list[str]:
    """``claims`` claims of ``per_claim`` each against always-offered backlogs; tenants served, in order."""
    served: list[str] = []
    for _ in range(claims):
        offered = [c for q in queues.values() for c in q[:per_claim]]
        for eid in turns.pick(offered, per_claim):
            tenant = eid.rsplit("-", 1)[0]
            queues[tenant].remove(next(c for c in queues[tenant] if c.execution_id == eid))
            served.append(tenant)
    return served


def test_a_flood_queued_first_takes_turns_with_a_neighbour() -> None:
    queues = {"evil": backlog("evil", 1000), "acme": backlog("acme", 3, first_at=5000)}
    served = serve(ClaimTurns(), queues, 8)
    assert served == ["evil", "acme", "evil", "acme", "evil", "acme", "evil", "evil"]


def test_one_claim_of_many_interleaves_as_many_claims_of_one_do() -> None:
    queues = {"evil": backlog("evil", 1000), "acme": backlog("acme", 3, first_at=5000)}
    assert serve(ClaimTurns(), queues, 1, per_claim=8) == ["evil", "acme"] * 3 + ["evil", "evil"]


def test_each_tenants_own_runs_go_in_its_own_order() -> None:
    offered = backlog("a", 3) + backlog("b", 3, first_at=1)
    assert ClaimTurns().pick(offered, 6) == ["a-0", "b-0", "a-1", "b-1", "a-2", "b-2"]


def test_the_most_urgent_tier_goes_first_whatever_the_turns() -> None:
    turns = ClaimTurns()
    offered = backlog("a", 3) + backlog("b", 1, tier=0, first_at=99) + backlog("c", 1, tier=2)
    assert turns.pick(offered, 5) == ["b-0", "a-0", "a-1", "a-2", "c-0"]


def test_a_tenant_that_waited_is_not_owed_its_idle_time() -> None:
    """b ran nothing while a was served 100 times: back, it takes turns, not 100 runs in a row."""
    turns = ClaimTurns()
    queues = {"a": backlog("a", 1000)}
    serve(turns, queues, 100)
    queues["b"] = backlog("b", 1000, first_at=10_000)
    assert serve(turns, queues, 6) == ["b", "a", "b", "a", "b", "a"]


@given(st.integers(1, 5), st.integers(1, 5))
def test_backlogged_tenants_share_by_weight(wa: int, wb: int) -> None:
    weights = {"a": float(wa), "b": float(wb)}
    turns = ClaimTurns(lambda t: weights[t])
    rounds = 20
    queues = {"a": backlog("a", 1000), "b": backlog("b", 1000, first_at=1)}
    served = Counter(serve(turns, queues, rounds * (wa + wb)))
    assert abs(served["a"] - rounds * wa) <= 1 and abs(served["b"] - rounds * wb) <= 1, served


def test_the_turns_remembered_are_bounded() -> None:
    """10,000 tenants served once each: at most REMEMBERED kept, and the fairness holds on."""
    turns = ClaimTurns()
    for i in range(10_000):
        turns.pick(backlog(f"t{i}", 1), 1)
    assert 0 < len(turns) <= REMEMBERED
    assert turns.pick([], 5) == []
    queues = {"old": backlog("old", 100), "new": backlog("new", 100, first_at=50)}
    assert serve(turns, queues, 4) == ["old", "new", "old", "new"]
