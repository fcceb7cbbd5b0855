"""Connection budgets: how many HTTP connections the API holds open, in all, per client
address, and per caller.

Every open connection costs a file descriptor and some memory, and a client that opens them
without sending anything must not use up the daemon's file limit for everybody. A listener has
a budget: at most ``total`` connections at once. A new connection counts against its client
address (at most ``per_client``) until a request on it is authenticated; from then on it
counts against that caller (``per_caller``: a tenant, its workers included, or a tenantless
role), and no longer against its address. So tenants behind one NAT or reverse proxy share
the address's budget only for the moment before each of their connections says who it is,
and one of them holding many connections open (followed streams, long polls, idle
keep-alives) spends its own budget, not its neighbours'. The local Unix socket has a budget of
its own, so a flood on TCP never locks the local operator out.

Behind a trusted reverse proxy (``core.forwarded``) the address of a connection is the
proxy's, and the client's is known only once a request's headers name it: such a connection
is admitted with no address (``admit(None)``: the total only), and each request on it that
is not yet vouched for counts against the address its headers name (``attribute``), so the
clients behind one proxy each have an address's budget, not one between them all.

Pure: the HTTP layer asks ``admit`` on every new connection, ``attribute`` when a proxy's
request names its client, ``vouch`` when a request on it is authenticated, and ``release``
at its end.
"""

from __future__ import annotations

from collections import Counter


class Budget:
    def __init__(self, total: int, per_client: int | None = None, per_caller: int | None = None) -> None:
        self.total = total
        self.per_client = per_client
        self.per_caller = per_caller
        self.open = 0
        self._by_client: Counter[str] = Counter()  # connections not yet vouched for, by address
        self._by_caller: Counter[str] = Counter()
        #: refused, by reason ("total", "per_client", "per_caller"), since start
        self.refused: Counter[str] = Counter()

    def admit(self, client: str | None) -> str | None:
        """Count a new connection in, or say why not (``"total"``, ``"per_client"``)."""
        if self.open >= self.total:
            reason = "total"
        elif not self.client_has_room(client):
            reason = "per_client"
        else:
            self.open += 1
            if client is not None:
                self._by_client[client] += 1
            return None
        self.refused[reason] += 1
        return reason

    def client_has_room(self, client: str | None) -> bool:
        return self.per_client is None or client is None or self._by_client[client] < self.per_client

    def attribute(self, held: str | None, client: str) -> str | None:
        """A connection not vouched for, counted against ``held`` (None: no address, a trusted
        proxy's), carries a request of ``client``: count it against that address from now on,
        or say why not (``"per_client"``: its budget is spent; the count stays as it was)."""
        if held == client:
            return None
        if not self.client_has_room(client):
            self.refused["per_client"] += 1
            return "per_client"
        self._uncount(held, None)
        self._by_client[client] += 1
        return None

    def held_by_client(self, client: str) -> int:
        return self._by_client[client]

    def vouch(self, client: str | None, held_by: str | None, caller: str) -> str | None:
        """A connection (of ``client``, counted against ``held_by``: None for its address)
        carries a request authenticated as ``caller``: count it against the caller from now
        on, or say why not (``"per_caller"``: it holds its budget already)."""
        if held_by == caller:
            return None
        if self.per_caller is not None and self._by_caller[caller] >= self.per_caller:
            self.refused["per_caller"] += 1
            return "per_caller"
        self._uncount(client, held_by)
        self._by_caller[caller] += 1
        return None

    def release(self, client: str | None, held_by: str | None = None) -> None:
        self.open -= 1
        self._uncount(client, held_by)

    def _uncount(self, client: str | None, held_by: str | None) -> None:
        counter, key = (self._by_client, client) if held_by is None else (self._by_caller, held_by)
        if key is not None:
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]

    def clients(self) -> int:
        return len(self._by_client)

    def held_by(self, caller: str) -> int:
        return self._by_caller[caller]
