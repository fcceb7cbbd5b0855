"""Who should own which time bucket: rendezvous (highest-random-weight) hashing with
balanced capacities. Pure: the same live nodes give the same answer on every node.

Plain rendezvous hashing moves the fewest buckets when a node joins or leaves, but with
64 buckets its shares are uneven (a node can get twice another's). So capacities are
fixed first (every node gets ⌊64/N⌋ buckets, the ``64 mod N`` nodes with the highest
node weight one more), then the ``(bucket, node)`` pairs are taken in descending weight:
a pair is kept while its bucket is unassigned and its node has room. Each bucket thus goes
to its highest-weight node that still has room: a join takes roughly 64/(N+1) buckets,
mostly from the nodes that had more than their share, and a leave hands out only the
leaver's buckets plus a few moves for balance.
"""

from __future__ import annotations

from collections.abc import Iterable

from cronwheel.core.ids import N_BUCKETS, stable_hash


def weight(node_id: str, bucket: int) -> int:
    return stable_hash(f"{node_id}\x00{bucket}")


def assign(nodes: Iterable[str], n_buckets: int = N_BUCKETS) -> dict[int, str]:
    """``{bucket: node}`` for every bucket; empty when there is no node."""
    members = sorted(set(nodes))
    if not members:
        return {}
    base, extra = divmod(n_buckets, len(members))
    by_node_weight = sorted(members, key=lambda n: (-stable_hash(f"{n}\x00capacity"), n))
    room = {n: base + (1 if i < extra else 0) for i, n in enumerate(by_node_weight)}
    pairs = sorted(((weight(n, b), n, b) for n in members for b in range(n_buckets)), reverse=True)
    owner: dict[int, str] = {}
    for _, node, bucket in pairs:
        if bucket not in owner and room[node] > 0:
            owner[bucket] = node
            room[node] -= 1
            if len(owner) == n_buckets:
                break
    return owner


def buckets_of(node_id: str, nodes: Iterable[str], n_buckets: int = N_BUCKETS) -> list[int]:
    """The buckets ``node_id`` should own among ``nodes`` (it counts as live itself)."""
    owner = assign({*nodes, node_id}, n_buckets)
    return sorted(b for b, n in owner.items() if n == node_id)
