-- cronwheel PostgreSQL schema, version 15: the twin of the SQLite store's version 15, which
-- adds each job's overlap policy to its due index so that a claim ahead of time filters out
-- overlap-guarded jobs while it reads the index. Here the claim has always filtered them in
-- its statement (it reads and locks the rows it claims); this version only says so.
COMMENT ON INDEX jobs_due IS
    'the due slice of a set of buckets; the claim filters overlap-guarded jobs ahead of their tick in its statement; see migration 15';
