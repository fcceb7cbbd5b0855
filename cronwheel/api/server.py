"""The API's HTTP connections: budgets, timeouts, and problem documents for requests the
parser refuses.

aiohttp answers what it cannot parse (a line too long, too many headers, a smuggling
attempt) in plain text, holds a connection that never finishes its headers for as long as
its keep-alive timeout, and accepts connections until the file limit. Here:

* every new connection is counted against its listener's ``Budget`` (TCP: in all and per
  client address; the Unix socket: its own) and closed at once beyond it, with an
  ``http.connections_limited`` event at most every ``LIMITED_EVENT_SEC`` (the count refused
  since the last one) and the counts in ``/metrics``;
* once a request on a TCP connection is authenticated (``api.access`` calls ``vouch``), the
  connection counts against its caller, no longer against its address; a caller over its
  budget gets 429 and the connection is closed. A connection that never carried an
  authenticated request is closed after each answer (a probe, a 401), so that an address's
  budget is only held by connections on their way to saying who they are: tenants behind one
  NAT or proxy do not lock each other out;
* a connection that has not sent its first request's headers within ``HEADER_TIMEOUT_SEC``
  is closed, and so is the oldest such connection of an address whose budget is spent when
  another connection arrives from it (a flood of silent connections cannot keep the
  address's next client out); between requests, ``IDLE_TIMEOUT_SEC`` (aiohttp's keep-alive
  timeout, which also ends a request whose headers stall);
* behind a trusted reverse proxy (``trusted_proxies``, ``core.forwarded``) a connection from
  the proxy counts against the total only, and each request on it that nobody vouched for yet
  against the client address its forwarding headers name (``identify``); headers that cannot
  be used put the request on the proxy's own address and are logged as one
  ``http.forwarded_invalid`` line per proxy at most every ``FORWARDED_EVENT_SEC``;
* what the parser refuses is answered as ``application/problem+json``, like every other
  4xx, and logged as one ``http.bad_request`` line (at most one per second per error kind,
  with the count of the others), never with the bytes received (they may hold a token).
"""

from __future__ import annotations

import json
import re
import socket
import time
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from cronwheel.core.connections import Budget
from cronwheel.core.forwarded import Client, TrustedProxies, canonical
from cronwheel.core.ids import new_error_id
from cronwheel.core.limits import (
    HEADER_TIMEOUT_SEC,
    IDLE_TIMEOUT_SEC,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_CALLER,
    MAX_CONNECTIONS_PER_CLIENT,
    MAX_LOCAL_CONNECTIONS,
)
from cronwheel.core.ratelimit import OncePer
from cronwheel.obs.events import EventLog

#: where the parser's message starts quoting the bytes it got (``...: b'GET /x\\xed...'``)
_QUOTED_BYTES = re.compile(r"""[:,]?\s*(?:bytearray\()?b['"]""")
_STATUS_PREFIX = re.compile(r"\d{3}, message:")
LIMITED_EVENT_SEC = 10.0
BAD_REQUEST_EVENT_SEC = 1.0
FORWARDED_EVENT_SEC = 10.0
PROBLEM_JSON = "application/problem+json"


class ConnectionGuard:
    """The budgets of a daemon's listeners and what it says when they are spent."""

    def __init__(
        self,
        events: EventLog | None,
        *,
        max_connections: int = MAX_CONNECTIONS,
        max_per_client: int = MAX_CONNECTIONS_PER_CLIENT,
        max_per_caller: int = MAX_CONNECTIONS_PER_CALLER,
        max_local: int = MAX_LOCAL_CONNECTIONS,
        header_timeout_sec: float = HEADER_TIMEOUT_SEC,
        proxies: TrustedProxies | None = None,
    ) -> None:
        self.events = events
        #: peers whose forwarding headers name the client (read at each connection: a reload may change it)
        self.proxies = proxies or TrustedProxies()
        self.forwarded_invalid = 0  #: requests whose forwarding headers could not be used, since start
        self.tcp = Budget(max_connections, max_per_client, max_per_caller)
        self.local = Budget(max_local)
        #: TCP connections still to send their first request's headers, oldest first, by address
        self.silent: dict[str, dict[GuardedRequestHandler, None]] = {}
        self.header_timeouts = 0
        self.header_timeout_sec = header_timeout_sec
        self._limited_log = OncePer(LIMITED_EVENT_SEC)
        self._bad_request_log = OncePer(BAD_REQUEST_EVENT_SEC)
        self._forwarded_log = OncePer(FORWARDED_EVENT_SEC)

    def budget(self, local: bool) -> Budget:
        return self.local if local else self.tcp

    def limited(self, local: bool, reason: str, client: str | None, caller: str | None = None,
                proxy: str | None = None) -> None:
        listener = "unix" if local else "tcp"
        if self.events is not None and self._limited_log.allow(listener, time.monotonic()):
            budget = self.budget(local)
            self.events.emit(
                "http.connections_limited", listener=listener, reason=reason, client=client, caller=caller, proxy=proxy,
                open=budget.open, limit=budget.total, perClient=budget.per_client,
                perCaller=budget.per_caller if caller else None, refusedSinceLast=self._limited_log.suppressed + 1,
            )

    def make_room(self, client: str | None) -> None:
        """An address whose budget is spent gets a new connection in by closing its oldest
        connection that has said nothing yet (counted as a header timeout)."""
        if client is None or self.tcp.client_has_room(client):
            return
        waiting = self.silent.get(client)
        if waiting:
            oldest = next(iter(waiting))
            self.header_timeouts += 1
            oldest.drop()

    def unusable_headers(self, client: Client) -> None:
        """A trusted proxy's request whose forwarding headers could not be used: counted, and
        said at most once per ``FORWARDED_EVENT_SEC`` per proxy (a client can send them at will)."""
        self.forwarded_invalid += 1
        if self.events is not None and self._forwarded_log.allow(client.proxy, time.monotonic()):
            self.events.emit("http.forwarded_invalid", peer=client.proxy, problem=client.problem,
                             suppressed=self._forwarded_log.suppressed or None)

    def bad_request(self, client: str | None, error: str, status: int | None) -> None:
        if self.events is not None and self._bad_request_log.allow(error, time.monotonic()):
            self.events.emit("http.bad_request", peer=client, error=error, status=status,
                             suppressed=self._bad_request_log.suppressed or None)


class GuardedRequestHandler(RequestHandler):
    """aiohttp's connection protocol, with the budget, the header timeout, and problem
    documents for the parser's refusals."""

    def __init__(self, manager: web.Server, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._guard = guard
        self._admitted = False
        self._started = False
        self._local = False
        self._peer: str | None = None  # the TCP peer's address
        self._proxied = False  # the peer is a trusted proxy: requests name their clients
        #: whose per-address budget it counts against (None: none, a proxy's before a request)
        self._client: str | None = None
        self._request_client: Client | None = None  # the latest request's, for the log
        self._silent_key: str | None = None
        self._caller: str | None = None  # whose budget it counts against (None: its address's)
        self._header_timer: Any = None

    def connection_made(self, transport: Any) -> None:
        sock = transport.get_extra_info("socket")
        self._local = sock is not None and sock.family == socket.AF_UNIX
        if not self._local:
            peer = transport.get_extra_info("peername")
            self._peer = canonical(str(peer[0])) if isinstance(peer, tuple) and peer else None
            self._proxied = self._guard.proxies.trusts_peer(self._peer)
            self._client = None if self._proxied else self._peer
            self._guard.make_room(self._client)
        refusal = self._guard.budget(self._local).admit(self._client)
        if refusal is not None:  # closed at once, never handed to aiohttp
            self._guard.limited(self._local, refusal, self._peer)
            transport.abort()
            return
        self._admitted = self._started = True
        super().connection_made(transport)
        self._header_timer = self._loop.call_later(self._guard.header_timeout_sec, self._headers_overdue)
        self._silent_key = self._client  # its address's until it speaks (a proxy's: none)
        if self._client is not None:
            self._guard.silent.setdefault(self._client, {})[self] = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._header_timer is not None and self._request_count:
            self._said_something()

    def _said_something(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        key, self._silent_key = self._silent_key, None
        waiting = self._guard.silent.get(key) if key is not None else None
        if key is not None and waiting is not None:
            waiting.pop(self, None)
            if not waiting:
                del self._guard.silent[key]

    def _headers_overdue(self) -> None:
        self._header_timer = None
        if not self._request_count:
            self._guard.header_timeouts += 1
            self.drop()

    def drop(self) -> None:
        """Close a connection that has not sent a request, its budget given back at once."""
        self._release()
        self.force_close()

    def identify(self, headers: Any) -> tuple[Client, int | None]:
        """Whose request this is (the peer, or behind a trusted proxy the client its headers
        name) and, for a proxy's connection nobody vouched for yet, count it against that
        client's address. Refused: the connections that address holds (the request answers
        429, and the connection is closed)."""
        if not self._proxied:
            client = Client(self._peer)
        else:
            client = self._guard.proxies.client(self._peer, _joined(headers, "X-Forwarded-For"),
                                                _joined(headers, "Forwarded"))
            if client.problem is not None:
                self._guard.unusable_headers(client)
        self._request_client = client
        if self._proxied and self._admitted and self._caller is None and client.address is not None:
            refusal = self._guard.tcp.attribute(self._client, client.address)
            if refusal is not None:
                self._guard.limited(False, refusal, client.address, proxy=client.proxy)
                return client, self._guard.tcp.held_by_client(client.address)
            self._client = client.address
        return client, None

    def vouch(self, caller: str) -> int | None:
        """A request on this connection is ``caller``'s: count the connection against its
        budget. Refused: the connections the caller holds (the request answers 429, and the
        connection is closed)."""
        if self._local or not self._admitted:
            return None
        refusal = self._guard.tcp.vouch(self._client, self._caller, caller)
        if refusal is not None:
            client = self._request_client or Client(self._client)
            self._guard.limited(False, refusal, client.address, caller, client.proxy)
            return self._guard.tcp.held_by(caller)
        self._caller = caller
        return None

    async def finish_response(self, request: Any, resp: web.StreamResponse, start_time: Any) -> Any:
        if not self._local and self._caller is None:  # nobody vouched for it: it holds its address's budget
            resp.force_close()
        return await super().finish_response(request, resp, start_time)

    def _release(self) -> None:
        if self._admitted:
            self._admitted = False
            self._said_something()
            self._guard.budget(self._local).release(self._client, self._caller)

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self._started:  # refused at once: aiohttp never had it
            return
        self._release()
        super().connection_lost(exc)

    def handle_error(
        self, request: Any, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        """aiohttp's last word on a request (the parser refused it, or a handler raised past
        the app's middleware): a problem document, and one rate-limited line."""
        self._guard.bad_request(self._peer, type(exc).__name__ if exc is not None else "error", status)
        if request.writer.output_size > 0:
            raise ConnectionError("the response was already started: the connection is closed")
        body: dict[str, Any] = {
            "type": "urn:cronwheel:problem:" + ("internal_error" if status >= 500 else "bad_request"),
            "title": HTTPStatus(status).phrase,
            "status": status,
            "code": "internal_error" if status >= 500 else "bad_request",
        }
        if status >= 500:
            body["errorId"] = new_error_id()
            body["detail"] = f"internal error (errorId {body['errorId']}, see the daemon log)"
        else:
            # the parser's own words name the problem ("Got more than 8190 bytes when reading
            # Header value"); the bytes it quotes are left out (they may hold a token)
            text = str(getattr(exc, "message", "") or message or HTTPStatus(status).description)
            lines = [line.strip() for line in text.splitlines() if line.strip() and not _STATUS_PREFIX.fullmatch(line.strip())]
            text = _QUOTED_BYTES.split(lines[0] if lines else "", maxsplit=1)[0]
            body["detail"] = "the request could not be parsed: " + (text[:200] or HTTPStatus(status).phrase)
        resp = web.Response(status=status, text=json.dumps(body), content_type=PROBLEM_JSON)
        resp.force_close()
        return resp


def _joined(headers: Any, name: str) -> str | None:
    """A header's lines as one list (RFC 9110 §5.3: the same as joined with commas)."""
    values = headers.getall(name, ())
    return ", ".join(values) if values else None


class _GuardedServer:
    """aiohttp's ``Server`` (it tracks connections and shuts them down) whose protocol
    factory makes ``GuardedRequestHandler``s."""

    def __init__(self, inner: web.Server, guard: ConnectionGuard) -> None:
        self._inner = inner
        self._guard = guard

    def __call__(self) -> GuardedRequestHandler:
        # the inner server's loop and handler settings, as its own factory would pass them
        return GuardedRequestHandler(self._inner, guard=self._guard, loop=self._inner._loop, **self._inner._kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class GuardedAppRunner(web.AppRunner):
    """``web.AppRunner`` whose connections are guarded; keep-alive idles out after
    ``IDLE_TIMEOUT_SEC``."""

    def __init__(self, app: web.Application, guard: ConnectionGuard, **kwargs: Any) -> None:
        kwargs.setdefault("keepalive_timeout", IDLE_TIMEOUT_SEC)
        super().__init__(app, **kwargs)
        self.guard = guard

    async def _make_server(self) -> Any:
        return _GuardedServer(await super()._make_server(), self.guard)
