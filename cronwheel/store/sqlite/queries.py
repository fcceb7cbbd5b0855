"""Every SQL statement the SQLite store runs, by name. The schema is in ``migrations/``.

Lists of values (buckets, ids) are bound as one JSON array and read with ``json_each`` so
that a statement's text, and so its prepared form in apsw's cache, does not depend on how
many values there are.

Why one module: it is a catalogue, not logic; one statement per name, grouped by role like
the store's modules, so the SQL a role runs can be read (and its query plans tested, see
``tests/contract/test_sqlite_specific.py``) side by side with its PostgreSQL twin.
"""

# ---------------------------------------------------------------- connection

PRAGMAS = """
PRAGMA synchronous = FULL;
PRAGMA foreign_keys = ON;
PRAGMA temp_store = MEMORY;
PRAGMA wal_autocheckpoint = 10000;
PRAGMA journal_size_limit = 16777216;
"""
#: journal_size_limit: after a checkpoint resets the WAL, truncate it back to 16 MiB, so one
#: burst (a herd, a bulk import) does not leave a huge WAL file behind for good.
#: cache_size is set per connection by SqliteStore.open (DEFAULT_CACHE_MIB for the writer).
#: wal_autocheckpoint: 10,000 pages (~40 MiB). A claim batch of 5000 jobs dirties about as
#: many pages; checkpointing after every such commit (the default, 1000 pages) copies each
#: page back twice as often. Measured on 100k claims among 1M jobs: -20 % wall time.

# ---------------------------------------------------------------- columns

#: column order of ``rows.job_from_row``
JOB_COLUMNS = """
    j.id, j.bucket_id, j.status, j.next_run_at, j.schedule, j.timezone, j.misfire, j.overlap,
    j.jitter_sec, j.tenant, j.priority, j.max_attempts,
    d.name, d.run_at, d.target, d.payload, d.retry, d.timeout_sec, d.lease_sec,
    d.created_at, d.updated_at, d.process, j.calendars, j.active_until, d.active_from,
    d.on_success, d.on_failure, j.misfire_grace_sec, d.managed_by,
    d.notify, d.expect_ms, w.window_ms, w.deadline_at, w.overdue_since
"""
JOB_FROM = "jobs AS j JOIN job_definitions AS d ON d.job_id = j.id LEFT JOIN job_watch AS w ON w.job_id = j.id"

#: column order of ``model.Execution`` (``rows.execution_from_row``)
EXEC_COLUMNS = """
    execution_id, job_id, tenant, priority, scheduled_at, status, attempt, lease_epoch,
    worker_id, lease_until, available_at, created_at, started_at, finished_at, exit_code,
    error, output, reason, max_attempts, queue, context, origin
"""

#: the same, without the output tail (up to 64 KiB an execution), for what lists executions
#: and never shows an output (history, dead letters, last results, the dispatcher's refill): a
#: page of 1,000 read 64 MB of it in the reader every tenant's reads share
LISTED_EXEC_COLUMNS = EXEC_COLUMNS.replace("error, output,", "error, NULL AS output,")


# ---------------------------------------------------------------- jobs

#: a batch's tenant as it stands (no row: a new one), see create_jobs
TENANT_DELETING_SINCE = "SELECT deleting_since FROM tenants WHERE name = ?"

INSERT_TENANT = """
INSERT INTO tenants (name, weight, max_running, created_at) VALUES (?, 1, NULL, ?)
ON CONFLICT (name) DO NOTHING
"""

INSERT_JOB = """
INSERT INTO jobs (id, bucket_id, status, next_run_at, schedule, timezone, misfire, overlap,
                  jitter_sec, tenant, priority, max_attempts, queue, calendars, active_until,
                  misfire_grace_sec, rowid)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

#: the last rowid in [?1, ?2) of the scheduling table (a rowid range: one seek)
LAST_ROWID_BETWEEN = "SELECT max(rowid) FROM jobs WHERE rowid >= ?1 AND rowid < ?2"

INSERT_JOB_DEFINITION = """
INSERT INTO job_definitions (job_id, name, run_at, target, payload, retry, timeout_sec,
                             lease_sec, process, active_from, on_success, on_failure,
                             managed_by, notify, expect_ms, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?16, ?16)
"""

SELECT_IDEMPOTENCY_KEY = """
SELECT request_hash, job_id, next_run_at FROM idempotency_keys WHERE tenant = ? AND key = ?
"""

INSERT_IDEMPOTENCY_KEY = """
INSERT INTO idempotency_keys (tenant, key, request_hash, job_id, next_run_at, created_at)
VALUES (?, ?, ?, ?, ?, ?)
"""

GET_JOB = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE j.id = ?1 AND (?2 IS NULL OR j.tenant = ?2)
"""

#: the name's live holder first (one per tenant), then the others, newest first
FIND_JOBS_BY_NAME = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE d.name = :name AND (:tenant IS NULL OR j.tenant = :tenant)
ORDER BY EXISTS (SELECT 1 FROM job_names AS n WHERE n.job_id = j.id) DESC, d.created_at DESC, j.id
LIMIT :limit
"""

NAME_HOLDER = "SELECT job_id FROM job_names WHERE tenant = ?1 AND name = ?2"

INSERT_JOB_NAME = "INSERT INTO job_names (tenant, name, job_id) VALUES (?, ?, ?)"

RELEASE_JOB_NAME = "DELETE FROM job_names WHERE job_id = ?1"

#: update in place: the claim's columns (next_run_at/status only when rescheduled: ?11)
UPDATE_JOB = """
UPDATE jobs SET schedule = ?2, timezone = ?3, misfire = ?4, overlap = ?5, jitter_sec = ?6,
                priority = ?7, max_attempts = ?8, queue = ?9, calendars = ?12, active_until = ?13,
                misfire_grace_sec = ?14,
                next_run_at = CASE WHEN ?11 THEN ?10 ELSE next_run_at END,
                status = CASE WHEN ?11 AND ?10 IS NOT NULL AND status NOT IN ('ACTIVE', 'PAUSED')
                              THEN 'ACTIVE' ELSE status END
WHERE id = ?1
"""

UPDATE_JOB_DEFINITION = """
UPDATE job_definitions SET name = ?2, run_at = ?3, target = ?4, payload = ?5, retry = ?6,
                           timeout_sec = ?7, lease_sec = ?8, updated_at = ?9, process = ?10,
                           active_from = ?11, managed_by = ?12
WHERE job_id = ?1
"""

#: ticks claimed ahead that an update of the schedule supersedes: PENDING, never started,
#: not due yet (?4 = now); ?2/?3 bound the job's execution ids as in LIVE_EXECUTIONS_OF_JOB
CLAIMED_AHEAD_OF_JOB = """
SELECT execution_id FROM executions INDEXED BY executions_ready
WHERE status IN ('PENDING', 'RETRY_WAIT') AND execution_id >= ?2 AND execution_id < ?3
  AND job_id = ?1 AND status = 'PENDING' AND attempt = 0 AND scheduled_at > ?4
"""

LIST_JOBS = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE j.id > ?1 AND (?2 IS NULL OR j.status = ?2)
ORDER BY j.id LIMIT ?3
"""

LIST_JOBS_OF_TENANT = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE j.tenant = ?4 AND j.id > ?1 AND (?2 IS NULL OR j.status = ?2)
ORDER BY j.id LIMIT ?3
"""

#: ``{where}`` is "1" or "tenant = ?" and/or "status = ?" (so the jobs_tenant index is usable)
COUNT_JOBS = "SELECT COUNT(*) FROM jobs WHERE {where}"

#: the compare-and-set of a job's status; ?4 is a JSON array of expected statuses
SET_JOB_STATUS = """
UPDATE jobs SET status = ?2, next_run_at = COALESCE(?3, next_run_at)
WHERE id = ?1 AND status IN (SELECT value FROM json_each(?4)) AND (?5 IS NULL OR tenant = ?5)
"""

TOUCH_JOB_DEFINITION = "UPDATE job_definitions SET updated_at = ?2 WHERE job_id = ?1"

CANCEL_JOB = "UPDATE jobs SET status = 'CANCELLED', next_run_at = NULL WHERE id = ?"

#: a paused job's ticks claimed ahead (?2 = now), withdrawn as if never claimed: scheduled,
#: PENDING and never started, not due yet (the job's future ticks in executions_tick)
WITHDRAW_CLAIMED_AHEAD = """
DELETE FROM executions
WHERE job_id = ?1 AND scheduled_at > ?2 AND status = 'PENDING' AND attempt = 0 AND origin = 'schedule'
RETURNING scheduled_at
"""

#: the job's next run put back to the earliest tick withdrawn (?2)
NEXT_RUN_BACK_TO = "UPDATE jobs SET next_run_at = min(coalesce(next_run_at, ?2), ?2) WHERE id = ?1"

#: a job's live executions, read through the two small partial indexes rather than its whole
#: history: ?2/?3 bound the execution ids of the job (``job_id:`` .. ``job_id;``)
LIVE_EXECUTIONS_OF_JOB = """
SELECT execution_id, status FROM executions INDEXED BY executions_ready
WHERE status IN ('PENDING', 'RETRY_WAIT') AND execution_id >= ?2 AND execution_id < ?3
  AND job_id = ?1
UNION ALL
SELECT execution_id, status FROM executions INDEXED BY executions_running
WHERE status = 'RUNNING' AND job_id = ?1
"""

CANCEL_EXECUTION = """
UPDATE executions SET status = 'CANCELLED', finished_at = ?2,
       reason = CASE WHEN reason IS NULL THEN ?3 ELSE reason || '; ' || ?3 END
WHERE execution_id = ?1 AND status IN ('PENDING', 'RUNNING', 'RETRY_WAIT')
"""

# ---------------------------------------------------------------- scheduling

#: due jobs of a JSON array of buckets, earliest first. The CTE reads only the covering
#: (bucket_id, status, next_run_at) index; the table is visited for the LIMIT rows alone.
DUE_JOBS = """
WITH due AS (
    SELECT rowid AS rid, next_run_at FROM jobs
    WHERE bucket_id IN (SELECT value FROM json_each(?1)) AND status = 'ACTIVE'
      AND next_run_at <= ?2
    ORDER BY next_run_at LIMIT ?3
)
SELECT j.id, due.next_run_at FROM due JOIN jobs AS j ON j.rowid = due.rid
ORDER BY due.next_run_at, j.id
"""

#: the distinct due instants of a JSON array of buckets with their job counts, from the
#: covering (bucket_id, status, next_run_at) index alone
DUE_TICKS = """
SELECT next_run_at, count(*) FROM jobs
WHERE bucket_id IN (SELECT value FROM json_each(?1)) AND status = 'ACTIVE' AND next_run_at <= ?2
GROUP BY next_run_at ORDER BY next_run_at LIMIT ?3
"""

#: one index seek per bucket (min/max optimisation), whatever the number of jobs
NEXT_DUE_AT = """
SELECT MIN((SELECT MIN(next_run_at) FROM jobs
            WHERE bucket_id = b.value AND status = 'ACTIVE' AND next_run_at IS NOT NULL))
FROM json_each(?1) AS b
"""

CLAIM_SELECT = """
WITH due AS (
    SELECT rowid AS rid FROM jobs
    WHERE bucket_id IN (SELECT value FROM json_each(?1)) AND status = 'ACTIVE'
      AND next_run_at <= ?2 AND (next_run_at <= ?4 OR overlap = 'allow')
    ORDER BY next_run_at LIMIT ?3
)
SELECT j.rowid, j.id, j.next_run_at, j.schedule, j.timezone, j.misfire, j.overlap,
       j.jitter_sec, j.tenant, j.priority, j.max_attempts, j.queue, j.calendars, j.active_until,
       j.misfire_grace_sec
FROM due JOIN jobs AS j ON j.rowid = due.rid
"""

#: CLAIM_SELECT restricted to a JSON array of job ids (?4; now is ?5): the engine's isolation of a claim
#: that fails, a few ids at a time (see Store.claim_due)
CLAIM_SELECT_ONLY = """
WITH due AS (
    SELECT rowid AS rid FROM jobs
    WHERE id IN (SELECT value FROM json_each(?4)) AND bucket_id IN (SELECT value FROM json_each(?1))
      AND status = 'ACTIVE' AND next_run_at <= ?2 AND (next_run_at <= ?5 OR overlap = 'allow')
    ORDER BY next_run_at LIMIT ?3
)
SELECT j.rowid, j.id, j.next_run_at, j.schedule, j.timezone, j.misfire, j.overlap,
       j.jitter_sec, j.tenant, j.priority, j.max_attempts, j.queue, j.calendars, j.active_until,
       j.misfire_grace_sec
FROM due JOIN jobs AS j ON j.rowid = due.rid
"""

#: the compare-and-set of invariant 3: advance next_run_at only from the value we read; a job
#: with no further tick stays ACTIVE until its executions settle it (SETTLE_JOB)
CLAIM_ADVANCE = """
UPDATE jobs SET next_run_at = ?2
WHERE rowid = ?1 AND next_run_at = ?3 AND status = 'ACTIVE'
"""

#: a job with no further tick takes the state its last execution settles it in, once nothing
#: of it is live any more. ?1 is a JSON array of [job_id, status] pairs (one per job): the whole
#: batch in one statement, each job one primary-key probe (an ``@triggered`` job has no tick of
#: its own, ever: it waits for triggers, never settles)
SETTLE_JOBS = """
UPDATE jobs SET status = s.status
FROM (SELECT value ->> 0 AS id, value ->> 1 AS status FROM json_each(?1)) AS s
WHERE jobs.id = s.id AND jobs.next_run_at IS NULL AND jobs.status IN ('ACTIVE', 'PAUSED')
  AND jobs.schedule IS NOT '@triggered'
  AND NOT EXISTS (SELECT 1 FROM executions
                  WHERE executions.job_id = jobs.id AND executions.status IN ('PENDING', 'RUNNING', 'RETRY_WAIT'))
"""

#: an execution of a settled job runs again (DLQ replay, trigger): the job waits for it
REOPEN_JOB = "UPDATE jobs SET status = 'ACTIVE' WHERE id = ?1 AND status IN ('SUCCEEDED', 'FAILED')"

#: on a stored schedule that no longer evaluates: stop scheduling the job, keep it
CLAIM_PAUSE_BROKEN = """
UPDATE jobs SET status = 'PAUSED' WHERE rowid = ?1 AND next_run_at = ?2 AND status = 'ACTIVE'
"""

#: a new tick; a tick that already exists (e.g. a manual trigger at the same millisecond)
#: is left alone: one execution per tick
INSERT_EXECUTION = """
INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status,
                        available_at, created_at, finished_at, reason, max_attempts,
                        overlap_guard, origin, job_order)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING
"""

#: a queue target's executions carry its name (only those rows pay for this statement)
SET_EXECUTION_QUEUE = "UPDATE executions SET queue = ?2 WHERE execution_id = ?1"

#: live executions of the given (JSON array) guarded jobs, for overlap=forbid/replace
GUARDED_LIVE = """
SELECT job_id, execution_id, status FROM executions INDEXED BY executions_guarded
WHERE overlap_guard = 1 AND status IN ('PENDING', 'RUNNING', 'RETRY_WAIT')
  AND job_id IN (SELECT value FROM json_each(?1))
ORDER BY job_id, status = 'RUNNING' DESC, scheduled_at DESC
"""

#: per job_order of a JSON array of ``allow`` jobs, its overdue scheduled runs still waiting to
#: start, counted up to ?3 (MAX_WAITING_RUNS) from the index alone: an upper bound. job_order is
#: the job's rowid, which no other job's live rows carry; but a VACUUM may renumber rowids, so
#: a claim that the count would hold back counts again, exactly (WAITING_RUNS_OF_JOB). Reading
#: each entry's row for its job_id cost ~2 µs an entry: with a tenant's 3,800 every-second jobs
#: at the bound, ~0.8 s of the store writer's every second.
WAITING_RUNS = """
SELECT j.value, (SELECT count(*) FROM (
    SELECT 1 FROM executions INDEXED BY executions_waiting_of_job
    WHERE job_order = j.value AND available_at <= ?2
      AND status IN ('PENDING', 'RETRY_WAIT') AND origin IN ('schedule', 'catch_up') LIMIT ?3))
FROM json_each(?1) AS j
"""

#: WAITING_RUNS of one job (?1 job_order, ?2 job id), exactly
WAITING_RUNS_OF_JOB = """
SELECT count(*) FROM (
    SELECT 1 FROM executions INDEXED BY executions_waiting_of_job
    WHERE job_order = ?1 AND available_at <= ?3 AND job_id = ?2
      AND status IN ('PENDING', 'RETRY_WAIT') AND origin IN ('schedule', 'catch_up') LIMIT ?4)
"""

#: the revisions of the stored indexes of a JSON array of [tenant, name] pairs, for a claim
#: batch: from the index alone (store/calendars.py)
CALENDAR_REVISIONS = """
SELECT tenant, name, revision FROM calendar_indexes INDEXED BY calendar_indexes_revision
WHERE (tenant, name) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))
"""

#: the stored indexes themselves, of those a claim does not hold at their revision; never the
#: specs, nor the calendars' own rows: a seek in a WITHOUT ROWID table reads whole each row it
#: compares, the spec's overflow pages included
CALENDARS_BY_NAME = """
SELECT tenant, name, revision, packed FROM calendar_indexes
WHERE (tenant, name) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))
"""

#: calendars' specs, for those whose index is not stored yet
CALENDAR_SPECS_BY_NAME = """
SELECT tenant, name, revision, spec FROM calendars
WHERE (tenant, name) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))
"""

#: a calendar's index (?4), built from revision ?3 of its spec: kept unless the calendar was
#: written since (or deleted)
STORE_CALENDAR_INDEX = """
INSERT INTO calendar_indexes (tenant, name, revision, packed)
SELECT tenant, name, revision, ?4 FROM calendars WHERE tenant = ?1 AND name = ?2 AND revision = ?3
ON CONFLICT (tenant, name) DO UPDATE SET revision = excluded.revision, packed = excluded.packed
"""

TRIGGER_SELECT_JOB = """
SELECT status, tenant, priority, max_attempts, overlap, queue, rowid FROM jobs
WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2)
"""

TAKEN_TICKS_FROM = """
SELECT scheduled_at FROM executions WHERE job_id = ?1 AND scheduled_at >= ?2
ORDER BY scheduled_at LIMIT ?3
"""

# ---------------------------------------------------------------- the ready queue

#: in the ready index's order; the page starts after the execution ?3 (at ?2), whose place in
#: the index is looked up (-1 if it is gone, so that its ties are read again, never skipped)
READY_EXECUTIONS = f"""
SELECT {LISTED_EXEC_COLUMNS} FROM executions
WHERE status IN ('PENDING', 'RETRY_WAIT') AND available_at <= ?1 AND queue IS NULL
  AND (available_at, job_order, execution_id)
      > (?2, COALESCE((SELECT job_order FROM executions WHERE execution_id = ?3), -1), ?3)
ORDER BY available_at, job_order, execution_id LIMIT ?4
"""

NEXT_AVAILABLE_AT = """
SELECT MIN(available_at) FROM executions WHERE status IN ('PENDING', 'RETRY_WAIT')
"""

#: a remote worker's pull: dispatchable executions of a JSON array of queues (?1), most urgent
#: tier first, then oldest. QUEUE_READY_OF_TENANT for a tenant's worker (?3), which reads only
#: that tenant's rows (queue names are shared between tenants). A worker of no tenant is
#: offered each tenant's first rows (QUEUED_TENANTS, then QUEUE_CANDIDATES_OF_TENANT per
#: tenant) and takes them in turns across tenants (core/claimturns.py), with the tier a
#: tenant may queue at: the high tier is only for those granted it (version 24), the others'
#: high rows rank as default, as the local dispatcher queues them.
#: The tenants with queued rows in any queue: one probe of executions_tenant_queue_ready each
#: (a loose index scan), however many rows each has queued
_QUEUED = """
WITH RECURSIVE queued (tenant) AS (
    SELECT MIN(tenant) FROM executions WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT')
    UNION ALL
    SELECT (SELECT MIN(tenant) FROM executions
            WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT') AND tenant > queued.tenant)
    FROM queued WHERE queued.tenant IS NOT NULL
)"""
QUEUED_TENANTS = _QUEUED + "\nSELECT tenant FROM queued WHERE tenant IS NOT NULL"

#: a tenant's first rows of one queue, in the index's order (one queue at a time: with several
#: the order would need a sort of all the tenant's queued rows), its raw priority first. The
#: tiers listed make each one a range of the index up to now: rows available later (a backlog
#: of retries) are not read
QUEUE_CANDIDATES_OF_TENANT = """
SELECT execution_id, tenant,
       CASE WHEN priority = 0 AND NOT COALESCE((SELECT allow_high_priority FROM tenants WHERE name = ?3), 0)
            THEN 1 ELSE priority END,
       available_at, priority
FROM executions
WHERE tenant = ?3 AND queue IS NOT NULL AND queue = ?1 AND priority IN (0, 1, 2)
  AND status IN ('PENDING', 'RETRY_WAIT') AND available_at <= ?2
ORDER BY priority, available_at, execution_id LIMIT ?4
"""

QUEUE_READY_OF_TENANT = """
SELECT execution_id FROM executions
WHERE tenant = ?3 AND queue IS NOT NULL AND queue IN (SELECT value FROM json_each(?1))
  AND status IN ('PENDING', 'RETRY_WAIT') AND available_at <= ?2
ORDER BY priority, available_at, execution_id LIMIT ?4
"""

#: whether a claim of a worker of no tenant (QUEUE_HAS_READY: any tenant with queued rows) or
#: of tenant ?3 would find a row: a read, so that a claim that finds nothing takes no write
#: transaction. Each (tenant, queue, tier) is one range of executions_tenant_queue_ready up to
#: now: neither rows available later nor a herd's local ready rows (executions_ready) are read
QUEUE_HAS_READY = _QUEUED + """
SELECT EXISTS (SELECT 1 FROM queued, json_each(?1) AS n WHERE queued.tenant IS NOT NULL AND EXISTS (
    SELECT 1 FROM executions WHERE tenant = queued.tenant AND queue IS NOT NULL AND queue = n.value
      AND priority IN (0, 1, 2) AND status IN ('PENDING', 'RETRY_WAIT') AND available_at <= ?2))
"""
QUEUE_HAS_READY_OF_TENANT = """
SELECT EXISTS (SELECT 1 FROM json_each(?1) AS n WHERE EXISTS (
    SELECT 1 FROM executions WHERE tenant = ?3 AND queue IS NOT NULL AND queue = n.value
      AND priority IN (0, 1, 2) AND status IN ('PENDING', 'RETRY_WAIT') AND available_at <= ?2))
"""

#: what a batch of starts hands out of its jobs' definitions, for a JSON array of job ids (one
#: primary-key probe per job, read inside the start's write transaction): the lease in ms as
#: START_EXECUTIONS computes it, then the grant's fields
START_DEFINITIONS = """
SELECT job_id, CAST(round(lease_sec * 1000) AS INTEGER), lease_sec, timeout_sec, target, payload, process
FROM job_definitions WHERE job_id IN (SELECT value FROM json_each(?1))
"""

#: hand-out (invariant 4): epoch + 1 on every start. ?1 is a JSON array of
#: [execution_id, worker_id, lease_ms or null] triples, ?2 is now, ?3 the default lease (ms).
#: One statement starts the batch, with no lookups per row: the leases come in the array
#: (START_DEFINITIONS), and RETURNING gives the execution's own fields of the grants.
START_EXECUTIONS = """
UPDATE executions
SET status = 'RUNNING', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
    worker_id = r.worker_id, started_at = COALESCE(started_at, ?2),
    lease_until = ?2 + COALESCE(r.lease_ms, ?3)
FROM (SELECT value ->> 0 AS execution_id, value ->> 1 AS worker_id, value ->> 2 AS lease_ms
      FROM json_each(?1)) AS r
WHERE executions.execution_id = r.execution_id
  AND executions.status IN ('PENDING', 'RETRY_WAIT') AND executions.available_at <= ?2
RETURNING execution_id, job_id, tenant, priority, scheduled_at, attempt, lease_epoch,
          lease_until, queue, origin, context
"""

HEARTBEAT = """
UPDATE executions
SET lease_until = MAX(lease_until, ?3 + COALESCE(
        (SELECT CAST(round(d.lease_sec * 1000) AS INTEGER)
         FROM job_definitions AS d WHERE d.job_id = executions.job_id), ?4))
WHERE execution_id = ?1 AND status = 'RUNNING' AND lease_epoch = ?2 AND worker_id = ?5
RETURNING lease_until
"""

#: why a heartbeat did not apply (store/completions.py: lease_verdict)
EXECUTION_HOLDER = "SELECT status, lease_epoch, worker_id FROM executions WHERE execution_id = ?"

#: what a completion needs to decide, for a JSON array of execution ids
COMPLETION_STATE = """
SELECT execution_id, status, lease_epoch, attempt, max_attempts, job_id, worker_id FROM executions
WHERE execution_id IN (SELECT value FROM json_each(?1))
"""

#: retry policies, for a JSON array of job ids (read only for failed attempts)
RETRY_POLICIES = """
SELECT job_id, retry FROM job_definitions WHERE job_id IN (SELECT value FROM json_each(?1))
"""

#: a fenced completion: changes nothing unless RUNNING at exactly this lease_epoch
COMPLETE_EXECUTION = """
UPDATE executions
SET status = ?3, finished_at = ?4, available_at = COALESCE(?5, available_at),
    exit_code = ?6, error = ?7, output = ?8, reason = COALESCE(?9, reason), max_attempts = max_attempts + ?10
WHERE execution_id = ?1 AND status = 'RUNNING' AND lease_epoch = ?2
"""

EXPIRED_LEASES = """
SELECT execution_id, lease_epoch FROM executions
WHERE status = 'RUNNING' AND lease_until < :ran_out_before
ORDER BY lease_until, execution_id LIMIT :limit
"""

RUNNING_FOR_WORKER = f"""
SELECT {EXEC_COLUMNS} FROM executions
WHERE status = 'RUNNING' AND worker_id = ?1 ORDER BY execution_id
"""

RUNNING_WITH_WORKER_PREFIX = f"""
SELECT {EXEC_COLUMNS} FROM executions
WHERE status = 'RUNNING' AND substr(worker_id, 1, length(:prefix)) = :prefix ORDER BY execution_id
"""

RUNNING_COUNT = "SELECT COUNT(*) FROM executions WHERE status = 'RUNNING'"

# ---------------------------------------------------------------- executions: reads

GET_EXECUTION = f"""
SELECT {EXEC_COLUMNS} FROM executions WHERE execution_id = ?1 AND (?2 IS NULL OR tenant = ?2)
"""

LIST_EXECUTIONS = f"""
SELECT {LISTED_EXEC_COLUMNS} FROM executions
WHERE job_id = :job_id AND scheduled_at < :before AND (:tenant IS NULL OR tenant = :tenant)
ORDER BY scheduled_at DESC LIMIT :limit
"""

#: each (JSON array) job's latest execution that started, newest tick first: RUNNING, waiting
#: to retry, or ended after a start; ticks claimed ahead (PENDING) and never-run ones skipped
LAST_RUNS = f"""
SELECT {", ".join("e." + c.strip() for c in LISTED_EXEC_COLUMNS.split(",")).replace("e.NULL", "NULL")}
FROM json_each(?1) AS w
JOIN executions AS e ON e.execution_id = (
    SELECT x.execution_id FROM executions AS x
    WHERE x.job_id = w.value AND x.started_at IS NOT NULL AND x.status <> 'PENDING'
    ORDER BY x.scheduled_at DESC LIMIT 1)
WHERE ?2 IS NULL OR e.tenant = ?2
"""

#: per status, a WHERE clause that names the partial index covering it (when there is one)
COUNT_EXECUTIONS_WHERE = {
    "PENDING": "status IN ('PENDING', 'RETRY_WAIT') AND status = 'PENDING'",
    "RETRY_WAIT": "status IN ('PENDING', 'RETRY_WAIT') AND status = 'RETRY_WAIT'",
    "RUNNING": "status = 'RUNNING'",
    "DEAD": "status = 'DEAD'",
}
COUNT_EXECUTIONS = "SELECT COUNT(*) FROM executions WHERE {where} AND (?1 IS NULL OR tenant = ?1)"

# ---------------------------------------------------------------- effects

EFFECT_EXISTS = "SELECT 1 FROM effects WHERE execution_id = ? AND key = ?"
EXECUTION_LEASE = "SELECT status, lease_epoch, worker_id, effects FROM executions WHERE execution_id = ?"
COUNT_EFFECT = "UPDATE executions SET effects = effects + 1 WHERE execution_id = ?"
INSERT_EFFECT = """
INSERT INTO effects (execution_id, key, lease_epoch, recorded_at) VALUES (?, ?, ?, ?)
"""
LIST_EFFECTS = """
SELECT key, lease_epoch, recorded_at FROM effects WHERE execution_id = ?
ORDER BY recorded_at, key
"""

# ---------------------------------------------------------------- dead-letter queue

LIST_DEAD = f"""
SELECT {LISTED_EXEC_COLUMNS} FROM executions
WHERE status = 'DEAD' AND execution_id > ?1 AND (?2 IS NULL OR tenant = ?2)
ORDER BY execution_id LIMIT ?3
"""

GET_DEAD = f"""
SELECT {EXEC_COLUMNS} FROM executions
WHERE execution_id = ?1 AND status = 'DEAD' AND (?2 IS NULL OR tenant = ?2)
"""

REPLAY_DEAD = """
UPDATE executions
SET status = 'PENDING', attempt = 0, available_at = ?2, worker_id = NULL, lease_until = NULL,
    finished_at = NULL, exit_code = NULL, error = NULL, output = NULL, reason = ?3,
    origin = 'replay'
WHERE execution_id = ?1 AND status = 'DEAD'
"""

PURGE_DEAD = """
DELETE FROM executions WHERE execution_id = ?1 AND status = 'DEAD' AND (?2 IS NULL OR tenant = ?2)
"""

# ---------------------------------------------------------------- tenants and API tokens

#: column order of ``rows.tenant_from_row``
TENANT_COLUMNS = """
    name, weight, max_running, max_jobs, submit_rate, submit_burst, allow_shell, http_allow,
    created_at, updated_at, allow_high_priority, deleting_since
"""

LIST_TENANTS = f"SELECT {TENANT_COLUMNS} FROM tenants ORDER BY name"

GET_TENANT = f"SELECT {TENANT_COLUMNS} FROM tenants WHERE name = ?"

CREATE_TENANT = """
INSERT INTO tenants (name, weight, max_running, max_jobs, submit_rate, submit_burst, allow_shell,
                     http_allow, created_at, updated_at, allow_high_priority)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO NOTHING
"""

UPDATE_TENANT = """
UPDATE tenants SET weight = ?2, max_running = ?3, max_jobs = ?4, submit_rate = ?5,
                   submit_burst = ?6, allow_shell = ?7, http_allow = ?8, updated_at = ?9,
                   allow_high_priority = ?10
WHERE name = ?1
"""

#: registered jobs of a tenant, for its max_jobs quota (jobs_tenant index, then the row)
#: one tenant with its registered (ACTIVE or PAUSED) jobs, what its maxJobs counts
TENANT_WITH_JOBS = f"""
SELECT {TENANT_COLUMNS}, (SELECT COUNT(*) FROM jobs WHERE tenant = :name AND status IN ('ACTIVE', 'PAUSED'))
FROM tenants WHERE name = :name
"""

COUNT_REGISTERED_JOBS = """
SELECT COUNT(*) FROM jobs WHERE tenant = ? AND status IN ('ACTIVE', 'PAUSED')
"""

#: column order of ``rows.token_from_row``
TOKEN_COLUMNS = "token_id, token_hash, role, tenant, name, created_at, revoked_at"

INSERT_TOKEN = """
INSERT INTO api_tokens (token_id, token_hash, role, tenant, name, created_at, revoked_at)
VALUES (?, ?, ?, ?, ?, ?, NULL)
"""

#: a tenant that may be given tokens: one not being deleted
TENANT_EXISTS = "SELECT 1 FROM tenants WHERE name = ? AND deleting_since IS NULL"

GET_TOKEN_BY_HASH = f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE token_hash = ?"

GET_TOKEN = f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE token_id = ?"

LIST_TOKENS = f"""
SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE :tenant IS NULL OR tenant = :tenant
ORDER BY created_at, token_id
"""

#: the last active admin token is never revoked (the writer lock makes this check atomic)
PRUNE_REVOKED_TOKENS = """
DELETE FROM api_tokens WHERE token_id IN (
  SELECT token_id FROM api_tokens WHERE revoked_at IS NOT NULL AND revoked_at < ?1 LIMIT ?2)
"""

REVOKE_TOKEN = """
UPDATE api_tokens SET revoked_at = ?2 WHERE token_id = ?1 AND revoked_at IS NULL
  AND (role <> 'admin' OR EXISTS (
    SELECT 1 FROM api_tokens o WHERE o.role = 'admin' AND o.revoked_at IS NULL AND o.token_id <> ?1))
"""

# ---------------------------------------------------------------- retention

PRUNE_JOBS_PAGE = "SELECT id FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2"

#: one job's prunable history: finished, old enough, and older than its keep_last newest
#: (the OFFSET subquery finds the keep_last-th newest tick on the (job_id, scheduled_at) index)
PRUNE_JOB_EXECUTIONS = """
DELETE FROM executions WHERE rowid IN (
    SELECT rowid FROM executions
    WHERE job_id = ?1
      AND status IN ('SUCCEEDED', 'CANCELLED', 'SKIPPED')
      AND finished_at < ?2
      AND scheduled_at < coalesce(
          (SELECT scheduled_at FROM executions WHERE job_id = ?1
           ORDER BY scheduled_at DESC LIMIT 1 OFFSET ?3 - 1), -1)
    ORDER BY scheduled_at
    LIMIT ?4)
"""

#: the next ?2 dead letters after job ?1, in job order, counted by job (with its tenant): read
#: from the index of DEAD rows alone (jobs without dead letters are not in it), at most ?2 of
#: its entries a call, so a large queue is read a bounded piece at a time
DEAD_LETTERS_PAGE = """
SELECT d.job_id, j.tenant, d.n FROM (
    SELECT job_id, count(*) AS n FROM (
        SELECT job_id FROM executions INDEXED BY executions_dead_of_job
        WHERE status = 'DEAD' AND job_id > ?1 ORDER BY job_id, scheduled_at LIMIT ?2)
    GROUP BY job_id) AS d
JOIN jobs AS j ON j.id = d.job_id ORDER BY d.job_id
"""

#: one job's dead letters beyond its ?2 newest (by tick), at most ?3 of them
PRUNE_JOB_DEAD_LETTERS = """
DELETE FROM executions WHERE rowid IN (
    SELECT rowid FROM executions INDEXED BY executions_dead_of_job
    WHERE job_id = ?1 AND status = 'DEAD'
    ORDER BY scheduled_at DESC LIMIT ?3 OFFSET ?2)
"""

COUNT_JOB_DEAD_LETTERS = "SELECT count(*) FROM executions WHERE job_id = ?1 AND status = 'DEAD'"

# ---------------------------------------------------------------- calendars

#: a calendar as the readers take it: its row, and its stored index (NULL: none yet)
CALENDAR_COLUMNS = "c.tenant, c.name, c.spec, c.created_at, c.updated_at, c.revision, i.packed"
CALENDAR_FROM = "calendars AS c LEFT JOIN calendar_indexes AS i ON i.tenant = c.tenant AND i.name = c.name"

#: a revision never handed out before, for a calendar's write
NEXT_CALENDAR_REVISION = "UPDATE calendar_revisions SET last = last + 1 WHERE id = 1 RETURNING last"

UPSERT_CALENDAR = """
INSERT INTO calendars (tenant, name, spec, created_at, updated_at, revision) VALUES (?1, ?2, ?3, ?4, ?4, ?5)
ON CONFLICT (tenant, name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at, revision = excluded.revision
RETURNING tenant, name, spec, created_at, updated_at, revision
"""

#: the index of the calendar just written (?3 its revision), in the same transaction
PUT_CALENDAR_INDEX = """
INSERT INTO calendar_indexes (tenant, name, revision, packed) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (tenant, name) DO UPDATE SET revision = excluded.revision, packed = excluded.packed
"""

GET_CALENDAR = f"SELECT {CALENDAR_COLUMNS} FROM {CALENDAR_FROM} WHERE c.tenant = ?1 AND c.name = ?2"
CALENDAR_EXISTS = "SELECT 1 FROM calendars WHERE tenant = ?1 AND name = ?2"

COUNT_CALENDARS = "SELECT COUNT(*) FROM calendars WHERE tenant = ?1"

LIST_CALENDARS = f"""
SELECT {CALENDAR_COLUMNS} FROM {CALENDAR_FROM} WHERE :tenant IS NULL OR c.tenant = :tenant ORDER BY c.tenant, c.name
"""

#: the same rows, the spec as its stored JSON text (``Store.list_calendar_documents``), a page
#: after (:after_tenant, :after_name)
LIST_CALENDAR_DOCUMENTS = """
SELECT tenant, name, spec, created_at, updated_at FROM calendars
WHERE (:tenant IS NULL OR tenant = :tenant) AND (tenant, name) > (:after_tenant, :after_name)
ORDER BY tenant, name LIMIT :limit
"""

#: the registered jobs that observe a calendar (a few ids, to name them in the refusal)
CALENDAR_USERS = """
SELECT id FROM jobs
WHERE tenant = ?1 AND status IN ('ACTIVE', 'PAUSED') AND calendars IS NOT NULL
  AND EXISTS (SELECT 1 FROM json_each(jobs.calendars) WHERE value = ?2)
ORDER BY id LIMIT 20
"""

DELETE_CALENDAR = "DELETE FROM calendars WHERE tenant = ?1 AND name = ?2"

# ---------------------------------------------------------------- backfill and chains

#: an execution not made by the schedule (backfill, chain child): all its columns at once
INSERT_EXECUTION_WITH_CONTEXT = """
INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status,
                        available_at, created_at, finished_at, reason, max_attempts,
                        overlap_guard, queue, context, origin, job_order)
VALUES (?1, ?2, ?3, ?4, ?5, 'PENDING', ?6, ?7, NULL, ?8, ?9, ?10, ?11, ?12,
        CASE WHEN ?12 ->> '$.backfill' THEN 'backfill' ELSE 'chain' END,
        (SELECT rowid FROM jobs WHERE id = ?2))
ON CONFLICT DO NOTHING
"""

CANCEL_BACKFILL = """
UPDATE executions SET status = 'CANCELLED', finished_at = ?2, reason = 'backfill cancelled'
WHERE job_id = ?1 AND status IN ('PENDING', 'RETRY_WAIT') AND context ->> '$.backfill' = 1
  AND (?3 IS NULL OR tenant = ?3)
"""

#: the chains of a JSON array of job ids (only jobs that have one)
CHAINS_OF = """
SELECT job_id, on_success, on_failure FROM job_definitions
WHERE job_id IN (SELECT value FROM json_each(?1))
  AND (on_success IS NOT NULL OR on_failure IS NOT NULL)
"""

#: the chain children (a JSON array of ids) that may be triggered: ACTIVE ones
CHILD_JOBS = """
SELECT id, tenant, priority, max_attempts, overlap, queue FROM jobs
WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'ACTIVE'
"""

#: a tenant's chains, for the cycle check
TENANT_CHAINS = """
SELECT d.job_id, d.on_success, d.on_failure FROM jobs AS j JOIN job_definitions AS d ON d.job_id = j.id
WHERE j.tenant = ?1 AND (d.on_success IS NOT NULL OR d.on_failure IS NOT NULL)
"""

JOBS_TENANT_STATUS = """
SELECT id, tenant, status FROM jobs WHERE id IN (SELECT value FROM json_each(?1))
"""

SET_JOB_CHAIN = """
UPDATE job_definitions SET on_success = ?2, on_failure = ?3, updated_at = ?4 WHERE job_id = ?1
"""
