"""What every handler reads from its request and how it answers: the service, who is calling
(tenancy has one seam: ``tenant_resolver(request)``, answering a ``core.tenants.Principal``,
a tenant name, or None = admin, who sees every tenant; without one every caller is admin and
jobs go to the default tenant; the daemon's resolver is ``api.auth.Authenticator``), the JSON
body (the boundary for bodies), a JSON answer and a page of a listing."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import Any

import msgspec
from aiohttp import web

from cronwheel.api.appkeys import MAIL_TRANSPORT, SERVICE, TENANT_RESOLVER
from cronwheel.api.problems import Problem
from cronwheel.core.limits import BODY_TIMEOUT_SEC, JsonTextError, loads_checked
from cronwheel.core.notify import Rule, no_mail_warnings
from cronwheel.core.tenants import ADMIN, Principal, Role
from cronwheel.engine.service import Forbidden, SchedulerService, Unauthorized


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """``data`` as JSON: plain values, or an answer's struct (``api/answers.py``, ``api/schema.py``).

    msgspec encodes a listing of 1,000 jobs in ~0.6 ms where ``json.dumps`` took ~7.8 ms, on
    the event loop that every tenant's requests share (docs/benchmarks.md, "A neighbour's
    reads"). Text from before the door refused lone surrogates cannot be UTF-8: that answer
    is written as ``json.dumps`` writes it, with the surrogate escaped."""
    return json_bytes_response(encode_json(data), status, headers)


def mail_warnings(request: web.Request, rules: tuple[Rule, ...] | list[Rule], field: str = "notify") -> list[str]:
    """What an accepted rule list should know: its email rules cannot be sent by this node
    (a job's or a tenant's defaults: kept, not refused, as mail may be configured later, or
    on another node)."""
    if request.app.get(MAIL_TRANSPORT) is not False:
        return []
    return no_mail_warnings(rules, field)


def encode_json(data: Any) -> bytes:
    """``data`` as JSON bytes, as ``json_response`` sends it."""
    try:
        return msgspec.json.encode(data, enc_hook=str)
    except UnicodeEncodeError:
        return json.dumps(msgspec.to_builtins(data, enc_hook=str)).encode()  # structs in lists too


def json_bytes_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """JSON already encoded (``encode_json``, or pieces of it joined)."""
    return web.Response(status=status, body=body, content_type="application/json", charset="utf-8", headers=headers)


_PRINCIPAL = web.RequestKey("cronwheel.principal", Principal)  # resolved once per request


async def principal_of(request: web.Request) -> Principal:
    """Who is calling (resolved once per request; Unauthorized/Forbidden from the resolver)."""
    cached = request.get(_PRINCIPAL)
    if isinstance(cached, Principal):
        return cached
    result = await _resolve(request)
    if result is None:
        principal = ADMIN
    elif isinstance(result, Principal):
        principal = result
    elif isinstance(result, str):
        principal = Principal(Role.TENANT, result)
    else:
        raise TypeError(f"tenant_resolver returned {type(result).__name__}, not Principal | str | None")
    request[_PRINCIPAL] = principal
    return principal


async def _resolve(request: web.Request) -> Any:
    """What the app's tenant resolver says of the request's credential (None without one)."""
    resolver = request.app[TENANT_RESOLVER]
    result: Any = None if resolver is None else resolver(request)
    return await result if inspect.isawaitable(result) else result


#: how often a long-lived request (a followed stream, a claim's long poll) checks that its
#: credential still stands: a revoked token stops within this, not when the client hangs up
AUTH_RECHECK_SEC = 1.0


class CredentialWatch:
    """A long-lived request's credential, checked again every ``AUTH_RECHECK_SEC``: the token
    may be revoked (or its tenant's access changed) while the stream is open. A store that
    cannot answer does not end the stream; a token no longer accepted does."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.revoked = False
        self._next = asyncio.get_running_loop().time() + AUTH_RECHECK_SEC

    def revoked_now(self) -> bool:
        """Revoked on this node (a set lookup, for every turn of a long poll), or found
        revoked by the last check (revoked on another node of a cluster)."""
        if not self.revoked:
            principal = self.request.get(_PRINCIPAL)
            token_id = principal.token_id if isinstance(principal, Principal) else None
            self.revoked = token_id is not None and service_of(self.request).revoked_here(token_id)
        return self.revoked

    async def holds(self) -> bool:
        if self.revoked_now():
            return False
        now = asyncio.get_running_loop().time()
        if now < self._next:
            return True
        self._next = now + AUTH_RECHECK_SEC
        try:
            await _resolve(self.request)
        except (Unauthorized, Forbidden):
            self.revoked = True
        except Exception:  # the store is down: the credential stands until it can be read
            return True
        return not self.revoked

    async def watch(self) -> None:
        """Check until revoked (a task beside a long poll, whose ``alive`` reads ``revoked``)."""
        while True:
            await asyncio.sleep(AUTH_RECHECK_SEC)
            if not await self.holds():
                return


async def tenant_of(request: web.Request) -> str | None:
    """The tenant a request is scoped to; None for admins (every tenant)."""
    principal = await principal_of(request)
    return None if principal.is_admin else principal.tenant


async def json_body(request: web.Request, *, optional: bool = False) -> Any:
    """The request's JSON body. ``optional``: an empty body reads as None."""
    if not request.body_exists:
        if optional:
            return None
        raise Problem(400, "missing_body", "this request needs a JSON body (Content-Type: application/json)")
    ctype = request.content_type
    try:
        raw = await asyncio.wait_for(request.read(), BODY_TIMEOUT_SEC)
    except TimeoutError:
        raise Problem(408, "request_timeout", f"the request body did not arrive within {BODY_TIMEOUT_SEC:g} seconds",
                      headers={"Connection": "close"}) from None
    except web.RequestPayloadError as exc:  # e.g. Content-Encoding: gzip on a body that is not
        why = getattr(exc.__cause__, "message", None) or str(exc)  # (the parser's own words)
        raise Problem(400, "malformed_body", f"the request body cannot be read: {' '.join(str(why).split())}",
                      headers={"Connection": "close"}) from None
    except ConnectionError:  # the client hung up mid-body (a long poll given up): its doing, not an internal error
        raise Problem(400, "incomplete_body", "the connection closed before the request body arrived",
                      headers={"Connection": "close"}) from None
    if optional and not raw.strip():
        return None
    if ctype != "application/json" and not ctype.endswith("+json"):
        raise Problem(415, "unsupported_media_type", f"the body must be JSON sent as Content-Type: application/json, not {ctype!r}")
    charset = request.charset
    if charset and charset.lower() not in ("utf-8", "utf8"):
        raise Problem(415, "unsupported_media_type", f"JSON must be UTF-8, not {charset!r}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Problem(400, "malformed_json", f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        # the boundary for bodies: nothing past here meets a lone surrogate, a NUL, a NaN, an
        # integer no store can hold, or nesting a worker frame would refuse
        value = loads_checked(text, "the JSON body")
    except JsonTextError as exc:
        bad = exc.refusal
        if bad is None:
            raise Problem(400, "malformed_json", str(exc)) from None
        status, code = (400, "invalid_value") if bad.malformed else (422, "out_of_range")
        raise Problem(status, code, f"{bad.path or 'the body'} {bad.why}", field=bad.path or None) from None
    return value


async def no_body(request: web.Request) -> None:
    """A route that takes nothing in its body: none, ``{}`` or ``null``. A member is refused,
    not ignored: ``{"force": true}`` on a replay must not read as if it had been honoured."""
    value = await json_body(request, optional=True)
    if value is None or value == {}:
        return
    if isinstance(value, dict):
        names = ", ".join(sorted(value)[:10])
        raise Problem(400, "unknown_field", f"{request.method} {request.path} takes no body fields, not {names}"[:300],
                      field=sorted(value)[0][:100])
    raise Problem(400, "invalid_body", f"{request.method} {request.path} takes no body (or {{}}), not a JSON {type(value).__name__}")


def service_of(request: web.Request) -> SchedulerService:
    return request.app[SERVICE]


def cut_page(items: list[Any], limit: int, cursor: Callable[[Any], str]) -> tuple[list[Any], str | None]:
    """Cut a ``limit + 1`` fetch to ``limit`` items and the cursor of the next page."""
    if len(items) > limit:
        items = items[:limit]
        return items, cursor(items[-1])
    return items, None
