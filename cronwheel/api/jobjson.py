"""Jobs and executions as the API answers them (JSON), built as their structs
(``api/schema.py``: ``Job``, ``Execution``, ``Window``), whose members the OpenAPI document
lists. Pure: no HTTP, no I/O."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from cronwheel.api import schema
from cronwheel.core import notify as nt
from cronwheel.core.deadman import overdue
from cronwheel.core.instants import format_instant
from cronwheel.core.model import DISPATCHABLE, ExecOrigin, Execution, Job, Priority
from cronwheel.core.tenants import Tenant, effective_priority


def window_to_json(job: Job, now_ms: int | None) -> dict[str, Any] | None:
    """The dead-man's window as stored: its deadline, and whether it is overdue now."""
    window = _window(job, now_ms)
    return None if window is None else msgspec.to_builtins(window)


def _window(job: Job, now_ms: int | None) -> schema.Window | None:
    w = job.window
    if w is None:
        return None
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    return schema.Window(deadline=format_instant(w.deadline_at), overdue=overdue(w, now), overdue_since=format_instant(w.overdue_since))


def job_to_json(job: Job, last_run: Execution | None = None, now_ms: int | None = None) -> dict[str, Any]:
    """``last_run``: the job's latest execution that started (``Store.last_runs``), shown as
    ``lastRun`` without its output."""
    return msgspec.to_builtins(job_answer(job, last_run, now_ms))  # type: ignore[no-any-return]


def job_answer(job: Job, last_run: Execution | None = None, now_ms: int | None = None) -> schema.Job:
    """``job_to_json``'s struct, for an answer that is only encoded (a listing): msgspec
    encodes the struct as it is, so the dict in between is not built."""
    spec = job.spec
    return schema.Job(
        job_id=job.id,
        name=spec.name,
        tenant=spec.tenant,
        status=job.status.value,
        schedule=spec.schedule,
        run_at=format_instant(spec.run_at),
        timezone=spec.timezone,
        next_run_at=format_instant(job.next_run_at),
        target=spec.target,
        payload=spec.payload,
        retry_policy=spec.retry.to_json(),
        timeout_sec=spec.timeout_sec,
        lease_sec=spec.lease_sec,
        priority=spec.priority.label,
        overlap=spec.overlap.value,
        misfire=spec.misfire.value,
        jitter_sec=spec.jitter_sec,
        misfire_grace_sec=spec.misfire_grace_sec,
        notify=nt.rules_to_json(spec.notify, redact=True),
        expect_success_within=None if spec.expect_success_within_ms is None else nt.format_window(spec.expect_success_within_ms),
        window=_window(job, now_ms),
        env=spec.env,
        run_as=None if spec.run_as is None else spec.run_as.to_json(),
        shell=spec.shell,
        stdin=spec.stdin,
        calendars=list(spec.calendars),
        active_from=format_instant(spec.active_from),
        active_until=format_instant(spec.active_until),
        on_success=list(spec.on_success),
        on_failure=list(spec.on_failure),
        managed_by=spec.managed_by,
        bucket_id=job.bucket_id,
        created_at=format_instant(job.created_at),
        updated_at=format_instant(job.updated_at),
        last_run=None if last_run is None else _execution(last_run),
    )


def _execution(execution: Execution, with_output: bool = False) -> schema.Execution:
    e = execution
    return schema.Execution(
        execution_id=e.execution_id,
        job_id=e.job_id,
        tenant=e.tenant,
        status=e.status.value,
        priority=e.priority.label,
        scheduled_at=format_instant(e.scheduled_at),
        attempt=e.attempt,
        max_attempts=e.max_attempts,
        lease_epoch=e.lease_epoch,
        worker_id=e.worker_id,
        lease_until=format_instant(e.lease_until),
        available_at=format_instant(e.available_at or None),
        created_at=format_instant(e.created_at or None),
        started_at=format_instant(e.started_at),
        finished_at=format_instant(e.finished_at),
        # a ping's run was timed elsewhere: its start (a --start ping) precedes the report
        # that makes it, so no dispatch lag exists to show (it read -598ms)
        lag_ms=None if e.started_at is None or e.origin is ExecOrigin.PING else e.started_at - e.scheduled_at,
        exit_code=e.exit_code,
        error=e.error,
        reason=e.reason,
        queue=e.queue,
        origin=e.origin.value,
        context=e.context,
        output=e.output if with_output else msgspec.UNSET,
    )


def execution_to_json(execution: Execution, tenant: Tenant, with_output: bool = False) -> dict[str, Any]:
    """``tenant``: the execution's tenant's settings, for the tier a waiting run is queued at."""
    answer = _execution(execution, with_output)
    if execution.priority is Priority.HIGH and execution.status in DISPATCHABLE:
        tier = effective_priority(execution.priority, tenant)
        if tier is not execution.priority:
            answer.effective_priority = tier.label
    return msgspec.to_builtins(answer)  # type: ignore[no-any-return]
