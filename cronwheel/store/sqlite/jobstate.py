"""A job's state follows its executions once it has no further tick (``model.JobStatus``):
the writes that settle it and reopen it, run inside the caller's write transaction."""

from __future__ import annotations

from collections.abc import Mapping

import apsw

from cronwheel.store.common import dumps
from cronwheel.store.sqlite import queries as q


def settle(conn: apsw.Connection, outcomes: Mapping[str, str]) -> None:
    """``outcomes``: job id → the status its execution that just ended settles it in. Only jobs
    with no further tick and nothing else live change; for every other job (the recurring
    ones: nearly all) this costs one primary-key probe."""
    if not outcomes:
        return
    waiting = [str(r[0]) for r in conn.execute(q.UNSETTLED_JOBS, (dumps(sorted(outcomes)),))]
    if waiting:
        conn.executemany(q.SETTLE_JOB, [(job_id, outcomes[job_id]) for job_id in waiting])


def reopen(conn: apsw.Connection, job_id: str) -> None:
    """One of the job's executions runs again: a settled job waits for it (ACTIVE)."""
    conn.execute(q.REOPEN_JOB, (job_id,))
