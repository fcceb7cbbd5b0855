"""Tenant and token bodies to model objects, model objects to JSON. Pure, like validation.py:
every refusal is a ``ValidationError`` naming the field."""

from __future__ import annotations

import math
from typing import Any

from cronwheel.api.fields import ValidationError
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import (
    MAX_HTTP_ALLOW,
    MAX_QUOTA,
    MAX_RATE,
    MAX_TOKEN_NAME_CHARS,
    MAX_WEIGHT,
)
from cronwheel.core.tenants import (
    TOKEN_ID_RE,
    ApiToken,
    Role,
    Tenant,
    normalise_host,
    valid_tenant_name,
)

#: JSON name -> Tenant field
TENANT_FIELDS = {
    "weight": "weight",
    "maxRunning": "max_running",
    "maxJobs": "max_jobs",
    "submitRate": "submit_rate",
    "submitBurst": "submit_burst",
    "allowShell": "allow_shell",
    "httpAllow": "http_allow",
}
_NULLABLE = ("maxRunning", "maxJobs", "submitRate", "submitBurst")


def _bad(field: str | None, detail: str, status: int = 422, code: str = "invalid_field") -> ValidationError:
    return ValidationError(field, detail, status=status, code=code)


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        kind = "an array" if isinstance(body, list) else type(body).__name__ if body is not None else "null"
        raise _bad(None, f"the request body must be a JSON object, not {kind}", status=400, code="invalid_body")
    return body


def _reject_unknown(body: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(k for k in body if k not in allowed)
    if unknown:
        raise _bad(unknown[0], f"unknown field: {', '.join(unknown)} (allowed: {', '.join(allowed)})", code="unknown_field")


def _int(field: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(field, f"{field} must be an integer")
    if not lo <= value <= hi:
        raise _bad(field, f"{field} must be between {lo} and {hi}, not {value}")
    return value


def _setting(field: str, value: Any) -> Any:
    if value is None:
        if field in _NULLABLE:
            return None
        raise _bad(field, f"{field} cannot be null")
    if field == "weight":
        return _int(field, value, 1, MAX_WEIGHT)
    if field in ("maxRunning", "maxJobs"):
        return _int(field, value, 0, MAX_QUOTA)
    if field == "submitBurst":
        return _int(field, value, 1, MAX_QUOTA)
    if field == "submitRate":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 < value <= MAX_RATE:
            raise _bad(field, f"{field} must be a number of submissions per second above 0 and at most {MAX_RATE:g}")
        return float(value)
    if field == "allowShell":
        if not isinstance(value, bool):
            raise _bad(field, f"{field} must be true or false")
        return value
    # httpAllow
    if not isinstance(value, list):
        raise _bad(field, f"{field} must be an array of host names (empty: any host)")
    if len(value) > MAX_HTTP_ALLOW:
        raise _bad(field, f"{field} may list at most {MAX_HTTP_ALLOW} hosts, not {len(value)}")
    hosts: list[str] = []
    for i, entry in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(entry, str):
            raise _bad(where, f"{where} must be a string")
        try:
            host = normalise_host(entry)
        except ValueError as exc:
            raise _bad(where, f"{where}: {exc}") from None
        if host not in hosts:
            hosts.append(host)
    return tuple(hosts)


def parse_tenant_body(body: Any) -> Tenant:
    """``POST /v1/tenants``: ``{name, weight?, maxRunning?, maxJobs?, submitRate?,
    submitBurst?, allowShell?, httpAllow?}``."""
    data = _object(body)
    _reject_unknown(data, ("name", *TENANT_FIELDS))
    name = data.get("name")
    if not isinstance(name, str) or not valid_tenant_name(name):
        raise _bad("name", "name must be 1 to 64 letters, digits and _ . - (starting with a letter or digit)")
    settings = {TENANT_FIELDS[k]: _setting(k, v) for k, v in data.items() if k != "name"}
    return Tenant(name, **settings)


def parse_tenant_patch(body: Any) -> dict[str, Any]:
    """``PATCH /v1/tenants/{name}``: the fields to change (null clears a quota)."""
    data = _object(body)
    _reject_unknown(data, tuple(TENANT_FIELDS))
    if not data:
        raise _bad(None, f"nothing to change: give one or more of {', '.join(TENANT_FIELDS)}")
    return {TENANT_FIELDS[k]: _setting(k, v) for k, v in data.items()}


def parse_token_body(body: Any) -> tuple[Role, str | None, str | None]:
    """``POST /v1/tokens``: ``{tenant?, role? (tenant|worker|admin|metrics, default tenant), name?}``."""
    data = _object(body)
    _reject_unknown(data, ("tenant", "role", "name"))
    role_text = data.get("role", "tenant")
    if role_text not in [r.value for r in Role]:
        raise _bad("role", f"role must be one of {', '.join(r.value for r in Role)}")
    role = Role(role_text)
    tenant = data.get("tenant")
    if role is Role.ADMIN:
        if tenant is not None:
            raise _bad("tenant", "admin tokens belong to no tenant (they see every tenant): leave tenant out")
    elif role is Role.METRICS:
        if tenant is not None:
            raise _bad("tenant", "metrics tokens belong to no tenant (they read the node's /metrics only): leave tenant out")
    elif not isinstance(tenant, str) or not valid_tenant_name(tenant):
        raise _bad("tenant", f"a {role.value} token needs the name of an existing tenant")
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > MAX_TOKEN_NAME_CHARS or not name.isprintable()):
        raise _bad("name", f"name must be 1 to {MAX_TOKEN_NAME_CHARS} printable characters")
    return role, tenant, name


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
