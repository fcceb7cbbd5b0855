"""core.rendezvous: stable, balanced within one bucket, little movement on join/leave."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from cronwheel.core.ids import N_BUCKETS
from cronwheel.core.rendezvous import assign, buckets_of

FLEETS = [[f"node-{i}" for i in range(n)] for n in range(1, 11)] + [
    ["a", "b", "c"],
    ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080", "10.0.0.4:8080", "10.0.0.5:8080"],
]


def test_no_node_no_owner() -> None:
    assert assign([]) == {}


@pytest.mark.parametrize("nodes", FLEETS, ids=lambda n: f"{len(n)}nodes")
def test_every_bucket_has_one_owner_and_shares_are_within_one(nodes: list[str]) -> None:
    owner = assign(nodes)
    assert sorted(owner) == list(range(N_BUCKETS))
    counts = Counter(owner.values())
    assert set(counts) == set(nodes)
    assert max(counts.values()) - min(counts.values()) <= 1
    assert min(counts.values()) == N_BUCKETS // len(nodes)


@pytest.mark.parametrize("nodes", FLEETS, ids=lambda n: f"{len(n)}nodes")
def test_stable_whatever_the_order(nodes: list[str]) -> None:
    assert assign(nodes) == assign(list(reversed(nodes))) == assign([*nodes, *nodes])
    mine = {n: buckets_of(n, nodes) for n in nodes}
    assert sorted(b for bs in mine.values() for b in bs) == list(range(N_BUCKETS))


@pytest.mark.parametrize("nodes", FLEETS, ids=lambda n: f"{len(n)}nodes")
def test_a_join_moves_little_and_only_to_the_newcomer(nodes: list[str]) -> None:
    before, after = assign(nodes), assign([*nodes, "newcomer"])
    moved = [b for b in before if before[b] != after[b]]
    ideal = math.ceil(N_BUCKETS / (len(nodes) + 1))
    assert len(moved) <= ideal * 1.5 + 2
    assert sum(1 for b in moved if after[b] == "newcomer") >= ideal - 1


@pytest.mark.parametrize("nodes", [f for f in FLEETS if len(f) > 1], ids=lambda n: f"{len(n)}nodes")
def test_a_leave_moves_the_leavers_buckets_and_little_else(nodes: list[str]) -> None:
    leaver = nodes[len(nodes) // 2]
    before = assign(nodes)
    after = assign([n for n in nodes if n != leaver])
    theirs = [b for b in before if before[b] == leaver]
    others_moved = [b for b in before if before[b] != leaver and before[b] != after[b]]
    assert all(after[b] != leaver for b in theirs)
    assert len(others_moved) <= len(theirs) // 2 + 2


def test_a_node_counts_itself_live() -> None:
    assert buckets_of("solo", []) == list(range(N_BUCKETS))
