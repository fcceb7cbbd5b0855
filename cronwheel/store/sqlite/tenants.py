"""The SQLite store's tenants and API tokens (hashes only)."""

from __future__ import annotations

from typing import Any

import apsw

from cronwheel.core.tenants import ApiToken, Tenant
from cronwheel.store.base import StoreError
from cronwheel.store.common import (
    check_tenant_changes,
    check_token_scope,
    dumps,
    merged_tenant_settings,
)
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.connection import SqliteBase, translated
from cronwheel.store.sqlite.rows import tenant_from_row, token_from_row


def host_list(allow: tuple[str, ...] | None) -> str | None:
    """A tenant's ``http_allow`` as stored: a JSON array, NULL when it has none of its own."""
    return None if allow is None else dumps(list(allow))


class TenantMethods(SqliteBase):
    """``store.roles.tenants.TenantStore`` on the SQLite file."""

    @translated
    def create_tenant(self, tenant: Tenant, now_ms: int) -> Tenant | None:
        t = tenant
        with self._write() as conn:
            conn.execute(q.CREATE_TENANT, (
                t.name, t.weight, t.max_running, t.max_jobs, t.submit_rate, t.submit_burst,
                int(t.allow_shell), host_list(t.http_allow), now_ms, now_ms, int(t.allow_high_priority),
            ))  # fmt: skip
            if conn.changes() == 0:
                return None
            row = conn.execute(q.GET_TENANT, (t.name,)).fetchone()
        return tenant_from_row(row)

    @translated
    def update_tenant(self, name: str, changes: dict[str, Any], now_ms: int) -> Tenant | None:
        check_tenant_changes(changes)
        with self._write() as conn:
            row = conn.execute(q.GET_TENANT, (name,)).fetchone()
            if row is None or tenant_from_row(row).deleting:
                return None
            cur = tenant_from_row(row)
            new = merged_tenant_settings(cur, changes)
            conn.execute(q.UPDATE_TENANT, (
                name, new["weight"], new["max_running"], new["max_jobs"], new["submit_rate"],
                new["submit_burst"], int(bool(new["allow_shell"])), host_list(new["http_allow"]), now_ms,
                int(bool(new["allow_high_priority"])),
            ))  # fmt: skip
            row = conn.execute(q.GET_TENANT, (name,)).fetchone()
        return tenant_from_row(row)

    @translated
    def create_token(self, token: ApiToken, now_ms: int) -> bool:
        check_token_scope(token)
        with self._write() as conn:
            if token.tenant is not None and conn.execute(q.TENANT_EXISTS, (token.tenant,)).fetchone() is None:
                return False
            try:
                conn.execute(q.INSERT_TOKEN, (
                    token.token_id, token.token_hash, token.role.value, token.tenant, token.name, now_ms,
                ))  # fmt: skip
            except apsw.ConstraintError as exc:
                raise StoreError(f"cannot store the token (id or hash reused?): {exc}") from exc
        return True

    @translated
    def get_token_by_hash(self, token_hash: str) -> ApiToken | None:
        row = self._conn.execute(q.GET_TOKEN_BY_HASH, (token_hash,)).fetchone()
        return None if row is None else token_from_row(row)

    @translated
    def prune_revoked_tokens(self, revoked_before_ms: int, limit: int) -> int:
        with self._write(fsync=False) as conn:  # retention: a pass lost to a power cut is made again
            before = conn.total_changes()
            conn.execute(q.PRUNE_REVOKED_TOKENS, (revoked_before_ms, limit))
            return conn.total_changes() - before

    @translated
    def revoke_token(self, token_id: str, now_ms: int) -> ApiToken | None:
        with self._write() as conn:
            conn.execute(q.REVOKE_TOKEN, (token_id, now_ms))
            row = conn.execute(q.GET_TOKEN, (token_id,)).fetchone()
        return None if row is None else token_from_row(row)
