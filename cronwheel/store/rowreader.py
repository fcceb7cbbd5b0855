"""Stored rows to model objects, the same for every backend (only the JSON decoding differs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cronwheel.core import notify
from cronwheel.core.deadman import Window
from cronwheel.core.model import Execution, Job, JobSpec
from cronwheel.core.tenants import ApiToken, Role, Tenant
from cronwheel.store.common import (
    EXEC_STATUS,
    JOB_STATUS,
    MISFIRE,
    ORIGIN,
    OVERLAP,
    PRIORITY,
    retry_from_json,
)


class RowReader:
    """Rows of the stores' shared column lists (``queries.JOB_COLUMNS``, ``EXEC_COLUMNS``,
    ``TENANT_COLUMNS``, ``TOKEN_COLUMNS``, the same order in every backend) to model objects.

    ``decode`` turns a stored JSON column into its value: SQLite hands back the text
    (``common.loads``), psycopg hands back ``json`` columns already parsed (identity).
    """

    def __init__(self, decode: Callable[[Any], Any]) -> None:
        self.decode = decode

    def job(self, r: Any) -> Job:
        spec = JobSpec(
            target=self.decode(r[14]),
            schedule=r[4],
            run_at=r[13],
            timezone=r[5],
            name=r[12],
            tenant=r[9],
            payload=self.decode(r[15]),
            retry=retry_from_json(r[16]),
            timeout_sec=r[17],
            lease_sec=r[18],
            priority=PRIORITY[r[10]],
            overlap=OVERLAP[r[7]],
            misfire=MISFIRE[r[6]],
            jitter_sec=r[8],
            calendars=tuple(self.decode(r[22])) if r[22] is not None else (),
            active_from=r[24],
            active_until=r[23],
            on_success=tuple(self.decode(r[25])) if r[25] is not None else (),
            on_failure=tuple(self.decode(r[26])) if r[26] is not None else (),
            misfire_grace_sec=r[27],
            managed_by=r[28],
            notify=notify.stored_rules(self.decode(r[29])),
            expect_success_within_ms=r[30],
        )
        spec.set_process(self.decode(r[21]) if r[21] is not None else None)
        window = None if r[32] is None else Window(r[31], r[32], r[33])
        return Job(id=r[0], bucket_id=r[1], status=JOB_STATUS[r[2]], next_run_at=r[3],
                   created_at=r[19], updated_at=r[20], spec=spec, window=window)  # fmt: skip

    def execution(self, r: Any) -> Execution:
        """The field order of ``Execution``."""
        context = None if r[20] is None else self.decode(r[20])
        return Execution(r[0], r[1], r[2], PRIORITY[r[3]], r[4], EXEC_STATUS[r[5]], r[6], r[7], r[8], r[9],
                         r[10], r[11], r[12], r[13], r[14], r[15], r[16], r[17], r[18], r[19],
                         origin=ORIGIN[r[21]], context=context)

    def tenant(self, r: Any) -> Tenant:
        return Tenant(
            name=r[0],
            weight=r[1],
            max_running=r[2],
            max_jobs=r[3],
            submit_rate=r[4],
            submit_burst=r[5],
            allow_shell=bool(r[6]),
            http_allow=None if r[7] is None else tuple(self.decode(r[7])),
            created_at=r[8],
            updated_at=r[9],
            allow_high_priority=bool(r[10]),
            deleting_since=r[11],
        )

    @staticmethod
    def token(r: Any) -> ApiToken:
        return ApiToken(token_id=r[0], token_hash=r[1], role=Role(r[2]), tenant=r[3], name=r[4],
                        created_at=r[5], revoked_at=r[6])  # fmt: skip
