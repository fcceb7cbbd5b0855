"""The SQLite store's executions: hand-outs under leases, heartbeats, completions, reads,
effects, the dead-letter queue and retention.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apsw

from cronwheel.core.chains import payload_with_context
from cronwheel.core.model import DEFAULT_LEASE_SEC, ExecStatus, Execution, Grant
from cronwheel.core.records import (
    EffectVerdict,
    HeartbeatResult,
    StartRequest,
)
from cronwheel.store.common import (
    MAX_MS,
    ORIGIN,
    PRIORITY,
    JsonMemo,
    dumps,
    json_array,
    replay_reason,
)
from cronwheel.store.outbox.hooks import after_starts
from cronwheel.store.sqlite import jobstate, leases
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.connection import SqliteBase, count_rows, translated
from cronwheel.store.sqlite.rows import execution_from_row, outbox_sql

_DEFAULT_LEASE_MS = round(DEFAULT_LEASE_SEC * 1000)


class ExecutionMethods(SqliteBase):
    """``store.roles.executions.ExecutionStore`` and ``prune_executions`` on the SQLite file."""

    @translated
    def ready_executions(self, now_ms: int, limit: int, after: tuple[int, str] | None = None) -> list[Execution]:
        if limit <= 0:
            return []
        after_at, after_id = after if after is not None else (-MAX_MS, "")
        rows = self._conn.execute(q.READY_EXECUTIONS, (now_ms, after_at, after_id, limit))
        return [execution_from_row(r) for r in rows]

    @translated
    def start_executions(self, starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
        if not starts:
            return []
        workers: dict[str, str] = {}
        for st in starts:
            workers.setdefault(st.execution_id, st.worker_id)
        with self._write() as conn:
            return self._start_in(conn, workers, now_ms)

    @translated
    def claim_for_worker(
        self, queues: Sequence[str], worker_id: str, max: int, now_ms: int, tenant: str | None = None
    ) -> list[Grant]:
        if max <= 0 or not queues:
            return []
        with self._write() as conn:  # BEGIN IMMEDIATE: claimers on one file are serialised
            ids = [r[0] for r in conn.execute(q.QUEUE_READY, (dumps(list(queues)), now_ms, tenant, max))]
            if not ids:
                return []
            grants = self._start_in(conn, dict.fromkeys(ids, worker_id), now_ms)
        return grants

    def _start_in(self, conn: apsw.Connection, workers: dict[str, str], now_ms: int) -> list[Grant]:
        """start_executions' work inside the caller's write transaction: one read of the
        definitions of the batch's jobs (an execution id is ``{jobId}:{scheduledAtMs}``), one
        UPDATE of the batch."""
        jobs = {eid: eid.rpartition(":")[0] for eid in workers}
        defs: dict[str, Any] = {r[0]: r for r in conn.execute(q.START_DEFINITIONS, (json_array(list(set(jobs.values()))),))}
        no_def = (None, None, DEFAULT_LEASE_SEC, 0.0, "{}", "null", None)
        triples = json_array([[eid, wid, defs.get(jobs[eid], no_def)[1]] for eid, wid in workers.items()])
        rows: list[Any] = conn.execute(q.START_EXECUTIONS, (triples, now_ms, _DEFAULT_LEASE_MS)).fetchall()
        by_id = {r[0]: r for r in rows}
        grants: list[Grant] = []
        parsed = JsonMemo()
        for eid in workers:  # in the order asked
            r = by_id.get(eid)
            if r is None:
                continue
            # the definition of the job the row names (the same one, by the id's CHECK)
            _, _, lease_sec, timeout_sec, target, payload, process = defs.get(r[1], no_def)
            if target is None:  # no definition row (cannot happen with the foreign keys on)
                lease_sec, timeout_sec, target, payload = DEFAULT_LEASE_SEC, 0.0, "{}", "null"
            context = None if r[10] is None else json.loads(r[10])
            grants.append(Grant(r[0], r[1], r[2], PRIORITY[r[3]], r[4], r[5], r[6], r[7],
                                lease_sec, timeout_sec, parsed(target),
                                payload_with_context(parsed(payload), context), r[8],
                                origin=ORIGIN[r[9]], process=None if process is None else parsed(process),
                                context=context))  # fmt: skip
        after_starts(outbox_sql(conn), [(g.execution_id, g.job_id, g.attempt, g.scheduled_at) for g in grants], now_ms)
        return grants

    @translated
    def heartbeat_many(self, beats: Sequence[tuple[str, str, int]], now_ms: int) -> list[HeartbeatResult]:
        if not beats:
            return []
        with self._write(fsync=False) as conn:
            return [leases.heartbeat(conn, eid, epoch, now_ms) for eid, _worker, epoch in beats]

    @translated
    def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None:
        row = self._conn.execute(q.GET_EXECUTION, (execution_id, tenant)).fetchone()
        return None if row is None else execution_from_row(row)

    @translated
    def last_runs(self, job_ids: Sequence[str], tenant: str | None = None) -> dict[str, Execution]:
        if not job_ids:
            return {}
        rows = self._conn.execute(q.LAST_RUNS, (dumps(list(job_ids)), tenant))
        return {ex.job_id: ex for ex in map(execution_from_row, rows)}

    @translated
    def count_executions(self, status: ExecStatus | None = None, tenant: str | None = None) -> int:
        if status is None:
            where = "1"
        else:
            value = ExecStatus(status).value
            where = q.COUNT_EXECUTIONS_WHERE.get(value, f"status = '{value}'")
        sql = q.COUNT_EXECUTIONS.format(where=where)
        return count_rows(self._conn, sql, (tenant,))

    @translated
    def record_effect(self, execution_id: str, lease_epoch: int, key: str, now_ms: int) -> EffectVerdict:
        with self._write() as conn:
            row = conn.execute(q.EXECUTION_LEASE, (execution_id,)).fetchone()
            if row is None:
                return EffectVerdict.NOT_FOUND
            if conn.execute(q.EFFECT_EXISTS, (execution_id, key)).fetchone() is not None:
                return EffectVerdict.DUPLICATE
            if row[0] != "RUNNING" or row[1] != lease_epoch:
                return EffectVerdict.FENCED
            conn.execute(q.INSERT_EFFECT, (execution_id, key, lease_epoch, now_ms))
        return EffectVerdict.RECORDED

    @translated
    def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]:
        if limit <= 0:
            return []
        rows = self._conn.execute(q.LIST_DEAD, (after or "", tenant, limit))
        return [execution_from_row(r) for r in rows]

    @translated
    def replay_dead(self, execution_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            row = conn.execute(q.GET_DEAD, (execution_id, tenant)).fetchone()
            if row is None:
                return None
            dead = execution_from_row(row)
            reason = replay_reason(dead, now_ms)
            conn.execute(q.REPLAY_DEAD, (execution_id, now_ms, reason))
            jobstate.reopen(conn, dead.job_id)
            row = conn.execute(q.GET_EXECUTION, (execution_id, None)).fetchone()
        return execution_from_row(row)

    @translated
    def purge_dead(self, execution_id: str, tenant: str | None = None) -> bool:
        with self._write() as conn:
            conn.execute(q.PURGE_DEAD, (execution_id, tenant))
            return conn.changes() > 0

    @translated
    def prune_executions(
        self, older_than_ms: int, keep_last: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        jobs = [r[0] for r in self._conn.execute(q.PRUNE_JOBS_PAGE, (after_job or "", jobs_per_call))]
        if not jobs:
            return 0, None
        deleted = 0
        with self._write() as conn:
            for job_id in jobs:
                conn.execute(q.PRUNE_JOB_EXECUTIONS, (job_id, older_than_ms, max(1, keep_last), limit - deleted))
                deleted += conn.changes()
                if deleted >= limit:
                    # this job may have more: come back to it (the cursor is the job before it)
                    index = jobs.index(job_id)
                    return deleted, (jobs[index - 1] if index else after_job) or ""
        return deleted, jobs[-1] if len(jobs) == jobs_per_call else None
