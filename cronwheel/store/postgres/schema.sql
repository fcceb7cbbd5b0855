-- The expected full schema: every migration in migrations/ applied in order.
-- tests/contract/test_postgres_specific.py checks that the two agree; update both together.
-- Times are BIGINT milliseconds since the epoch (UTC); JSON columns are `json` (kept as
-- submitted); identifiers and keys use COLLATE "C" (code point order, as in SQLite).

CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL
);

-- Tenants and their share of the ready queue (weighted fair queuing, concurrency quota).
CREATE TABLE tenants (
    name        TEXT COLLATE "C" PRIMARY KEY,
    weight      INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 1),
    max_running INTEGER CHECK (max_running IS NULL OR max_running >= 0),
    created_at  BIGINT NOT NULL DEFAULT 0,
    max_jobs     INTEGER CHECK (max_jobs IS NULL OR max_jobs >= 0),
    submit_rate  DOUBLE PRECISION CHECK (submit_rate IS NULL OR submit_rate > 0),
    submit_burst INTEGER CHECK (submit_burst IS NULL OR submit_burst >= 1),
    allow_shell  BOOLEAN NOT NULL DEFAULT FALSE,
    http_allow   TEXT[],  -- host names HTTP targets may call ({}: none); NULL: not set, the daemon's list (version 21)
    updated_at   BIGINT NOT NULL DEFAULT 0
);

INSERT INTO tenants (name, weight, max_running, created_at) VALUES ('default', 1, NULL, 0);

-- The scheduling table: deliberately narrow (only what a claim reads), because the claim
-- rewrites one row per due job and the cost of that (a new row version) follows the row width.
CREATE TABLE jobs (
    id           TEXT COLLATE "C" PRIMARY KEY,
    bucket_id    INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('ACTIVE', 'PAUSED', 'CANCELLED', 'SUCCEEDED', 'FAILED')),
    next_run_at  BIGINT,
    schedule     TEXT,
    timezone     TEXT NOT NULL,
    misfire      TEXT NOT NULL CHECK (misfire IN ('run_once', 'skip', 'run_all')),
    overlap      TEXT NOT NULL CHECK (overlap IN ('allow', 'forbid', 'replace')),
    jitter_sec   INTEGER NOT NULL DEFAULT 0,
    tenant       TEXT COLLATE "C" NOT NULL,
    priority     SMALLINT NOT NULL,
    max_attempts INTEGER NOT NULL,
    queue        TEXT COLLATE "C"  -- a queue target's name (remote workers), else NULL
);

-- The due slice of a set of buckets: the scheduler reads only this index.
CREATE INDEX jobs_due ON jobs (bucket_id, status, next_run_at);
CREATE INDEX jobs_tenant ON jobs (tenant, id);

-- What a job does (never read by the claim).
CREATE TABLE job_definitions (
    job_id      TEXT COLLATE "C" PRIMARY KEY REFERENCES jobs (id),
    name        TEXT COLLATE "C",
    run_at      BIGINT,
    target      JSON NOT NULL,
    payload     JSON NOT NULL,
    retry       JSON NOT NULL,
    timeout_sec DOUBLE PRECISION NOT NULL,
    lease_sec   DOUBLE PRECISION NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    process     JSON  -- {env, runAs, shell, stdin}: only the members set; NULL: none
);

CREATE INDEX job_definitions_name ON job_definitions (name) WHERE name IS NOT NULL;

-- A job's name is unique per tenant among live jobs (every status but CANCELLED): each held
-- name is one row, written with the job's creation, rename or cancellation.
CREATE TABLE job_names (
    tenant TEXT COLLATE "C" NOT NULL,
    name   TEXT COLLATE "C" NOT NULL,
    job_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES jobs (id),
    PRIMARY KEY (tenant, name)
);

-- Submission idempotency, scoped per tenant.
CREATE TABLE idempotency_keys (
    tenant       TEXT COLLATE "C" NOT NULL,
    key          TEXT COLLATE "C" NOT NULL,
    request_hash TEXT,
    job_id       TEXT COLLATE "C" NOT NULL REFERENCES jobs (id),
    next_run_at  BIGINT,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (tenant, key)
);

-- One row per tick (invariant 2): execution_id is ids.execution_id(job_id, scheduled_at).
CREATE TABLE executions (
    execution_id  TEXT COLLATE "C" PRIMARY KEY CHECK (execution_id = job_id || ':' || scheduled_at),
    job_id        TEXT COLLATE "C" NOT NULL REFERENCES jobs (id),
    tenant        TEXT COLLATE "C" NOT NULL,
    priority      SMALLINT NOT NULL,
    scheduled_at  BIGINT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED')),
    attempt       INTEGER NOT NULL DEFAULT 0,
    lease_epoch   BIGINT NOT NULL DEFAULT 0,
    worker_id     TEXT COLLATE "C",
    lease_until   BIGINT,
    available_at  BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    started_at    BIGINT,
    finished_at   BIGINT,
    exit_code     INTEGER,
    error         TEXT,
    output        TEXT,
    reason        TEXT,
    max_attempts  INTEGER NOT NULL,
    overlap_guard BOOLEAN NOT NULL DEFAULT FALSE,
    queue         TEXT COLLATE "C"  -- copied from jobs.queue: remote workers claim it, local ones never
);

-- A job's history, newest first; also enforces (job_id, scheduled_at) uniqueness directly.
CREATE UNIQUE INDEX executions_tick ON executions (job_id, scheduled_at);
-- The ready queue: only dispatchable rows, in dispatch order.
CREATE INDEX executions_ready ON executions (available_at, execution_id)
    WHERE status IN ('PENDING', 'RETRY_WAIT');
-- The reaper's view and the per-worker view of running executions.
CREATE INDEX executions_running ON executions (lease_until) WHERE status = 'RUNNING';
CREATE INDEX executions_worker ON executions (worker_id) WHERE status = 'RUNNING';
-- The dead-letter queue.
CREATE INDEX executions_dead ON executions (execution_id) WHERE status = 'DEAD';
-- Live executions of jobs whose overlap policy is not 'allow': the claim asks this index
-- only for such jobs, so the common 'allow' path pays nothing for it.
CREATE INDEX executions_guarded ON executions (job_id)
    WHERE overlap_guard AND status IN ('PENDING', 'RUNNING', 'RETRY_WAIT');

-- Side effects recorded by executions (execution idempotency keys), fenced by lease_epoch.
CREATE TABLE effects (
    execution_id TEXT COLLATE "C" NOT NULL REFERENCES executions (execution_id) ON DELETE CASCADE,
    key          TEXT COLLATE "C" NOT NULL,
    lease_epoch  BIGINT NOT NULL,
    recorded_at  BIGINT NOT NULL,
    PRIMARY KEY (execution_id, key)
);

-- Bearer tokens, by the SHA-256 of the secret (the secret itself is never stored).
CREATE TABLE api_tokens (
    token_id   TEXT COLLATE "C" PRIMARY KEY,
    token_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('admin', 'tenant', 'worker', 'metrics')),
    tenant     TEXT COLLATE "C" REFERENCES tenants (name),
    name       TEXT,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    CHECK ((role IN ('admin', 'metrics')) = (tenant IS NULL))
);

CREATE INDEX api_tokens_tenant ON api_tokens (tenant, created_at);

-- Nodes heartbeat here; desired bucket ownership is rendezvous hashing over the live ones.
CREATE TABLE cluster_nodes (
    node_id    TEXT COLLATE "C" PRIMARY KEY,
    address    TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL
);

-- One lease per time bucket: (bucket_id, epoch) is a term; owner NULL when released.
CREATE TABLE bucket_leases (
    bucket_id   INTEGER PRIMARY KEY CHECK (bucket_id >= 0),
    owner       TEXT COLLATE "C",
    epoch       BIGINT NOT NULL CHECK (epoch >= 1),
    lease_until BIGINT NOT NULL
);

-- version 9: calendars, active windows, chains, execution context

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

-- version 11: a per-job misfire grace, and where each execution came from
ALTER TABLE jobs ADD COLUMN misfire_grace_sec INTEGER;  -- NULL: until the next tick, at most 60 s
ALTER TABLE executions ADD COLUMN origin TEXT COLLATE "C" NOT NULL DEFAULT 'schedule';  -- schedule, catch_up, manual, replay

-- version 12: who manages a job's definition ('apply'), NULL: made by hand
ALTER TABLE job_definitions ADD COLUMN managed_by TEXT;

-- version 13: notification rules, the dead-man's switch, notifications

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

-- notifications_ready, the oldest due of all tenants, was replaced in version 17 (at the end of this file)
CREATE INDEX notifications_running ON notifications (lease_until) WHERE status = 'RUNNING';
CREATE INDEX notifications_job ON notifications (job_id, created_at);
-- the rate limit: what a (job, rule) sent in the last hour, and what it held back
CREATE INDEX notifications_rule ON notifications (job_id, rule_id, status, sent_at);

-- version 14: the SQLite store orders its ready queue's ties by its jobs' place; here the ties
-- stay in execution id order, and only the catalog says so
COMMENT ON INDEX executions_ready IS
    'the ready queue: dispatchable rows by (available_at, execution_id); see migration 14';

-- version 15: the SQLite store adds the overlap policy to its due index; here the claim has
-- always filtered overlap-guarded jobs in its statement, and only the catalog says so
COMMENT ON INDEX jobs_due IS
    'the due slice of a set of buckets; the claim filters overlap-guarded jobs ahead of their tick in its statement; see migration 15';

-- version 16: a tenant's remote worker claims from its own tenant's rows only (queue names are
-- shared between tenants); a worker of no tenant reads each tenant's first rows through it too
-- (version 27)
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
CREATE INDEX executions_waiting_of_job ON executions (job_id, available_at)
    WHERE status IN ('PENDING', 'RETRY_WAIT') AND origin IN ('schedule', 'catch_up');

-- version 19: the effects an execution recorded, counted on its row (MAX_EFFECTS_PER_EXECUTION)
ALTER TABLE executions ADD COLUMN effects INTEGER NOT NULL DEFAULT 0;

-- version 20: settled jobs leave the store with their idempotency keys, found by job here
CREATE INDEX idempotency_keys_job ON idempotency_keys (job_id);

-- version 22: the dead letters of a job, oldest first: the retention keeps its newest dlq_keep_last
CREATE INDEX executions_dead_of_job ON executions (job_id, scheduled_at) WHERE status = 'DEAD';

-- version 23: the dead notifications of a job, oldest first: the retention keeps its newest dlq_keep_last
CREATE INDEX notifications_dead_of_job ON notifications (job_id, tenant, created_at) WHERE status = 'DEAD';

-- version 24: may queue its jobs in the high tier (an admin's grant); the default tenant, the admin's, may
ALTER TABLE tenants ADD COLUMN allow_high_priority BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE tenants SET allow_high_priority = TRUE WHERE name = 'default';

-- version 25: a calendar's index, stored beside its row; a revision new at every write
ALTER TABLE calendars ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;

CREATE TABLE calendar_indexes (
    tenant   TEXT COLLATE "C" NOT NULL,
    name     TEXT COLLATE "C" NOT NULL,
    revision BIGINT NOT NULL,  -- the calendar's, when this was built
    packed   BYTEA NOT NULL,
    PRIMARY KEY (tenant, name) INCLUDE (revision),  -- a claim batch reads the revisions alone
    FOREIGN KEY (tenant, name) REFERENCES calendars (tenant, name) ON DELETE CASCADE
);

CREATE SEQUENCE calendar_revisions;

-- version 26: which process holds a node id (a random incarnation: two processes can start in one millisecond)
ALTER TABLE cluster_nodes ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';

-- version 28: a tenant being deleted (its rows go in retention's batches, its own row last)
ALTER TABLE tenants ADD COLUMN deleting_since BIGINT;  -- NULL: a live tenant
