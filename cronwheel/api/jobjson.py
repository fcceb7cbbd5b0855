"""Jobs and executions as the API answers them (JSON). Pure: no HTTP, no I/O."""

from __future__ import annotations

import time
from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core.deadman import overdue
from cronwheel.core.instants import format_instant as iso_ms
from cronwheel.core.model import Execution, Job


def window_to_json(job: Job, now_ms: int | None) -> dict[str, Any] | None:
    """The dead-man's window as stored: its deadline, and whether it is overdue now."""
    w = job.window
    if w is None:
        return None
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    return {"deadline": iso_ms(w.deadline_at), "overdue": overdue(w, now), "overdueSince": iso_ms(w.overdue_since)}


def job_to_json(job: Job, last_run: Execution | None = None, now_ms: int | None = None) -> dict[str, Any]:
    """``last_run``: the job's latest execution that started (``Store.last_runs``), shown as
    ``lastRun`` without its output."""
    spec = job.spec
    return {
        "jobId": job.id,
        "name": spec.name,
        "tenant": spec.tenant,
        "status": job.status.value,
        "schedule": spec.schedule,
        "runAt": iso_ms(spec.run_at),
        "timezone": spec.timezone,
        "nextRunAt": iso_ms(job.next_run_at),
        "target": spec.target,
        "payload": spec.payload,
        "retryPolicy": spec.retry.to_json(),
        "timeoutSec": spec.timeout_sec,
        "leaseSec": spec.lease_sec,
        "priority": spec.priority.label,
        "overlap": spec.overlap.value,
        "misfire": spec.misfire.value,
        "jitterSec": spec.jitter_sec,
        "misfireGraceSec": spec.misfire_grace_sec,
        "notify": nt.rules_to_json(spec.notify, redact=True),
        "expectSuccessWithin": None if spec.expect_success_within_ms is None else nt.format_window(spec.expect_success_within_ms),
        "window": window_to_json(job, now_ms),
        "env": spec.env,
        "runAs": None if spec.run_as is None else spec.run_as.to_json(),
        "shell": spec.shell,
        "stdin": spec.stdin,
        "calendars": list(spec.calendars),
        "activeFrom": iso_ms(spec.active_from),
        "activeUntil": iso_ms(spec.active_until),
        "onSuccess": list(spec.on_success),
        "onFailure": list(spec.on_failure),
        "managedBy": spec.managed_by,
        "bucketId": job.bucket_id,
        "createdAt": iso_ms(job.created_at),
        "updatedAt": iso_ms(job.updated_at),
        "lastRun": None if last_run is None else execution_to_json(last_run),
    }


def execution_to_json(execution: Execution, with_output: bool = False) -> dict[str, Any]:
    e = execution
    data: dict[str, Any] = {
        "executionId": e.execution_id,
        "jobId": e.job_id,
        "tenant": e.tenant,
        "status": e.status.value,
        "priority": e.priority.label,
        "scheduledAt": iso_ms(e.scheduled_at),
        "attempt": e.attempt,
        "maxAttempts": e.max_attempts,
        "leaseEpoch": e.lease_epoch,
        "workerId": e.worker_id,
        "leaseUntil": iso_ms(e.lease_until),
        "availableAt": iso_ms(e.available_at or None),
        "createdAt": iso_ms(e.created_at or None),
        "startedAt": iso_ms(e.started_at),
        "finishedAt": iso_ms(e.finished_at),
        "lagMs": None if e.started_at is None else e.started_at - e.scheduled_at,
        "exitCode": e.exit_code,
        "error": e.error,
        "reason": e.reason,
        "queue": e.queue,
        "origin": e.origin.value,
        "context": e.context,
    }
    if with_output:
        data["output"] = e.output
    return data
