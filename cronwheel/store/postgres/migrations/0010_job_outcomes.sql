-- cronwheel PostgreSQL schema, version 10: a job's state follows its executions; the same
-- version as the SQLite store's 0010_job_outcomes.sql. A job with no further tick (a one-off
-- once claimed) stays ACTIVE while its executions are live, then becomes SUCCEEDED or FAILED
-- by the last one to end; COMPLETED (set at the claim, before anything ran) is gone.
-- COMPLETED jobs are converted by their executions: ACTIVE while one is live, else SUCCEEDED
-- when the last to end succeeded, else FAILED (dead-lettered, skipped, or purged).

ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;

UPDATE jobs AS j SET status = CASE
        WHEN EXISTS (SELECT 1 FROM executions AS e
                     WHERE e.job_id = j.id AND e.status IN ('PENDING', 'RUNNING', 'RETRY_WAIT'))
            THEN 'ACTIVE'
        WHEN (SELECT e.status FROM executions AS e WHERE e.job_id = j.id
              ORDER BY COALESCE(e.finished_at, e.created_at) DESC, e.scheduled_at DESC
              LIMIT 1) = 'SUCCEEDED'
            THEN 'SUCCEEDED'
        ELSE 'FAILED'
    END
WHERE j.status = 'COMPLETED';

ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('ACTIVE', 'PAUSED', 'CANCELLED', 'SUCCEEDED', 'FAILED'));
