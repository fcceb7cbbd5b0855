"""The PostgreSQL store's executions: hand-outs under leases, heartbeats, completions, reads,
effects, the dead-letter queue and retention.
"""

from __future__ import annotations

from collections.abc import Sequence

from cronwheel.core.claimturns import ClaimTurns
from cronwheel.core.model import ExecStatus, Execution, Grant
from cronwheel.core.records import (
    DeadLettersPruned,
    EffectVerdict,
    HeartbeatResult,
)
from cronwheel.store import tenantgone
from cronwheel.store.common import MAX_MS, prune_dead_letter_pages, replay_reason
from cronwheel.store.completions import effect_refusal
from cronwheel.store.postgres import jobstate, leases
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.connection import PostgresBase, translated
from cronwheel.store.postgres.rows import execution_from_row, outbox_sql


class ExecutionMethods(PostgresBase):
    """``store.roles.executions.ExecutionStore`` and ``prune_executions`` on PostgreSQL."""

    @translated
    def ready_executions(self, now_ms: int, limit: int, after: tuple[int, str] | None = None) -> list[Execution]:
        if limit <= 0:
            return []
        after_at, after_id = after if after is not None else (-MAX_MS, "")
        args = {"now": now_ms, "after_at": after_at, "after_id": after_id, "limit": limit}
        return [execution_from_row(r) for r in self._rows(q.READY_EXECUTIONS, args)]

    @translated
    def claim_for_worker(
        self, queues: Sequence[str], worker_id: str, max: int, now_ms: int, tenant: str | None = None,
        turns: ClaimTurns | None = None,
    ) -> list[Grant]:
        if max <= 0 or not queues:
            return []
        with self._write() as conn:
            return leases.claim_for_worker(conn, queues, worker_id, max, now_ms, tenant, turns)

    @translated
    def has_ready_for_worker(self, queues: Sequence[str], now_ms: int, tenant: str | None = None) -> bool:
        if not queues:
            return False
        statement = q.QUEUE_HAS_READY if tenant is None else q.QUEUE_HAS_READY_OF_TENANT
        return bool(self._rows(statement, {"queues": list(queues), "now": now_ms, "tenant": tenant})[0][0])

    @translated
    def heartbeat_many(self, beats: Sequence[tuple[str, str, int]], now_ms: int) -> list[HeartbeatResult]:
        if not beats:
            return []
        with self._write() as conn:
            return leases.heartbeat(conn, beats, now_ms)

    @translated
    def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None:
        rows = self._rows(q.GET_EXECUTION, {"id": execution_id, "tenant": tenant})
        return execution_from_row(rows[0]) if rows else None

    @translated
    def last_runs(self, job_ids: Sequence[str], tenant: str | None = None) -> dict[str, Execution]:
        if not job_ids:
            return {}
        rows = self._rows(q.LAST_RUNS, {"ids": list(job_ids), "tenant": tenant})
        return {ex.job_id: ex for ex in map(execution_from_row, rows)}

    @translated
    def count_executions(self, status: ExecStatus | None = None, tenant: str | None = None) -> int:
        where = "TRUE" if status is None else f"status = '{ExecStatus(status).value}'"
        return int(self._scalar(q.COUNT_EXECUTIONS.format(where=where), {"tenant": tenant}))

    @translated
    def record_effect(self, execution_id: str, worker_id: str, lease_epoch: int, key: str, now_ms: int) -> EffectVerdict:
        args = {"id": execution_id, "key": key, "epoch": lease_epoch, "now": now_ms}
        with self._write() as conn:
            row = conn.execute(q.EXECUTION_LEASE, args).fetchone()
            if row is None:
                return EffectVerdict.NOT_FOUND
            if conn.execute(q.EFFECT_EXISTS, args).fetchone() is not None:
                return EffectVerdict.DUPLICATE
            refused = effect_refusal(row, worker_id, lease_epoch)
            if refused is not None:
                return refused
            if conn.execute(q.INSERT_EFFECT, args).fetchone() is None:
                return EffectVerdict.DUPLICATE  # recorded by a concurrent call a moment ago
            conn.execute(q.COUNT_EFFECT, args)
        return EffectVerdict.RECORDED

    @translated
    def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]:
        if limit <= 0:
            return []
        args = {"after": after or "", "tenant": tenant, "limit": limit}
        return [execution_from_row(r) for r in self._rows(q.LIST_DEAD, args)]

    @translated
    def replay_dead(self, execution_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        with self._write() as conn:
            tenantgone.refuse_deleting(outbox_sql(conn), "execution", execution_id)
            row = conn.execute(q.GET_DEAD, {"id": execution_id, "tenant": tenant}).fetchone()
            if row is None:
                return None
            dead = execution_from_row(row)
            reason = replay_reason(dead, now_ms)
            row = conn.execute(q.REPLAY_DEAD, {"id": execution_id, "now": now_ms, "reason": reason}).fetchone()
            jobstate.reopen(conn, dead.job_id)
        return execution_from_row(row)

    @translated
    def purge_dead(self, execution_id: str, tenant: str | None = None) -> bool:
        with self._write() as conn:
            return conn.execute(q.PURGE_DEAD, {"id": execution_id, "tenant": tenant}).rowcount > 0

    @translated
    def prune_executions(
        self, older_than_ms: int, keep_last: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        jobs = [r[0] for r in self._rows(q.PRUNE_JOBS_PAGE, {"after": after_job or "", "n": jobs_per_call})]
        if not jobs:
            return 0, None
        deleted = 0
        with self._write() as conn:
            for index, job_id in enumerate(jobs):
                args = {"job_id": job_id, "older_than": older_than_ms, "skip": max(1, keep_last) - 1,
                        "limit": limit - deleted}  # fmt: skip
                deleted += conn.execute(q.PRUNE_JOB_EXECUTIONS, args).rowcount
                if deleted >= limit:
                    # this job may have more: come back to it (the cursor is the job before it)
                    return deleted, (jobs[index - 1] if index else after_job) or ""
        return deleted, jobs[-1] if len(jobs) == jobs_per_call else None

    @translated
    def prune_dead_letters(
        self, keep: int, after_job: str | None, rows_per_call: int, limit: int
    ) -> tuple[list[DeadLettersPruned], str | None]:
        rows = max(rows_per_call, keep + 1)  # a job over the bound is seen over it in one call
        page = self._rows(q.DEAD_LETTERS_PAGE, {"after": after_job or "", "n": rows})

        def prune(job_id: str, budget: int) -> tuple[int, int]:
            with self._write() as conn:
                args = {"job_id": job_id, "keep": keep, "limit": budget}
                deleted = conn.execute(q.PRUNE_JOB_DEAD_LETTERS, args).rowcount
                row = conn.execute(q.COUNT_JOB_DEAD_LETTERS, args).fetchone()
                return deleted, row[0] if row else 0

        return prune_dead_letter_pages(page, rows, keep, after_job, limit, prune)
