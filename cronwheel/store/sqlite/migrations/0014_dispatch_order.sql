-- cronwheel SQLite schema, version 14: the ready queue in the order a herd is dispatched.
--
-- A claim hands its executions to the dispatcher in its jobs' order (the scheduling table's
-- rowid: jobs are placed by bucket, so that is the claim's own order through jobs_due), and
-- starts take them off the ready queue in that order. Keyed by execution id, the ready index
-- had every start of a batch delete an entry on a different page (0.6 pages written per
-- execution in a herd); keyed by the job's place it takes them off one page after another.

-- The job's place in the scheduling table (jobs.rowid) at the claim; 0 for rows from before
-- this version that are no longer ready. Only an ordering hint: never a reference.
ALTER TABLE executions ADD COLUMN job_order INTEGER NOT NULL DEFAULT 0;

UPDATE executions SET job_order = COALESCE((SELECT j.rowid FROM jobs AS j WHERE j.id = executions.job_id), 0)
WHERE status IN ('PENDING', 'RETRY_WAIT');

DROP INDEX executions_ready;
-- execution_id stays in the key, after job_order, so that a job's live rows are read from the
-- index alone (LIVE_EXECUTIONS_OF_JOB) and the id breaks ties between one job's ticks.
CREATE INDEX executions_ready ON executions (available_at, job_order, execution_id)
    WHERE status IN ('PENDING', 'RETRY_WAIT');
