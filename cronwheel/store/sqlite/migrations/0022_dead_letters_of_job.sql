-- cronwheel schema, version 22 (the same in both stores): a job keeps at most its newest
-- dlq_keep_last dead letters (engine/retention.py). The retention finds the jobs over that
-- bound, and each one's oldest dead letters, in this index of DEAD rows alone, so a store
-- whose dead-letter queue is empty or small pays nothing for the pass.
CREATE INDEX executions_dead_of_job ON executions (job_id, scheduled_at) WHERE status = 'DEAD';
