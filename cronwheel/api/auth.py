"""Who is calling: the daemon's ``tenant_resolver`` for ``make_app``.

* Over **TCP** every request (but ``GET /healthz``) needs ``Authorization: Bearer <token>``;
  none, a malformed one, or one nobody issued (or since revoked) → 401 with
  ``WWW-Authenticate: Bearer``.
* Over the **local Unix socket** (mode 0600 in a 0700 data dir) the caller is an admin by
  file permission, and the peer's uid (``SO_PEERCRED``) must be the daemon's own or root's:
  anyone else who reached the socket anyway gets 403. This is the owner's way back in that
  no token can take away: with every admin token lost or revoked, ``cronwheel token create
  --role admin`` over the socket mints a new one. A bearer token sent over the socket is
  honoured, so a local operator can act as a tenant to see what it sees; a revoked one is
  refused with a reminder that leaving it out means admin.

The answer is a ``core.tenants.Principal``; ``api.access`` decides what it may do.
"""

from __future__ import annotations

import os
import socket
import struct
from typing import Any, Protocol

from aiohttp import web

from cronwheel.core.tenants import (
    ADMIN,
    TENANTLESS_ROLES,
    ApiToken,
    HostAllow,
    Principal,
    Tenant,
    effective_http_allow,
    parse_bearer,
)
from cronwheel.engine.service import Forbidden, Unauthorized

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
ROOT_UID = 0
CHALLENGE = 'Bearer realm="cronwheel"'
CHALLENGE_INVALID = 'Bearer realm="cronwheel", error="invalid_token"'


class TokenService(Protocol):
    def tenant_config(self, name: str) -> Tenant: ...

    async def lookup_token(self, secret: str) -> ApiToken | None: ...


def peer_uid(request: web.Request) -> int | None:
    """The uid of the process at the other end of a Unix socket connection, None for TCP.
    Raises OSError when the kernel will not say."""
    transport = request.transport
    sock: Any = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    _pid, uid, _gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return int(uid)


class Authenticator:
    """``Authenticator(service)(request) -> Principal``, raising Unauthorized / Forbidden."""

    def __init__(self, service: TokenService, *, http_allow: HostAllow = None, uid: int | None = None) -> None:
        self.service = service
        self.http_allow = http_allow  #: the daemon's --http-allow, for tenants without their own list
        self.uid = os.getuid() if uid is None else uid

    async def __call__(self, request: web.Request) -> Principal:
        try:
            local_uid = peer_uid(request)
        except OSError:
            raise Forbidden("cannot tell who is at the other end of the local socket") from None
        if local_uid is not None and local_uid not in (self.uid, ROOT_UID):
            raise Forbidden(
                f"the local socket is for the daemon's own user (uid {self.uid}) and root, not uid {local_uid}; "
                "use the TCP API with a token"
            )
        try:
            secret = parse_bearer(request.headers.get("Authorization"))
        except ValueError as exc:
            raise Unauthorized(f"{exc}") from None
        if secret is None:
            if local_uid is not None:
                return ADMIN
            raise Unauthorized(
                "this API needs a bearer token: send 'Authorization: Bearer <token>' "
                "(an admin creates one with `cronwheel token create --tenant NAME`)",
                presented=False,
            )
        token = await self.service.lookup_token(secret)
        if token is None:
            hint = "" if local_uid is None else (
                "; over the local socket, send no token (unset CRONWHEEL_TOKEN, drop --token) to act as the admin"
            )
            raise Unauthorized(f"unknown or revoked token{hint}")
        if token.role in TENANTLESS_ROLES:
            return Principal(token.role, None, token.token_id)
        assert token.tenant is not None
        tenant = self.service.tenant_config(token.tenant)
        return Principal(
            token.role, token.tenant, token.token_id,
            allow_shell=tenant.allow_shell,
            allow_high_priority=tenant.allow_high_priority,
            http_allow=effective_http_allow(tenant, self.http_allow),
            http_allow_own=tenant.http_allow is not None,
        )
