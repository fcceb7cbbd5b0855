-- cronwheel PostgreSQL schema, version 13: notification rules, the dead-man's switch, and the
-- notifications themselves as durable work (the same version as the SQLite store's 0010).

-- A job's own rules (a JSON list; empty: its tenant's defaults apply) and its window.
ALTER TABLE job_definitions ADD COLUMN notify JSON NOT NULL DEFAULT '[]';
ALTER TABLE job_definitions ADD COLUMN expect_ms BIGINT CHECK (expect_ms IS NULL OR expect_ms > 0);
-- A tenant's default rules, for its jobs that have none of their own.
ALTER TABLE tenants ADD COLUMN notify JSON NOT NULL DEFAULT '[]';

-- What the rules need to remember about a job: its last outcome (for `recovered`) and its
-- dead-man's window (`deadline_at`: absolute, so it survives restarts; scanned per bucket,
-- so it fails over with the buckets in a cluster).
CREATE TABLE job_watch (
    job_id        TEXT COLLATE "C" PRIMARY KEY REFERENCES jobs (id),
    bucket_id     INTEGER NOT NULL,
    last_outcome  TEXT CHECK (last_outcome IN ('success', 'failure')),
    last_success  BIGINT,
    window_ms     BIGINT,
    deadline_at   BIGINT,
    overdue_since BIGINT,
    last_start    BIGINT,  -- the last `start` ping
    CHECK ((window_ms IS NULL) = (deadline_at IS NULL))
);

CREATE INDEX job_watch_deadline ON job_watch (bucket_id, deadline_at) WHERE deadline_at IS NOT NULL;

-- One row per (subject, rule): the subject is an execution id, or '<jobId>:missed:<deadline>'.
-- The primary key is the deduplication: an event seen twice is told once.
CREATE TABLE notifications (
    notification_id TEXT COLLATE "C" PRIMARY KEY CHECK (notification_id = subject || '@' || rule_id),
    subject         TEXT COLLATE "C" NOT NULL,
    rule_id         TEXT COLLATE "C" NOT NULL,
    job_id          TEXT COLLATE "C" NOT NULL,
    tenant          TEXT COLLATE "C" NOT NULL,
    event           TEXT NOT NULL,
    rule            JSON NOT NULL,  -- the rule as it was when the event happened (JSON)
    body            JSON NOT NULL,  -- what is told (JSON)
    status          TEXT NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'SENT', 'DEAD', 'HELD')),
    attempt         INTEGER NOT NULL DEFAULT 0,
    lease_epoch     INTEGER NOT NULL DEFAULT 0,
    owner           TEXT COLLATE "C",
    lease_until     BIGINT,
    available_at    BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    sent_at         BIGINT,
    error           TEXT
);

CREATE INDEX notifications_ready ON notifications (available_at) WHERE status = 'PENDING';
CREATE INDEX notifications_running ON notifications (lease_until) WHERE status = 'RUNNING';
CREATE INDEX notifications_job ON notifications (job_id, created_at);
-- the rate limit: what a (job, rule) sent in the last hour, and what it held back
CREATE INDEX notifications_rule ON notifications (job_id, rule_id, status, sent_at);
