"""The PostgreSQL store's tenants and API tokens (hashes only)."""

from __future__ import annotations

from typing import Any

from psycopg import errors as pgerr

from cronwheel.core.tenants import ApiToken, Tenant
from cronwheel.store.base import StoreError
from cronwheel.store.common import check_tenant_changes, check_token_scope, merged_tenant_settings
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.connection import PostgresBase, first_line, translated
from cronwheel.store.postgres.rows import tenant_from_row, token_from_row


def host_array(allow: tuple[str, ...] | None) -> list[str] | None:
    """A tenant's ``http_allow`` as stored: an array, NULL when it has none of its own."""
    return None if allow is None else list(allow)


class TenantMethods(PostgresBase):
    """``store.roles.tenants.TenantStore`` on PostgreSQL."""

    @translated
    def create_tenant(self, tenant: Tenant, now_ms: int) -> Tenant | None:
        t = tenant
        args = {"name": t.name, "weight": t.weight, "max_running": t.max_running, "max_jobs": t.max_jobs,
                "submit_rate": t.submit_rate, "submit_burst": t.submit_burst, "allow_shell": bool(t.allow_shell),
                "allow_high_priority": bool(t.allow_high_priority), "http_allow": host_array(t.http_allow), "now": now_ms}  # fmt: skip
        with self._write() as conn:
            row = conn.execute(q.CREATE_TENANT, args).fetchone()
        if row is None:
            return None
        return tenant_from_row(row)

    @translated
    def update_tenant(self, name: str, changes: dict[str, Any], now_ms: int) -> Tenant | None:
        check_tenant_changes(changes)
        with self._write() as conn:
            row = conn.execute(q.LOCK_TENANT, {"name": name}).fetchone()
            if row is None or tenant_from_row(row).deleting:
                return None
            cur = tenant_from_row(row)
            new = merged_tenant_settings(cur, changes)
            new["allow_shell"] = bool(new["allow_shell"])
            new["allow_high_priority"] = bool(new["allow_high_priority"])
            new["http_allow"] = host_array(new["http_allow"])
            row = conn.execute(q.UPDATE_TENANT, {**new, "name": name, "now": now_ms}).fetchone()
        return tenant_from_row(row)

    @translated
    def create_token(self, token: ApiToken, now_ms: int) -> bool:
        check_token_scope(token)
        args = {"token_id": token.token_id, "token_hash": token.token_hash, "role": token.role.value,
                "tenant": token.tenant, "name": token.name, "now": now_ms}  # fmt: skip
        with self._write() as conn:
            if token.tenant is not None and conn.execute(q.TENANT_EXISTS, {"name": token.tenant}).fetchone() is None:
                return False
            try:
                conn.execute(q.INSERT_TOKEN, args)
            except pgerr.UniqueViolation as exc:
                raise StoreError(f"cannot store the token (id or hash reused?): {first_line(exc)}") from exc
        return True

    @translated
    def get_token_by_hash(self, token_hash: str) -> ApiToken | None:
        rows = self._rows(q.GET_TOKEN_BY_HASH, {"hash": token_hash})
        return token_from_row(rows[0]) if rows else None

    @translated
    def prune_revoked_tokens(self, revoked_before_ms: int, limit: int) -> int:
        with self._write() as conn:
            return int(conn.execute(q.PRUNE_REVOKED_TOKENS, {"before": revoked_before_ms, "limit": limit}).rowcount)

    @translated
    def revoke_token(self, token_id: str, now_ms: int) -> ApiToken | None:
        with self._write() as conn:
            conn.execute(q.LOCK_ACTIVE_ADMIN_TOKENS)
            row = conn.execute(q.REVOKE_TOKEN, {"id": token_id, "now": now_ms}).fetchone()
            if row is None:  # no such token, or the last active admin one (left as it is)
                row = conn.execute(q.GET_TOKEN, {"id": token_id}).fetchone()
        return None if row is None else token_from_row(row)
