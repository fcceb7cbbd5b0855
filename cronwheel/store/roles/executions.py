"""Executions: the ready queue, leases, completions, reads, side effects and the dead-letter queue.

Part of the store contract (``store.base.Store`` is the union of the roles); the
conventions in ``store.base`` hold for every method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cronwheel.core.claimturns import ClaimTurns
from cronwheel.core.model import ExecStatus, Execution, Grant
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    EffectVerdict,
    HeartbeatResult,
    StartRequest,
)


class ExecutionStore(ABC):
    """An execution's life after its claim: handed out under a fenced lease, heartbeated,
    completed or expired, read back, its side effects recorded once, and, once DEAD, kept in
    the dead-letter queue until replayed or purged.

    What lists executions (``ready_executions``, ``list_executions``, ``last_runs``,
    ``list_dead``) leaves their ``output`` out (None): no listing shows it, and a page of a
    thousand read up to 64 MB of it. ``get_execution`` has it."""

    # ---- the ready queue
    @abstractmethod
    def ready_executions(self, now_ms: int, limit: int, after: tuple[int, str] | None = None) -> list[Execution]:
        """Dispatchable executions for LOCAL workers: PENDING, or RETRY_WAIT, with
        available_at <= now_ms, and no ``queue`` (queue targets' executions are left to
        ``claim_for_worker``), ordered by available_at and then in the store's own dispatch
        order (PostgreSQL: by execution_id; SQLite: its jobs' place in the scheduling table,
        the order a claim returns them in), keyset-paginated by ``after``: the
        (available_at, execution_id) of the last execution of the previous page."""

    @abstractmethod
    def start_executions(self, starts: Sequence[StartRequest], now_ms: int) -> list[Grant]:
        """Hand executions to workers in ONE transaction. For each request whose execution is
        PENDING or RETRY_WAIT with available_at <= now_ms: status RUNNING, attempt += 1,
        lease_epoch += 1 (invariant 4), worker_id set, lease_until = now + job.lease_sec,
        started_at set on the first start. Requests whose execution is not dispatchable
        (cancelled, already running, gone) are left out of the result."""

    @abstractmethod
    def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int, now_ms: int) -> HeartbeatResult:
        """Extend a lease to now + lease_sec if the execution is RUNNING at exactly
        ``lease_epoch`` and ``worker_id`` is the worker its start named (the lease's holder):
        OK with extend_until. Otherwise nothing changes: CANCELLED if the execution was
        cancelled, LEASE_LOST for any other epoch or status, WRONG_WORKER for the current epoch
        named by another worker, NOT_FOUND."""

    @abstractmethod
    def heartbeat_many(
        self, beats: Sequence[tuple[str, str, int]], now_ms: int
    ) -> list[HeartbeatResult]:
        """``heartbeat`` for many ``(execution_id, worker_id, lease_epoch)`` in one transaction."""

    @abstractmethod
    def complete_executions(
        self, completions: Sequence[Completion], now_ms: int, rand01: Sequence[float] | None = None
    ) -> list[CompletionResult]:
        """Apply results in ONE transaction, each fenced: applied only if the execution is
        RUNNING at exactly ``lease_epoch`` and, unless ``worker_id`` is None (the daemon's own
        verdict: the reaper, a grant it could not hand out), held by ``worker_id`` (else
        LEASE_LOST / CANCELLED / WRONG_WORKER / NOT_FOUND and nothing changes). SUCCEEDED ends it; any other outcome is a failed attempt that
        becomes RETRY_WAIT (available_at from core.retry with the job's retry policy and
        ``rand01[i]``, default 0.5) or DEAD when attempt >= max_attempts. exit_code, error
        and output are stored. A final outcome (SUCCEEDED, DEAD) inserts, in the same
        transaction, the execution of each ACTIVE chain child of that outcome
        (``core.chains.children_to_run``; ON CONFLICT DO NOTHING), listed in ``triggered``.

        A job with no further tick (ACTIVE or PAUSED, next_run_at None; not an ``@triggered``
        job, which waits for triggers) whose last live execution ended here is settled in the
        same transaction: SUCCEEDED if that execution succeeded, FAILED if it went DEAD
        (``model.settled_status``)."""

    @abstractmethod
    def expire_leases(self, now_ms: int, limit: int, ran_out_before_ms: int | None = None) -> list[CompletionResult]:
        """The reaper: every RUNNING execution with lease_until < now_ms (and < ``ran_out_before_ms``
        when given: a lease that ran out while the node could not hear heartbeats is spared for
        a while, core.clock.ReapCutoff) becomes a failed attempt (outcome LOST, error ``lease
        expired``) at now_ms, exactly as complete_executions would."""

    @abstractmethod
    def running_with_worker_prefix(self, prefix: str) -> list[Execution]:
        """RUNNING executions whose worker_id starts with ``prefix``. A restarted node uses it
        to find the leases its previous incarnation's local workers held (they died with it)."""

    @abstractmethod
    def claim_for_worker(
        self, queues: Sequence[str], worker_id: str, max: int, now_ms: int, tenant: str | None = None,
        turns: ClaimTurns | None = None,
    ) -> list[Grant]:
        """A remote worker's pull, in ONE transaction: up to ``max`` dispatchable executions
        (PENDING, or RETRY_WAIT with available_at <= now_ms) whose ``queue`` is one of
        ``queues``, started exactly as ``start_executions`` starts them (RUNNING, attempt + 1,
        lease_epoch + 1, lease_until, worker_id). Two concurrent claimers never get the same
        execution (PostgreSQL: ``FOR UPDATE SKIP LOCKED``). Grants carry their ``queue``.

        For a worker of ``tenant``: that tenant's, the most urgent tier first (``priority``:
        high, default, batch), the oldest available first within a tier. For a worker of no
        tenant: each tenant with queued rows offers its first ``max`` in that order, with the
        tier it may queue at (high only with ``allow_high_priority``), and ``turns`` (the
        node's, remembered across claims; None: a fresh one) picks the most urgent tier first
        and tenants in weighted fair turns inside it (core/claimturns.py). The work is
        O(tenants with queued rows x ``max``), not O(queued rows)."""

    @abstractmethod
    def has_ready_for_worker(self, queues: Sequence[str], now_ms: int, tenant: str | None = None) -> bool:
        """Whether ``claim_for_worker`` with these arguments would find an execution now: a
        read (no lock, no write transaction), so that a worker's claim that finds nothing
        costs the writer nothing. A hint only: the claim decides, under its transaction."""

    # ---- executions: reads
    @abstractmethod
    def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None: ...

    @abstractmethod
    def list_executions(
        self, job_id: str, limit: int = 50, before: int | None = None, tenant: str | None = None
    ) -> list[Execution]:
        """A job's executions, newest scheduled_at first; ``before`` paginates on scheduled_at."""

    @abstractmethod
    def last_runs(self, job_ids: Sequence[str], tenant: str | None = None) -> dict[str, Execution]:
        """Each job's "last result": its execution with the latest tick among those that
        started (RUNNING, RETRY_WAIT, or ended after a start). Ticks claimed ahead (PENDING),
        executions cancelled or skipped before a start never count. Jobs with none (or of
        another tenant) are absent from the answer. One query for the whole list."""

    @abstractmethod
    def count_executions(self, status: ExecStatus | None = None, tenant: str | None = None) -> int: ...

    # ---- side effects (execution idempotency)
    @abstractmethod
    def record_effect(self, execution_id: str, worker_id: str, lease_epoch: int, key: str, now_ms: int) -> EffectVerdict:
        """Record ``(execution_id, key)`` once, only while the execution is RUNNING at exactly
        ``lease_epoch`` held by ``worker_id``: RECORDED the first time, DUPLICATE after (for any
        epoch or worker), FENCED for a stale epoch and WRONG_WORKER for the current one named by
        another worker (both checked after duplicates, when the key is new), TOO_MANY for a new
        key once the execution recorded ``MAX_EFFECTS_PER_EXECUTION`` (all attempts together;
        a duplicate is still told as one)."""

    # ---- dead-letter queue
    @abstractmethod
    def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]:
        """DEAD executions ordered by execution_id."""

    @abstractmethod
    def replay_dead(self, execution_id: str, now_ms: int, tenant: str | None = None) -> Execution | None:
        """A DEAD execution becomes PENDING with attempt = 0 (a fresh series; lease_epoch keeps
        growing, history fields are kept in ``reason``); a settled job (SUCCEEDED/FAILED)
        becomes ACTIVE again until it settles anew. None if absent or not DEAD."""

    @abstractmethod
    def purge_dead(self, execution_id: str, tenant: str | None = None) -> bool:
        """Delete a DEAD execution (its job keeps its status: a FAILED job stays FAILED).
        False if absent or not DEAD."""
