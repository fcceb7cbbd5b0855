-- cronwheel PostgreSQL schema, version 7: a job's name is unique per tenant among live jobs
-- (every status but CANCELLED); the same version as the SQLite store's 0007_job_names.sql.
-- Each held name is one row here, written in the transaction that creates, renames or
-- cancels the job; the primary key refuses a second holder whatever races between nodes.
-- Jobs that already shared a name keep their names; the oldest live one becomes the holder.

CREATE TABLE job_names (
    tenant TEXT COLLATE "C" NOT NULL,
    name   TEXT COLLATE "C" NOT NULL,
    job_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES jobs (id),
    PRIMARY KEY (tenant, name)
);

INSERT INTO job_names (tenant, name, job_id)
SELECT DISTINCT ON (j.tenant, d.name) j.tenant, d.name, j.id
FROM jobs AS j JOIN job_definitions AS d ON d.job_id = j.id
WHERE d.name IS NOT NULL AND j.status <> 'CANCELLED'
ORDER BY j.tenant, d.name, d.created_at, j.id;
