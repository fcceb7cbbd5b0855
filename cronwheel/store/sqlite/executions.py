"""The SQLite store's own execution methods: the ready queue, remote workers' claims,
heartbeat batches, reads, effects, the dead-letter queue and retention. The statements of a
start, a heartbeat and a completion are ``sqlite/leases.py``'s; the methods both backends
share (starts, completions, the reaper) are ``store/shared.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cronwheel.core.claimturns import Candidate, ClaimTurns
from cronwheel.core.model import ExecStatus, Execution, Grant
from cronwheel.core.records import (
    DeadLettersPruned,
    EffectVerdict,
    HeartbeatResult,
)
from cronwheel.store import tenantgone
from cronwheel.store.common import (
    MAX_MS,
    dumps,
    prune_dead_letter_pages,
    replay_reason,
)
from cronwheel.store.completions import effect_refusal
from cronwheel.store.sqlite import jobstate, leases
from cronwheel.store.sqlite import queries as q
from cronwheel.store.sqlite.connection import SqliteBase, count_rows, translated
from cronwheel.store.sqlite.rows import execution_from_row, outbox_sql


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
    def claim_for_worker(
        self, queues: Sequence[str], worker_id: str, max: int, now_ms: int, tenant: str | None = None,
        turns: ClaimTurns | None = None,
    ) -> list[Grant]:
        if max <= 0 or not queues:
            return []
        with self._write() as conn:  # BEGIN IMMEDIATE: claimers on one file are serialised
            if tenant is None:
                ids = (ClaimTurns() if turns is None else turns).pick(_offered(conn, queues, now_ms, max), max)
            else:
                ids = [r[0] for r in conn.execute(q.QUEUE_READY_OF_TENANT, (dumps(list(queues)), now_ms, tenant, max))]
            if not ids:
                return []
            grants = leases.start_in(conn, dict.fromkeys(ids, worker_id), now_ms)
        return grants

    @translated
    def has_ready_for_worker(self, queues: Sequence[str], now_ms: int, tenant: str | None = None) -> bool:
        if not queues:
            return False
        if tenant is None:
            row: Any = self._conn.execute(q.QUEUE_HAS_READY, (dumps(list(queues)), now_ms)).fetchone()
        else:
            row = self._conn.execute(q.QUEUE_HAS_READY_OF_TENANT, (dumps(list(queues)), now_ms, tenant)).fetchone()
        return bool(row[0])

    @translated
    def heartbeat_many(self, beats: Sequence[tuple[str, str, int]], now_ms: int) -> list[HeartbeatResult]:
        if not beats:
            return []
        with self._write(fsync=False) as conn:
            return [leases.heartbeat(conn, eid, worker, epoch, now_ms) for eid, worker, epoch in beats]

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
    def record_effect(self, execution_id: str, worker_id: str, lease_epoch: int, key: str, now_ms: int) -> EffectVerdict:
        with self._write() as conn:
            row = conn.execute(q.EXECUTION_LEASE, (execution_id,)).fetchone()
            if row is None:
                return EffectVerdict.NOT_FOUND
            if conn.execute(q.EFFECT_EXISTS, (execution_id, key)).fetchone() is not None:
                return EffectVerdict.DUPLICATE
            refused = effect_refusal(row, worker_id, lease_epoch)
            if refused is not None:
                return refused
            conn.execute(q.INSERT_EFFECT, (execution_id, key, lease_epoch, now_ms))
            conn.execute(q.COUNT_EFFECT, (execution_id,))
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
            tenantgone.refuse_deleting(outbox_sql(conn), "execution", execution_id)
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

    @translated
    def prune_dead_letters(
        self, keep: int, after_job: str | None, rows_per_call: int, limit: int
    ) -> tuple[list[DeadLettersPruned], str | None]:
        rows = max(rows_per_call, keep + 1)  # a job over the bound is seen over it in one call
        page = list(self._conn.execute(q.DEAD_LETTERS_PAGE, (after_job or "", rows)))

        def prune(job_id: str, budget: int) -> tuple[int, int]:
            with self._write() as conn:
                conn.execute(q.PRUNE_JOB_DEAD_LETTERS, (job_id, keep, budget))
                deleted = conn.changes()
                return deleted, count_rows(conn, q.COUNT_JOB_DEAD_LETTERS, (job_id,))

        return prune_dead_letter_pages(page, rows, keep, after_job, limit, prune)


def _offered(conn: Any, queues: Sequence[str], now_ms: int, max: int) -> list[Candidate]:
    """Each tenant's first ``max`` queued rows of ``queues`` in its own order (tier, age), read
    one queue at a time in index order: O(tenants x queues x max), however many are queued."""
    offered: list[Candidate] = []
    for (tenant,) in conn.execute(q.QUEUED_TENANTS).fetchall():
        rows = [row for name in dict.fromkeys(queues)
                for row in conn.execute(q.QUEUE_CANDIDATES_OF_TENANT, (name, now_ms, tenant, max))]
        rows.sort(key=lambda r: (r[4], r[3], r[0]))
        offered += [Candidate(*r[:4]) for r in rows[:max]]
    return offered
