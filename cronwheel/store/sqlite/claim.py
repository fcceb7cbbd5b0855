"""The batched atomic claim (one execution per tick, by compare-and-set) for the SQLite store.

Runs inside the caller's ``BEGIN IMMEDIATE`` transaction: read the due rows through the
``jobs_due`` index, let ``core.planning`` decide per job, then write set-wise: one
``executemany`` of compare-and-set advances, one of inserted executions. The write lock
taken by ``BEGIN IMMEDIATE`` already serialises claimers on one file; the compare-and-set
on ``next_run_at`` and the unique execution id are what make the claim correct anyway
(and are what a PostgreSQL backend relies on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import apsw

from cronwheel.core import schedule
from cronwheel.core.calendar import bounded
from cronwheel.core.calendarindex import CalendarIndex
from cronwheel.core.ids import execution_id
from cronwheel.core.limits import MAX_WAITING_RUNS
from cronwheel.core.model import ExecOrigin, ExecStatus, Execution
from cronwheel.core.planning import decide_claim, plan_claim
from cronwheel.core.records import ClaimResult
from cronwheel.core.schedule import ScheduleError
from cronwheel.store.calendars import CalendarBook, FairCache
from cronwheel.store.common import EXEC_STATUS, MISFIRE, ORIGIN, OVERLAP, PRIORITY, dumps, loads
from cronwheel.store.sqlite import jobstate
from cronwheel.store.sqlite import queries as q

_PENDING = "PENDING"
_SKIPPED = "SKIPPED"
_LIVE = ("PENDING", "RUNNING", "RETRY_WAIT")
_SCHEDULED = ExecOrigin.SCHEDULE.value
_CATCH_UP = ExecOrigin.CATCH_UP.value


def _never(_after: int) -> int | None:
    return None


def _ready_order(row: tuple[Any, ...]) -> tuple[int, int, str]:
    """An execution row's place in the ready index: (available_at, job_order, execution_id)."""
    return row[6], row[13], row[0]


def executemany_each(conn: apsw.Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> list[bool] | None:
    """``executemany`` that reports which rows changed something.

    Fast path: one ``executemany``; if every row changed exactly one row, returns None.
    Otherwise the batch is rolled back to a savepoint and replayed row by row, and the
    per-row outcome is returned (used for ``ON CONFLICT DO NOTHING`` and compare-and-set).
    """
    if not rows:
        return None
    conn.execute("SAVEPOINT each")
    before = conn.total_changes()
    conn.executemany(sql, rows)
    if conn.total_changes() - before == len(rows):
        conn.execute("RELEASE each")
        return None
    conn.execute("ROLLBACK TO each")
    flags = []
    for row in rows:
        before = conn.total_changes()
        conn.execute(sql, row)
        flags.append(conn.total_changes() - before == 1)
    conn.execute("RELEASE each")
    return flags


def claim(
    conn: apsw.Connection, buckets_json: str, now_ms: int, limit: int, result: ClaimResult, ahead_ms: int = 0,
    only_json: str | None = None, *, held: FairCache[CalendarIndex],
) -> None:
    """``only_json``: a JSON array of job ids to claim from (of those due), for the engine's
    isolation of a job whose claim fails (see Store.claim_due). ``held``: the store's
    calendar indexes (store/calendars.py)."""
    # overlap-guarded jobs are claimed at their tick only (see Store.claim_due): the statement
    # leaves them out of a claim ahead while it reads the due index (which holds the policy),
    # so that a batch of them held back neither takes the batch's place nor hides the jobs
    # behind it
    if only_json is None:
        rows: list[Any] = conn.execute(q.CLAIM_SELECT, (buckets_json, now_ms + ahead_ms, limit, now_ms)).fetchall()
    else:
        rows = conn.execute(q.CLAIM_SELECT_ONLY, (buckets_json, now_ms + ahead_ms, limit, only_json, now_ms)).fetchall()
    if not rows:
        return

    guarded = [r[1] for r in rows if r[6] != "allow"]
    live: dict[str, list[tuple[str, str]]] = {}
    if guarded:
        for job_id, eid, status in conn.execute(q.GUARDED_LIVE, (dumps(guarded),)):
            live.setdefault(job_id, []).append((eid, status))

    # the waiting runs of recurring allow jobs (a one-off's single tick cannot pile up)
    allowed = [r[0] for r in rows if r[6] == "allow" and r[3] is not None]  # their job_order
    at_most: dict[int, int] = {}  # per job_order, an upper bound (see q.WAITING_RUNS)
    if allowed:
        at_most = {rid: n for rid, n in conn.execute(q.WAITING_RUNS, (dumps(allowed), now_ms, MAX_WAITING_RUNS)) if n}

    next_fire = schedule.next_fire
    advances: list[tuple[int, int | None, int]] = []  # (rowid, new next_run_at, old next_run_at)
    advanced_ids: list[str] = []  # parallel to advances
    #: per advanced job, its execution rows: (eid, job_id, tenant, priority, tick, status,
    #: available_at, created_at, finished_at, reason, max_attempts, overlap_guard, origin,
    #: job_order)
    per_job: list[list[tuple[Any, ...]]] = []  # parallel to advances
    broken_execs: list[list[tuple[Any, ...]]] = []  # parallel to broken
    #: per advanced job, the live executions overlap=replace cancels: (eid, was running)
    per_job_cancels: list[list[tuple[str, bool]]] = []  # parallel to advances
    cancel_reasons: list[str | None] = []  # parallel to advances
    broken: list[tuple[int, int]] = []

    queues = {r[1]: r[11] for r in rows if r[11] is not None}  # queue targets' jobs
    book = CalendarBook.load([(r[8], r[12]) for r in rows if r[12] is not None], _Calendars(conn), held, loads)
    for rid, job_id, due_at, text, tz, misfire, overlap, jitter, tenant, prio, max_att, _queue, cals, until, grace in rows:
        next_tick: Callable[[int], int | None]
        if text is None:
            next_tick = _never
        else:
            def next_tick(t: int, _s: str = text, _j: str = job_id, _z: str = tz) -> int | None:
                return next_fire(_s, _j, _z, t)
        if until is not None:
            next_tick = bounded(next_tick, None, until)
        try:
            plan_until = now_ms + ahead_ms if overlap == "allow" else now_ms
            plan = plan_claim(next_tick, due_at, now_ms, MISFIRE[misfire], None if grace is None else grace * 1000,
                              plan_until)  # fmt: skip
            waiting = at_most.get(rid, 0)
            if waiting + len(plan.run) > MAX_WAITING_RUNS:  # it may be held back: count exactly
                [(waiting,)] = conn.execute(q.WAITING_RUNS_OF_JOB, (rid, job_id, now_ms, MAX_WAITING_RUNS))
            decision = decide_claim(job_id, plan, OVERLAP[overlap], live.get(job_id, ()),
                                    book.exclusions(tenant, tz, cals), jitter, waiting, next_tick, now_ms)  # fmt: skip
        except ScheduleError as exc:  # a stored schedule that no longer evaluates (tzdata?)
            broken.append((rid, due_at))
            broken_execs.append([(execution_id(job_id, due_at), job_id, tenant, prio, due_at, _SKIPPED,
                             due_at, now_ms, now_ms, f"schedule error, job paused: {exc}",
                             max_att, 0, _SCHEDULED, rid)])
            continue
        advances.append((rid, decision.next_run_at, due_at))
        advanced_ids.append(job_id)
        guard = 0 if overlap == "allow" else 1
        per_job.append([(execution_id(job_id, row.tick), job_id, tenant, prio, row.tick,
                         _PENDING if row.run else _SKIPPED, row.available_at, now_ms, None if row.run else now_ms,
                         row.reason, max_att, guard, _CATCH_UP if row.catch_up else _SCHEDULED, rid)
                        for row in decision.rows])  # fmt: skip
        per_job_cancels.append(decision.cancels)
        cancel_reasons.append(decision.cancel_reason)

    # Compare-and-set first: only jobs whose next_run_at we moved get executions.
    ok = executemany_each(conn, q.CLAIM_ADVANCE, advances)
    broken_ok = executemany_each(conn, q.CLAIM_PAUSE_BROKEN, broken)
    flags = (ok or [True] * len(advances)) + (broken_ok or [True] * len(broken))
    for i, (_, next_run_at, _) in enumerate(advances):
        if flags[i]:
            result.jobs_claimed += 1
            if next_run_at is not None:
                result.next_runs.append(next_run_at)
    inserts = [row for keep, execs in zip(flags, per_job + broken_execs, strict=True)
               if keep for row in execs]
    # in the ready index's order (available_at, job_order, execution_id): the dispatcher starts
    # a claim's executions in the order it returns them, so a herd's starts then take their
    # ready entries off the index page by page instead of one page each (docs/benchmarks.md)
    inserts.sort(key=_ready_order)
    for i, cancels in enumerate(per_job_cancels):
        if cancels and flags[i]:
            conn.executemany(q.CANCEL_EXECUTION, [(eid, now_ms, cancel_reasons[i]) for eid, _ in cancels])
            result.replaced.extend(eid for eid, running in cancels if running)
    inserted = executemany_each(conn, q.INSERT_EXECUTION, inserts)
    # a job whose last tick was claimed without a run (skipped) has nothing to wait for
    unrun = {advanced_ids[i]: "FAILED" for i, (_, next_run_at, _) in enumerate(advances)
             if flags[i] and next_run_at is None and not any(row[5] == _PENDING for row in per_job[i])}
    jobstate.settle(conn, unrun)
    if queues:
        conn.executemany(q.SET_EXECUTION_QUEUE, [(row[0], queues[row[1]]) for row in inserts if row[1] in queues])
    for i, row in enumerate(inserts):
        if inserted is not None and not inserted[i]:
            continue  # that tick already had its execution
        eid, job_id, tenant, prio, tick, status, avail, created, finished, reason, max_att, _, origin, _ = row
        ex = Execution(eid, job_id, tenant, PRIORITY[prio], tick, EXEC_STATUS[status], 0, 0, None,
                       None, avail, created, None, finished, None, None, None, reason, max_att,
                       queues.get(job_id) if queues else None, origin=ORIGIN[origin])
        (result.executions if ex.status is ExecStatus.PENDING else result.skipped).append(ex)


class _Calendars:
    """``CalendarRows`` in the claim's transaction."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def revisions(self, pairs: list[list[str]]) -> list[Any]:
        return self._conn.execute(q.CALENDAR_REVISIONS, (dumps(pairs),)).fetchall()

    def packed(self, pairs: list[list[str]]) -> list[Any]:
        return self._conn.execute(q.CALENDARS_BY_NAME, (dumps(pairs),)).fetchall()

    def specs(self, pairs: list[list[str]]) -> list[Any]:
        return self._conn.execute(q.CALENDAR_SPECS_BY_NAME, (dumps(pairs),)).fetchall()

    def keep(self, built: list[tuple[str, str, int, bytes]]) -> None:
        self._conn.executemany(q.STORE_CALENDAR_INDEX, built)
