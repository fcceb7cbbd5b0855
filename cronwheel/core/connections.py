"""Connection budgets: how many HTTP connections the API holds open, in all and per client.

Every open connection costs a file descriptor and some memory, and a client that opens them
without sending anything must not use up the daemon's file limit for everybody. A listener has
a budget: at most ``total`` connections at once, at most ``per_client`` from one address. The
local Unix socket has a budget of its own, so a flood on TCP never locks the local operator
out. Pure: the HTTP layer asks ``admit`` on every new connection and ``release`` at its end.
"""

from __future__ import annotations

from collections import Counter


class Budget:
    def __init__(self, total: int, per_client: int | None = None) -> None:
        self.total = total
        self.per_client = per_client
        self.open = 0
        self._by_client: Counter[str] = Counter()
        #: connections refused, by reason ("total", "per_client"), since start
        self.refused: Counter[str] = Counter()

    def admit(self, client: str | None) -> str | None:
        """Count a new connection in, or say why not (``"total"``, ``"per_client"``)."""
        if self.open >= self.total:
            reason = "total"
        elif self.per_client is not None and client is not None and self._by_client[client] >= self.per_client:
            reason = "per_client"
        else:
            self.open += 1
            if client is not None:
                self._by_client[client] += 1
            return None
        self.refused[reason] += 1
        return reason

    def release(self, client: str | None) -> None:
        self.open -= 1
        if client is not None:
            self._by_client[client] -= 1
            if self._by_client[client] <= 0:
                del self._by_client[client]

    def clients(self) -> int:
        return len(self._by_client)
