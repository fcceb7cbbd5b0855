-- cronwheel SQLite schema, version 15: the due index carries each job's overlap policy.
--
-- A claim ahead of time takes only the jobs whose overlap policy is 'allow'; overlap-guarded
-- jobs wait for their tick. Filtered after the index had chosen a batch, a batch made of
-- guarded jobs held back claimed nothing and hid the jobs behind it (a herd with a few
-- thousand overlap=forbid jobs lost its claim ahead). With the policy in the index the claim
-- filters while it reads the index, still without reading a row of the table.
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (bucket_id, status, next_run_at, overlap);
