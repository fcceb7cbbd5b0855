"""The node's service for executions: their history, the remote workers' side (long-poll
claims, heartbeats, results, effects) and the dead-letter queue.

``ExecutionsMixin`` is a part of ``Node`` (engine/parts.py says how the parts fit); the long
polls' waiting is ``Node.polls`` (engine/longpoll.py).
"""

from __future__ import annotations

from collections.abc import Callable

from cronwheel.core.model import ExecStatus, Execution, Grant
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    EffectVerdict,
    HeartbeatResult,
    LeaseVerdict,
)
from cronwheel.engine.notify_service import refuse_ping_job
from cronwheel.engine.service import NotFound, Unavailable
from cronwheel.engine.tenancy import TenancyMixin


class ExecutionsMixin(TenancyMixin):
    # ---- history
    async def list_executions(
        self, job_id: str, limit: int = 50, before: int | None = None, tenant: str | None = None
    ) -> list[Execution]:
        if await self.get_job(job_id, tenant) is None:
            raise NotFound(f"no job {job_id!r}")
        return await self._read(lambda s: s.list_executions(job_id, limit, before, tenant))

    async def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None:
        return await self._read(lambda s: s.get_execution(execution_id, tenant))

    # ---- remote workers
    async def claim_for_worker(
        self, queues: list[str], worker_id: str, max: int, wait_sec: float = 0, tenant: str | None = None,
        alive: Callable[[], bool] | None = None,
    ) -> list[Grant]:
        """Up to ``max`` executions of ``queues`` for a remote worker. With nothing to take, wait
        up to ``wait_sec``: woken at once when this node claims, triggers, retries or replays
        an execution of one of the queues, and re-polling the store every second for what
        other nodes (or time, for retries and jitter) made dispatchable. ``alive``: whether the
        caller still waits (its connection is open): a dead worker's long poll must not go on
        taking leases that nobody will run. A node that is stopping answers its waiting polls
        at once (so that its API can close) and refuses new ones: answered empty at once, a
        worker would ask again at once, over and over for the whole drain."""
        if not self.polls.open:
            raise Unavailable("the node is stopping: claim from another node, or once it is back")

        async def take() -> list[Grant]:
            now = self.clock.now_ms()
            # a read first: a tenant's flood of claims that find nothing (idle workers polling)
            # took the writer that every neighbour's claims and results wait for. A row made
            # ready just after this read is not lost: it is still there for the next poll, and
            # this node's own wake-ups (``polls.wake``) set the poll's event meanwhile
            if not await self._read(lambda s: s.has_ready_for_worker(queues, now, tenant)):
                return []
            turns = self.claim_turns if tenant is None else None
            grants = await self._write(lambda s: s.claim_for_worker(queues, worker_id, max, now, tenant, turns))
            for g in grants:
                due_before = g.attempt == 1 and g.origin.scheduled and g.scheduled_at < self.dispatcher.counted_from_ms
                before = {"dueBeforeStart": True} if due_before else {}
                self.events.emit(
                    "execution.started", jobId=g.job_id, executionId=g.execution_id,
                    leaseEpoch=g.lease_epoch, attempt=g.attempt, worker=worker_id,
                    tenant=g.tenant, queue=g.queue, lagMs=now - g.scheduled_at, origin=g.origin.value, **before,
                )
            return grants

        return await self.polls.poll(queues, take, wait_sec, alive, tenant)

    async def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int) -> HeartbeatResult:
        now = self.clock.now_ms()
        result = await self._write(lambda s: s.heartbeat(execution_id, worker_id, lease_epoch, now))
        if result.verdict is not LeaseVerdict.OK:  # a remote worker's zombie, counted as a local one's is
            self.dispatcher.fenced(execution_id, lease_epoch, worker_id, "heartbeat", result.verdict.value)
        return result

    async def complete(self, completion: Completion) -> CompletionResult:
        (result,) = await self.dispatcher.finish([completion])
        return result

    async def record_effect(self, execution_id: str, worker_id: str, lease_epoch: int, key: str) -> EffectVerdict:
        now = self.clock.now_ms()
        verdict = await self._write(lambda s: s.record_effect(execution_id, worker_id, lease_epoch, key, now))
        fields = {"executionId": execution_id, "leaseEpoch": lease_epoch, "worker": worker_id, "key": key}
        if verdict is EffectVerdict.RECORDED:  # a row written: a line each
            self.events.emit("effect.recorded", **fields)
        else:  # nothing was stored: a line a minute says so
            self.events.emit_now_and_then(self.effect_log, (execution_id, verdict), self.clock.monotonic(),
                                          "effect." + verdict.value, **fields)  # fmt: skip
        return verdict

    # ---- dead-letter queue
    async def list_dead(self, tenant: str | None = None, limit: int = 100, after: str | None = None) -> list[Execution]:
        return await self._read(lambda s: s.list_dead(tenant, limit, after))

    async def replay_dead(self, execution_id: str, tenant: str | None = None) -> Execution:
        dead = await self.get_execution(execution_id, tenant)
        job = None if dead is None else await self.get_job(dead.job_id, tenant)
        if job is not None:
            refuse_ping_job(job, "replay a run of")
            if dead is not None and dead.status is ExecStatus.DEAD:  # (else refused below, taking no token)
                self.admit_submission(job.spec, what="replay")  # 429 when the tenant's bucket is empty
        now = self.clock.now_ms()
        ex = await self._write(lambda s: s.replay_dead(execution_id, now, tenant))
        if ex is None:
            raise NotFound(f"no dead-lettered execution {execution_id!r}")
        self.events.emit("dlq.replayed", executionId=execution_id)
        self.dispatcher.add([ex])
        return ex

    async def purge_dead(self, execution_id: str, tenant: str | None = None) -> None:
        if not await self._write(lambda s: s.purge_dead(execution_id, tenant)):
            raise NotFound(f"no dead-lettered execution {execution_id!r}")
        self.events.emit("dlq.purged", executionId=execution_id)
