"""What a batch of job submissions creates, decided once for every backend.

Pure (no driver, no clock): each backend supplies, inside its write transaction, how to look
up what is already stored (an idempotency key's first request, a name's holder, a tenant's
registered jobs; the PostgreSQL store reads them for the whole batch under advisory locks, the
SQLite one, holding the only write lock, one at a time), calls :func:`decide_creations`, and
writes the rows with its own SQL. As with completions (``completions.py``), one decision keeps
replays, name clashes and quotas identical on both stores.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from cronwheel.core.ids import bucket_of
from cronwheel.core.notify import rules_to_json
from cronwheel.core.records import CreateOutcome, CreateResult, NewJob
from cronwheel.store.common import dumps, json_list, process_text, retry_to_json

#: an idempotency key's first request: (request hash, job id, its first next run)
KeyedRequest = tuple[str | None, str, int | None]


@dataclass
class Creations:
    """One result per submission, in order, and the rows of those that are created."""

    results: list[CreateResult] = field(default_factory=list)
    #: jobs: id, bucket_id, status, next_run_at, schedule, timezone, misfire, overlap,
    #: jitter_sec, tenant, priority, max_attempts, queue, calendars, active_until, misfire_grace_sec
    job_rows: list[tuple[Any, ...]] = field(default_factory=list)
    #: job_definitions: job_id, name, run_at, target, payload, retry, timeout_sec, lease_sec,
    #: process, active_from, on_success, on_failure, managed_by, notify, expect_ms
    def_rows: list[tuple[Any, ...]] = field(default_factory=list)
    name_rows: list[tuple[str, str, str]] = field(default_factory=list)  #: tenant, name, job_id
    #: idempotency_keys: tenant, key, request_hash, job_id, next_run_at
    key_rows: list[tuple[Any, ...]] = field(default_factory=list)
    watched: list[tuple[str, int | None]] = field(default_factory=list)  #: jobs with rules or a window: (id, window ms)
    tenants: set[str] = field(default_factory=set)


def decide_creations(
    jobs: Sequence[NewJob],
    stored_key: Callable[[str, str], KeyedRequest | None],
    stored_holder: Callable[[str, str], str | None],
    registered: Callable[[str], int],
    closed: Collection[str] = (),
) -> Creations:
    """Decide a batch: a key seen before replays (same request) or conflicts, a name held by a
    live job is taken, a tenant at its ``max_jobs`` is over quota; the rest are created. Keys
    and names taken earlier in the batch count as stored. ``registered(tenant)`` (the tenant's
    ACTIVE and PAUSED jobs before this batch) is asked once per capped tenant. A job of a
    tenant in ``closed`` (being deleted) is refused before anything else is looked at: even a
    replay of its key, which would answer with a job that is going away."""
    out = Creations()
    batch_keys: dict[tuple[str, str], KeyedRequest] = {}
    batch_names: dict[tuple[str, str], str] = {}
    counted: dict[str, int] = {}  # tenant -> jobs registered before this batch
    created: dict[str, int] = {}  # tenant -> jobs created in this batch so far
    for nj in jobs:
        spec = nj.spec
        tenant = spec.tenant
        if tenant in closed:
            out.results.append(CreateResult(CreateOutcome.TENANT_DELETING, None, None))
            continue
        key = None
        if nj.idempotency_key is not None:
            key = (tenant, nj.idempotency_key)
            seen = batch_keys.get(key) or stored_key(*key)
            if seen is not None:
                outcome = CreateOutcome.REPLAYED if seen[0] == nj.request_hash else CreateOutcome.CONFLICT
                out.results.append(CreateResult(outcome, seen[1], seen[2]))
                continue
        name_key = None if spec.name is None else (tenant, spec.name)
        if name_key is not None:
            holder = batch_names.get(name_key) or stored_holder(*name_key)
            if holder is not None:
                out.results.append(CreateResult(CreateOutcome.NAME_TAKEN, holder, None))
                continue
        if nj.max_jobs is not None:
            if tenant not in counted:
                counted[tenant] = registered(tenant)
            if counted[tenant] + created.get(tenant, 0) >= nj.max_jobs:
                out.results.append(CreateResult(CreateOutcome.QUOTA_EXCEEDED, None, None))
                continue
        created[tenant] = created.get(tenant, 0) + 1
        if name_key is not None:
            batch_names[name_key] = nj.job_id
            out.name_rows.append((tenant, name_key[1], nj.job_id))
        if key is not None:
            batch_keys[key] = (nj.request_hash, nj.job_id, nj.next_run_at)
            out.key_rows.append((tenant, nj.idempotency_key, nj.request_hash, nj.job_id, nj.next_run_at))
        out.tenants.add(tenant)
        retry = spec.retry
        out.job_rows.append((
            nj.job_id, bucket_of(nj.job_id), "ACTIVE", nj.next_run_at, spec.schedule,
            spec.timezone, spec.misfire.value, spec.overlap.value, spec.jitter_sec, tenant,
            int(spec.priority), retry.max_attempts, spec.target.get("queue"),
            json_list(spec.calendars), spec.active_until, spec.misfire_grace_sec,
        ))  # fmt: skip
        out.def_rows.append((
            nj.job_id, spec.name, spec.run_at, dumps(spec.target), dumps(spec.payload),
            retry_to_json(retry), float(spec.timeout_sec), float(spec.lease_sec),
            process_text(spec), spec.active_from, json_list(spec.on_success), json_list(spec.on_failure),
            spec.managed_by, dumps(rules_to_json(spec.notify)), spec.expect_success_within_ms,
        ))  # fmt: skip
        if spec.notify or spec.expect_success_within_ms is not None:
            out.watched.append((nj.job_id, spec.expect_success_within_ms))
        out.results.append(CreateResult(CreateOutcome.CREATED, nj.job_id, nj.next_run_at))
    return out
