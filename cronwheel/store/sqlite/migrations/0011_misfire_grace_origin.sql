-- cronwheel SQLite schema, version 11: a per-job misfire grace (jobs.misfire_grace_sec, NULL:
-- the default that fits the schedule, core.planning) and where each execution came from
-- (executions.origin: schedule, catch_up, manual, replay), so that catch-up runs are marked
-- in history and the dispatch-lag SLO counts scheduled lateness only.

ALTER TABLE jobs ADD COLUMN misfire_grace_sec INTEGER;
ALTER TABLE executions ADD COLUMN origin TEXT NOT NULL DEFAULT 'schedule';

UPDATE executions SET origin = 'manual' WHERE reason = 'triggered';
