"""The bodies of a remote worker's calls (claim, heartbeat, complete, effects) and the grant it
is answered with. Pure: no HTTP, no I/O, no clock."""

from __future__ import annotations

from typing import Any

from cronwheel.api.fields import (
    as_choice,
    as_integer,
    as_number,
    as_string,
    bad,
    reject_unknown,
    type_name,
)
from cronwheel.api.targets import parse_target_value
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import (
    MAX_CLAIM,
    MAX_CLAIM_QUEUES,
    MAX_CLAIM_WAIT_SEC,
    MAX_EFFECT_KEY_CHARS,
    MAX_ERROR_CHARS,
    MAX_OUTPUT_CHARS,
    MAX_WORKER_ID_CHARS,
)
from cronwheel.core.model import Grant
from cronwheel.core.records import Completion, Outcome


def _worker_fields(body: Any, allowed: tuple[str, ...]) -> tuple[dict[str, Any], str, int]:
    if not isinstance(body, dict):
        raise bad(None, f"the request body must be a JSON object, not {type_name(body)}", status=400, code="invalid_body")
    reject_unknown(None, body, allowed)
    if body.get("workerId") is None:
        raise bad("workerId", "workerId is required")
    worker_id = as_string("workerId", body["workerId"])
    if not worker_id or len(worker_id) > MAX_WORKER_ID_CHARS:
        raise bad("workerId", f"workerId must be 1 to {MAX_WORKER_ID_CHARS} characters")
    if body.get("leaseEpoch") is None:
        raise bad("leaseEpoch", "leaseEpoch is required (the fencing token received with the lease)")
    epoch = as_integer("leaseEpoch", body["leaseEpoch"], 0, 2**63 - 1)
    return body, worker_id, epoch


def parse_heartbeat(body: Any) -> tuple[str, int]:
    """``{workerId, leaseEpoch}`` → ``(worker_id, lease_epoch)``."""
    _, worker_id, epoch = _worker_fields(body, ("workerId", "leaseEpoch"))
    return worker_id, epoch




def parse_claim(body: Any) -> tuple[str, list[str], int, float]:
    """``{workerId, queues, max?, waitSec?}`` → ``(worker_id, queues, max, wait_sec)``."""
    if not isinstance(body, dict):
        raise bad(None, f"the request body must be a JSON object, not {type_name(body)}", status=400, code="invalid_body")
    reject_unknown(None, body, ("workerId", "queues", "max", "waitSec"))
    if body.get("workerId") is None:
        raise bad("workerId", "workerId is required")
    worker_id = as_string("workerId", body["workerId"])
    if not worker_id or len(worker_id) > MAX_WORKER_ID_CHARS:
        raise bad("workerId", f"workerId must be 1 to {MAX_WORKER_ID_CHARS} characters")
    queues = body.get("queues")
    if not isinstance(queues, list) or not 1 <= len(queues) <= MAX_CLAIM_QUEUES:
        raise bad("queues", f"queues must be a list of 1 to {MAX_CLAIM_QUEUES} queue names")
    names: list[str] = []
    for i, name in enumerate(queues):
        names.append(parse_target_value(f"queues[{i}]", "queue", name))
    n = 1 if body.get("max") is None else as_integer("max", body["max"], 1, MAX_CLAIM)
    wait = 0.0 if body.get("waitSec") is None else as_number("waitSec", body["waitSec"], 0, MAX_CLAIM_WAIT_SEC, " seconds")
    return worker_id, list(dict.fromkeys(names)), n, wait


def grant_to_json(g: Grant) -> dict[str, Any]:
    """What a remote worker needs to run and fence an execution it claimed."""
    return {
        "executionId": g.execution_id,
        "jobId": g.job_id,
        "tenant": g.tenant,
        "queue": g.queue,
        "leaseEpoch": g.lease_epoch,
        "attempt": g.attempt,
        "scheduledAt": format_instant(g.scheduled_at),
        "leaseUntil": format_instant(g.lease_until),
        "leaseSec": g.lease_sec,
        "timeoutSec": g.timeout_sec,
        "payload": g.payload,
        "env": (g.process or {}).get("env") or {},
        "context": g.context,
    }


#: the outcomes a worker may report; ``lost`` is the daemon's own verdict
WORKER_OUTCOMES = (Outcome.SUCCEEDED.value, Outcome.FAILED.value, Outcome.TIMED_OUT.value)


def parse_completion(execution_id: str, body: Any) -> Completion:
    """``{workerId, leaseEpoch, outcome, exitCode?, error?, output?}`` → ``Completion``.
    Long ``error`` and ``output`` are cut to their tail rather than refused: a worker that
    finished must be able to report it."""
    data, worker_id, epoch = _worker_fields(body, ("workerId", "leaseEpoch", "outcome", "exitCode", "error", "output"))
    if data.get("outcome") is None:
        raise bad("outcome", f"outcome is required: one of {', '.join(WORKER_OUTCOMES)}")
    outcome = Outcome(as_choice("outcome", data["outcome"], WORKER_OUTCOMES))
    exit_code = None
    if data.get("exitCode") is not None:
        exit_code = as_integer("exitCode", data["exitCode"], -(2**31), 2**31 - 1)
    error = as_string("error", data["error"])[-MAX_ERROR_CHARS:] if data.get("error") is not None else None
    output = as_string("output", data["output"])[-MAX_OUTPUT_CHARS:] if data.get("output") is not None else None
    return Completion(execution_id, worker_id, epoch, outcome, exit_code, error, output)


def parse_effect(body: Any) -> tuple[str, int, str]:
    """``{workerId, leaseEpoch, key}`` → ``(worker_id, lease_epoch, key)``."""
    data, worker_id, epoch = _worker_fields(body, ("workerId", "leaseEpoch", "key"))
    if data.get("key") is None:
        raise bad("key", "key is required (the idempotency key of the side effect)")
    key = as_string("key", data["key"])
    if not key or len(key) > MAX_EFFECT_KEY_CHARS:
        raise bad("key", f"key must be 1 to {MAX_EFFECT_KEY_CHARS} characters")
    return worker_id, epoch, key
