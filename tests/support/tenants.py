"""Tenants and their tokens on a test daemon, made as an admin would make them."""

from __future__ import annotations

from typing import Any

from tests.support.daemon import Daemon


def tenant_token(d: Daemon, tenant: str, role: str = "tenant", **settings: Any) -> str:
    """Create ``tenant`` with ``settings`` (once) and a new token of ``role`` for it."""
    if d.get(f"/v1/tenants/{tenant}").status == 404:
        r = d.post("/v1/tenants", {"name": tenant, **settings})
        assert r.status == 201, r
    r = d.post("/v1/tokens", {"tenant": tenant, "role": role})
    assert r.status == 201, r
    return str(r.json()["token"])
