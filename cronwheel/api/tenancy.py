"""Tenant and token bodies to model objects, model objects to JSON. The bodies are decoded into
their structs (``api/schema.py``); what is left here is what a struct cannot say (host names,
the roles that need a tenant). Pure, like validation.py: every refusal is a
``ValidationError`` naming the field."""

from __future__ import annotations

from typing import Any

import msgspec

from cronwheel.api.decode import decode
from cronwheel.api.fields import ValidationError
from cronwheel.api.schema import TenantPatch, TenantRequest, TokenRequest
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_TOKEN_NAME_CHARS
from cronwheel.core.tenants import TOKEN_ID_RE, ApiToken, Role, Tenant, normalise_host

#: JSON name -> Tenant field (the struct's members are named as the Tenant's fields)
TENANT_FIELDS = {f.encode_name: f.name for f in msgspec.structs.fields(TenantPatch)}


def _bad(field: str | None, detail: str, status: int = 422, code: str = "invalid_field") -> ValidationError:
    return ValidationError(field, detail, status=status, code=code)


def _settings(body: TenantPatch) -> dict[str, Any]:
    """The settings a decoded body gives (a member left out is not one), as Tenant fields."""
    out: dict[str, Any] = {}
    for name in TENANT_FIELDS.values():
        value = getattr(body, name)
        if value is msgspec.UNSET:
            continue
        if name == "submit_rate" and value is not None:
            value = float(value)
        if name == "http_allow":
            value = _hosts(value)
        out[name] = value
    return out


def _hosts(entries: list[str]) -> tuple[str, ...]:
    hosts: list[str] = []
    for i, entry in enumerate(entries):
        try:
            host = normalise_host(entry)
        except ValueError as exc:
            raise _bad(f"httpAllow[{i}]", f"httpAllow[{i}]: {exc}") from None
        if host not in hosts:
            hosts.append(host)
    return tuple(hosts)


def parse_tenant_body(body: Any) -> Tenant:
    """``POST /v1/tenants``: ``{name, weight?, maxRunning?, maxJobs?, submitRate?,
    submitBurst?, allowShell?, httpAllow?}``."""
    req = decode(TenantRequest, body)
    return Tenant(req.name, **_settings(req))


def parse_tenant_patch(body: Any) -> dict[str, Any]:
    """``PATCH /v1/tenants/{name}``: the fields to change (null clears a quota)."""
    settings = _settings(decode(TenantPatch, body))
    if not settings:
        raise _bad(None, f"nothing to change: give one or more of {', '.join(TENANT_FIELDS)}")
    return settings


def parse_token_body(body: Any) -> tuple[Role, str | None, str | None]:
    """``POST /v1/tokens``: ``{tenant?, role? (tenant|worker|admin|metrics, default tenant), name?}``."""
    req = decode(TokenRequest, body)
    role = Role(req.role)
    if role is Role.ADMIN:
        if req.tenant is not None:
            raise _bad("tenant", "admin tokens belong to no tenant (they see every tenant): leave tenant out")
    elif role is Role.METRICS:
        if req.tenant is not None:
            raise _bad("tenant", "metrics tokens belong to no tenant (they read the node's /metrics only): leave tenant out")
    elif req.tenant is None:
        raise _bad("tenant", f"a {role.value} token needs the name of an existing tenant")
    if req.name is not None and not req.name.isprintable():
        raise _bad("name", f"name must be 1 to {MAX_TOKEN_NAME_CHARS} printable characters")
    return role, req.tenant, req.name


def valid_token_id(text: str) -> bool:
    return TOKEN_ID_RE.fullmatch(text) is not None


def tenant_to_json(t: Tenant, live: dict[str, Any] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": t.name,
        "weight": t.weight,
        "maxRunning": t.max_running,
        "maxJobs": t.max_jobs,
        "submitRate": t.submit_rate,
        "submitBurst": t.submit_burst,
        "allowShell": t.allow_shell,
        "httpAllow": list(t.http_allow),
        "createdAt": format_instant(t.created_at or None),
        "updatedAt": format_instant(t.updated_at or None),
    }
    if live is not None:
        data.update(running=live.get("running", 0), queued=live.get("queued", 0), quotaWaiting=live.get("quotaWaiting", False))
    return data


def token_to_json(t: ApiToken, secret: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tokenId": t.token_id,
        "role": t.role.value,
        "tenant": t.tenant,
        "name": t.name,
        "createdAt": format_instant(t.created_at or None),
        "revokedAt": format_instant(t.revoked_at),
    }
    if secret is not None:
        data["token"] = secret  # shown once, at creation
    return data
