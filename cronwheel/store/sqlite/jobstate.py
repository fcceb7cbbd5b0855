"""A job's state follows its executions once it has no further tick (``model.JobStatus``):
the writes that settle it and reopen it, run inside the caller's write transaction."""

from __future__ import annotations

from collections.abc import Mapping

import apsw

from cronwheel.store.common import json_array
from cronwheel.store.sqlite import queries as q


def settle(conn: apsw.Connection, outcomes: Mapping[str, str]) -> None:
    """``outcomes``: job id → the status its execution that just ended settles it in. Only jobs
    with no further tick and nothing else live change; the batch is one statement, which costs
    every other job (the recurring ones: nearly all) one primary-key probe."""
    if outcomes:
        conn.execute(q.SETTLE_JOBS, (json_array(list(outcomes.items())),))


def reopen(conn: apsw.Connection, job_id: str) -> None:
    """One of the job's executions runs again: a settled job waits for it (ACTIVE)."""
    conn.execute(q.REOPEN_JOB, (job_id,))
