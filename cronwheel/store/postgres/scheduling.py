"""The PostgreSQL store's scheduling: due jobs, the claim, triggers, calendars, backfills and
chains.
"""

from __future__ import annotations

from collections.abc import Sequence

from cronwheel.core.calendar import Calendar
from cronwheel.core.ids import execution_id
from cronwheel.core.model import ExecOrigin, ExecStatus, Execution, Job, JobStatus, OverlapPolicy
from cronwheel.core.records import ClaimResult, Fence
from cronwheel.store import tenantgone
from cronwheel.store.calendars import (
    calendar_row,
    calendar_spec_json,
    calendar_written,
    indexes_of,
    parsed_of,
)
from cronwheel.store.common import PRIORITY
from cronwheel.store.postgres import claim as claiming
from cronwheel.store.postgres import cluster, jobstate, triggers
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.connection import PostgresBase, translated
from cronwheel.store.postgres.jobs import lock_keys
from cronwheel.store.postgres.rows import job_from_row, outbox_sql, parsed

#: advisory-lock key space of a tenant's new calendars (next to jobs.IDEMPOTENCY_LOCK_SPACE …
#: triggers.CHAIN_LOCK_SPACE)
CALENDAR_LOCK_SPACE = 0x63770005


class SchedulingMethods(PostgresBase):
    """``store.roles.scheduling.SchedulingStore`` on PostgreSQL."""

    @translated
    def due_jobs(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[str, int]]:
        if not buckets or limit <= 0:
            return []
        rows = self._rows(q.DUE_JOBS, {"buckets": [int(b) for b in buckets], "until": until_ms, "limit": limit})
        return [(r[0], r[1]) for r in rows]

    @translated
    def due_ticks(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[int, int]]:
        if not buckets or limit <= 0:
            return []
        rows = self._rows(q.DUE_TICKS, {"buckets": [int(b) for b in buckets], "until": until_ms, "limit": limit})
        return [(int(r[0]), int(r[1])) for r in rows]

    @translated
    def next_due_at(self, buckets: Sequence[int]) -> int | None:
        if not buckets:
            return None
        value = self._scalar(q.NEXT_DUE_AT, {"buckets": sorted({int(b) for b in buckets})})
        return None if value is None else int(value)

    @translated
    def claim_due(
        self, buckets: Sequence[int], now_ms: int, limit: int, ahead_ms: int = 0, fence: Fence | None = None,
        only: Sequence[str] | None = None,
    ) -> ClaimResult:
        result = ClaimResult()
        if not buckets or limit <= 0:
            return result
        with self._write() as conn:
            if fence is not None:
                # the fence holds the lease rows FOR SHARE: a node paused mid-claim must not
                # keep a takeover waiting for longer than this
                conn.execute(cluster.FENCED_CLAIM_IDLE_TIMEOUT)
            owned = [int(b) for b in buckets] if fence is None else cluster.fenced_buckets(conn, buckets, fence)
            if owned:
                claiming.claim(conn, owned, now_ms, limit, result, ahead_ms, None if only is None else list(only),
                               held=indexes_of(self))
        return result

    @translated
    def trigger_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            tenantgone.refuse_deleting(outbox_sql(conn), "job", job_id)
            row = conn.execute(q.TRIGGER_SELECT_JOB, {"id": job_id, "tenant": tenant}).fetchone()
            if row is None or row[0] == JobStatus.CANCELLED.value:
                return None
            _, job_tenant, prio, max_att, overlap, queue = row
            guard = overlap != OverlapPolicy.ALLOW.value
            while True:  # the first free millisecond; a concurrent trigger may take it first
                tick = int(conn.execute(q.FIRST_FREE_TICK, {"id": job_id, "now": now_ms}).fetchone()[0])  # type: ignore[index]
                eid = execution_id(job_id, tick)
                new = (eid, job_id, job_tenant, prio, tick, "PENDING", now_ms, now_ms, None, "triggered", max_att, guard,
                       ExecOrigin.MANUAL.value)  # fmt: skip
                if claiming.insert_executions(conn, [new]):
                    break
            if queue is not None:
                conn.execute(q.SET_EXECUTIONS_QUEUE, {"ids": [eid], "queues": [queue]})
            jobstate.reopen(conn, job_id)
        return Execution(eid, job_id, job_tenant, PRIORITY[prio], tick, ExecStatus.PENDING,
                         available_at=now_ms, created_at=now_ms, reason="triggered", max_attempts=max_att,
                         queue=queue, origin=ExecOrigin.MANUAL)  # fmt: skip

    @translated
    def put_calendar(self, calendar: Calendar, now_ms: int, max_per_tenant: int | None = None) -> Calendar | None:
        args = {"tenant": calendar.tenant, "name": calendar.name, "spec": calendar_spec_json(calendar), "now": now_ms}
        packed = calendar.index().pack()
        with self._write() as conn:
            tenantgone.refuse_deleting(outbox_sql(conn), "tenant", calendar.tenant)
            if max_per_tenant is not None:
                # serialised per tenant with other nodes' new calendars: the count holds until the insert
                conn.execute(q.ADVISORY_XACT_LOCKS, {"space": CALENDAR_LOCK_SPACE, "hashes": lock_keys({calendar.tenant})})
                if conn.execute(q.CALENDAR_EXISTS, args).fetchone() is None:
                    count = conn.execute(q.COUNT_CALENDARS, args).fetchone()
                    if count is not None and count[0] >= max_per_tenant:
                        return None
            [row] = conn.execute(q.UPSERT_CALENDAR, args).fetchall()
            conn.execute(q.PUT_CALENDAR_INDEX, {**args, "revision": row[5], "packed": packed})
        return calendar_written(calendar, row, parsed_of(self))

    @translated
    def get_calendar(self, tenant: str, name: str) -> Calendar | None:
        rows = self._rows(q.GET_CALENDAR, {"tenant": tenant, "name": name})
        return calendar_row(rows[0], parsed, parsed_of(self)) if rows else None

    @translated
    def delete_calendar(self, tenant: str, name: str) -> tuple[bool, list[str]]:
        args = {"tenant": tenant, "name": name}
        with self._write() as conn:
            users = [r[0] for r in conn.execute(q.CALENDAR_USERS, args)]
            if users:
                return False, users
            return conn.execute(q.DELETE_CALENDAR, args).rowcount > 0, []

    @translated
    def cancel_backfill(self, job_id: str, now_ms: int, tenant: str | None = None) -> int | None:
        with self._write() as conn:
            if conn.execute(q.TRIGGER_SELECT_JOB, {"id": job_id, "tenant": tenant}).fetchone() is None:
                return None
            return conn.execute(q.CANCEL_BACKFILL, {"id": job_id, "now": now_ms, "tenant": tenant}).rowcount

    @translated
    def set_job_chain(
        self, job_id: str, on_success: Sequence[str], on_failure: Sequence[str], now_ms: int,
        tenant: str | None = None,
    ) -> Job | None:
        with self._write() as conn:
            tenantgone.refuse_deleting(outbox_sql(conn), "job", job_id)
            if not triggers.set_chain(conn, job_id, on_success, on_failure, now_ms, tenant):
                return None
        rows = self._rows(q.GET_JOB, {"id": job_id, "tenant": tenant})
        return job_from_row(rows[0]) if rows else None
