-- cronwheel schema, version 12 (the same in both stores): who manages a job's definition,
-- e.g. 'apply' for the jobs `cronwheel apply` created from files; NULL for jobs made by hand.
-- `cronwheel apply --prune` deletes only jobs it manages.

ALTER TABLE job_definitions ADD COLUMN managed_by TEXT;
