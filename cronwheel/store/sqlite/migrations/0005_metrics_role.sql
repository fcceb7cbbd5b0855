-- cronwheel SQLite schema, version 5: the `metrics` token role (reads /metrics only, and
-- like an admin token belongs to no tenant). SQLite cannot change a CHECK constraint in
-- place, so the table is rebuilt under its own name (tokens keep their ids and hashes).

ALTER TABLE api_tokens RENAME TO api_tokens_v4;

CREATE TABLE api_tokens (
    token_id   TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('admin', 'tenant', 'worker', 'metrics')),
    tenant     TEXT REFERENCES tenants (name),
    name       TEXT,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    CHECK ((role IN ('admin', 'metrics')) = (tenant IS NULL))
) WITHOUT ROWID;

INSERT INTO api_tokens (token_id, token_hash, role, tenant, name, created_at, revoked_at)
SELECT token_id, token_hash, role, tenant, name, created_at, revoked_at FROM api_tokens_v4;

DROP TABLE api_tokens_v4;

CREATE INDEX api_tokens_tenant ON api_tokens (tenant, created_at);
