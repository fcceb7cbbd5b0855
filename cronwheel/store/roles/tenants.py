"""Tenants and API tokens (hashes only), shared by every node of a cluster.

Part of the store contract (``store.base.Store`` is the union of the roles); the
conventions in ``store.base`` hold for every method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from cronwheel.core.tenants import ApiToken, Tenant, TenantDeletion


class TenantStore(ABC):
    """Tenants with their settings and quotas, and API tokens stored as hashes only."""

    # ---- tenants
    @abstractmethod
    def list_tenants(self) -> list[Tenant]:
        """Every tenant, ordered by name (there is always ``default``)."""

    @abstractmethod
    def tenant_with_jobs(self, name: str) -> tuple[Tenant, int] | None:
        """A tenant and its registered (ACTIVE or PAUSED) jobs, what its ``maxJobs`` counts,
        read together; None when there is no such tenant."""

    @abstractmethod
    def create_tenant(self, tenant: Tenant, now_ms: int) -> Tenant | None:
        """Insert a tenant with the given settings (created_at = updated_at = now_ms, whatever
        the argument says). None when a tenant of that name exists, or is being deleted and its
        rows are not all gone yet (nothing changes)."""

    @abstractmethod
    def update_tenant(self, name: str, changes: dict[str, Any], now_ms: int) -> Tenant | None:
        """Set the ``core.tenants.TENANT_SETTINGS`` fields named in ``changes`` (a value of
        None clears a quota), updated_at = now_ms; other fields keep their values. Returns the
        tenant as stored, or None when it does not exist or is being deleted. Unknown keys raise
        ValueError and change nothing."""

    @abstractmethod
    def mark_tenant_deleting(self, name: str, now_ms: int, force: bool = False) -> TenantDeletion:
        """Ask for the tenant's deletion, in one transaction (``store/tenantgone.py``): NOT_FOUND;
        DELETING when it is being deleted already (nothing changes); NOT_EMPTY, with the counts,
        while it has live (ACTIVE or PAUSED) jobs or PENDING, RUNNING or RETRY_WAIT executions
        and ``force`` is false (nothing changes); else MARKED: ``deleting_since`` = now_ms and
        every active token of the tenant revoked (returned in ``revoked``). From then on
        ``create_jobs`` refuses its jobs (TENANT_DELETING), ``create_token`` its tokens and
        ``create_tenant`` its name, until ``purge_tenant`` has removed its row. A forced
        deletion leaves its jobs to the caller to cancel."""

    @abstractmethod
    def purge_tenant(self, name: str, max_rows: int, drop_before_ms: int) -> tuple[int, bool]:
        """Delete up to about ``max_rows`` rows that carry the name of the tenant being deleted
        (finished executions and their effects, notifications not being delivered, settled jobs
        left with no execution and what is only about them, calendars and their indexes,
        tokens), then, once none is left and if its deletion was asked before
        ``drop_before_ms``, the tenant row itself. Returns ``(rows deleted, whether the tenant
        row went)``. A live tenant, or none, is not touched: ``(0, False)``. Nothing of another
        tenant is ever touched."""

    # ---- API tokens (hashes only)
    @abstractmethod
    def create_token(self, token: ApiToken, now_ms: int) -> bool:
        """Store a token (created_at = now_ms, revoked_at None). False, and nothing stored,
        when its tenant does not exist or is being deleted. A tenant or worker token must name a tenant; an admin
        token may not (ValueError). Token ids and hashes are unique (StoreError on reuse)."""

    @abstractmethod
    def get_token_by_hash(self, token_hash: str) -> ApiToken | None:
        """The token with this hash, revoked or not (the caller checks ``revoked_at``)."""

    @abstractmethod
    def list_tokens(self, tenant: str | None = None) -> list[ApiToken]:
        """Tokens (revoked ones too) ordered by created_at, then token_id; ``tenant`` restricts
        the list to that tenant's tokens."""

    @abstractmethod
    def prune_revoked_tokens(self, revoked_before_ms: int, limit: int) -> int:
        """Delete up to ``limit`` tokens revoked before ``revoked_before_ms`` (retention: a
        revoked token is history, and tokens made and revoked per deploy or per CI run would
        otherwise grow the table for as long as the store lives). Active tokens are never
        touched. Returns how many went."""

    @abstractmethod
    def revoke_token(self, token_id: str, now_ms: int) -> ApiToken | None:
        """Set revoked_at = now_ms (revoking twice keeps the first time). Returns the token as
        stored, or None when there is no such token. The last active admin token is never
        revoked: it comes back still active (``revoked_at`` None), decided atomically with
        any concurrent revocation, so two racing calls cannot leave no admin token."""
