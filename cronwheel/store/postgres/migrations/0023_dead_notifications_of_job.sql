-- cronwheel schema, version 23 (the same in both stores): a job keeps at most its newest
-- dlq_keep_last dead notifications too, as it does dead letters (version 22). The retention
-- finds the jobs over that bound, and each one's oldest dead notifications, in this index of
-- DEAD rows alone; the tenant is in it (a job's never changes) so the pass reads nothing else.
CREATE INDEX notifications_dead_of_job ON notifications (job_id, tenant, created_at) WHERE status = 'DEAD';
