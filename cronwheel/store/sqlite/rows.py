"""Rows to model objects and back, for the SQLite store (hot paths avoid per-row enum calls)."""

from __future__ import annotations

import json
from typing import Any

from cronwheel.core.model import (
    Execution,
    Job,
    JobSpec,
)
from cronwheel.core.tenants import ApiToken, Role, Tenant
from cronwheel.store.common import (
    EXEC_STATUS,
    JOB_STATUS,
    MISFIRE,
    OVERLAP,
    PRIORITY,
    retry_from_json,
)


def job_from_row(r: Any) -> Job:
    """A row of ``queries.JOB_COLUMNS``."""
    spec = JobSpec(
        target=json.loads(r[14]),
        schedule=r[4],
        run_at=r[13],
        timezone=r[5],
        name=r[12],
        tenant=r[9],
        payload=json.loads(r[15]),
        retry=retry_from_json(r[16]),
        timeout_sec=r[17],
        lease_sec=r[18],
        priority=PRIORITY[r[10]],
        overlap=OVERLAP[r[7]],
        misfire=MISFIRE[r[6]],
        jitter_sec=r[8],
    )
    return Job(
        id=r[0],
        bucket_id=r[1],
        status=JOB_STATUS[r[2]],
        next_run_at=r[3],
        created_at=r[19],
        updated_at=r[20],
        spec=spec,
    )


def execution_from_row(r: Any) -> Execution:
    """A row of ``queries.EXEC_COLUMNS`` (the field order of ``Execution``)."""
    return Execution(r[0], r[1], r[2], PRIORITY[r[3]], r[4], EXEC_STATUS[r[5]], *r[6:20])


def tenant_from_row(r: Any) -> Tenant:
    """A row of ``queries.TENANT_COLUMNS``."""
    return Tenant(
        name=r[0],
        weight=r[1],
        max_running=r[2],
        max_jobs=r[3],
        submit_rate=r[4],
        submit_burst=r[5],
        allow_shell=bool(r[6]),
        http_allow=tuple(json.loads(r[7] or "[]")),
        created_at=r[8],
        updated_at=r[9],
    )


def token_from_row(r: Any) -> ApiToken:
    """A row of ``queries.TOKEN_COLUMNS``."""
    return ApiToken(
        token_id=r[0], token_hash=r[1], role=Role(r[2]), tenant=r[3], name=r[4], created_at=r[5], revoked_at=r[6]
    )
