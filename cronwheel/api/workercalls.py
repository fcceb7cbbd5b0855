"""The bodies of a remote worker's calls (claim, heartbeat, complete, effects), decoded into
their structs (``api/schema.py``), and the grant it is answered with. Pure: no HTTP, no I/O,
no clock."""

from __future__ import annotations

from typing import Any

import msgspec

from cronwheel.api import schema
from cronwheel.api.decode import decode
from cronwheel.api.schema import (
    WORKER_OUTCOMES,
    ClaimRequest,
    CompleteRequest,
    EffectRequest,
    LeaseRequest,
)
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import (
    MAX_EFFECT_KEY_CHARS,
    MAX_ERROR_CHARS,
    MAX_OUTPUT_CHARS,
    MAX_WORKER_ID_CHARS,
)
from cronwheel.core.model import Grant
from cronwheel.core.records import Completion, Outcome

#: the limits the structs hold these calls to, named here as the tests of the document read them
__all__ = ["MAX_EFFECT_KEY_CHARS", "MAX_WORKER_ID_CHARS", "WORKER_OUTCOMES", "grant_to_json", "parse_claim", "parse_completion", "parse_effect", "parse_heartbeat"]


def parse_heartbeat(body: Any) -> tuple[str, int]:
    """``{workerId, leaseEpoch}`` → ``(worker_id, lease_epoch)``."""
    call = decode(LeaseRequest, body)
    return call.worker_id, call.lease_epoch


def parse_claim(body: Any) -> tuple[str, list[str], int, float]:
    """``{workerId, queues, max?, waitSec?}`` → ``(worker_id, queues, max, wait_sec)``."""
    call = decode(ClaimRequest, body)
    n = 1 if call.max is None else call.max
    wait = 0.0 if call.wait_sec is None else float(call.wait_sec)
    return call.worker_id, list(dict.fromkeys(call.queues)), n, wait


def grant_to_json(g: Grant) -> dict[str, Any]:
    """What a remote worker needs to run and fence an execution it claimed (``schema.Grant``)."""
    answer = schema.Grant(
        execution_id=g.execution_id,
        job_id=g.job_id,
        tenant=g.tenant,
        queue=g.queue,
        lease_epoch=g.lease_epoch,
        attempt=g.attempt,
        scheduled_at=format_instant(g.scheduled_at),
        lease_until=format_instant(g.lease_until),
        lease_sec=g.lease_sec,
        timeout_sec=g.timeout_sec,
        payload=g.payload,
        env=(g.process or {}).get("env") or {},
        context=g.context,
    )
    return msgspec.to_builtins(answer)  # type: ignore[no-any-return]


def parse_completion(execution_id: str, body: Any) -> Completion:
    """``{workerId, leaseEpoch, outcome, exitCode?, error?, output?}`` → ``Completion``.
    Long ``error`` and ``output`` are cut to their tail rather than refused: a worker that
    finished must be able to report it."""
    call = decode(CompleteRequest, body)
    error = None if call.error is None else call.error[-MAX_ERROR_CHARS:]
    output = None if call.output is None else call.output[-MAX_OUTPUT_CHARS:]
    return Completion(execution_id, call.worker_id, call.lease_epoch, Outcome(call.outcome), call.exit_code, error, output)


def parse_effect(body: Any) -> tuple[str, int, str]:
    """``{workerId, leaseEpoch, key}`` → ``(worker_id, lease_epoch, key)``."""
    call = decode(EffectRequest, body)
    return call.worker_id, call.lease_epoch, call.key
