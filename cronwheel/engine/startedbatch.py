"""What one batch of starts hands on: its grants sorted by worker, and one ``execution.started``
record per grant (with the lags that feed the node's dispatch lag). No I/O: the dispatch loop
(engine/dispatchloop.py) sends the grants and emits the records."""

from __future__ import annotations

from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass, field

from cronwheel.core.model import Grant


@dataclass
class StartedBatch:
    by_worker: dict[str, list[Grant]] = field(default_factory=dict)
    records: list[dict[str, object]] = field(default_factory=list)  #: one per grant, in order
    lag_min: int = 0  #: of every grant's start lag (ms); 0 when there is none
    lag_max: int = 0


def started_batch(
    grants: Sequence[Grant],
    worker_of: dict[str, str],
    start_at: int,
    counted_from_ms: int,
    lags: MutableSequence[int],
    http_allow: Callable[[str], tuple[str, ...] | None],
) -> StartedBatch:
    """The batch's grants by worker (``worker_of``: execution id -> worker id), and their
    records. An HTTP grant gets its tenant's ``http_allow`` (the list its redirects obey). A
    scheduled first attempt's lag goes to ``lags`` (the SLO counts scheduled lateness only),
    unless its tick was due before this node started (``counted_from_ms``): that lateness is
    downtime, marked ``dueBeforeStart`` in its record."""
    out = StartedBatch()
    for grant in grants:
        worker_id = worker_of[grant.execution_id]
        out.by_worker.setdefault(worker_id, []).append(grant)
        if "http" in grant.target:
            grant.http_allow = http_allow(grant.tenant)
        lag = start_at - grant.scheduled_at
        record: dict[str, object] = {
            "jobId": grant.job_id, "executionId": grant.execution_id, "leaseEpoch": grant.lease_epoch,
            "attempt": grant.attempt, "worker": worker_id, "tenant": grant.tenant, "lagMs": lag,
            "origin": grant.origin.value,
        }  # fmt: skip
        if grant.attempt == 1 and grant.origin.scheduled:
            if grant.scheduled_at >= counted_from_ms:
                lags.append(lag)
            else:
                record["dueBeforeStart"] = True
        out.lag_min, out.lag_max = (lag, lag) if not out.records else (min(out.lag_min, lag), max(out.lag_max, lag))
        out.records.append(record)
    return out
