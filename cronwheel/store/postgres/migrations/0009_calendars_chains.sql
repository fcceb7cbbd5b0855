-- cronwheel schema, version 9 (the same in both stores): scheduling beyond cron.
-- Calendars (named, per tenant, excluded days and windows) that jobs observe; a job's active
-- window; chains (jobs triggered by another's final outcome); what made an execution.

-- The claim reads these two, so they live on the narrow scheduling row.
ALTER TABLE jobs ADD COLUMN calendars JSON;        -- array of calendar names, NULL: none
ALTER TABLE jobs ADD COLUMN active_until BIGINT;   -- no tick after this instant

ALTER TABLE job_definitions ADD COLUMN active_from BIGINT;
ALTER TABLE job_definitions ADD COLUMN on_success JSON;  -- array of job ids, NULL: none
ALTER TABLE job_definitions ADD COLUMN on_failure JSON;

-- {"backfill": true} or {"parent": {...}} for a chained run; NULL for a scheduled tick
ALTER TABLE executions ADD COLUMN context JSON;

CREATE TABLE calendars (
    tenant     TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    spec       JSON NOT NULL,  -- description, dates, windows (core/calendar.py)
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, name)
);
