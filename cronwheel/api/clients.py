"""Who sent a request: its client's address, the one budgets, refusals and audit lines name.
The TCP peer, or behind a trusted reverse proxy the client the proxy's forwarding headers
name (``core.forwarded``; the connection's side is ``api.server``'s ``identify``). Resolved
once per request, before anything else reads it."""

from __future__ import annotations

from aiohttp import web

from cronwheel.core.forwarded import Client, canonical

_CLIENT = web.RequestKey("cronwheel.client", Client)


def client_of(request: web.Request) -> Client:
    """The request's client (its peer when the app is served without connection guards)."""
    client = request.get(_CLIENT)
    return client if isinstance(client, Client) else Client(canonical(request.remote))


def identified(request: web.Request, client: Client) -> None:
    request[_CLIENT] = client
