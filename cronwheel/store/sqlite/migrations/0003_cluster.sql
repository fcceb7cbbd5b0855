-- cronwheel SQLite schema, version 3: cluster membership and bucket leases (the same version
-- as the PostgreSQL store's 0003_cluster.sql). A single SQLite node holds every lease itself.

CREATE TABLE cluster_nodes (
    node_id    TEXT PRIMARY KEY,
    address    TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE bucket_leases (
    bucket_id   INTEGER PRIMARY KEY CHECK (bucket_id >= 0),
    owner       TEXT,
    epoch       INTEGER NOT NULL CHECK (epoch >= 1),
    lease_until INTEGER NOT NULL
);
