"""Tenant and token bodies to model objects, model objects to JSON. The bodies are decoded into
their structs (``api/schema.py``); what is left here is what a struct cannot say (host names,
the roles that need a tenant); the answers are filled into theirs (``api/answers.py``). Pure, like validation.py: every refusal is a
``ValidationError`` naming the field."""

from __future__ import annotations

from typing import Any

import msgspec

from cronwheel.api import answers
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
        if name == "http_allow" and value is not None:  # null: none of its own
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
    submitBurst?, allowShell?, allowHighPriority?, httpAllow?}``."""
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


def tenant_answer(t: Tenant, live: dict[str, Any] | None = None, jobs: int | None = None) -> answers.Tenant:
    """``jobs``: its registered jobs (for one being deleted, the live jobs still to cancel)."""
    answer = answers.Tenant(
        name=t.name,
        weight=t.weight,
        max_running=t.max_running,
        max_jobs=t.max_jobs,
        submit_rate=t.submit_rate,
        submit_burst=t.submit_burst,
        allow_shell=t.allow_shell,
        allow_high_priority=t.allow_high_priority,
        http_allow=None if t.http_allow is None else list(t.http_allow),
        created_at=format_instant(t.created_at or None),
        updated_at=format_instant(t.updated_at or None),
        status="deleting" if t.deleting else "active",
    )
    if t.deleting:
        answer.deleting_since = format_instant(t.deleting_since)
    if jobs is not None:
        answer.jobs = jobs
    if live is not None:
        answer.running = live.get("running", 0)
        answer.queued = live.get("queued", 0)
        answer.quota_waiting = live.get("quotaWaiting", False)
    return answer


def token_answer(t: ApiToken) -> answers.Token:
    return answers.Token(
        token_id=t.token_id, role=t.role.value, tenant=t.tenant, name=t.name,
        created_at=format_instant(t.created_at or None), revoked_at=format_instant(t.revoked_at),
    )


def token_created(t: ApiToken, secret: str) -> answers.TokenCreated:
    """A new token's answer: the secret is shown this once, at creation."""
    return answers.TokenCreated(**msgspec.structs.asdict(token_answer(t)), token=secret)
