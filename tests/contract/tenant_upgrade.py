"""What both stores promise of the tenants of a store written before schema 28 (deletion):
the test of each store writes tenant ``acme`` (weight 3) and its token ``tk_t`` with its own
driver, then opens the store and checks this."""

from __future__ import annotations

from cronwheel.store.base import Store
from tests.contract.conftest import T0

#: the rows each test writes before the upgrade, in its own driver's words
OLD_TENANT = "INSERT INTO tenants (name, weight, created_at) VALUES ('acme', 3, 5)"
OLD_TOKEN = "INSERT INTO api_tokens (token_id, token_hash, role, tenant, created_at) VALUES ('tk_t', 'h1', 'tenant', 'acme', 1)"


def check_upgraded(store: Store) -> None:
    """Every tenant is live after the upgrade, and can be deleted: its token, then its row."""
    assert {t.name: (t.weight, t.deleting_since) for t in store.list_tenants()} == {"acme": (3, None), "default": (1, None)}
    assert [t.token_id for t in store.mark_tenant_deleting("acme", T0).revoked] == ["tk_t"]
    assert store.purge_tenant("acme", 100, T0 + 1) == (2, True)
