"""Every SQL statement the PostgreSQL store runs, by name. The schema is in ``migrations/``.

Lists of values (buckets, ids, whole batches of rows) are bound as typed arrays and read with
``= ANY(…)`` or ``unnest(…)``, so that a statement's text, and so its server-side prepared
form (psycopg prepares a statement after a few executions), does not depend on how many
values there are, and a batch of a thousand rows is one statement and one round trip.

Parameters are named (``%(name)s``) and cast where PostgreSQL cannot infer their type
(``%(tenant)s::text IS NULL``). ``now`` is always the caller's clock (``now_ms``): nothing
here reads ``now()``; the database clock is reserved for bucket leases between nodes.

Lock order, which keeps concurrent transactions from deadlocking: a job row before its
executions, and several execution rows in ``execution_id`` order.

Why one module: it is a catalogue, not logic; one statement per name, grouped by role like
the store's modules, and the lock order above holds across all of them, so it is stated and
checked in one place.
"""

# ---------------------------------------------------------------- columns

#: column order of ``rows.job_from_row``; json columns arrive parsed, except ``retry``
#: (kept as text: ``rows.retry_from_json`` caches policies by their text)
JOB_COLUMNS = """
    j.id, j.bucket_id, j.status, j.next_run_at, j.schedule, j.timezone, j.misfire, j.overlap,
    j.jitter_sec, j.tenant, j.priority, j.max_attempts,
    d.name, d.run_at, d.target, d.payload, d.retry::text, d.timeout_sec, d.lease_sec,
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


#: ``(%(tenant)s IS NULL OR …)``: a tenant-scoped read; NULL means any tenant (admin)
_TENANT = "(%(tenant)s::text IS NULL OR {col} = %(tenant)s::text)"

# ---------------------------------------------------------------- connection

#: the session settings the store checks on connect (see ``PostgresStore._connection``)
SESSION_SETTINGS = "SELECT current_setting('synchronous_commit'), current_setting('lock_timeout')"
SET_SYNCHRONOUS_COMMIT_ON = "SET synchronous_commit = on"
SET_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', %(value)s, false)"

# ---------------------------------------------------------------- jobs

#: transaction-scoped advisory locks ``(space, k)`` for each k, in the order given (sorted by
#: the caller, so that two transactions never wait for each other in a cycle). Submissions
#: take one per idempotency key, so that two submissions of the same key serialise instead of
#: both inserting, then one per tenant whose registered-jobs quota they check, so that two
#: cannot both take its last place. The two-int4 key space does not overlap the one-bigint
#: space of the migration lock.
ADVISORY_XACT_LOCKS = """
SELECT pg_advisory_xact_lock(%(space)s::int4, k) FROM unnest(%(hashes)s::int4[]) AS k
"""

SELECT_IDEMPOTENCY_KEYS = """
SELECT k.tenant, k.key, k.request_hash, k.job_id, k.next_run_at
FROM idempotency_keys AS k
JOIN unnest(%(tenants)s::text[], %(keys)s::text[]) AS w (tenant, key)
  ON k.tenant = w.tenant AND k.key = w.key
"""

#: a batch's tenants (name, deleting_since), held against a deletion (see create_jobs)
BATCH_TENANTS = "SELECT name, deleting_since FROM tenants WHERE name = ANY(%(names)s::text[]) FOR KEY SHARE"

INSERT_TENANTS = """
INSERT INTO tenants (name, weight, max_running, created_at)
SELECT t, 1, NULL, %(now)s FROM unnest(%(names)s::text[]) AS t
ON CONFLICT (name) DO NOTHING
"""

INSERT_JOBS = """
INSERT INTO jobs (id, bucket_id, status, next_run_at, schedule, timezone, misfire, overlap,
                  jitter_sec, tenant, priority, max_attempts, queue, calendars, active_until,
                  misfire_grace_sec)
SELECT * FROM unnest(
    %(id)s::text[], %(bucket_id)s::int4[], %(status)s::text[], %(next_run_at)s::int8[],
    %(schedule)s::text[], %(timezone)s::text[], %(misfire)s::text[], %(overlap)s::text[],
    %(jitter_sec)s::int4[], %(tenant)s::text[], %(priority)s::int2[], %(max_attempts)s::int4[],
    %(queue)s::text[], %(calendars)s::text[]::json[], %(active_until)s::int8[],
    %(misfire_grace_sec)s::int4[])
"""

INSERT_JOB_DEFINITIONS = """
INSERT INTO job_definitions (job_id, name, run_at, target, payload, retry, timeout_sec,
                             lease_sec, created_at, updated_at, process, active_from,
                             on_success, on_failure, managed_by, notify, expect_ms)
SELECT u.job_id, u.name, u.run_at, u.target::json, u.payload::json, u.retry::json,
       u.timeout_sec, u.lease_sec, %(now)s, %(now)s, u.process::json, u.active_from,
       u.on_success::json, u.on_failure::json, u.managed_by, u.notify::json, u.expect_ms
FROM unnest(%(job_id)s::text[], %(name)s::text[], %(run_at)s::int8[], %(target)s::text[],
            %(payload)s::text[], %(retry)s::text[], %(timeout_sec)s::float8[],
            %(lease_sec)s::float8[], %(process)s::text[], %(active_from)s::int8[],
            %(on_success)s::text[], %(on_failure)s::text[], %(managed_by)s::text[],
            %(notify)s::text[], %(expect_ms)s::int8[])
     AS u (job_id, name, run_at, target, payload, retry, timeout_sec, lease_sec, process,
           active_from, on_success, on_failure, managed_by, notify, expect_ms)
"""

INSERT_IDEMPOTENCY_KEYS = """
INSERT INTO idempotency_keys (tenant, key, request_hash, job_id, next_run_at, created_at)
SELECT u.tenant, u.key, u.request_hash, u.job_id, u.next_run_at, %(now)s
FROM unnest(%(tenant)s::text[], %(key)s::text[], %(request_hash)s::text[], %(job_id)s::text[],
            %(next_run_at)s::int8[]) AS u (tenant, key, request_hash, job_id, next_run_at)
"""

GET_JOB = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE j.id = %(id)s AND {_TENANT.format(col="j.tenant")}
"""

#: the name's live holder first (one per tenant), then the others, newest first
FIND_JOBS_BY_NAME = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE d.name = %(name)s AND {_TENANT.format(col="j.tenant")}
ORDER BY EXISTS (SELECT 1 FROM job_names AS n WHERE n.job_id = j.id) DESC, d.created_at DESC, j.id
LIMIT %(limit)s
"""

#: the holders of some (tenant, name) pairs
NAME_HOLDERS = """
SELECT n.tenant, n.name, n.job_id FROM job_names AS n
JOIN unnest(%(tenants)s::text[], %(names)s::text[]) AS w (tenant, name)
  ON n.tenant = w.tenant AND n.name = w.name
"""

INSERT_JOB_NAMES = """
INSERT INTO job_names (tenant, name, job_id)
SELECT * FROM unnest(%(tenant)s::text[], %(name)s::text[], %(job_id)s::text[])
"""

RELEASE_JOB_NAME = "DELETE FROM job_names WHERE job_id = %(id)s"

#: update in place: the claim's columns (next_run_at/status only when rescheduled)
UPDATE_JOB = """
UPDATE jobs SET schedule = %(schedule)s, timezone = %(timezone)s, misfire = %(misfire)s,
                overlap = %(overlap)s, jitter_sec = %(jitter_sec)s, priority = %(priority)s,
                max_attempts = %(max_attempts)s, queue = %(queue)s, calendars = %(calendars)s::json,
                active_until = %(active_until)s::int8, misfire_grace_sec = %(misfire_grace_sec)s,
                next_run_at = CASE WHEN %(reschedule)s THEN %(next_run_at)s::int8 ELSE next_run_at END,
                status = CASE WHEN %(reschedule)s AND %(next_run_at)s::int8 IS NOT NULL
                                   AND status NOT IN ('ACTIVE', 'PAUSED')
                              THEN 'ACTIVE' ELSE status END
WHERE id = %(id)s
"""

UPDATE_JOB_DEFINITION = """
UPDATE job_definitions SET name = %(name)s, run_at = %(run_at)s, target = %(target)s::json,
       payload = %(payload)s::json, retry = %(retry)s::json, timeout_sec = %(timeout_sec)s,
       lease_sec = %(lease_sec)s, updated_at = %(now)s, process = %(process)s::json,
       active_from = %(active_from)s::int8, managed_by = %(managed_by)s
WHERE job_id = %(id)s
"""

#: ticks claimed ahead that an update of the schedule supersedes: PENDING, never started,
#: not due yet; the job row is locked first (LOCK_JOB), so no claim adds one meanwhile
CLAIMED_AHEAD_OF_JOB = """
SELECT execution_id FROM executions
WHERE job_id = %(id)s AND status = 'PENDING' AND attempt = 0 AND scheduled_at > %(now)s
ORDER BY execution_id
FOR UPDATE
"""

LIST_JOBS = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE j.id > %(after)s AND (%(status)s::text IS NULL OR j.status = %(status)s::text)
ORDER BY j.id LIMIT %(limit)s
"""

LIST_JOBS_OF_TENANT = f"""
SELECT {JOB_COLUMNS} FROM {JOB_FROM}
WHERE j.tenant = %(tenant)s AND j.id > %(after)s
  AND (%(status)s::text IS NULL OR j.status = %(status)s::text)
ORDER BY j.id LIMIT %(limit)s
"""

#: ``{where}`` is TRUE or "tenant = %(tenant)s" and/or "status = %(status)s", so that each
#: variant has its own plan (the jobs_tenant index for a tenant's count)
COUNT_JOBS = "SELECT count(*) FROM jobs WHERE {where}"

#: the compare-and-set of a job's status
SET_JOB_STATUS = f"""
UPDATE jobs SET status = %(status)s, next_run_at = COALESCE(%(next_run_at)s::int8, next_run_at)
WHERE id = %(id)s AND status = ANY(%(expect)s::text[]) AND {_TENANT.format(col="tenant")}
RETURNING id
"""

TOUCH_JOB_DEFINITION = "UPDATE job_definitions SET updated_at = %(now)s WHERE job_id = %(id)s"

#: a paused job's ticks claimed ahead, withdrawn as if never claimed: scheduled, PENDING and
#: never started, not due yet (the job's future ticks in executions_tick)
WITHDRAW_CLAIMED_AHEAD = """
DELETE FROM executions
WHERE job_id = %(id)s AND scheduled_at > %(now)s AND status = 'PENDING' AND attempt = 0 AND origin = 'schedule'
RETURNING scheduled_at
"""

#: the job's next run put back to the earliest tick withdrawn
NEXT_RUN_BACK_TO = """
UPDATE jobs SET next_run_at = LEAST(COALESCE(next_run_at, %(first)s), %(first)s) WHERE id = %(id)s
"""

#: the job row, locked for a status change (waits for a claim that holds it)
LOCK_JOB = f"""
SELECT status FROM jobs WHERE id = %(id)s AND {_TENANT.format(col="tenant")}
FOR NO KEY UPDATE
"""

CANCEL_JOB = "UPDATE jobs SET status = 'CANCELLED', next_run_at = NULL WHERE id = %(id)s"

#: a job's live executions, locked; the job row is locked first (LOCK_JOB), so no claim adds
#: one meanwhile
LIVE_EXECUTIONS_OF_JOB = """
SELECT execution_id, status FROM executions
WHERE job_id = %(id)s AND status IN ('PENDING', 'RUNNING', 'RETRY_WAIT')
ORDER BY execution_id
FOR UPDATE
"""

#: cancel executions, each with its own reason (appended to any reason it has)
CANCEL_EXECUTIONS = """
UPDATE executions AS e
SET status = 'CANCELLED', finished_at = %(now)s,
    reason = CASE WHEN e.reason IS NULL THEN c.reason ELSE e.reason || '; ' || c.reason END
FROM unnest(%(ids)s::text[], %(reasons)s::text[]) AS c (execution_id, reason)
WHERE e.execution_id = c.execution_id AND e.status IN ('PENDING', 'RUNNING', 'RETRY_WAIT')
"""

# ---------------------------------------------------------------- scheduling

#: due jobs of some buckets, earliest first; reads the (bucket_id, status, next_run_at) index
DUE_JOBS = """
SELECT id, next_run_at FROM jobs
WHERE bucket_id = ANY(%(buckets)s::int4[]) AND status = 'ACTIVE' AND next_run_at <= %(until)s
ORDER BY next_run_at, id LIMIT %(limit)s
"""

DUE_TICKS = """
SELECT next_run_at, count(*) FROM jobs
WHERE bucket_id = ANY(%(buckets)s::int4[]) AND status = 'ACTIVE' AND next_run_at <= %(until)s
GROUP BY next_run_at ORDER BY next_run_at LIMIT %(limit)s
"""

#: one index seek per bucket, whatever the number of jobs (a plain MIN over ``= ANY`` would
#: read every ACTIVE entry of those buckets)
NEXT_DUE_AT = """
SELECT min(first.next_run_at)
FROM unnest(%(buckets)s::int4[]) AS b (bucket_id)
CROSS JOIN LATERAL (
    SELECT next_run_at FROM jobs
    WHERE bucket_id = b.bucket_id AND status = 'ACTIVE' AND next_run_at IS NOT NULL
    ORDER BY next_run_at LIMIT 1
) AS first
"""

#: the claim's read: due rows, locked (``until`` is now + ahead_ms; overlap-guarded jobs are
#: taken only once due, see ``Store.claim_due``). SKIP LOCKED: a row another claimer holds is that
#: claimer's to advance (it stays due if that claimer rolls back, and the next claim takes
#: it). NO KEY UPDATE is the lock the UPDATE below takes anyway; unlike FOR UPDATE it does
#: not conflict with the KEY SHARE locks of foreign-key checks (an execution being inserted
#: for the job), so those never make a due job look busy.
CLAIM_SELECT = """
SELECT id, next_run_at, schedule, timezone, misfire, overlap, jitter_sec, tenant, priority,
       max_attempts, queue, calendars, active_until, misfire_grace_sec
FROM jobs
WHERE bucket_id = ANY(%(buckets)s::int4[]) AND status = 'ACTIVE' AND next_run_at <= %(until)s
  AND (next_run_at <= %(now)s OR overlap = 'allow')
ORDER BY next_run_at, id LIMIT %(limit)s
FOR NO KEY UPDATE SKIP LOCKED
"""

#: CLAIM_SELECT restricted to some job ids: the engine's isolation of a claim that fails
CLAIM_SELECT_ONLY = """
SELECT id, next_run_at, schedule, timezone, misfire, overlap, jitter_sec, tenant, priority,
       max_attempts, queue, calendars, active_until, misfire_grace_sec
FROM jobs
WHERE id = ANY(%(only)s::text[]) AND bucket_id = ANY(%(buckets)s::int4[]) AND status = 'ACTIVE'
  AND next_run_at <= %(until)s AND (next_run_at <= %(now)s OR overlap = 'allow')
ORDER BY next_run_at, id LIMIT %(limit)s
FOR NO KEY UPDATE SKIP LOCKED
"""

#: the compare-and-set of invariant 3: advance next_run_at only from the value we read; a job
#: with no further tick stays ACTIVE until its executions settle it. Returns the ids that moved.
CLAIM_ADVANCE = """
UPDATE jobs AS j
SET next_run_at = v.next_run_at
FROM unnest(%(ids)s::text[], %(next)s::int8[], %(old)s::int8[]) AS v (id, next_run_at, old)
WHERE j.id = v.id AND j.next_run_at = v.old AND j.status = 'ACTIVE'
RETURNING j.id
"""

#: of some jobs, those with no further tick still waiting for their executions, locked (in id
#: order) so that two completions of one job's executions settle it one after the other (an
#: ``@triggered`` job has no tick of its own, ever: it waits for triggers, never settles)
UNSETTLED_JOBS = """
SELECT id FROM jobs
WHERE id = ANY(%(ids)s::text[]) AND next_run_at IS NULL AND status IN ('ACTIVE', 'PAUSED')
  AND schedule IS DISTINCT FROM '@triggered'
ORDER BY id
FOR NO KEY UPDATE
"""

#: a job with no further tick takes the state its last execution settles it in, once nothing
#: of it is live any more
SETTLE_JOBS = """
UPDATE jobs AS j SET status = s.status
FROM unnest(%(ids)s::text[], %(statuses)s::text[]) AS s (id, status)
WHERE j.id = s.id AND j.next_run_at IS NULL AND j.status IN ('ACTIVE', 'PAUSED')
  AND j.schedule IS DISTINCT FROM '@triggered'
  AND NOT EXISTS (SELECT 1 FROM executions AS e
                  WHERE e.job_id = j.id AND e.status IN ('PENDING', 'RUNNING', 'RETRY_WAIT'))
"""

#: an execution of a settled job runs again (DLQ replay, trigger): the job waits for it
REOPEN_JOB = "UPDATE jobs SET status = 'ACTIVE' WHERE id = %(id)s AND status IN ('SUCCEEDED', 'FAILED')"

#: on a stored schedule that no longer evaluates: stop scheduling the job, keep it
CLAIM_PAUSE_BROKEN = """
UPDATE jobs AS j SET status = 'PAUSED'
FROM unnest(%(ids)s::text[], %(old)s::int8[]) AS v (id, old)
WHERE j.id = v.id AND j.next_run_at = v.old AND j.status = 'ACTIVE'
RETURNING j.id
"""

#: new ticks; a tick that already exists (e.g. a manual trigger at the same millisecond) is
#: left alone: one execution per tick. Returns the ids actually inserted.
INSERT_EXECUTIONS = """
INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status,
                        available_at, created_at, finished_at, reason, max_attempts,
                        overlap_guard, origin)
SELECT * FROM unnest(
    %(execution_id)s::text[], %(job_id)s::text[], %(tenant)s::text[], %(priority)s::int2[],
    %(scheduled_at)s::int8[], %(status)s::text[], %(available_at)s::int8[],
    %(created_at)s::int8[], %(finished_at)s::int8[], %(reason)s::text[],
    %(max_attempts)s::int4[], %(overlap_guard)s::bool[], %(origin)s::text[])
ON CONFLICT DO NOTHING
RETURNING execution_id
"""

#: a queue target's executions carry its name (only those rows pay for this statement)
SET_EXECUTIONS_QUEUE = """
UPDATE executions AS e SET queue = v.queue
FROM unnest(%(ids)s::text[], %(queues)s::text[]) AS v (execution_id, queue)
WHERE e.execution_id = v.execution_id
"""

#: live executions of the given guarded jobs (overlap=forbid/replace), locked so that the
#: claim sees their status as it cancels them (a start cannot slip in between)
GUARDED_LIVE = """
SELECT job_id, execution_id, status, scheduled_at FROM executions
WHERE overlap_guard AND status IN ('PENDING', 'RUNNING', 'RETRY_WAIT')
  AND job_id = ANY(%(ids)s::text[])
ORDER BY execution_id
FOR UPDATE
"""

#: per ``allow`` job of the claim, its overdue scheduled runs still waiting to start, counted up
#: to %(cap)s (MAX_WAITING_RUNS): one bounded probe of a small index per job (none listed: none)
WAITING_RUNS = """
SELECT j.id, w.n FROM unnest(%(ids)s::text[]) AS j (id)
CROSS JOIN LATERAL (
    SELECT count(*) AS n FROM (
        SELECT 1 FROM executions
        WHERE job_id = j.id AND available_at <= %(now)s
          AND status IN ('PENDING', 'RETRY_WAIT') AND origin IN ('schedule', 'catch_up') LIMIT %(cap)s) AS e
) AS w
WHERE w.n > 0
"""

#: the job a manual trigger runs; FOR SHARE makes a concurrent cancel wait for the trigger
#: (and then cancel its execution) instead of missing it
TRIGGER_SELECT_JOB = f"""
SELECT status, tenant, priority, max_attempts, overlap, queue FROM jobs
WHERE id = %(id)s AND {_TENANT.format(col="tenant")}
FOR SHARE
"""

#: the first millisecond from now on that has no execution of the job yet
FIRST_FREE_TICK = """
SELECT min(c.t) FROM (
    SELECT %(now)s::int8 AS t
    UNION ALL
    SELECT scheduled_at + 1 FROM executions WHERE job_id = %(id)s AND scheduled_at >= %(now)s
) AS c
WHERE NOT EXISTS (SELECT 1 FROM executions AS e WHERE e.job_id = %(id)s AND e.scheduled_at = c.t)
"""

# ---------------------------------------------------------------- the ready queue

READY_EXECUTIONS = f"""
SELECT {LISTED_EXEC_COLUMNS} FROM executions
WHERE status IN ('PENDING', 'RETRY_WAIT') AND available_at <= %(now)s AND queue IS NULL
  AND (available_at, execution_id) > (%(after_at)s::int8, %(after_id)s::text)
ORDER BY available_at, execution_id LIMIT %(limit)s
"""

NEXT_AVAILABLE_AT = """
SELECT min(available_at) FROM executions WHERE status IN ('PENDING', 'RETRY_WAIT')
"""

#: what a hand-out needs, for the requested executions that are dispatchable now, locked.
#: SKIP LOCKED: an execution another node is starting (or cancelling) right now is not ours.
#: a remote worker's pull. QUEUE_READY_OF_TENANT for a worker of a tenant: its tenant's
#: dispatchable executions of its queues (through executions_tenant_queue_ready: queue names
#: are shared between tenants), most urgent tier first, then oldest, locked so that concurrent
#: claimers skip each other's rows. A worker of no tenant is offered each tenant's first rows
#: (QUEUE_CANDIDATES: the tenants with queued rows by a loose scan of that index, then each
#: one's first rows) and takes them in turns across tenants (core/claimturns.py), with the tier
#: a tenant may queue at: the high tier is only for those granted it (version 24), the others'
#: high rows rank as default, as the local dispatcher queues them. The picked rows are locked
#: by the start itself (START_CANDIDATES skips those another claimer holds).
QUEUE_READY_OF_TENANT = """
SELECT execution_id FROM executions
WHERE tenant = %(tenant)s AND queue IS NOT NULL AND queue = ANY(%(queues)s::text[])
  AND status IN ('PENDING', 'RETRY_WAIT') AND available_at <= %(now)s
ORDER BY priority, available_at, execution_id LIMIT %(limit)s
FOR UPDATE OF executions SKIP LOCKED
"""

#: the tenants with queued rows, by a loose scan of executions_tenant_queue_ready (one probe a tenant)
_QUEUED = """
WITH RECURSIVE queued AS (
    (SELECT tenant FROM executions WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT')
     ORDER BY tenant LIMIT 1)
    UNION ALL
    SELECT (SELECT e.tenant FROM executions AS e
            WHERE e.queue IS NOT NULL AND e.status IN ('PENDING', 'RETRY_WAIT') AND e.tenant > queued.tenant
            ORDER BY e.tenant LIMIT 1)
    FROM queued WHERE queued.tenant IS NOT NULL
)"""
QUEUE_CANDIDATES = _QUEUED + """
SELECT c.execution_id, c.tenant,
       CASE WHEN c.priority = 0 AND NOT COALESCE(g.allow_high_priority, false) THEN 1 ELSE c.priority END,
       c.available_at
FROM queued
CROSS JOIN LATERAL (  -- one queue at a time in index order: several would sort all its queued rows
    SELECT x.* FROM unnest(%(queues)s::text[]) AS n (queue)
    CROSS JOIN LATERAL (
        SELECT execution_id, tenant, priority, available_at FROM executions
        WHERE tenant = queued.tenant AND queue IS NOT NULL AND queue = n.queue
          AND status IN ('PENDING', 'RETRY_WAIT') AND available_at <= %(now)s
        ORDER BY priority, available_at, execution_id LIMIT %(limit)s
    ) AS x
    ORDER BY x.priority, x.available_at, x.execution_id LIMIT %(limit)s
) AS c
LEFT JOIN tenants AS g ON g.name = queued.tenant
WHERE queued.tenant IS NOT NULL
"""

#: whether a claim of a worker of no tenant (QUEUE_HAS_READY: any tenant with queued rows) or
#: of a tenant would find a row (without locking any): a read, through the claims' index, so
#: that a claim that finds nothing takes no write transaction
_HAS_READY_OF = """EXISTS (
    SELECT 1 FROM unnest(%(queues)s::text[]) AS n (queue) CROSS JOIN LATERAL (  -- a probe each, never a join of all
        SELECT 1 FROM executions WHERE tenant = {tenant} AND queue IS NOT NULL AND queue = n.queue
          AND status IN ('PENDING', 'RETRY_WAIT') AND available_at <= %(now)s LIMIT 1) AS x)"""
QUEUE_HAS_READY = _QUEUED + f"""
SELECT EXISTS (SELECT 1 FROM queued WHERE queued.tenant IS NOT NULL AND {_HAS_READY_OF.format(tenant="queued.tenant")})
"""
QUEUE_HAS_READY_OF_TENANT = f"SELECT {_HAS_READY_OF.format(tenant='%(tenant)s')}"

#: The ids drive the lookups, one primary-key probe each, whatever the statistics say: with
#: "execution_id = ANY(ids) AND available_at <= now" (or a plain join) the planner, misled by
#: statistics from before a burst, read every dispatchable row through executions_ready and
#: filtered or hashed it (23,000 rows read for 280 starts: each start batch cost O(backlog)).
#: The locking subquery cannot be flattened, so it stays a per-id probe; ids come sorted, so
#: concurrent starters lock in one order.
START_CANDIDATES = """
SELECT e.execution_id, e.job_id, d.lease_sec, d.timeout_sec, d.target, d.payload, d.process, e.context
FROM unnest(%(ids)s::text[]) AS i (execution_id)
CROSS JOIN LATERAL (
    SELECT x.execution_id, x.job_id, x.context FROM executions AS x
    WHERE x.execution_id = i.execution_id
      AND x.status IN ('PENDING', 'RETRY_WAIT') AND x.available_at <= %(now)s
    FOR UPDATE SKIP LOCKED
) AS e
LEFT JOIN job_definitions AS d ON d.job_id = e.job_id
"""

#: hand-out (invariant 4): epoch + 1 on every start
START_EXECUTIONS = """
UPDATE executions AS e
SET status = 'RUNNING', attempt = e.attempt + 1, lease_epoch = e.lease_epoch + 1,
    worker_id = r.worker_id, lease_until = r.lease_until,
    started_at = COALESCE(e.started_at, %(now)s)
FROM unnest(%(ids)s::text[], %(workers)s::text[], %(until)s::int8[])
     AS r (execution_id, worker_id, lease_until)
WHERE e.execution_id = r.execution_id
  AND e.status IN ('PENDING', 'RETRY_WAIT') AND e.available_at <= %(now)s
RETURNING e.execution_id, e.job_id, e.tenant, e.priority, e.scheduled_at, e.attempt,
          e.lease_epoch, e.lease_until, e.queue, e.origin
"""

#: fenced lease extension for a batch of (execution_id, lease_epoch)
HEARTBEAT = """
UPDATE executions AS e
SET lease_until = GREATEST(e.lease_until, %(now)s::int8 + COALESCE(
        (SELECT round(d.lease_sec * 1000)::int8 FROM job_definitions AS d
         WHERE d.job_id = e.job_id), %(default_ms)s::int8))
FROM unnest(%(ids)s::text[], %(epochs)s::int8[], %(workers)s::text[]) AS b (execution_id, lease_epoch, worker_id)
WHERE e.execution_id = b.execution_id AND e.status = 'RUNNING' AND e.lease_epoch = b.lease_epoch
  AND e.worker_id = b.worker_id
RETURNING e.execution_id, e.lease_epoch, e.worker_id, e.lease_until
"""

#: why heartbeats did not apply (store/completions.py: lease_verdict)
EXECUTION_HOLDERS = """
SELECT execution_id, status, lease_epoch, worker_id FROM executions WHERE execution_id = ANY(%(ids)s::text[])
"""

#: what a completion needs to decide, locked (the fenced UPDATE then cannot miss)
COMPLETION_STATE = """
SELECT execution_id, status, lease_epoch, attempt, max_attempts, job_id, worker_id FROM executions
WHERE execution_id = ANY(%(ids)s::text[])
ORDER BY execution_id
FOR UPDATE
"""

#: retry policies (read only for failed attempts)
RETRY_POLICIES = """
SELECT job_id, retry::text FROM job_definitions WHERE job_id = ANY(%(ids)s::text[])
"""

#: fenced completions: a row changes only if RUNNING at exactly its lease_epoch
COMPLETE_EXECUTIONS = """
UPDATE executions AS e
SET status = u.status, finished_at = u.finished_at,
    available_at = COALESCE(u.available_at, e.available_at), exit_code = u.exit_code,
    error = u.error, output = u.output, reason = COALESCE(u.reason, e.reason),
    max_attempts = e.max_attempts + u.extra
FROM unnest(%(ids)s::text[], %(epochs)s::int8[], %(statuses)s::text[], %(finished)s::int8[],
            %(available)s::int8[], %(exit_codes)s::int4[], %(errors)s::text[],
            %(outputs)s::text[], %(reasons)s::text[], %(extra)s::int4[])
     AS u (execution_id, lease_epoch, status, finished_at, available_at, exit_code, error,
           output, reason, extra)
WHERE e.execution_id = u.execution_id AND e.status = 'RUNNING' AND e.lease_epoch = u.lease_epoch
"""

#: the reaper's pick, locked; SKIP LOCKED: a lease being completed right now is not expired
EXPIRED_LEASES = """
SELECT execution_id, lease_epoch FROM executions
WHERE status = 'RUNNING' AND lease_until < %(ran_out_before)s
ORDER BY lease_until, execution_id LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
"""

RUNNING_FOR_WORKER = f"""
SELECT {EXEC_COLUMNS} FROM executions
WHERE status = 'RUNNING' AND worker_id = %(worker)s ORDER BY execution_id
"""

#: starts_with, not LIKE: a prefix with % or _ matches literally
RUNNING_WITH_WORKER_PREFIX = f"""
SELECT {EXEC_COLUMNS} FROM executions
WHERE status = 'RUNNING' AND starts_with(worker_id, %(prefix)s::text) ORDER BY execution_id
"""

RUNNING_COUNT = "SELECT count(*) FROM executions WHERE status = 'RUNNING'"

# ---------------------------------------------------------------- executions: reads

GET_EXECUTION = f"""
SELECT {EXEC_COLUMNS} FROM executions
WHERE execution_id = %(id)s AND {_TENANT.format(col="tenant")}
"""

LIST_EXECUTIONS = f"""
SELECT {LISTED_EXEC_COLUMNS} FROM executions
WHERE job_id = %(job_id)s AND scheduled_at < %(before)s AND {_TENANT.format(col="tenant")}
ORDER BY scheduled_at DESC LIMIT %(limit)s
"""

#: each job's latest execution that started, newest tick first: RUNNING, waiting to retry, or
#: ended after a start; ticks claimed ahead (PENDING) and never-run ones skipped
LAST_RUNS = f"""
SELECT {EXEC_COLUMNS} FROM unnest(%(ids)s::text[]) AS w (id)
CROSS JOIN LATERAL (
    SELECT {LISTED_EXEC_COLUMNS} FROM executions AS x
    WHERE x.job_id = w.id AND x.started_at IS NOT NULL AND x.status <> 'PENDING'
    ORDER BY x.scheduled_at DESC LIMIT 1) AS e
WHERE {_TENANT.format(col="e.tenant")}
"""

#: ``{where}`` names the status as a literal, so that a partial index covering it matches
COUNT_EXECUTIONS = f"""
SELECT count(*) FROM executions WHERE {{where}} AND {_TENANT.format(col="tenant")}
"""

# ---------------------------------------------------------------- effects

#: the lease an effect is recorded under; FOR SHARE holds off a completion (which updates the
#: row) until the effect is committed, so an effect is never recorded after its lease ended
#: locked as the count below will update it: concurrent effects of one execution take turns
#: (two FOR SHARE holders both updating the row would deadlock)
EXECUTION_LEASE = """
SELECT status, lease_epoch, worker_id, effects FROM executions WHERE execution_id = %(id)s FOR NO KEY UPDATE
"""
COUNT_EFFECT = "UPDATE executions SET effects = effects + 1 WHERE execution_id = %(id)s"
EFFECT_EXISTS = "SELECT 1 FROM effects WHERE execution_id = %(id)s AND key = %(key)s"
INSERT_EFFECT = """
INSERT INTO effects (execution_id, key, lease_epoch, recorded_at)
VALUES (%(id)s, %(key)s, %(epoch)s, %(now)s)
ON CONFLICT DO NOTHING
RETURNING 1
"""
LIST_EFFECTS = """
SELECT key, lease_epoch, recorded_at FROM effects WHERE execution_id = %(id)s
ORDER BY recorded_at, key
"""

# ---------------------------------------------------------------- dead-letter queue

LIST_DEAD = f"""
SELECT {LISTED_EXEC_COLUMNS} FROM executions
WHERE status = 'DEAD' AND execution_id > %(after)s AND {_TENANT.format(col="tenant")}
ORDER BY execution_id LIMIT %(limit)s
"""

GET_DEAD = f"""
SELECT {EXEC_COLUMNS} FROM executions
WHERE execution_id = %(id)s AND status = 'DEAD' AND {_TENANT.format(col="tenant")}
FOR UPDATE
"""

REPLAY_DEAD = f"""
UPDATE executions
SET status = 'PENDING', attempt = 0, available_at = %(now)s, worker_id = NULL,
    lease_until = NULL, finished_at = NULL, exit_code = NULL, error = NULL, output = NULL,
    reason = %(reason)s, origin = 'replay'
WHERE execution_id = %(id)s AND status = 'DEAD'
RETURNING {EXEC_COLUMNS}
"""

PURGE_DEAD = f"""
DELETE FROM executions
WHERE execution_id = %(id)s AND status = 'DEAD' AND {_TENANT.format(col="tenant")}
"""

# ---------------------------------------------------------------- retention

PRUNE_JOBS_PAGE = "SELECT id FROM jobs WHERE id > %(after)s ORDER BY id LIMIT %(n)s"

#: one job's prunable history: finished, old enough, and older than its keep_last newest
#: (the OFFSET subquery finds the keep_last-th newest tick on the (job_id, scheduled_at)
#: index); effects go with their execution (ON DELETE CASCADE). SKIP LOCKED: a row another
#: transaction holds is left for the next pass.
PRUNE_JOB_EXECUTIONS = """
DELETE FROM executions WHERE execution_id IN (
    SELECT execution_id FROM executions
    WHERE job_id = %(job_id)s
      AND status IN ('SUCCEEDED', 'CANCELLED', 'SKIPPED')
      AND finished_at < %(older_than)s
      AND scheduled_at < COALESCE(
          (SELECT scheduled_at FROM executions WHERE job_id = %(job_id)s
           ORDER BY scheduled_at DESC LIMIT 1 OFFSET %(skip)s), -1)
    ORDER BY scheduled_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED)
"""

#: the next ``n`` dead letters after job ``after``, in job order, counted by job (with its
#: tenant): read from the index of DEAD rows alone, a bounded piece of the queue a call
DEAD_LETTERS_PAGE = """
SELECT d.job_id, j.tenant, d.n FROM (
    SELECT job_id, count(*) AS n FROM (
        SELECT job_id FROM executions
        WHERE status = 'DEAD' AND job_id > %(after)s ORDER BY job_id, scheduled_at LIMIT %(n)s) AS p
    GROUP BY job_id) AS d
JOIN jobs AS j ON j.id = d.job_id ORDER BY d.job_id
"""

#: one job's dead letters beyond its ``keep`` newest (by tick), at most ``limit`` of them. SKIP
#: LOCKED: a dead letter being replayed is skipped, and is not DEAD once the replay commits
PRUNE_JOB_DEAD_LETTERS = """
DELETE FROM executions WHERE execution_id IN (
    SELECT execution_id FROM executions
    WHERE job_id = %(job_id)s AND status = 'DEAD'
    ORDER BY scheduled_at DESC OFFSET %(keep)s LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED)
"""

COUNT_JOB_DEAD_LETTERS = "SELECT count(*) FROM executions WHERE job_id = %(job_id)s AND status = 'DEAD'"

# ---------------------------------------------------------------- tenants and API tokens

#: column order of ``rows.tenant_from_row``
TENANT_COLUMNS = """
    name, weight, max_running, max_jobs, submit_rate, submit_burst, allow_shell, http_allow,
    created_at, updated_at, allow_high_priority, deleting_since
"""

LIST_TENANTS = f"SELECT {TENANT_COLUMNS} FROM tenants ORDER BY name"

GET_TENANT = f"SELECT {TENANT_COLUMNS} FROM tenants WHERE name = %(name)s"

LOCK_TENANT = f"SELECT {TENANT_COLUMNS} FROM tenants WHERE name = %(name)s FOR NO KEY UPDATE"

CREATE_TENANT = f"""
INSERT INTO tenants (name, weight, max_running, max_jobs, submit_rate, submit_burst, allow_shell,
                     http_allow, created_at, updated_at, allow_high_priority)
VALUES (%(name)s, %(weight)s, %(max_running)s, %(max_jobs)s, %(submit_rate)s, %(submit_burst)s,
        %(allow_shell)s, %(http_allow)s::text[], %(now)s, %(now)s, %(allow_high_priority)s)
ON CONFLICT (name) DO NOTHING
RETURNING {TENANT_COLUMNS}
"""

UPDATE_TENANT = f"""
UPDATE tenants
SET weight = %(weight)s, max_running = %(max_running)s, max_jobs = %(max_jobs)s,
    submit_rate = %(submit_rate)s, submit_burst = %(submit_burst)s, allow_shell = %(allow_shell)s,
    http_allow = %(http_allow)s::text[], updated_at = %(now)s, allow_high_priority = %(allow_high_priority)s
WHERE name = %(name)s
RETURNING {TENANT_COLUMNS}
"""

#: registered jobs of a tenant, for its max_jobs quota (the jobs_tenant index, then the row)
#: one tenant with its registered (ACTIVE or PAUSED) jobs, what its maxJobs counts
TENANT_WITH_JOBS = f"""
SELECT {TENANT_COLUMNS}, (SELECT count(*) FROM jobs WHERE tenant = %(name)s AND status IN ('ACTIVE', 'PAUSED'))
FROM tenants WHERE name = %(name)s
"""

COUNT_REGISTERED_JOBS = """
SELECT count(*) FROM jobs WHERE tenant = %(tenant)s AND status IN ('ACTIVE', 'PAUSED')
"""

#: column order of ``rows.token_from_row``
TOKEN_COLUMNS = "token_id, token_hash, role, tenant, name, created_at, revoked_at"

INSERT_TOKEN = """
INSERT INTO api_tokens (token_id, token_hash, role, tenant, name, created_at, revoked_at)
VALUES (%(token_id)s, %(token_hash)s, %(role)s, %(tenant)s, %(name)s, %(now)s, NULL)
"""

#: a tenant that may be given tokens: one not being deleted
TENANT_EXISTS = "SELECT 1 FROM tenants WHERE name = %(name)s AND deleting_since IS NULL"

GET_TOKEN_BY_HASH = f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE token_hash = %(hash)s"

GET_TOKEN = f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE token_id = %(id)s"

LIST_TOKENS = f"""
SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE %(tenant)s::text IS NULL OR tenant = %(tenant)s::text
ORDER BY created_at, token_id
"""

#: locks every active admin token first, so that two revocations racing for the last two
#: admin tokens are ordered: the second sees the first one's commit (READ COMMITTED re-reads)
LOCK_ACTIVE_ADMIN_TOKENS = "SELECT token_id FROM api_tokens WHERE role = 'admin' AND revoked_at IS NULL FOR UPDATE"

#: revoking twice keeps the first time; the last active admin token is never revoked
PRUNE_REVOKED_TOKENS = """
DELETE FROM api_tokens WHERE token_id IN (
  SELECT token_id FROM api_tokens WHERE revoked_at IS NOT NULL AND revoked_at < %(before)s LIMIT %(limit)s)
"""

REVOKE_TOKEN = f"""
UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, %(now)s) WHERE token_id = %(id)s
  AND (role <> 'admin' OR revoked_at IS NOT NULL OR EXISTS (
    SELECT 1 FROM api_tokens o WHERE o.role = 'admin' AND o.revoked_at IS NULL AND o.token_id <> %(id)s))
RETURNING {TOKEN_COLUMNS}
"""

# ---------------------------------------------------------------- calendars

#: a calendar as the readers take it: its row, and its stored index (NULL: none yet)
CALENDAR_COLUMNS = "c.tenant, c.name, c.spec, c.created_at, c.updated_at, c.revision, i.packed"
CALENDAR_FROM = "calendars AS c LEFT JOIN calendar_indexes AS i ON i.tenant = c.tenant AND i.name = c.name"

#: the revisions of the stored indexes of (tenant, name) pairs, for a claim batch
#: (store/calendars.py)
CALENDAR_REVISIONS = """
SELECT tenant, name, revision FROM calendar_indexes
WHERE (tenant, name) IN (SELECT * FROM unnest(%(tenants)s::text[], %(names)s::text[]))
"""

#: the stored indexes themselves, of those a claim does not hold at their revision (never the
#: specs)
CALENDARS_BY_NAME = """
SELECT tenant, name, revision, packed FROM calendar_indexes
WHERE (tenant, name) IN (SELECT * FROM unnest(%(tenants)s::text[], %(names)s::text[]))
"""

#: calendars' specs (as text, which psycopg leaves unparsed), for those whose index
#: is not stored yet
CALENDAR_SPECS_BY_NAME = """
SELECT tenant, name, revision, spec::text FROM calendars
WHERE (tenant, name) IN (SELECT * FROM unnest(%(tenants)s::text[], %(names)s::text[]))
"""

#: indexes a claim built, each from a revision of its calendar's spec: kept unless the
#: calendar was written since (or deleted). In key order, so that two nodes' claims building
#: the same ones wait for each other rather than deadlock.
STORE_CALENDAR_INDEXES = """
INSERT INTO calendar_indexes (tenant, name, revision, packed)
SELECT c.tenant, c.name, c.revision, k.packed
FROM unnest(%(tenants)s::text[], %(names)s::text[], %(revisions)s::int8[], %(packed)s::bytea[])
    AS k (tenant, name, revision, packed)
JOIN calendars AS c ON c.tenant = k.tenant AND c.name = k.name AND c.revision = k.revision
ORDER BY c.tenant, c.name
ON CONFLICT (tenant, name) DO UPDATE SET revision = excluded.revision, packed = excluded.packed
"""

UPSERT_CALENDAR = """
INSERT INTO calendars (tenant, name, spec, created_at, updated_at, revision)
VALUES (%(tenant)s, %(name)s, %(spec)s::json, %(now)s, %(now)s, nextval('calendar_revisions'))
ON CONFLICT (tenant, name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at, revision = excluded.revision
RETURNING tenant, name, spec, created_at, updated_at, revision
"""

#: the index of the calendar just written, in the same transaction
PUT_CALENDAR_INDEX = """
INSERT INTO calendar_indexes (tenant, name, revision, packed) VALUES (%(tenant)s, %(name)s, %(revision)s, %(packed)s)
ON CONFLICT (tenant, name) DO UPDATE SET revision = excluded.revision, packed = excluded.packed
"""

GET_CALENDAR = f"SELECT {CALENDAR_COLUMNS} FROM {CALENDAR_FROM} WHERE c.tenant = %(tenant)s AND c.name = %(name)s"
CALENDAR_EXISTS = "SELECT 1 FROM calendars WHERE tenant = %(tenant)s AND name = %(name)s"

COUNT_CALENDARS = "SELECT COUNT(*) FROM calendars WHERE tenant = %(tenant)s"

LIST_CALENDARS = f"""
SELECT {CALENDAR_COLUMNS} FROM {CALENDAR_FROM} WHERE {_TENANT.format(col="c.tenant")} ORDER BY c.tenant, c.name
"""

#: the same rows, the spec as its stored JSON text (``Store.list_calendar_documents``), a page
#: after (after_tenant, after_name)
LIST_CALENDAR_DOCUMENTS = f"""
SELECT tenant, name, spec::text, created_at, updated_at FROM calendars
WHERE {_TENANT.format(col="tenant")} AND (tenant, name) > (%(after_tenant)s::text, %(after_name)s::text)
ORDER BY tenant, name LIMIT %(limit)s
"""

#: the registered jobs that observe a calendar (a few ids, to name them in the refusal)
CALENDAR_USERS = """
SELECT id FROM jobs
WHERE tenant = %(tenant)s AND status IN ('ACTIVE', 'PAUSED') AND calendars IS NOT NULL
  AND EXISTS (SELECT 1 FROM json_array_elements_text(jobs.calendars) AS c WHERE c = %(name)s)
ORDER BY id LIMIT 20
"""

DELETE_CALENDAR = "DELETE FROM calendars WHERE tenant = %(tenant)s AND name = %(name)s"

# ---------------------------------------------------------------- backfill and chains

#: executions not made by the schedule (backfill, chain children); returns those inserted
INSERT_EXECUTIONS_WITH_CONTEXT = """
INSERT INTO executions (execution_id, job_id, tenant, priority, scheduled_at, status,
                        available_at, created_at, reason, max_attempts, overlap_guard, queue,
                        context, origin)
SELECT u.execution_id, u.job_id, u.tenant, u.priority, u.scheduled_at, 'PENDING',
       u.available_at, u.created_at, u.reason, u.max_attempts, u.overlap_guard, u.queue,
       u.context::json,
       CASE WHEN (u.context::json ->> 'backfill') = 'true' THEN 'backfill' ELSE 'chain' END
FROM unnest(%(execution_id)s::text[], %(job_id)s::text[], %(tenant)s::text[],
            %(priority)s::int2[], %(scheduled_at)s::int8[], %(available_at)s::int8[],
            %(created_at)s::int8[], %(reason)s::text[], %(max_attempts)s::int4[],
            %(overlap_guard)s::bool[], %(queue)s::text[], %(context)s::text[])
     AS u (execution_id, job_id, tenant, priority, scheduled_at, available_at, created_at,
           reason, max_attempts, overlap_guard, queue, context)
ORDER BY u.execution_id
ON CONFLICT DO NOTHING
RETURNING execution_id
"""

CANCEL_BACKFILL = f"""
UPDATE executions SET status = 'CANCELLED', finished_at = %(now)s, reason = 'backfill cancelled'
WHERE job_id = %(id)s AND status IN ('PENDING', 'RETRY_WAIT') AND (context ->> 'backfill') = 'true'
  AND {_TENANT.format(col="tenant")}
"""

CHAINS_OF = """
SELECT job_id, on_success, on_failure FROM job_definitions
WHERE job_id = ANY(%(ids)s::text[]) AND (on_success IS NOT NULL OR on_failure IS NOT NULL)
"""

#: the chain children that may be triggered (ACTIVE); FOR SHARE: a concurrent cancel waits
CHILD_JOBS = """
SELECT id, tenant, priority, max_attempts, overlap, queue FROM jobs
WHERE id = ANY(%(ids)s::text[]) AND status = 'ACTIVE'
ORDER BY id
FOR SHARE
"""

TENANT_CHAINS = """
SELECT d.job_id, d.on_success, d.on_failure FROM jobs AS j JOIN job_definitions AS d ON d.job_id = j.id
WHERE j.tenant = %(tenant)s AND (d.on_success IS NOT NULL OR d.on_failure IS NOT NULL)
"""

JOBS_TENANT_STATUS = "SELECT id, tenant, status FROM jobs WHERE id = ANY(%(ids)s::text[])"

SET_JOB_CHAIN = """
UPDATE job_definitions SET on_success = %(on_success)s::json, on_failure = %(on_failure)s::json,
                           updated_at = %(now)s
WHERE job_id = %(id)s
"""
