"""What one claim of a job does with the ticks that came due: run, skip, or leave for later. Pure.

The store calls :func:`plan_claim` inside its claim transaction for every due job and records
the plan; this module decides. Ticks are classified against ``now`` and the job's misfire
grace::

        missed (older than the grace)    |  late but recent  |  not due yet
    ──────────────────────────────────────┼───────────────────┼──────────────▶ time
                                         cut                 now

* the **grace** is the job's ``misfireGraceSec`` when it sets one. By default it fits the
  schedule: a tick is merely late until the job's next tick comes due, and for at most
  ``MISFIRE_GRACE_MS`` (60 s). So by default only the latest due tick can be recent, and an
  every-second job that was down for 8 s has 8 missed ticks, not 8 late ones.
* a **recent** tick (``cut <= tick <= now``) is merely late (a herd, a slow claim): it always
  runs. At most ``MISFIRE_RUN_ALL_CAP`` ticks are planned per claim; the rest stay due
  (``next_run_at <= now``) and the next claim continues with them, so lateness never turns
  into skipping. (What does is a backlog: an ``allow`` job whose runs are claimed but do not
  start keeps at most ``MAX_WAITING_RUNS`` of them overdue, see :func:`decide_claim`.)
* a **missed** tick (``tick < cut``) is handled by the job's :class:`MisfirePolicy`: RUN_ALL
  runs them up to the cap and skips the rest, RUN_ONCE collapses them into one run, SKIP
  skips them all.
* a **catch-up** run is a run that stands for missed ticks (``ClaimPlan.catch_up``): under
  RUN_ALL every missed tick that runs; under RUN_ONCE the one run the missed ticks collapse
  into: the first recent tick when there is one, else the latest missed tick. SKIP has none.

Worked example, every-minute job, due_at 10:00, now 10:05:30, default grace (the next tick,
at most 60 s): 10:00 … 10:04 are missed, 10:05 is recent. RUN_ONCE runs [10:05] as its
catch-up run and SKIP runs [10:05] as an ordinary one, both skip 10:00 … 10:04 (5 ticks);
RUN_ALL runs all six, the first five as catch-up runs. next_run_at is 10:06 in every case.

Ticks after ``now`` and up to ``until_ms`` (claim-ahead) are not late at all: they run.

:func:`decide_claim` then turns a plan into the rows the store writes: the job's calendars
and its overlap policy (forbid: one run at a time; replace: the newest tick runs and cancels
the live ones; allow: at most ``MAX_WAITING_RUNS`` overdue runs waiting to start, the ticks
beyond them skipped as ``backlog``) decide which planned ticks run and which are recorded
SKIPPED, with what reason (``core.skips``), and where the job's ``next_run_at`` goes: a job
held at its backlog is looked at again about ``BACKLOG_RECHECK_MS`` later
(:func:`backlog_look_again`), its ticks until then recorded by one SKIPPED row. Both stores record exactly that; they only run the SQL.

Cost is bounded whatever the outage: a job down for a year on an every-second schedule costs
O(MISFIRE_RUN_ALL_CAP) ``next_tick`` evaluations. After ``MISSED_SCAN_LIMIT`` missed ticks
the planner stops counting and jumps with ``next_tick(cut - 1)``; the last missed tick is
then found by a bisection (~45 evaluations for a century), so ``skipped_first``/
``skipped_last`` stay exact while ``skipped_count`` becomes a lower bound
(``skipped_count_exact`` is False). The default grace costs one more bisection, only when
more than one tick is due.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cronwheel.core.calendar import Exclusions, split_excluded
from cronwheel.core.ids import execution_id, stable_hash
from cronwheel.core.limits import BACKLOG_RECHECK_MS, MAX_WAITING_RUNS
from cronwheel.core.model import MISFIRE_GRACE_MS, MISFIRE_RUN_ALL_CAP, MisfirePolicy, OverlapPolicy
from cronwheel.core.schedule import jitter_offset_ms
from cronwheel.core.skips import SkipReason, catch_up_text

#: how many missed ticks are enumerated one by one before the planner jumps over the rest
MISSED_SCAN_LIMIT = 2 * MISFIRE_RUN_ALL_CAP

NextTick = Callable[[int], "int | None"]


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    run: list[int]  #: ticks to run now, ascending (at most MISFIRE_RUN_ALL_CAP)
    skipped_count: int  #: missed ticks deliberately not run (a lower bound if not exact)
    skipped_first: int | None  #: earliest skipped tick
    skipped_last: int | None  #: latest skipped tick
    next_run_at: int | None  #: the job's next tick after this claim; None: never again
    skipped_count_exact: bool = True  #: False when the planner jumped over an unbounded run
    catch_up: tuple[int, ...] = ()  #: the ticks of ``run`` that stand for missed ticks

    def is_catch_up(self, tick: int) -> bool:
        return tick in self.catch_up


@dataclass(frozen=True, slots=True)
class TickRow:
    """One execution a claim inserts: PENDING (``run``) or SKIPPED at ``tick``."""

    tick: int
    run: bool
    available_at: int  #: the tick plus the job's jitter for a run; the tick for a skip
    reason: str | None
    catch_up: bool = False  #: a run that stands for missed ticks (origin ``catch-up``)


@dataclass(frozen=True, slots=True)
class ClaimDecision:
    """What one claim of one job records, in insertion order: the misfire record first, then
    the runs, then the ticks skipped by calendars and overlap; and, under overlap replace,
    the live executions the new run cancels (``(execution_id, was running)``) with the
    reason they are cancelled for; and the job's ``next_run_at`` after the claim (the plan's,
    unless the job is held at its backlog)."""

    rows: list[TickRow]
    cancels: list[tuple[str, bool]]
    next_run_at: int | None
    cancel_reason: str | None = None

    @property
    def runs(self) -> bool:
        return any(row.run for row in self.rows)


def decide_claim(
    job_id: str, plan: ClaimPlan, overlap: OverlapPolicy, live: Sequence[tuple[str, str]],
    exclusions: Exclusions | None, jitter_sec: int, waiting: int = 0,
    next_tick: NextTick | None = None, now_ms: int = 0,
) -> ClaimDecision:  # fmt: skip
    """The rows of one job's claim, from its ``plan``: ``live`` is the job's live executions
    ``(execution_id, status)``, running ones first (read only for overlap forbid/replace),
    ``exclusions`` its calendars (None: none), ``jitter_sec`` its jitter and ``waiting`` how
    many of its scheduled runs are overdue and still waiting to start (read only for overlap
    allow, counted up to ``MAX_WAITING_RUNS``): ticks that would take it past that bound are
    held back, the earliest ones run. The job is then held: with its schedule
    (``next_tick``), every tick before :func:`backlog_look_again` is held back too, and
    one SKIPPED row (``backlog``) records them all, so that a job nobody starts costs a claim
    and a row a minute instead of one a tick (``core.limits``)."""
    run, skipped = split_excluded(plan.run, exclusions)
    cancels: list[tuple[str, bool]] = []
    cancel_reason = None
    next_run_at = plan.next_run_at
    held: TickRow | None = None
    if overlap is OverlapPolicy.ALLOW:
        room = max(0, MAX_WAITING_RUNS - waiting)
        if len(run) > room:
            held, next_run_at = _hold(run[room:], waiting, next_run_at, next_tick,
                                       backlog_look_again(job_id, now_ms))  # fmt: skip
            run = run[:room]
    elif run:
        if overlap is OverlapPolicy.FORBID:
            blocker = live[0][0] if live else execution_id(job_id, run[0])
            keep = run if live else run[1:]
            skipped += [(t, SkipReason.still_running(blocker).text) for t in keep]
            run = [] if live else run[:1]
        else:  # replace: the newest tick runs, everything live before it is cancelled
            newest = execution_id(job_id, run[-1])
            skipped += [(t, SkipReason.replaced_by(newest).text) for t in run[:-1]]
            run = run[-1:]
            cancels = [(eid, status == "RUNNING") for eid, status in live]
            cancel_reason = f"replaced by {newest}"
    rows: list[TickRow] = []
    if plan.skipped_count:
        first, last = plan.skipped_first, plan.skipped_last
        assert first is not None and last is not None
        why = SkipReason.misfire(plan.skipped_count, first, last, plan.skipped_count_exact)
        rows.append(TickRow(first, False, first, why.text))
    for tick in run:
        avail = tick + jitter_offset_ms(job_id, tick, jitter_sec) if jitter_sec else tick
        caught_up = plan.is_catch_up(tick)
        reason = catch_up_text(plan.skipped_count, plan.skipped_count_exact, len(plan.catch_up)) if caught_up else None
        rows.append(TickRow(tick, True, avail, reason, caught_up))
    rows += [TickRow(tick, False, tick, reason) for tick, reason in skipped]
    if held is not None:
        rows.append(held)
    return ClaimDecision(rows, cancels, next_run_at, cancel_reason)


def backlog_look_again(job_id: str, now_ms: int) -> int:
    """When a job held at its backlog at ``now_ms`` is claimed again: ``BACKLOG_RECHECK_MS``
    later on average, spread over half that either side by the job's id. The jobs of a flood
    reach their bound in the same second; looked at again in the same second too, the
    SQLite store's exact recount of their waiting runs (a row read each) held its writer for
    seconds once a minute."""
    spread = stable_hash(f"cronwheel:backlog:{job_id}") % BACKLOG_RECHECK_MS
    return now_ms + BACKLOG_RECHECK_MS // 2 + spread


def _hold(
    ticks: list[int], waiting: int, following: int | None, next_tick: NextTick | None, until: int,
) -> tuple[TickRow, int | None]:  # fmt: skip
    """The one SKIPPED row that holds a job at its backlog, standing for ``ticks`` and, given
    the schedule, every later tick (from ``following``) before ``until``; and the job's next
    tick after them."""
    first, last, count, exact = ticks[0], ticks[-1], len(ticks), True
    tick = following
    while next_tick is not None and tick is not None and tick < until:
        if count >= MISSED_SCAN_LIMIT:  # (an every-second job has 60 a minute: not reached)
            last = _last_tick_before(next_tick, tick, until)
            count, exact = count + (1 if last == tick else 2), last == tick and exact
            tick = next_tick(last)
            break
        count, last = count + 1, tick
        tick = next_tick(tick)
    why = SkipReason.backlog(waiting, count, first, last, exact)
    return TickRow(first, False, first, why.text), tick


def plan_claim(
    next_tick: NextTick, due_at: int, now_ms: int, misfire: MisfirePolicy,
    grace_ms: int | None = None, until_ms: int | None = None,
) -> ClaimPlan:  # fmt: skip
    """Plan the claim of a job whose ``next_run_at`` is ``due_at`` at time ``now_ms``.

    ``next_tick(t)`` is the first tick strictly after ``t`` (None: no further tick); ``due_at``
    itself is a tick. ``grace_ms``: the job's misfire grace; None is the default that fits the
    schedule (see the module docstring). ``until_ms`` (>= ``now_ms``): ticks up to it are
    claimed ahead of time; they are not late. ``next_run_at`` is the first tick strictly after
    ``until_ms``, or, when the per-claim cap stopped the plan early, the first tick after the
    last one planned (which is then still due).
    """
    until = now_ms if until_ms is None else max(now_ms, until_ms)
    if due_at > until:
        return ClaimPlan([], 0, None, None, due_at)
    if due_at > now_ms:  # claimed ahead: not late at all
        return _plan_recent(next_tick, [], due_at, until, MISFIRE_RUN_ALL_CAP, _Missed())
    following = next_tick(due_at)
    cut = _missed_cut(next_tick, due_at, following, now_ms, grace_ms)  # ticks before it are missed
    if due_at >= cut:
        # The common case: one recent tick, the next one not due yet.
        if following is None or following > until:
            return ClaimPlan([due_at], 0, None, None, following)
        return _plan_recent(next_tick, [due_at], following, until, MISFIRE_RUN_ALL_CAP - 1, _Missed())
    return _plan_with_missed(next_tick, due_at, until, cut, misfire)


def _missed_cut(next_tick: NextTick, due_at: int, following: int | None, now_ms: int, grace_ms: int | None) -> int:
    """The instant before which a due tick counts as missed."""
    if grace_ms is not None:
        return now_ms - grace_ms
    cut = now_ms - MISFIRE_GRACE_MS
    if following is None or following > now_ms:
        return max(cut, due_at)  # due_at is the latest due tick
    # several ticks are due: only the latest one can be merely late
    return max(cut, _last_tick_before(next_tick, following, now_ms + 1))


class _Missed:
    """Bookkeeping for the missed ticks of one plan."""

    __slots__ = ("count", "exact", "first", "last", "prev")

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None
        self.prev: int | None = None  #: the missed tick before ``last``, when known
        self.exact = True

    def add(self, tick: int) -> None:
        if self.first is None:
            self.first = tick
        self.prev = self.last
        self.count += 1
        self.last = tick


def _plan_with_missed(
    next_tick: NextTick, due_at: int, now_ms: int, horizon: int, misfire: MisfirePolicy
) -> ClaimPlan:
    run: list[int] = []
    missed = _Missed()  # missed ticks that are not run (RUN_ONCE may take back the last one)
    tick: int | None = due_at
    scanned = 0
    while tick is not None and tick < horizon:
        if scanned >= MISSED_SCAN_LIMIT:
            # Too many to enumerate: find the last missed tick by bisection, count the rest
            # as a lower bound, and jump to the first tick at or after the horizon.
            last = _last_tick_before(next_tick, tick, horizon)
            missed.add(tick)
            if last != tick:
                missed.add(last)
                missed.prev = None  # the tick before `last` is unknown (found lazily if needed)
                missed.exact = False
            tick = next_tick(last)
            break
        scanned += 1
        if misfire is MisfirePolicy.RUN_ALL and len(run) < MISFIRE_RUN_ALL_CAP:
            run.append(tick)
        else:
            missed.add(tick)
        tick = next_tick(tick)

    caught_up = tuple(run)  # RUN_ALL: the missed ticks that run
    budget = MISFIRE_RUN_ALL_CAP - len(run)
    plan = _plan_recent(next_tick, run, tick, now_ms, budget, missed)
    if misfire is MisfirePolicy.RUN_ALL:
        return _with_catch_up(plan, caught_up)
    if misfire is MisfirePolicy.RUN_ONCE and plan.run and missed.count:
        return _with_catch_up(plan, (plan.run[0],))  # the missed ticks collapse into it
    if misfire is MisfirePolicy.RUN_ONCE and len(plan.run) == 0 and missed.last is not None:
        # No recent tick: run the latest missed one instead of skipping it.
        latest = missed.last
        before = missed.prev
        if before is None and missed.count > 1:
            assert missed.first is not None
            before = _last_tick_before(next_tick, missed.first, latest)
        count = missed.count - 1
        return ClaimPlan(
            [latest],
            count,
            missed.first if count else None,
            before if count else None,
            plan.next_run_at,
            missed.exact,
            (latest,),
        )
    return plan


def _with_catch_up(plan: ClaimPlan, ticks: tuple[int, ...]) -> ClaimPlan:
    if not ticks:
        return plan
    return ClaimPlan(plan.run, plan.skipped_count, plan.skipped_first, plan.skipped_last, plan.next_run_at,
                     plan.skipped_count_exact, ticks)  # fmt: skip


def _plan_recent(
    next_tick: NextTick, run: list[int], tick: int | None, now_ms: int, budget: int, missed: _Missed
) -> ClaimPlan:
    """Append the recent ticks from ``tick`` on (at most ``budget``) and finish the plan."""
    while tick is not None and tick <= now_ms and budget > 0:
        run.append(tick)
        budget -= 1
        tick = next_tick(tick)
    return ClaimPlan(run, missed.count, missed.first, missed.last, tick, missed.exact)


def _last_tick_before(next_tick: NextTick, known: int, limit: int) -> int:
    """The latest tick strictly before ``limit``, given that ``known < limit`` is a tick.

    Bisects for the smallest ``x`` in ``[known, limit - 1]`` with no tick in ``(x, limit)``:
    that ``x`` is itself the answer (either ``known``, or the tick that made ``x - 1`` fail).
    """
    lo, hi = known, limit - 1  # no tick in (hi, limit) holds trivially
    while lo < hi:
        mid = (lo + hi) // 2
        following = next_tick(mid)
        if following is not None and following < limit:
            lo = mid + 1
        else:
            hi = mid
    return lo
