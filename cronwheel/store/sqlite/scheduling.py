"""The SQLite store's scheduling: due jobs, the claim, triggers, calendars, backfills and chains."""

from __future__ import annotations

import json
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
from cronwheel.store.common import PRIORITY, loads
from cronwheel.store.sqlite import claim as claiming
from cronwheel.store.sqlite import cluster, jobstate, triggers
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.connection import SqliteBase, translated
from cronwheel.store.sqlite.rows import job_from_row, outbox_sql


def buckets_json(buckets: tuple[int, ...]) -> str:
    return json.dumps([int(b) for b in buckets])


class SchedulingMethods(SqliteBase):
    """``store.roles.scheduling.SchedulingStore`` on the SQLite file."""

    @translated
    def due_jobs(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[str, int]]:
        if not buckets or limit <= 0:
            return []
        return self._conn.execute(q.DUE_JOBS, (buckets_json(tuple(buckets)), until_ms, limit)).fetchall()  # type: ignore[return-value]

    @translated
    def due_ticks(self, buckets: Sequence[int], until_ms: int, limit: int) -> list[tuple[int, int]]:
        if not buckets or limit <= 0:
            return []
        return self._conn.execute(q.DUE_TICKS, (buckets_json(tuple(buckets)), until_ms, limit)).fetchall()  # type: ignore[return-value]

    @translated
    def next_due_at(self, buckets: Sequence[int]) -> int | None:
        if not buckets:
            return None
        row = self._conn.execute(q.NEXT_DUE_AT, (buckets_json(tuple(buckets)),)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    @translated
    def claim_due(
        self, buckets: Sequence[int], now_ms: int, limit: int, ahead_ms: int = 0, fence: Fence | None = None,
        only: Sequence[str] | None = None,
    ) -> ClaimResult:
        result = ClaimResult()
        if not buckets or limit <= 0:
            return result
        with self._write() as conn:
            owned = list(buckets) if fence is None else cluster.fenced_buckets(conn, buckets, fence, now_ms)
            if owned:
                claiming.claim(conn, buckets_json(tuple(owned)), now_ms, limit, result, ahead_ms,
                               None if only is None else json.dumps(list(only)), held=indexes_of(self))
        return result

    @translated
    def trigger_job(self, job_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            tenantgone.refuse_deleting(outbox_sql(conn), "job", job_id)
            row = conn.execute(q.TRIGGER_SELECT_JOB, (job_id, tenant)).fetchone()
            if row is None or row[0] == JobStatus.CANCELLED.value:
                return None
            _, job_tenant, prio, max_att, overlap, queue, job_order = row
            tick = now_ms
            page = 256
            while True:  # the first millisecond from now on that has no execution yet
                taken = [r[0] for r in conn.execute(q.TAKEN_TICKS_FROM, (job_id, tick, page))]
                for t in taken:
                    if t != tick:
                        break
                    tick += 1
                else:
                    if len(taken) == page:
                        continue
                break
            guard = 0 if overlap == OverlapPolicy.ALLOW.value else 1
            eid = execution_id(job_id, tick)
            conn.execute(q.INSERT_EXECUTION, (
                eid, job_id, job_tenant, prio, tick, "PENDING", now_ms, now_ms, None, "triggered", max_att, guard,
                ExecOrigin.MANUAL.value, job_order,
            ))  # fmt: skip
            if queue is not None:
                conn.execute(q.SET_EXECUTION_QUEUE, (eid, queue))
            jobstate.reopen(conn, job_id)
        return Execution(eid, job_id, job_tenant, PRIORITY[prio], tick, ExecStatus.PENDING,
                         available_at=now_ms, created_at=now_ms, reason="triggered", max_attempts=max_att,
                         queue=queue, origin=ExecOrigin.MANUAL)

    @translated
    def put_calendar(self, calendar: Calendar, now_ms: int, max_per_tenant: int | None = None) -> Calendar | None:
        spec, packed = calendar_spec_json(calendar), calendar.index().pack()  # built before the writer is held
        with self._write() as conn:  # (one writer at a time: the count holds until the insert)
            tenantgone.refuse_deleting(outbox_sql(conn), "tenant", calendar.tenant)
            if max_per_tenant is not None and conn.execute(q.CALENDAR_EXISTS, (calendar.tenant, calendar.name)).fetchone() is None:
                count = conn.execute(q.COUNT_CALENDARS, (calendar.tenant,)).fetchone()
                if count is not None and count[0] >= max_per_tenant:
                    return None
            [(revision,)] = conn.execute(q.NEXT_CALENDAR_REVISION)
            row = conn.execute(q.UPSERT_CALENDAR, (calendar.tenant, calendar.name, spec, now_ms, revision)).fetchone()
            conn.execute(q.PUT_CALENDAR_INDEX, (calendar.tenant, calendar.name, revision, packed))
        return calendar_written(calendar, row, parsed_of(self))

    @translated
    def get_calendar(self, tenant: str, name: str) -> Calendar | None:
        row = self._conn.execute(q.GET_CALENDAR, (tenant, name)).fetchone()
        return None if row is None else calendar_row(row, loads, parsed_of(self))

    @translated
    def delete_calendar(self, tenant: str, name: str) -> tuple[bool, list[str]]:
        with self._write() as conn:
            users = [r[0] for r in conn.execute(q.CALENDAR_USERS, (tenant, name))]
            if users:
                return False, users
            before = conn.total_changes()
            conn.execute(q.DELETE_CALENDAR, (tenant, name))
            return conn.total_changes() > before, []

    @translated
    def cancel_backfill(self, job_id: str, now_ms: int, tenant: str | None = None) -> int | None:
        with self._write() as conn:
            if conn.execute(q.TRIGGER_SELECT_JOB, (job_id, tenant)).fetchone() is None:
                return None
            before = conn.total_changes()
            conn.execute(q.CANCEL_BACKFILL, (job_id, now_ms, tenant))
            return conn.total_changes() - before

    @translated
    def set_job_chain(
        self, job_id: str, on_success: Sequence[str], on_failure: Sequence[str], now_ms: int,
        tenant: str | None = None,
    ) -> Job | None:
        with self._write() as conn:
            tenantgone.refuse_deleting(outbox_sql(conn), "job", job_id)
            if not triggers.set_chain(conn, job_id, on_success, on_failure, now_ms, tenant):
                return None
        row = self._conn.execute(q.GET_JOB, (job_id, tenant)).fetchone()
        return None if row is None else job_from_row(row)
