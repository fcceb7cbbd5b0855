-- cronwheel schema, version 8 (the same in both stores): how a command's process is set up,
-- as crontab(5) means it: {env, runAs: {user, group}, shell, stdin}, only the members set;
-- NULL for the jobs that set none (most). Read by the start of an execution, never by a claim.

ALTER TABLE job_definitions ADD COLUMN process TEXT;
