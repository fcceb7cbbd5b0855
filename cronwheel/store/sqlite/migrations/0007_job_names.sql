-- cronwheel SQLite schema, version 7: a job's name is unique per tenant among live jobs
-- (every status but CANCELLED). Each held name is one row here, written in the transaction
-- that creates, renames or cancels the job; the primary key refuses a second holder whatever
-- races. Jobs that already shared a name (older versions allowed it) keep their names; the
-- oldest live one becomes the holder, so the name resolves to it.

CREATE TABLE job_names (
    tenant TEXT NOT NULL,
    name   TEXT NOT NULL,
    job_id TEXT NOT NULL UNIQUE REFERENCES jobs (id),
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

INSERT OR IGNORE INTO job_names (tenant, name, job_id)
SELECT j.tenant, d.name, j.id FROM jobs AS j JOIN job_definitions AS d ON d.job_id = j.id
WHERE d.name IS NOT NULL AND j.status <> 'CANCELLED'
ORDER BY d.created_at, j.id;
