"""A job's state follows its executions once it has no further tick (``model.JobStatus``):
the writes that settle it and reopen it, run inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from cronwheel.store.postgres import queries as q


def settle(conn: psycopg.Connection[Any], outcomes: Mapping[str, str]) -> None:
    """``outcomes``: job id → the status its execution that just ended settles it in. Only jobs
    with no further tick and nothing else live change; for every other job (the recurring
    ones: nearly all) this costs one primary-key probe."""
    if not outcomes:
        return
    waiting = [r[0] for r in conn.execute(q.UNSETTLED_JOBS, {"ids": sorted(outcomes)})]
    if waiting:
        conn.execute(q.SETTLE_JOBS, {"ids": waiting, "statuses": [outcomes[j] for j in waiting]})


def reopen(conn: psycopg.Connection[Any], job_id: str) -> None:
    """One of the job's executions runs again: a settled job waits for it (ACTIVE)."""
    conn.execute(q.REOPEN_JOB, {"id": job_id})
