"""The SQLite store's jobs: create (idempotent, quota- and name-checked), read, list, update,
pause/resume, cancel.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

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
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite import triggers
from cronwheel.store.sqlite.connection import SqliteBase, count_rows, translated
from cronwheel.store.sqlite.rows import job_from_row, outbox_sql

#: a job's rowid is its place in the scheduling table: ``bucket << BUCKET_ROWID_SHIFT`` plus
#: its rank among its bucket's jobs by creation
BUCKET_ROWID_SHIFT = 40


def placed(conn: apsw.Connection, job_rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``job_rows`` (``bucket_id`` second) with their rowid appended: each after the last job
    of its bucket. A claim reads its due jobs bucket by bucket (jobs_due) and a herd completes
    them in the claim's order, so with each bucket's jobs side by side, the claim's and the
    completions' updates of their rows land page after page, not one page each
    (docs/benchmarks.md). Rows of an older store keep their rowids (all in bucket 0's range),
    and new jobs of bucket 0 go after them."""
    after: dict[int, int] = {}  # bucket -> the last rowid taken in it
    out = []
    for row in job_rows:
        bucket: int = row[1]
        if bucket not in after:
            low = bucket << BUCKET_ROWID_SHIFT
            found = conn.execute(q.LAST_ROWID_BETWEEN, (low, low + (1 << BUCKET_ROWID_SHIFT))).fetchall()[0][0]
            after[bucket] = low if found is None else int(found)
        rowid = after[bucket] = after[bucket] + 1
        out.append((*row, rowid))
    return out


class JobMethods(SqliteBase):
    """``store.roles.jobs.JobStore`` on the SQLite file."""

    @translated
    def create_jobs(self, jobs: Sequence[NewJob], now_ms: int) -> list[CreateResult]:
        if not jobs:
            return []
        with self._write() as conn:  # the only writer: what is stored is read item by item

            def stored_key(tenant: str, key: str) -> KeyedRequest | None:
                row = conn.execute(q.SELECT_IDEMPOTENCY_KEY, (tenant, key)).fetchone()
                return None if row is None else (row[0], row[1], row[2])

            # the batch's tenants as they stand: a job is never created for one being deleted
            stored = {t: row[0] for t in {nj.spec.tenant for nj in jobs}
                      if (row := conn.execute(q.TENANT_DELETING_SINCE, (t,)).fetchone()) is not None}  # fmt: skip
            closed = {t for t, since in stored.items() if since is not None}
            batch = decide_creations(jobs, stored_key, lambda tenant, name: self._name_holder(conn, tenant, name),
                                     lambda tenant: count_rows(conn, q.COUNT_REGISTERED_JOBS, (tenant,)), closed)  # fmt: skip
            new_tenants = sorted(batch.tenants - stored.keys())
            if new_tenants:
                conn.executemany(q.INSERT_TENANT, [(t, now_ms) for t in new_tenants])
            if batch.job_rows:
                try:
                    conn.executemany(q.INSERT_JOB, placed(conn, batch.job_rows))
                except apsw.ConstraintError as exc:
                    raise StoreError(f"cannot create jobs (duplicate job id?): {exc}") from exc
                conn.executemany(q.INSERT_JOB_DEFINITION, [(*row, now_ms) for row in batch.def_rows])
                after_create(outbox_sql(conn), batch.watched, now_ms)
            if batch.name_rows:
                conn.executemany(q.INSERT_JOB_NAME, batch.name_rows)
            if batch.key_rows:
                conn.executemany(q.INSERT_IDEMPOTENCY_KEY, [(*row, now_ms) for row in batch.key_rows])
        return batch.results

    @translated
    def get_job(self, job_id: str, tenant: str | None = None) -> Job | None:
        row = self._conn.execute(q.GET_JOB, (job_id, tenant)).fetchone()
        return None if row is None else job_from_row(row)

    @staticmethod
    def _name_holder(conn: apsw.Connection, tenant: str, name: str) -> str | None:
        row = conn.execute(q.NAME_HOLDER, (tenant, name)).fetchone()
        return None if row is None else str(row[0])

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
        with self._write() as conn:
            row = conn.execute(q.GET_JOB, (job_id, tenant)).fetchone()
            if row is None:
                return UpdateResult(UpdateOutcome.NOT_FOUND)
            job = job_from_row(row)
            if job.status is JobStatus.CANCELLED:
                return UpdateResult(UpdateOutcome.CANCELLED, job)
            if spec.name != job.spec.name:
                if spec.name is not None:
                    holder = self._name_holder(conn, job.tenant, spec.name)
                    if holder is not None and holder != job_id:
                        return UpdateResult(UpdateOutcome.NAME_TAKEN, job, holder)
                conn.execute(q.RELEASE_JOB_NAME, (job_id,))
                if spec.name is not None:
                    conn.execute(q.INSERT_JOB_NAME, (job.tenant, spec.name, job_id))
            retry = spec.retry
            conn.execute(q.UPDATE_JOB, (
                job_id, spec.schedule, spec.timezone, spec.misfire, spec.overlap, spec.jitter_sec,
                spec.priority, retry.max_attempts, spec.target.get("queue"), next_run_at, reschedule,
                json_list(spec.calendars), spec.active_until, spec.misfire_grace_sec,
            ))  # fmt: skip
            conn.execute(q.UPDATE_JOB_DEFINITION, (
                job_id, spec.name, spec.run_at, dumps(spec.target), dumps(spec.payload),
                retry_to_json(retry), float(spec.timeout_sec), float(spec.lease_sec), now_ms, process_text(spec),
                spec.active_from, spec.managed_by,
            ))  # fmt: skip
            if (spec.on_success, spec.on_failure) != (job.spec.on_success, job.spec.on_failure):
                # the cycle check of a chain change, in this transaction (ChainError: nothing changes)
                triggers.set_chain(conn, job_id, spec.on_success, spec.on_failure, now_ms, tenant)
            after_update(outbox_sql(conn), job_id, job.spec, spec, now_ms)
            superseded: list[str] = []
            if reschedule:
                ahead = conn.execute(q.CLAIMED_AHEAD_OF_JOB, (job_id, job_id + ":", job_id + ";", now_ms))
                superseded = sorted(str(r[0]) for r in ahead)
                conn.executemany(q.CANCEL_EXECUTION, [(eid, now_ms, SUPERSEDED) for eid in superseded])
            updated = job_from_row(conn.execute(q.GET_JOB, (job_id, None)).fetchone())
        return UpdateResult(UpdateOutcome.UPDATED, updated, superseded=superseded)

    @translated
    def list_jobs(
        self,
        tenant: str | None = None,
        status: JobStatus | None = None,
        limit: int = 100,
        after_id: str | None = None,
    ) -> list[Job]:
        st = None if status is None else status.value
        args: tuple[Any, ...] = (after_id or "", st, max(0, limit))
        sql = q.LIST_JOBS if tenant is None else q.LIST_JOBS_OF_TENANT
        if tenant is not None:
            args += (tenant,)
        return [job_from_row(r) for r in self._conn.execute(sql, args)]

    @translated
    def count_jobs(self, tenant: str | None = None, status: JobStatus | None = None) -> int:
        terms: list[str] = []
        args: list[str] = []
        if tenant is not None:
            terms.append("tenant = ?")
            args.append(tenant)
        if status is not None:
            terms.append("status = ?")
            args.append(JobStatus(status).value)
        sql = q.COUNT_JOBS.format(where=" AND ".join(terms) or "1")
        return count_rows(self._conn, sql, tuple(args))

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
        expected = json.dumps([JobStatus(s).value for s in expect])
        with self._write() as conn:
            if status is JobStatus.ACTIVE:  # a resume: the job would run again
                tenantgone.refuse_deleting(outbox_sql(conn), "job", job_id)
            conn.execute(q.SET_JOB_STATUS, (job_id, status.value, next_run_at, expected, tenant))
            if conn.changes() == 0:
                return None
            if status is JobStatus.PAUSED:
                withdrawn = [r[0] for r in conn.execute(q.WITHDRAW_CLAIMED_AHEAD, (job_id, now_ms))]
                if withdrawn:
                    conn.execute(q.NEXT_RUN_BACK_TO, (job_id, min(withdrawn)))
            conn.execute(q.TOUCH_JOB_DEFINITION, (job_id, now_ms))
            row = conn.execute(q.GET_JOB, (job_id, None)).fetchone()
        return job_from_row(row)

    @translated
    def cancel_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> CancelResult | None:
        return self.cancel_jobs([job_id], now_ms, tenant)[0]

    @translated
    def cancel_jobs(self, job_ids: Sequence[str], now_ms: int, tenant: str | None = None) -> list[CancelResult | None]:
        with self._write() as conn:
            done = {job_id: _cancel_in(conn, job_id, now_ms, tenant) for job_id in dict.fromkeys(job_ids)}
        return [done[job_id] for job_id in job_ids]


def _cancel_in(conn: Any, job_id: str, now_ms: int, tenant: str | None) -> CancelResult | None:
    """``cancel_job`` inside the caller's transaction."""
    row = conn.execute(q.GET_JOB, (job_id, tenant)).fetchone()
    if row is None:
        return None
    job = job_from_row(row)
    if job.status is JobStatus.CANCELLED:
        return CancelResult(job, changed=False)
    conn.execute(q.CANCEL_JOB, (job_id,))
    conn.execute(q.RELEASE_JOB_NAME, (job_id,))
    conn.execute(q.TOUCH_JOB_DEFINITION, (job_id, now_ms))
    live: list[Any] = conn.execute(q.LIVE_EXECUTIONS_OF_JOB, (job_id, job_id + ":", job_id + ";")).fetchall()
    conn.executemany(q.CANCEL_EXECUTION, [(eid, now_ms, "job cancelled") for eid, _ in live])
    job.status = JobStatus.CANCELLED
    job.next_run_at = None
    job.updated_at = now_ms
    return CancelResult(job, sorted(eid for eid, status in live if status == "RUNNING"))
