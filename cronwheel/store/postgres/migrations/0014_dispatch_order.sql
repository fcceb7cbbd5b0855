-- cronwheel PostgreSQL schema, version 14: the twin of the SQLite store's version 14, which
-- orders its ready queue's ties by the jobs' place in its scheduling table. Here the ties stay
-- in execution id order (the index is unchanged); this version only says so in the catalog.
COMMENT ON INDEX executions_ready IS
    'the ready queue: dispatchable rows by (available_at, execution_id); see migration 14';
