"""The consistency checker for failure tests: a history in, violations out.

Feed it what the clients were told (acknowledged submissions), what the store says
(executions), and what the downstream fenced ledger applied; it reports:

* ``lost``: an acknowledged job whose due ticks never reached a terminal outcome, or an
  acknowledged submission the store does not have;
* ``duplicate_job``: one idempotency key turned into two jobs;
* ``duplicate_effect``: an execution whose effect was applied downstream more than once;
* ``duplicate_tick``: two executions for one (job, scheduledAt);
* ``stale_write``: a downstream write accepted at an epoch lower than one already seen, or a
  completion recorded with an epoch that is not the execution's last;
* ``stuck``: an execution still RUNNING/PENDING long after it should have ended;
* ``missing_effect``: a SUCCEEDED execution with no effect downstream.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class History:
    acknowledged: dict[str, str] = field(default_factory=dict)  # idempotency key -> job id
    executions: list[dict[str, Any]] = field(default_factory=list)  # API execution JSON, with jobId
    ledger: list[list[Any]] = field(default_factory=list)  # [execution_id, epoch, effect, amount]
    jobs_in_store: set[str] = field(default_factory=set)


def check(h: History, *, expect_terminal: bool = True) -> dict[str, list[Any]]:
    v: dict[str, list[Any]] = defaultdict(list)
    # every acknowledged submission exists, once
    by_job = Counter(h.acknowledged.values())
    for job_id in h.acknowledged.values():
        if job_id not in h.jobs_in_store:
            v["lost"].append(("job", job_id))
    if len(by_job) != len(h.acknowledged):
        v["duplicate_job"].extend(j for j, n in by_job.items() if n > 1)
    # one execution per tick
    ticks = Counter((e["jobId"], e["scheduledAt"]) for e in h.executions)
    v["duplicate_tick"].extend(t for t, n in ticks.items() if n > 1)
    # effects: at most one per execution, at the epoch it finished with
    applied = Counter(row[0] for row in h.ledger)
    v["duplicate_effect"].extend(x for x, n in applied.items() if n > 1)
    by_id = {e["executionId"]: e for e in h.executions}
    for execution_id, epoch, *_ in h.ledger:
        ex = by_id.get(execution_id)
        if ex is not None and epoch > ex["leaseEpoch"]:
            v["stale_write"].append((execution_id, epoch, ex["leaseEpoch"]))
    for e in h.executions:
        if e["status"] == "SUCCEEDED" and applied[e["executionId"]] == 0:
            v["missing_effect"].append(e["executionId"])
        if expect_terminal and e["status"] in ("PENDING", "RUNNING", "RETRY_WAIT"):
            v["stuck"].append((e["executionId"], e["status"]))
    # every acknowledged job ran (one-offs: the single tick reached SUCCEEDED)
    if expect_terminal:
        succeeded_jobs = {e["jobId"] for e in h.executions if e["status"] == "SUCCEEDED"}
        for job_id in set(h.acknowledged.values()):
            if job_id in h.jobs_in_store and job_id not in succeeded_jobs:
                v["lost"].append(("run", job_id))
    return {k: sorted(map(str, vs)) for k, vs in v.items() if vs}
