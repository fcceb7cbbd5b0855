-- The expected full schema: every migration in migrations/ applied in order.
-- tests/contract/test_sqlite_specific.py checks that the two agree; update both together.


CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
);

-- Tenants and their share of the ready queue (weighted fair queuing, concurrency quota).
CREATE TABLE tenants (
    name         TEXT PRIMARY KEY,
    weight       INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 1),
    max_running  INTEGER CHECK (max_running IS NULL OR max_running >= 0),
    created_at   INTEGER NOT NULL DEFAULT 0,
    max_jobs     INTEGER CHECK (max_jobs IS NULL OR max_jobs >= 0),
    submit_rate  REAL CHECK (submit_rate IS NULL OR submit_rate > 0),
    submit_burst INTEGER CHECK (submit_burst IS NULL OR submit_burst >= 1),
    allow_shell  INTEGER NOT NULL DEFAULT 0 CHECK (allow_shell IN (0, 1)),
    http_allow   TEXT,  -- JSON array of host names ([]: none); NULL: not set, the daemon's list (version 21)
    updated_at   INTEGER NOT NULL DEFAULT 0,
    notify       TEXT NOT NULL DEFAULT '[]',  -- the tenant's default notification rules (version 13)
    -- may queue its jobs in the high tier (version 24); the default tenant, the admin's, may
    allow_high_priority INTEGER NOT NULL DEFAULT 0 CHECK (allow_high_priority IN (0, 1))
) WITHOUT ROWID;

INSERT INTO tenants (name, weight, max_running, created_at, allow_high_priority) VALUES ('default', 1, NULL, 0, 1);

-- The scheduling table: deliberately narrow (only what a claim reads), because the claim
-- rewrites one row per due job and the cost of that follows the row width.
CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,
    bucket_id    INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('ACTIVE', 'PAUSED', 'CANCELLED', 'SUCCEEDED', 'FAILED')),
    next_run_at  INTEGER,
    schedule     TEXT,
    timezone     TEXT NOT NULL,
    misfire      TEXT NOT NULL CHECK (misfire IN ('run_once', 'skip', 'run_all')),
    overlap      TEXT NOT NULL CHECK (overlap IN ('allow', 'forbid', 'replace')),
    jitter_sec   INTEGER NOT NULL DEFAULT 0,
    tenant       TEXT NOT NULL,
    priority     INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    queue        TEXT  -- a queue target's name (remote workers), else NULL
);

-- The due slice of a set of buckets (jobs_due) is made by version 15, at the end of this file.
CREATE INDEX jobs_tenant ON jobs (tenant, id);

-- What a job does (never read by the claim).
CREATE TABLE job_definitions (
    job_id      TEXT PRIMARY KEY REFERENCES jobs (id),
    name        TEXT,
    run_at      INTEGER,
    target      TEXT NOT NULL,
    payload     TEXT NOT NULL,
    retry       TEXT NOT NULL,
    timeout_sec REAL NOT NULL,
    lease_sec   REAL NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    process     TEXT  -- {env, runAs, shell, stdin}: only the members set; NULL: none
);

CREATE INDEX job_definitions_name ON job_definitions (name) WHERE name IS NOT NULL;

-- A job's name is unique per tenant among live jobs (every status but CANCELLED): each held
-- name is one row, written with the job's creation, rename or cancellation.
CREATE TABLE job_names (
    tenant TEXT NOT NULL,
    name   TEXT NOT NULL,
    job_id TEXT NOT NULL UNIQUE REFERENCES jobs (id),
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

-- Submission idempotency, scoped per tenant.
CREATE TABLE idempotency_keys (
    tenant       TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT,
    job_id       TEXT NOT NULL REFERENCES jobs (id),
    next_run_at  INTEGER,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;

-- One row per tick (invariant 2): execution_id is ids.execution_id(job_id, scheduled_at).
CREATE TABLE executions (
    execution_id  TEXT PRIMARY KEY CHECK (execution_id = job_id || ':' || scheduled_at),
    job_id        TEXT NOT NULL REFERENCES jobs (id),
    tenant        TEXT NOT NULL,
    priority      INTEGER NOT NULL,
    scheduled_at  INTEGER NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED')),
    attempt       INTEGER NOT NULL DEFAULT 0,
    lease_epoch   INTEGER NOT NULL DEFAULT 0,
    worker_id     TEXT,
    lease_until   INTEGER,
    available_at  INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER,
    exit_code     INTEGER,
    error         TEXT,
    output        TEXT,
    reason        TEXT,
    max_attempts  INTEGER NOT NULL,
    overlap_guard INTEGER NOT NULL DEFAULT 0,
    queue         TEXT  -- copied from jobs.queue: remote workers claim it, local ones never
);

-- A job's history, newest first; also enforces (job_id, scheduled_at) uniqueness directly.
CREATE UNIQUE INDEX executions_tick ON executions (job_id, scheduled_at);
-- The ready queue (executions_ready) is made by version 14, at the end of this file.
-- The reaper's view and the per-worker view of running executions.
CREATE INDEX executions_running ON executions (lease_until) WHERE status = 'RUNNING';
CREATE INDEX executions_worker ON executions (worker_id) WHERE status = 'RUNNING';
-- The dead-letter queue.
CREATE INDEX executions_dead ON executions (execution_id) WHERE status = 'DEAD';
-- Live executions of jobs whose overlap policy is not 'allow' (overlap_guard = 1): the claim
-- asks this index only for such jobs, so the common 'allow' path pays nothing for it.
CREATE INDEX executions_guarded ON executions (job_id)
    WHERE overlap_guard = 1 AND status IN ('PENDING', 'RUNNING', 'RETRY_WAIT');

-- Side effects recorded by executions (execution idempotency keys), fenced by lease_epoch.
CREATE TABLE effects (
    execution_id TEXT NOT NULL REFERENCES executions (execution_id) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    lease_epoch  INTEGER NOT NULL,
    recorded_at  INTEGER NOT NULL,
    PRIMARY KEY (execution_id, key)
) WITHOUT ROWID;

-- Bearer tokens, by the SHA-256 of the secret (the secret itself is never stored).
CREATE TABLE api_tokens (
    token_id   TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('admin', 'tenant', 'worker', 'metrics')),
    tenant     TEXT REFERENCES tenants (name),
    name       TEXT,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    CHECK ((role IN ('admin', 'metrics')) = (tenant IS NULL))
) WITHOUT ROWID;

CREATE INDEX api_tokens_tenant ON api_tokens (tenant, created_at);

CREATE TABLE cluster_nodes (
    node_id    TEXT PRIMARY KEY,
    address    TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE bucket_leases (
    bucket_id   INTEGER PRIMARY KEY CHECK (bucket_id >= 0),
    owner       TEXT,
    epoch       INTEGER NOT NULL CHECK (epoch >= 1),
    lease_until INTEGER NOT NULL
);

-- version 9: calendars, active windows, chains, execution context

-- The claim reads these two, so they live on the narrow scheduling row.
ALTER TABLE jobs ADD COLUMN calendars TEXT;       -- JSON array of calendar names, NULL: none
ALTER TABLE jobs ADD COLUMN active_until INTEGER; -- no tick after this instant

ALTER TABLE job_definitions ADD COLUMN active_from INTEGER;
ALTER TABLE job_definitions ADD COLUMN on_success TEXT;  -- JSON array of job ids, NULL: none
ALTER TABLE job_definitions ADD COLUMN on_failure TEXT;

-- JSON: {"backfill": true} or {"parent": {...}} for a chained run; NULL for a scheduled tick
ALTER TABLE executions ADD COLUMN context TEXT;

CREATE TABLE calendars (
    tenant     TEXT NOT NULL,
    name       TEXT NOT NULL,
    spec       TEXT NOT NULL,  -- JSON: description, dates, windows (core/calendar.py)
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

-- version 11: a per-job misfire grace, and where each execution came from
ALTER TABLE jobs ADD COLUMN misfire_grace_sec INTEGER;  -- NULL: until the next tick, at most 60 s
ALTER TABLE executions ADD COLUMN origin TEXT NOT NULL DEFAULT 'schedule';  -- schedule, catch_up, manual, replay

-- version 12: who manages a job's definition ('apply'), NULL: made by hand
ALTER TABLE job_definitions ADD COLUMN managed_by TEXT;

-- version 13: notification rules, the dead-man's switch, notifications

-- A job's own rules (a JSON list; empty: its tenant's defaults apply) and its window.
ALTER TABLE job_definitions ADD COLUMN notify TEXT NOT NULL DEFAULT '[]';
ALTER TABLE job_definitions ADD COLUMN expect_ms INTEGER CHECK (expect_ms IS NULL OR expect_ms > 0);
-- A tenant's default rules, for its jobs that have none of their own: tenants.notify (above).

-- What the rules need to remember about a job: its last outcome (for `recovered`) and its
-- dead-man's window (`deadline_at`: absolute, so it survives restarts; scanned per bucket,
-- so it fails over with the buckets in a cluster).
CREATE TABLE job_watch (
    job_id        TEXT PRIMARY KEY REFERENCES jobs (id),
    bucket_id     INTEGER NOT NULL,
    last_outcome  TEXT CHECK (last_outcome IN ('success', 'failure')),
    last_success  INTEGER,
    window_ms     INTEGER,
    deadline_at   INTEGER,
    overdue_since INTEGER,
    last_start    INTEGER,  -- the last `start` ping
    CHECK ((window_ms IS NULL) = (deadline_at IS NULL))
) WITHOUT ROWID;

CREATE INDEX job_watch_deadline ON job_watch (bucket_id, deadline_at) WHERE deadline_at IS NOT NULL;

-- One row per (subject, rule): the subject is an execution id, or '<jobId>:missed:<deadline>'.
-- The primary key is the deduplication: an event seen twice is told once.
CREATE TABLE notifications (
    notification_id TEXT PRIMARY KEY CHECK (notification_id = subject || '@' || rule_id),
    subject         TEXT NOT NULL,
    rule_id         TEXT NOT NULL,
    job_id          TEXT NOT NULL,
    tenant          TEXT NOT NULL,
    event           TEXT NOT NULL,
    rule            TEXT NOT NULL,  -- the rule as it was when the event happened (JSON)
    body            TEXT NOT NULL,  -- what is told (JSON)
    status          TEXT NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'SENT', 'DEAD', 'HELD')),
    attempt         INTEGER NOT NULL DEFAULT 0,
    lease_epoch     INTEGER NOT NULL DEFAULT 0,
    owner           TEXT,
    lease_until     INTEGER,
    available_at    INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    sent_at         INTEGER,
    error           TEXT
) WITHOUT ROWID;

-- notifications_ready, the oldest due of all tenants, was replaced in version 17 (at the end of this file)
CREATE INDEX notifications_running ON notifications (lease_until) WHERE status = 'RUNNING';
CREATE INDEX notifications_job ON notifications (job_id, created_at);
-- the rate limit: what a (job, rule) sent in the last hour, and what it held back
CREATE INDEX notifications_rule ON notifications (job_id, rule_id, status, sent_at);

-- version 14: the ready queue in the order a herd is dispatched

-- The job's place in the scheduling table (jobs.rowid) at the claim: the ready index's tie
-- order. 0 for rows from before version 14 that are no longer ready.
ALTER TABLE executions ADD COLUMN job_order INTEGER NOT NULL DEFAULT 0;

-- The ready queue: only dispatchable rows, in dispatch order (the claim's, by job_order);
-- execution_id is in the key so that a job's live rows are read from the index alone.
CREATE INDEX executions_ready ON executions (available_at, job_order, execution_id)
    WHERE status IN ('PENDING', 'RETRY_WAIT');

-- version 15: the due index carries each job's overlap policy

-- The due slice of a set of buckets: the scheduler reads only this index. With the overlap
-- policy in it, a claim ahead of time skips overlap-guarded jobs from the index alone.
CREATE INDEX jobs_due ON jobs (bucket_id, status, next_run_at, overlap);

-- version 16: a tenant's remote worker claims from its own tenant's rows only

-- Queue names are shared between tenants: with the tenant leading the key, a tenant's claim
-- reads its own ready rows, never its neighbours'. A worker of no tenant reads each tenant's
-- first rows through it too (version 27).
CREATE INDEX executions_tenant_queue_ready
    ON executions (tenant, queue, priority, available_at, execution_id)
    WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT');

-- version 17: the deliverer takes tenants in turn, so one tenant's backlog of notifications
-- does not stand between another tenant and its alerts: the tenants with PENDING ones, and
-- each one's oldest due, are read from this index
CREATE INDEX notifications_pending_of_tenant
    ON notifications (tenant, available_at, notification_id) WHERE status = 'PENDING';

-- version 18: a recurring job's queue of runs is bounded: the claim counts the job's overdue
-- scheduled runs still waiting to start here, and skips the ticks beyond MAX_WAITING_RUNS
-- Keyed by the job's place in the scheduling table (job_order, as in executions_ready), not by
-- its random id: a herd's starts, in the claim's order, then take their entries off this index
-- page by page instead of one page each.
CREATE INDEX executions_waiting_of_job ON executions (job_order, available_at)
    WHERE status IN ('PENDING', 'RETRY_WAIT') AND origin IN ('schedule', 'catch_up');

-- version 19: the effects an execution recorded, counted on its row (MAX_EFFECTS_PER_EXECUTION)
ALTER TABLE executions ADD COLUMN effects INTEGER NOT NULL DEFAULT 0;

-- version 20: settled jobs leave the store with their idempotency keys, found by job here
CREATE INDEX idempotency_keys_job ON idempotency_keys (job_id);

-- version 22: the dead letters of a job, oldest first: the retention keeps its newest dlq_keep_last
CREATE INDEX executions_dead_of_job ON executions (job_id, scheduled_at) WHERE status = 'DEAD';

-- version 23: the dead notifications of a job, oldest first: the retention keeps its newest dlq_keep_last
CREATE INDEX notifications_dead_of_job ON notifications (job_id, tenant, created_at) WHERE status = 'DEAD';

-- version 25: a calendar's index, stored beside its row; a revision new at every write
ALTER TABLE calendars ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;

-- A rowid table, not WITHOUT ROWID: a seek there reads whole each row it compares (the
-- packed index's overflow pages too); here it compares keys in the indexes alone.
CREATE TABLE calendar_indexes (
    tenant   TEXT NOT NULL,
    name     TEXT NOT NULL,
    revision INTEGER NOT NULL,  -- the calendar's, when this was built
    packed   BLOB NOT NULL,
    UNIQUE (tenant, name),
    FOREIGN KEY (tenant, name) REFERENCES calendars (tenant, name) ON DELETE CASCADE
);
-- a claim batch reads its calendars' revisions here alone, and the packed indexes of those it
-- does not hold at that revision
CREATE INDEX calendar_indexes_revision ON calendar_indexes (tenant, name, revision);

-- the last revision handed out (one row): SQLite has no sequences
CREATE TABLE calendar_revisions (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO calendar_revisions (id, last) VALUES (1, 0);

-- version 26: which process holds a node id (a random incarnation: two processes can start in one millisecond)
ALTER TABLE cluster_nodes ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';

-- version 28: a tenant being deleted (its rows go in retention's batches, its own row last)
ALTER TABLE tenants ADD COLUMN deleting_since INTEGER;  -- NULL: a live tenant
