"""The ready queue's order: priority tiers, and weighted fair queuing across tenants inside a
tier (deficit round robin, unit cost per execution). Pure: no clock, no I/O.

A tenant that dumps 100,000 executions gets its weight's share of each round, not the whole
queue: with tenants A (100,000 queued) and B (100 queued), both of weight 1, the queue pops
A, B, A, B, ... until B is empty, so B's last execution leaves after ~200 pops, not 100,100.

``pop(may_take)`` also takes a predicate on the tenant, so per-tenant running quotas are
applied at pop time: a tenant at its quota is passed over (its executions keep their place,
recorded as waiting, never dropped) and the round goes on to the next tenant.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class _Tier(Generic[T]):
    __slots__ = ("active", "deficit", "fresh", "items")

    def __init__(self) -> None:
        self.items: dict[str, deque[T]] = {}
        self.active: deque[str] = deque()  # tenants with items, in round-robin order
        self.deficit: dict[str, float] = {}
        self.fresh = True  # the tenant at active[0] has not yet received this round's quantum


class FairQueue(Generic[T]):
    def __init__(self, tiers: int = 3, weight: Callable[[str], float] | None = None) -> None:
        self._tiers: list[_Tier[T]] = [_Tier() for _ in range(tiers)]
        self._weight = weight or (lambda _tenant: 1.0)
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def depth_by_tier(self) -> list[int]:
        return [sum(len(q) for q in tier.items.values()) for tier in self._tiers]

    def depth_of(self, tenant: str) -> int:
        """How many of ``tenant``'s items are queued, all tiers together (O(tiers))."""
        return sum(len(q) for tier in self._tiers if (q := tier.items.get(tenant)) is not None)

    def depth_by_tenant(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for tier in self._tiers:
            for tenant, q in tier.items.items():
                out[tenant] = out.get(tenant, 0) + len(q)
        return out

    def push(self, tier: int, tenant: str, item: T) -> None:
        t = self._tiers[tier]
        q = t.items.get(tenant)
        if q is None:
            q = t.items[tenant] = deque()
            t.active.append(tenant)
            t.deficit[tenant] = 0.0
        q.append(item)
        self._len += 1

    def take_tenant(self, tenant: str) -> list[T]:
        """Remove every item of ``tenant``, the most urgent tier's first and each tier's in order
        (to be pushed again, at other tiers); the other tenants keep their turns."""
        taken: list[T] = []
        for t in self._tiers:
            q = t.items.pop(tenant, None)
            if q is None:
                continue
            if t.active[0] == tenant:
                t.fresh = True  # the next tenant's turn starts afresh
            t.active.remove(tenant)
            del t.deficit[tenant]
            taken.extend(q)
        self._len -= len(taken)
        return taken

    def pop(self, max_tier: int | None = None, may_take: Callable[[str], bool] | None = None) -> T | None:
        """The next item: the most urgent non-empty tier up to ``max_tier`` (0 = most urgent),
        and inside it the tenant whose turn it is. None when nothing may be taken."""
        last = len(self._tiers) - 1 if max_tier is None else max_tier
        for index in range(last + 1):
            item = self._pop_tier(self._tiers[index], may_take)
            if item is not None:
                self._len -= 1
                return item
        return None

    def _pop_tier(self, t: _Tier[T], may_take: Callable[[str], bool] | None) -> T | None:
        if not t.active:
            return None
        # Each tenant is visited at most a bounded number of times per call: enough rounds for
        # the smallest weight to reach one credit, and one full pass of refusals ends the search.
        refused = 0
        visits = 0
        limit: int | None = None  # set only once a whole round passes without a pop (rare)
        while t.active and (limit is None or visits <= limit):
            tenant = t.active[0]
            if may_take is not None and not may_take(tenant):
                refused += 1
                if refused >= len(t.active):
                    return None
                t.active.rotate(-1)
                t.fresh = True
                continue
            if t.fresh:
                t.deficit[tenant] += self._weight(tenant)
                t.fresh = False
            if t.deficit[tenant] >= 1.0:
                t.deficit[tenant] -= 1.0
                q = t.items[tenant]
                item = q.popleft()
                if not q:
                    del t.items[tenant]
                    del t.deficit[tenant]
                    t.active.popleft()
                    t.fresh = True
                return item
            t.active.rotate(-1)
            t.fresh = True
            visits += 1
            if limit is None and visits > len(t.active):
                # a whole round without a pop (weights below 1): bound the search. Computed
                # only then, because it is O(tenants) and a herd pops 100,000 times.
                lightest = min(self._weight(x) for x in t.active)
                limit = visits + len(t.active) * (1 + int(1 / max(lightest, 1e-3)))
        return None


#: one slot in this many of a node's (at least one) is kept for tenants running nothing there,
#: when it serves more than one tenant (``neighbour_reserve``)
NEIGHBOUR_RESERVE_SHARE = 16


def neighbour_reserve(slots: int, tenants: int) -> int:
    """How many of a node's ``slots`` are kept for tenants with nothing running on it, when
    ``tenants`` share it: none for one tenant (it may fill the node), else one in
    ``NEIGHBOUR_RESERVE_SHARE``, at least one. A running execution is never preempted, so
    without a reserve a tenant whose runs are slow (a webhook that answers in seconds) could
    hold every slot, and a neighbour's every-second job would start only when its runs end:
    seconds late, in bursts."""
    if tenants < 2 or slots < 2:
        return 0
    return max(1, slots // NEIGHBOUR_RESERVE_SHARE)


def may_take_slot(running: int, free: int, reserve: int) -> bool:
    """Whether a tenant with ``running`` executions on the node may take one of its ``free``
    slots, ``reserve`` of which are kept for tenants running nothing there: any slot beyond
    the reserve, and a reserved one only for its first execution."""
    return free > reserve or running == 0
