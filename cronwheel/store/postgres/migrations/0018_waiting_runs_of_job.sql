-- cronwheel schema, version 18 (the same in both stores): a recurring job's queue of runs is
-- bounded. A job whose runs nobody starts (its tenant held at maxRunning, no free worker, a
-- queue no remote worker polls) queued one PENDING run per tick for ever. The claim now counts
-- a job's overdue scheduled runs still waiting to start from this index, and records the ticks
-- beyond MAX_WAITING_RUNS of them SKIPPED (reason backlog). Manual, replayed, backfilled and
-- chained runs are not in it: they are asked for, never skipped, and do not hold back the
-- schedule.
CREATE INDEX executions_waiting_of_job ON executions (job_id, available_at)
    WHERE status IN ('PENDING', 'RETRY_WAIT') AND origin IN ('schedule', 'catch_up');
