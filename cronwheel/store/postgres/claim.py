"""The batched atomic claim (one execution per tick, by compare-and-set) for the PostgreSQL store.

Runs inside the caller's transaction, in five statements whatever the batch size:

1. ``CLAIM_SELECT``: up to ``limit`` due jobs of the buckets, ``FOR NO KEY UPDATE SKIP
   LOCKED``: two schedulers (threads, processes, nodes) claiming at once take disjoint rows
   and never wait for each other;
2. ``GUARDED_LIVE`` (only when a due job has overlap forbid/replace): their live executions;
3. ``core.planning`` decides per job, in Python;
4. ``CLAIM_ADVANCE``: the compare-and-set of every job's next_run_at from the value read, as
   one ``UPDATE … FROM unnest(…)``; only the jobs it moved get executions;
5. ``INSERT_EXECUTIONS``: every new tick as one ``INSERT … SELECT unnest(…) ON CONFLICT DO
   NOTHING RETURNING``, so a tick that already exists (a trigger at the same millisecond)
   stays one execution and is not reported as new.

The row locks make the compare-and-set succeed in practice; the compare-and-set and the
unique execution id are what make the claim correct whatever the locking (the same
guarantees the SQLite store relies on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

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
from cronwheel.store.common import EXEC_STATUS, MISFIRE, ORIGIN, OVERLAP, PRIORITY
from cronwheel.store.postgres import jobstate
from cronwheel.store.postgres import queries as q
from cronwheel.store.postgres.rows import parsed

_PENDING = "PENDING"
_SKIPPED = "SKIPPED"
#: the columns of ``INSERT_EXECUTIONS``, in the order of the tuples built below
_EXEC_FIELDS = ("execution_id", "job_id", "tenant", "priority", "scheduled_at", "status",
                "available_at", "created_at", "finished_at", "reason", "max_attempts",
                "overlap_guard", "origin")  # fmt: skip
_SCHEDULED = ExecOrigin.SCHEDULE.value
_CATCH_UP = ExecOrigin.CATCH_UP.value


def _never(_after: int) -> int | None:
    return None


def columns(rows: list[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    """Row tuples to one list per column: the arrays an ``unnest(…)`` statement binds."""
    if not rows:
        return {name: [] for name in names}
    return dict(zip(names, (list(col) for col in zip(*rows, strict=True)), strict=True))


def insert_executions(conn: psycopg.Connection[Any], rows: list[tuple[Any, ...]]) -> set[str]:
    """Insert execution rows (``_EXEC_FIELDS`` order); returns the ids actually inserted."""
    if not rows:
        return set()
    return {r[0] for r in conn.execute(q.INSERT_EXECUTIONS, columns(rows, _EXEC_FIELDS))}


def claim(
    conn: psycopg.Connection[Any], buckets: list[int], now_ms: int, limit: int, result: ClaimResult,
    ahead_ms: int = 0, only: list[str] | None = None, *, held: FairCache[CalendarIndex],
) -> None:
    """``ahead_ms``: jobs with overlap ``allow`` are claimed up to ``now_ms + ahead_ms``
    (their executions become dispatchable at their tick); guarded jobs only once due.
    ``only``: claim from these job ids alone (of those due), for the engine's isolation of a
    job whose claim fails (see Store.claim_due). ``held``: the store's calendar indexes
    (store/calendars.py)."""
    until = now_ms + max(0, ahead_ms)
    params = {"buckets": buckets, "now": now_ms, "until": until, "limit": limit}
    if only is None:
        rows = conn.execute(q.CLAIM_SELECT, params).fetchall()
    else:
        rows = conn.execute(q.CLAIM_SELECT_ONLY, {**params, "only": only}).fetchall()
    if not rows:
        return

    guarded = [r[0] for r in rows if r[5] != "allow"]
    #: per guarded job, its live executions: running first, then the newest tick first
    live: dict[str, list[tuple[str, str]]] = {}
    if guarded:
        found = conn.execute(q.GUARDED_LIVE, {"ids": guarded}).fetchall()
        found.sort(key=lambda r: (r[0], r[2] != "RUNNING", -r[3]))
        for job_id, eid, status, _ in found:
            live.setdefault(job_id, []).append((eid, status))

    # the waiting runs of recurring allow jobs (a one-off's single tick cannot pile up)
    allowed = [r[0] for r in rows if r[5] == "allow" and r[2] is not None]
    waiting: dict[str, int] = {}
    if allowed:
        found = conn.execute(q.WAITING_RUNS, {"ids": allowed, "now": now_ms, "cap": MAX_WAITING_RUNS}).fetchall()
        waiting = {job_id: n for job_id, n in found}

    next_fire = schedule.next_fire
    advance_ids: list[str] = []
    advance_new: list[int | None] = []
    advance_old: list[int] = []
    #: per job id (advanced or broken), its execution rows in ``_EXEC_FIELDS`` order
    per_job: dict[str, list[tuple[Any, ...]]] = {}
    #: per advanced job, the live executions overlap=replace cancels: (eid, was running)
    per_job_cancels: dict[str, tuple[list[tuple[str, bool]], str]] = {}
    broken_ids: list[str] = []
    broken_old: list[int] = []

    queues = {r[0]: r[10] for r in rows if r[10] is not None}  # queue targets' jobs
    book = CalendarBook.load([(r[7], r[11]) for r in rows if r[11] is not None], _Calendars(conn), held, parsed)
    for job_id, due_at, text, tz, misfire, overlap, jitter, tenant, prio, max_att, _queue, cals, active_until, grace in rows:
        next_tick: Callable[[int], int | None]
        if text is None:
            next_tick = _never
        else:
            def next_tick(t: int, _s: str = text, _j: str = job_id, _z: str = tz) -> int | None:
                return next_fire(_s, _j, _z, t)
        if active_until is not None:
            next_tick = bounded(next_tick, None, active_until)
        try:
            plan_until = until if overlap == "allow" else now_ms
            plan = plan_claim(next_tick, due_at, now_ms, MISFIRE[misfire], None if grace is None else grace * 1000,
                              plan_until)  # fmt: skip
            decision = decide_claim(job_id, plan, OVERLAP[overlap], live.get(job_id, ()),
                                    book.exclusions(tenant, tz, cals), jitter, waiting.get(job_id, 0), next_tick, now_ms)  # fmt: skip
        except ScheduleError as exc:  # a stored schedule that no longer evaluates (tzdata?)
            broken_ids.append(job_id)
            broken_old.append(due_at)
            per_job[job_id] = [(execution_id(job_id, due_at), job_id, tenant, prio, due_at, _SKIPPED,
                                due_at, now_ms, now_ms, f"schedule error, job paused: {exc}",
                                max_att, False, _SCHEDULED)]  # fmt: skip
            continue
        advance_ids.append(job_id)
        advance_new.append(decision.next_run_at)
        advance_old.append(due_at)
        guard = overlap != "allow"
        per_job[job_id] = [(execution_id(job_id, row.tick), job_id, tenant, prio, row.tick,
                            _PENDING if row.run else _SKIPPED, row.available_at, now_ms, None if row.run else now_ms,
                            row.reason, max_att, guard, _CATCH_UP if row.catch_up else _SCHEDULED)
                           for row in decision.rows]  # fmt: skip
        if decision.cancels:
            per_job_cancels[job_id] = (decision.cancels, decision.cancel_reason or "")

    # Compare-and-set first: only jobs whose next_run_at we moved get executions.
    moved: set[str] = set()
    if advance_ids:
        args = {"ids": advance_ids, "next": advance_new, "old": advance_old}
        moved = {r[0] for r in conn.execute(q.CLAIM_ADVANCE, args)}
    if broken_ids:
        moved |= {r[0] for r in conn.execute(q.CLAIM_PAUSE_BROKEN, {"ids": broken_ids, "old": broken_old})}
    for job_id, next_run_at in zip(advance_ids, advance_new, strict=True):
        if job_id in moved:
            result.jobs_claimed += 1
            if next_run_at is not None:
                result.next_runs.append(next_run_at)

    cancel_ids: list[str] = []
    cancel_reasons: list[str] = []
    for job_id, (cancels, why) in per_job_cancels.items():
        if job_id in moved:
            cancel_ids += [eid for eid, _ in cancels]
            cancel_reasons += [why] * len(cancels)
            result.replaced.extend(eid for eid, running in cancels if running)
    if cancel_ids:
        conn.execute(q.CANCEL_EXECUTIONS, {"ids": cancel_ids, "reasons": cancel_reasons, "now": now_ms})

    # rows in claim order (earliest due job first), each job's rows in tick order
    inserts = [row for job_id, _, *_ in rows if job_id in moved for row in per_job.get(job_id, ())]
    inserted = insert_executions(conn, inserts)
    # a job whose last tick was claimed without a run (skipped) has nothing to wait for
    unrun = {job_id: "FAILED" for job_id, next_run_at in zip(advance_ids, advance_new, strict=True)
             if job_id in moved and next_run_at is None and not any(r[5] == _PENDING for r in per_job[job_id])}
    jobstate.settle(conn, unrun)
    if queues:
        queued = [(row[0], queues[row[1]]) for row in inserts if row[1] in queues and row[0] in inserted]
        if queued:
            conn.execute(q.SET_EXECUTIONS_QUEUE, {"ids": [x for x, _ in queued], "queues": [n for _, n in queued]})
    for row in inserts:
        eid, job_id, tenant, prio, tick, status, avail, created, finished, reason, max_att, _, origin = row
        if eid not in inserted:
            continue  # that tick already had its execution
        ex = Execution(eid, job_id, tenant, PRIORITY[prio], tick, EXEC_STATUS[status], 0, 0, None,
                       None, avail, created, None, finished, None, None, None, reason, max_att,
                       queues.get(job_id) if queues else None, origin=ORIGIN[origin])  # fmt: skip
        (result.executions if ex.status is ExecStatus.PENDING else result.skipped).append(ex)


class _Calendars:
    """``CalendarRows`` in the claim's transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def revisions(self, pairs: list[list[str]]) -> list[Any]:
        return self._conn.execute(q.CALENDAR_REVISIONS, _pairs(pairs)).fetchall()

    def packed(self, pairs: list[list[str]]) -> list[Any]:
        return self._conn.execute(q.CALENDARS_BY_NAME, _pairs(pairs)).fetchall()

    def specs(self, pairs: list[list[str]]) -> list[Any]:
        return self._conn.execute(q.CALENDAR_SPECS_BY_NAME, _pairs(pairs)).fetchall()

    def keep(self, built: list[tuple[str, str, int, bytes]]) -> None:
        self._conn.execute(q.STORE_CALENDAR_INDEXES, {
            "tenants": [b[0] for b in built], "names": [b[1] for b in built],
            "revisions": [b[2] for b in built], "packed": [b[3] for b in built],
        })  # fmt: skip


def _pairs(pairs: list[list[str]]) -> dict[str, list[str]]:
    return {"tenants": [p[0] for p in pairs], "names": [p[1] for p in pairs]}
