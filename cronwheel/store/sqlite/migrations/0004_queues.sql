-- cronwheel SQLite schema, version 4: queue targets, whose executions remote workers claim
-- over the HTTP API (Store.claim_for_worker). The claim copies jobs.queue (narrow row, read
-- by the claim anyway) onto the executions it inserts.

ALTER TABLE jobs ADD COLUMN queue TEXT;
ALTER TABLE executions ADD COLUMN queue TEXT;

UPDATE jobs SET queue = (SELECT d.target ->> '$.queue' FROM job_definitions AS d WHERE d.job_id = jobs.id)
WHERE id IN (SELECT job_id FROM job_definitions WHERE target ->> '$.queue' IS NOT NULL);
UPDATE executions SET queue = (SELECT j.queue FROM jobs AS j WHERE j.id = executions.job_id)
WHERE job_id IN (SELECT id FROM jobs WHERE queue IS NOT NULL);

-- A remote worker's pull: dispatchable executions of its queues, oldest available first.
CREATE INDEX executions_queue_ready ON executions (queue, available_at, execution_id)
    WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT');
