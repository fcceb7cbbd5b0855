"""The PostgreSQL store's jobs: create (idempotent, quota- and name-checked under advisory
locks), read, list, update, pause/resume, cancel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import errors as pgerr

from cronwheel.core.ids import stable_hash
from cronwheel.core.model import Job, JobSpec, JobStatus
from cronwheel.core.records import (
    CancelResult,
    CreateResult,
    NewJob,
    UpdateOutcome,
    UpdateResult,
)
from cronwheel.store import tenantgone
from cronwheel.store.base import StoreError
from cronwheel.store.common import SUPERSEDED, dumps, json_list, process_text, retry_to_json
from cronwheel.store.creations import KeyedRequest, decide_creations
from cronwheel.store.outbox.hooks import after_create, after_update
from cronwheel.store.postgres import claim as claiming
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres import triggers
from cronwheel.store.postgres.connection import PostgresBase, first_line, translated
from cronwheel.store.postgres.rows import job_from_row, outbox_sql

#: advisory-lock key spaces (the first int4 of the two-int4 form): idempotency keys, and
#: tenants whose registered-jobs quota a submission checks
IDEMPOTENCY_LOCK_SPACE = 0x63770001
QUOTA_LOCK_SPACE = 0x63770002
NAME_LOCK_SPACE = 0x63770003


def lock_keys(texts: set[str]) -> list[int]:
    """int4 advisory-lock keys for some strings, sorted (the lock order)."""
    return sorted({stable_hash(t) % 2**32 - 2**31 for t in texts})


#: the columns of the batched inserts (``unnest`` arrays), in the order of the row tuples
_JOB_FIELDS = ("id", "bucket_id", "status", "next_run_at", "schedule", "timezone", "misfire", "overlap",
               "jitter_sec", "tenant", "priority", "max_attempts", "queue", "calendars", "active_until",
               "misfire_grace_sec")  # fmt: skip
_DEF_FIELDS = ("job_id", "name", "run_at", "target", "payload", "retry", "timeout_sec", "lease_sec", "process",
               "active_from", "on_success", "on_failure", "managed_by", "notify", "expect_ms")  # fmt: skip

_KEY_FIELDS = ("tenant", "key", "request_hash", "job_id", "next_run_at")
_NAME_FIELDS = ("tenant", "name", "job_id")


class JobMethods(PostgresBase):
    """``store.roles.jobs.JobStore`` on PostgreSQL."""

    @translated
    def create_jobs(self, jobs: Sequence[NewJob], now_ms: int) -> list[CreateResult]:
        if not jobs:
            return []
        keyed = sorted({(nj.spec.tenant, nj.idempotency_key) for nj in jobs if nj.idempotency_key is not None})
        named = sorted({(nj.spec.tenant, nj.spec.name) for nj in jobs if nj.spec.name is not None})
        capped = {nj.spec.tenant for nj in jobs if nj.max_jobs is not None}
        with self._write() as conn:
            # The batch's tenants as they stand, held (FOR KEY SHARE) against a deletion being
            # asked meanwhile (which locks the row FOR UPDATE) and against the purge of their
            # row: a job is never created for a tenant being deleted.
            tenants = sorted({nj.spec.tenant for nj in jobs})
            stored = dict(conn.execute(q.BATCH_TENANTS, {"names": tenants}).fetchall())
            closed = {t for t, since in stored.items() if since is not None}
            known: dict[tuple[str, str], KeyedRequest] = {}
            if keyed:
                # Serialise with concurrent submissions of the same keys, then read them.
                hashes = lock_keys({f"{t}\n{k}" for t, k in keyed})
                conn.execute(q.ADVISORY_XACT_LOCKS, {"space": IDEMPOTENCY_LOCK_SPACE, "hashes": hashes})
                args = {"tenants": [t for t, _ in keyed], "keys": [k for _, k in keyed]}
                for t, k, request_hash, job_id, next_run_at in conn.execute(q.SELECT_IDEMPOTENCY_KEYS, args):
                    known[(t, k)] = (request_hash, job_id, next_run_at)
            holders: dict[tuple[str, str], str] = {}  # (tenant, name) -> the job holding it
            if named:
                # Serialise with concurrent submissions and renames to the same names, then read
                # their holders (the primary key of job_names would refuse a second one anyway).
                conn.execute(q.ADVISORY_XACT_LOCKS, {"space": NAME_LOCK_SPACE, "hashes": lock_keys({f"{t}\n{n}" for t, n in named})})
                args = {"tenants": [t for t, _ in named], "names": [n for _, n in named]}
                holders = {(t, n): job_id for t, n, job_id in conn.execute(q.NAME_HOLDERS, args)}
            if capped:
                # Serialise with concurrent submissions for the same tenants: counts stay exact.
                conn.execute(q.ADVISORY_XACT_LOCKS, {"space": QUOTA_LOCK_SPACE, "hashes": lock_keys(capped)})

            def registered(tenant: str) -> int:
                count = conn.execute(q.COUNT_REGISTERED_JOBS, {"tenant": tenant}).fetchone()
                return int(count[0]) if count else 0

            batch = decide_creations(jobs, lambda t, k: known.get((t, k)), lambda t, n: holders.get((t, n)), registered,
                                     closed)  # fmt: skip
            new_tenants = sorted(batch.tenants - stored.keys())
            if new_tenants:
                conn.execute(q.INSERT_TENANTS, {"names": new_tenants, "now": now_ms})
            if batch.job_rows:
                try:
                    conn.execute(q.INSERT_JOBS, claiming.columns(batch.job_rows, _JOB_FIELDS))
                except pgerr.UniqueViolation as exc:
                    raise StoreError(f"cannot create jobs (duplicate job id?): {first_line(exc)}") from exc
                conn.execute(q.INSERT_JOB_DEFINITIONS, {**claiming.columns(batch.def_rows, _DEF_FIELDS), "now": now_ms})
                after_create(outbox_sql(conn), batch.watched, now_ms)
            if batch.name_rows:
                conn.execute(q.INSERT_JOB_NAMES, claiming.columns(batch.name_rows, _NAME_FIELDS))
            if batch.key_rows:
                conn.execute(q.INSERT_IDEMPOTENCY_KEYS, {**claiming.columns(batch.key_rows, _KEY_FIELDS), "now": now_ms})
        return batch.results

    @translated
    def get_job(self, job_id: str, tenant: str | None = None) -> Job | None:
        rows = self._rows(q.GET_JOB, {"id": job_id, "tenant": tenant})
        return job_from_row(rows[0]) if rows else None

    @translated
    def update_job(
        self,
        job_id: str,
        spec: JobSpec,
        next_run_at: int | None,
        reschedule: bool,
        now_ms: int,
        tenant: str | None = None,
    ) -> UpdateResult:
        args: dict[str, Any] = {"id": job_id, "tenant": tenant, "now": now_ms}
        with self._write() as conn:
            locked = conn.execute(q.LOCK_JOB, args).fetchone()  # waits for a claim of the job
            if locked is None:
                return UpdateResult(UpdateOutcome.NOT_FOUND)
            job = job_from_row(conn.execute(q.GET_JOB, args).fetchone())
            if job.status is JobStatus.CANCELLED:
                return UpdateResult(UpdateOutcome.CANCELLED, job)
            if spec.name != job.spec.name:
                if spec.name is not None:
                    conn.execute(q.ADVISORY_XACT_LOCKS, {"space": NAME_LOCK_SPACE, "hashes": lock_keys({f"{job.tenant}\n{spec.name}"})})
                    held = conn.execute(q.NAME_HOLDERS, {"tenants": [job.tenant], "names": [spec.name]}).fetchone()
                    if held is not None and held[2] != job_id:
                        return UpdateResult(UpdateOutcome.NAME_TAKEN, job, held[2])
                conn.execute(q.RELEASE_JOB_NAME, args)
                if spec.name is not None:
                    conn.execute(q.INSERT_JOB_NAMES, {"tenant": [job.tenant], "name": [spec.name], "job_id": [job_id]})
            retry = spec.retry
            conn.execute(q.UPDATE_JOB, {
                **args, "schedule": spec.schedule, "timezone": spec.timezone, "misfire": spec.misfire.value,
                "overlap": spec.overlap.value, "jitter_sec": spec.jitter_sec, "priority": int(spec.priority),
                "max_attempts": retry.max_attempts, "queue": spec.target.get("queue"),
                "next_run_at": next_run_at, "reschedule": reschedule,
                "calendars": json_list(spec.calendars), "active_until": spec.active_until,
                "misfire_grace_sec": spec.misfire_grace_sec,
            })  # fmt: skip
            conn.execute(q.UPDATE_JOB_DEFINITION, {
                **args, "name": spec.name, "run_at": spec.run_at, "target": dumps(spec.target),
                "payload": dumps(spec.payload), "retry": retry_to_json(retry),
                "timeout_sec": float(spec.timeout_sec), "lease_sec": float(spec.lease_sec),
                "process": process_text(spec), "active_from": spec.active_from, "managed_by": spec.managed_by,
            })  # fmt: skip
            if (spec.on_success, spec.on_failure) != (job.spec.on_success, job.spec.on_failure):
                # the cycle check of a chain change, in this transaction (ChainError: nothing changes)
                triggers.set_chain(conn, job_id, spec.on_success, spec.on_failure, now_ms, tenant)
            after_update(outbox_sql(conn), job_id, job.spec, spec, now_ms)
            superseded: list[str] = []
            if reschedule:
                superseded = [r[0] for r in conn.execute(q.CLAIMED_AHEAD_OF_JOB, args)]
                if superseded:
                    conn.execute(q.CANCEL_EXECUTIONS, {"ids": superseded, "reasons": [SUPERSEDED] * len(superseded), "now": now_ms})
            updated = job_from_row(conn.execute(q.GET_JOB, args).fetchone())
        return UpdateResult(UpdateOutcome.UPDATED, updated, superseded=superseded)

    @translated
    def list_jobs(
        self,
        tenant: str | None = None,
        status: JobStatus | None = None,
        limit: int = 100,
        after_id: str | None = None,
    ) -> list[Job]:
        args = {"after": after_id or "", "status": None if status is None else JobStatus(status).value,
                "limit": max(0, limit), "tenant": tenant}  # fmt: skip
        sql = q.LIST_JOBS if tenant is None else q.LIST_JOBS_OF_TENANT
        return [job_from_row(r) for r in self._rows(sql, args)]

    @translated
    def count_jobs(self, tenant: str | None = None, status: JobStatus | None = None) -> int:
        terms: list[str] = []
        if tenant is not None:
            terms.append("tenant = %(tenant)s")
        if status is not None:
            terms.append("status = %(status)s")
        sql = q.COUNT_JOBS.format(where=" AND ".join(terms) or "TRUE")
        args = {"tenant": tenant, "status": None if status is None else JobStatus(status).value}
        return int(self._scalar(sql, args))

    @translated
    def set_job_status(
        self,
        job_id: str,
        expect: Sequence[JobStatus],
        status: JobStatus,
        now_ms: int,
        next_run_at: int | None = None,
        tenant: str | None = None,
    ) -> Job | None:
        args = {"id": job_id, "status": JobStatus(status).value, "next_run_at": next_run_at,
                "expect": [JobStatus(s).value for s in expect], "tenant": tenant, "now": now_ms}  # fmt: skip
        with self._write() as conn:
            if status is JobStatus.ACTIVE:  # a resume: the job would run again
                tenantgone.refuse_deleting(outbox_sql(conn), "job", job_id)
            if conn.execute(q.SET_JOB_STATUS, args).fetchone() is None:
                return None
            if status is JobStatus.PAUSED:
                withdrawn = [r[0] for r in conn.execute(q.WITHDRAW_CLAIMED_AHEAD, args)]
                if withdrawn:
                    conn.execute(q.NEXT_RUN_BACK_TO, {"id": job_id, "first": min(withdrawn)})
            conn.execute(q.TOUCH_JOB_DEFINITION, args)
            row = conn.execute(q.GET_JOB, {"id": job_id, "tenant": None}).fetchone()
        return job_from_row(row)

    @translated
    def cancel_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> CancelResult | None:
        return self.cancel_jobs([job_id], now_ms, tenant)[0]

    @translated
    def cancel_jobs(self, job_ids: Sequence[str], now_ms: int, tenant: str | None = None) -> list[CancelResult | None]:
        with self._write() as conn:  # locked in id order: two cancellers of the same jobs wait, never deadlock
            done = {job_id: _cancel_in(conn, job_id, now_ms, tenant) for job_id in sorted(set(job_ids))}
        return [done[job_id] for job_id in job_ids]


def _cancel_in(conn: Any, job_id: str, now_ms: int, tenant: str | None) -> CancelResult | None:
    """``cancel_job`` inside the caller's transaction."""
    args = {"id": job_id, "tenant": tenant, "now": now_ms}
    locked = conn.execute(q.LOCK_JOB, args).fetchone()
    if locked is None:
        return None
    if locked[0] == JobStatus.CANCELLED.value:
        row = conn.execute(q.GET_JOB, args).fetchone()
        return CancelResult(job_from_row(row), changed=False)
    conn.execute(q.CANCEL_JOB, args)
    conn.execute(q.RELEASE_JOB_NAME, args)
    conn.execute(q.TOUCH_JOB_DEFINITION, args)
    live = conn.execute(q.LIVE_EXECUTIONS_OF_JOB, args).fetchall()
    if live:
        ids = [eid for eid, _ in live]
        conn.execute(q.CANCEL_EXECUTIONS, {"ids": ids, "reasons": ["job cancelled"] * len(ids), "now": now_ms})
    row = conn.execute(q.GET_JOB, args).fetchone()
    return CancelResult(job_from_row(row), sorted(eid for eid, status in live if status == "RUNNING"))
