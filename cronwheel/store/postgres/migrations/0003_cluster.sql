-- cronwheel PostgreSQL schema, version 3: cluster membership and bucket leases
-- (the same version as the SQLite store's 0003_cluster.sql). Times are the DATABASE clock's
-- milliseconds since the epoch: nodes never compare their own clocks with each other's.

-- Nodes heartbeat here; desired bucket ownership is rendezvous hashing over the live ones.
CREATE TABLE cluster_nodes (
    node_id    TEXT COLLATE "C" PRIMARY KEY,
    address    TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL
);

-- One lease per time bucket: (bucket_id, epoch) is a term; owner NULL when released.
CREATE TABLE bucket_leases (
    bucket_id   INTEGER PRIMARY KEY CHECK (bucket_id >= 0),
    owner       TEXT COLLATE "C",
    epoch       BIGINT NOT NULL CHECK (epoch >= 1),
    lease_until BIGINT NOT NULL
);
