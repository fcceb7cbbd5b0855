-- cronwheel: rebuild
-- cronwheel SQLite schema, version 10: a job's state follows its executions. A job with no
-- further tick (a one-off once claimed) stays ACTIVE while its executions are live, then
-- becomes SUCCEEDED or FAILED by the last one to end; COMPLETED (set at the claim, before
-- anything ran) is gone. SQLite cannot change a CHECK constraint in place, so the jobs table
-- is rebuilt under its own name (see migrate.py: foreign keys off, legacy_alter_table on).
-- COMPLETED jobs are converted by their executions: ACTIVE while one is live, else SUCCEEDED
-- when the last to end succeeded, else FAILED (dead-lettered, skipped, or purged).

ALTER TABLE jobs RENAME TO jobs_v9;

CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,
    bucket_id    INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('ACTIVE', 'PAUSED', 'CANCELLED', 'SUCCEEDED', 'FAILED')),
    next_run_at  INTEGER,
    schedule     TEXT,
    timezone     TEXT NOT NULL,
    misfire      TEXT NOT NULL CHECK (misfire IN ('run_once', 'skip', 'run_all')),
    overlap      TEXT NOT NULL CHECK (overlap IN ('allow', 'forbid', 'replace')),
    jitter_sec   INTEGER NOT NULL DEFAULT 0,
    tenant       TEXT NOT NULL,
    priority     INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    queue        TEXT,  -- a queue target's name (remote workers), else NULL
    calendars    TEXT,  -- JSON array of calendar names, NULL: none
    active_until INTEGER  -- no tick after this instant
);

INSERT INTO jobs (id, bucket_id, status, next_run_at, schedule, timezone, misfire, overlap,
                  jitter_sec, tenant, priority, max_attempts, queue, calendars, active_until)
SELECT j.id, j.bucket_id,
       CASE
           WHEN j.status <> 'COMPLETED' THEN j.status
           WHEN EXISTS (SELECT 1 FROM executions AS e
                        WHERE e.job_id = j.id AND e.status IN ('PENDING', 'RUNNING', 'RETRY_WAIT'))
               THEN 'ACTIVE'
           WHEN (SELECT e.status FROM executions AS e WHERE e.job_id = j.id
                 ORDER BY COALESCE(e.finished_at, e.created_at) DESC, e.scheduled_at DESC
                 LIMIT 1) = 'SUCCEEDED'
               THEN 'SUCCEEDED'
           ELSE 'FAILED'
       END,
       j.next_run_at, j.schedule, j.timezone, j.misfire, j.overlap, j.jitter_sec, j.tenant,
       j.priority, j.max_attempts, j.queue, j.calendars, j.active_until
FROM jobs_v9 AS j;

DROP TABLE jobs_v9;

CREATE INDEX jobs_due ON jobs (bucket_id, status, next_run_at);
CREATE INDEX jobs_tenant ON jobs (tenant, id);
