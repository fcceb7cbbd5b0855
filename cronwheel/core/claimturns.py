"""Which tenants' queued executions a remote worker of no tenant (an admin token's: a shared
pool serving every tenant) is given: the most urgent tier first and, inside it, tenants in
weighted fair turns. Pure: no clock, no I/O.

The local dispatcher's ready queue (core/fairness.py) holds every queued execution in memory;
a remote claim does not: the store offers each tenant's first few ready rows in its own order
(``Candidate``, the tenant's tier already clamped by its grant), and ``ClaimTurns.pick``
chooses among them. Taken oldest first instead, a tenant that queued 100,000 runs a second
before its neighbour would have every shared worker until the last of them ran.

Turns are start-time fair queuing: a tenant's next run starts at ``max(its finish, V)`` in
virtual time, where ``V`` is the start of the run last given out, and finishes ``1 / weight``
later; the smallest start goes first (then the oldest). Because a tenant that waited is
never credited more than ``V``, one that ran nothing for an hour does not then take the pool
for an hour. The finishes are remembered across claims (a worker claiming one at a time gets
its turns as one claiming a hundred does), and only those ahead of ``V``: the others equal
it, so their entries are dropped and the map holds the tenants served lately, at most
``REMEMBERED``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

#: tenants whose next turn is remembered, at most (those served lately: see ``_forget``)
REMEMBERED = 1024


class Candidate(NamedTuple):
    execution_id: str
    tenant: str
    tier: int  #: the tier its tenant may queue it at (high only with the grant)
    available_at: int


class ClaimTurns:
    """One node's turns across tenants for the claims of workers of no tenant. Its ``pick``
    runs inside the store's claim transaction, on the node's one writer thread: claims are
    never picked concurrently."""

    def __init__(self, weight: Callable[[str], float] | None = None) -> None:
        self._weight = weight or (lambda _tenant: 1.0)
        self._finish: dict[str, float] = {}  #: tenants whose next start is ahead of ``_now``
        self._now = 0.0  #: V: the virtual start of the run last given out

    def __len__(self) -> int:
        return len(self._finish)

    def pick(self, candidates: Sequence[Candidate], limit: int) -> list[str]:
        """Up to ``limit`` of ``candidates`` (each tenant's in its own order), the most urgent
        tier first, tenants in turn inside a tier; their ids in the order given out."""
        queues: dict[tuple[int, str], list[Candidate]] = {}
        for c in candidates:
            queues.setdefault((c.tier, c.tenant), []).append(c)
        chosen: list[str] = []
        for tier in sorted({tier for tier, _ in queues}):
            waiting = {tenant: q[::-1] for (t, tenant), q in queues.items() if t == tier}  # popped from the end
            while waiting and len(chosen) < limit:
                tenant = min(waiting, key=lambda x: (self._start(x), waiting[x][-1].available_at, x))
                start = self._start(tenant)
                self._now = start
                self._finish[tenant] = start + 1.0 / _positive(self._weight(tenant))
                chosen.append(waiting[tenant].pop().execution_id)
                if not waiting[tenant]:
                    del waiting[tenant]
        self._forget()
        return chosen

    def _forget(self) -> None:
        """Keep only finishes ahead of V, and at most ``REMEMBERED``: past that, V moves on to
        the earliest finish kept (a round of every tenant remembered has begun), which drops it
        and any equal; tenants not remembered then start at that V, as they would have."""
        finish = {tenant: f for tenant, f in self._finish.items() if f > self._now}
        while len(finish) > REMEMBERED:
            self._now = min(finish.values())
            finish = {tenant: f for tenant, f in finish.items() if f > self._now}
        self._finish = finish

    def _start(self, tenant: str) -> float:
        return max(self._finish.get(tenant, self._now), self._now)


def _positive(weight: float) -> float:
    """A weight as turns use it: never zero (a tenant of weight 0 would never finish a turn)."""
    return weight if weight > 1e-3 else 1e-3
