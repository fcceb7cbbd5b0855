-- cronwheel: rebuild
-- cronwheel schema, version 21 (the same in both stores): a tenant's httpAllow says three
-- things, as the daemon's http_allow does: NULL, not set (the daemon's list applies); an
-- empty array, no host at all; else the hosts. Until now an empty array was "not set", so
-- every stored one becomes NULL: no tenant changes meaning on the upgrade. SQLite cannot drop
-- a NOT NULL in place, so the tenants table (api_tokens refer to it) is rebuilt under its own
-- name (see migrate.py: foreign keys off, legacy_alter_table on), its columns in their order.

ALTER TABLE tenants RENAME TO tenants_v20;

CREATE TABLE tenants (
    name         TEXT PRIMARY KEY,
    weight       INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 1),
    max_running  INTEGER CHECK (max_running IS NULL OR max_running >= 0),
    created_at   INTEGER NOT NULL DEFAULT 0,
    max_jobs     INTEGER CHECK (max_jobs IS NULL OR max_jobs >= 0),
    submit_rate  REAL CHECK (submit_rate IS NULL OR submit_rate > 0),
    submit_burst INTEGER CHECK (submit_burst IS NULL OR submit_burst >= 1),
    allow_shell  INTEGER NOT NULL DEFAULT 0 CHECK (allow_shell IN (0, 1)),
    http_allow   TEXT,  -- JSON array of host names ([]: none); NULL: not set, the daemon's list
    updated_at   INTEGER NOT NULL DEFAULT 0,
    notify       TEXT NOT NULL DEFAULT '[]'  -- the tenant's default notification rules
) WITHOUT ROWID;

INSERT INTO tenants (name, weight, max_running, created_at, max_jobs, submit_rate, submit_burst,
                     allow_shell, http_allow, updated_at, notify)
SELECT name, weight, max_running, created_at, max_jobs, submit_rate, submit_burst, allow_shell,
       CASE WHEN json_array_length(http_allow) = 0 THEN NULL ELSE http_allow END,
       updated_at, notify
FROM tenants_v20;

DROP TABLE tenants_v20;
