-- cronwheel PostgreSQL schema, version 5: the `metrics` token role (reads /metrics only, and
-- like an admin token belongs to no tenant); the same version as the SQLite store's
-- 0005_metrics_role.sql.

ALTER TABLE api_tokens
    DROP CONSTRAINT api_tokens_role_check,
    DROP CONSTRAINT api_tokens_check;

ALTER TABLE api_tokens
    ADD CONSTRAINT api_tokens_role_check CHECK (role IN ('admin', 'tenant', 'worker', 'metrics')),
    ADD CONSTRAINT api_tokens_check CHECK ((role IN ('admin', 'metrics')) = (tenant IS NULL));
