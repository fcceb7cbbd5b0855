-- cronwheel PostgreSQL schema, version 2: tenant quotas and permissions, API tokens
-- (the same version as the SQLite store's 0002_tenants_tokens.sql).

-- Quotas (NULL: unlimited) and what a tenant's jobs may run.
ALTER TABLE tenants ADD COLUMN max_jobs INTEGER CHECK (max_jobs IS NULL OR max_jobs >= 0);
ALTER TABLE tenants ADD COLUMN submit_rate DOUBLE PRECISION CHECK (submit_rate IS NULL OR submit_rate > 0);
ALTER TABLE tenants ADD COLUMN submit_burst INTEGER CHECK (submit_burst IS NULL OR submit_burst >= 1);
ALTER TABLE tenants ADD COLUMN allow_shell BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE tenants ADD COLUMN http_allow TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE tenants ADD COLUMN updated_at BIGINT NOT NULL DEFAULT 0;

-- Bearer tokens, by the SHA-256 of the secret (the secret itself is never stored).
CREATE TABLE api_tokens (
    token_id   TEXT COLLATE "C" PRIMARY KEY,
    token_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('admin', 'tenant', 'worker')),
    tenant     TEXT COLLATE "C" REFERENCES tenants (name),
    name       TEXT,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    CHECK ((role = 'admin') = (tenant IS NULL))
);

CREATE INDEX api_tokens_tenant ON api_tokens (tenant, created_at);
