-- cronwheel PostgreSQL schema, version 4: queue targets, whose executions remote workers
-- claim over the HTTP API (Store.claim_for_worker); the same version as the SQLite store's
-- 0004_queues.sql. The claim copies jobs.queue (narrow row, read by the claim anyway) onto
-- the executions it inserts.

ALTER TABLE jobs ADD COLUMN queue TEXT COLLATE "C";
ALTER TABLE executions ADD COLUMN queue TEXT COLLATE "C";

UPDATE jobs AS j SET queue = d.target ->> 'queue'
FROM job_definitions AS d WHERE d.job_id = j.id AND d.target ->> 'queue' IS NOT NULL;
UPDATE executions AS e SET queue = j.queue
FROM jobs AS j WHERE j.id = e.job_id AND j.queue IS NOT NULL;

-- A remote worker's pull: dispatchable executions of its queues, oldest available first.
CREATE INDEX executions_queue_ready ON executions (queue, available_at, execution_id)
    WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT');
