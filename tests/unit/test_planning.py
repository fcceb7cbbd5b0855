"""core.planning: what a claim runs, skips and leaves due. Fake schedules, no clock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from cronwheel.core.instants import format_instant
from cronwheel.core.limits import BACKLOG_RECHECK_MS, MAX_WAITING_RUNS
from cronwheel.core.model import MISFIRE_GRACE_MS, MISFIRE_RUN_ALL_CAP, MisfirePolicy, OverlapPolicy
from cronwheel.core.planning import (
    MISSED_SCAN_LIMIT,
    ClaimPlan,
    backlog_look_again,
    decide_claim,
    plan_claim,
)

SEC = 1_000
MIN = 60 * SEC
HOUR = 60 * MIN
DAY = 24 * HOUR
YEAR = 365 * DAY
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a whole minute

RUN_ONCE, SKIP, RUN_ALL = MisfirePolicy.RUN_ONCE, MisfirePolicy.SKIP, MisfirePolicy.RUN_ALL
G = MISFIRE_GRACE_MS  #: an explicit misfireGraceSec of 60 s (the default is shorter when ticks are closer)


class Every:
    """A fake schedule firing at ``T0 + k * period`` for every integer k, counting evaluations."""

    def __init__(self, period: int, until: int | None = None) -> None:
        self.period = period
        self.until = until
        self.calls = 0

    def __call__(self, after: int) -> int | None:
        self.calls += 1
        nxt = T0 + ((after - T0) // self.period + 1) * self.period
        return None if self.until is not None and nxt > self.until else nxt


def never(_after: int) -> int | None:
    return None


def test_not_due_yet_plans_nothing() -> None:
    plan = plan_claim(Every(MIN), T0 + MIN, T0, RUN_ONCE)
    assert plan == ClaimPlan([], 0, None, None, T0 + MIN)


@pytest.mark.parametrize("policy", list(MisfirePolicy))
def test_on_time_tick_runs_and_advances(policy: MisfirePolicy) -> None:
    fake = Every(MIN)
    plan = plan_claim(fake, T0, T0 + 250, policy)
    assert plan == ClaimPlan([T0], 0, None, None, T0 + MIN)
    assert fake.calls == 1  # the common path costs one evaluation


@pytest.mark.parametrize("policy", list(MisfirePolicy))
def test_late_ticks_within_the_grace_always_run(policy: MisfirePolicy) -> None:
    # every second, 30 s late, an explicit 60 s grace: 31 recent ticks, none missed
    plan = plan_claim(Every(SEC), T0, T0 + 30 * SEC, policy, grace_ms=G)
    assert plan.run == [T0 + i * SEC for i in range(31)]
    assert plan.skipped_count == 0 and plan.catch_up == ()
    assert plan.next_run_at == T0 + 31 * SEC


@pytest.mark.parametrize("policy", list(MisfirePolicy))
def test_the_default_grace_ends_when_the_next_tick_comes_due(policy: MisfirePolicy) -> None:
    # every second, 8 s down: by default only the latest due tick is merely late; the 8
    # before it are missed and follow the policy (the 60 s grace used to run all nine)
    now = T0 + 8 * SEC + 300
    plan = plan_claim(Every(SEC), T0, now, policy)
    missed = [T0 + i * SEC for i in range(8)]
    if policy is RUN_ALL:
        assert plan == ClaimPlan([*missed, T0 + 8 * SEC], 0, None, None, T0 + 9 * SEC, True, tuple(missed))
    elif policy is RUN_ONCE:  # exactly one run, standing for the eight missed ticks
        assert plan == ClaimPlan([T0 + 8 * SEC], 8, T0, T0 + 7 * SEC, T0 + 9 * SEC, True, (T0 + 8 * SEC,))
    else:
        assert plan == ClaimPlan([T0 + 8 * SEC], 8, T0, T0 + 7 * SEC, T0 + 9 * SEC)


def test_the_default_grace_is_at_most_60_seconds() -> None:
    # hourly job: its next tick is far away, so the grace is capped at 60 s
    assert plan_claim(Every(HOUR), T0, T0 + 60 * SEC, SKIP).run == [T0]
    assert plan_claim(Every(HOUR), T0, T0 + 61 * SEC, SKIP).run == []
    # every 10 s: 10 s
    assert plan_claim(Every(10 * SEC), T0, T0 + 9 * SEC, SKIP).run == [T0]
    assert plan_claim(Every(10 * SEC), T0, T0 + 10 * SEC, SKIP).run == [T0 + 10 * SEC]


def test_an_explicit_grace_overrides_the_default() -> None:
    plan = plan_claim(Every(HOUR), T0, T0 + 10 * MIN, SKIP, grace_ms=15 * MIN)
    assert plan.run == [T0] and plan.skipped_count == 0
    plan = plan_claim(Every(SEC), T0, T0 + 3 * SEC, SKIP, grace_ms=0)
    assert plan.run == [T0 + 3 * SEC] and plan.skipped_count == 3


def test_ticks_claimed_ahead_are_not_late() -> None:
    # every second, claimed 2 s ahead: the ticks after now are not misses of the default grace
    plan = plan_claim(Every(SEC), T0, T0, RUN_ONCE, until_ms=T0 + 2 * SEC)
    assert plan == ClaimPlan([T0, T0 + SEC, T0 + 2 * SEC], 0, None, None, T0 + 3 * SEC)
    plan = plan_claim(Every(SEC), T0 + SEC, T0 + 500, SKIP, until_ms=T0 + 2 * SEC + 500)
    assert plan.run == [T0 + SEC, T0 + 2 * SEC] and plan.skipped_count == 0


def test_the_grace_boundary_is_inclusive() -> None:
    now = T0 + MISFIRE_GRACE_MS
    assert plan_claim(Every(HOUR), T0, now, SKIP).run == [T0]  # exactly grace old: late, runs
    plan = plan_claim(Every(HOUR), T0, now + 1, SKIP)  # one ms more: missed
    assert plan.run == [] and plan.skipped_count == 1


def test_worked_example_from_the_module_docstring() -> None:
    now = T0 + 5 * MIN + 30 * SEC  # 10:05:30 with T0 = 10:00
    missed = [T0 + i * MIN for i in range(5)]
    plan = plan_claim(Every(MIN), T0, now, SKIP)
    assert plan == ClaimPlan([T0 + 5 * MIN], 5, missed[0], missed[-1], T0 + 6 * MIN)
    plan = plan_claim(Every(MIN), T0, now, RUN_ONCE)
    assert plan == ClaimPlan([T0 + 5 * MIN], 5, missed[0], missed[-1], T0 + 6 * MIN, True, (T0 + 5 * MIN,))
    plan = plan_claim(Every(MIN), T0, now, RUN_ALL)
    assert plan == ClaimPlan([*missed, T0 + 5 * MIN], 0, None, None, T0 + 6 * MIN, True, tuple(missed))


def test_run_once_runs_the_latest_missed_tick_when_no_recent_one() -> None:
    now = T0 + 5 * HOUR + 30 * MIN  # hourly job, 5 ticks missed (T0 .. T0+5h), none recent
    plan = plan_claim(Every(HOUR), T0, now, RUN_ONCE)
    assert plan == ClaimPlan([T0 + 5 * HOUR], 5, T0, T0 + 4 * HOUR, T0 + 6 * HOUR, True, (T0 + 5 * HOUR,))


def test_run_once_with_a_single_missed_tick_runs_it() -> None:
    plan = plan_claim(Every(HOUR), T0, T0 + 30 * MIN, RUN_ONCE)
    assert plan == ClaimPlan([T0], 0, None, None, T0 + HOUR, True, (T0,))


def test_skip_skips_every_missed_tick() -> None:
    plan = plan_claim(Every(HOUR), T0, T0 + 5 * HOUR + 30 * MIN, SKIP)
    assert plan == ClaimPlan([], 6, T0, T0 + 5 * HOUR, T0 + 6 * HOUR)


def test_run_all_runs_missed_ticks_up_to_the_cap_then_skips() -> None:
    n = MISFIRE_RUN_ALL_CAP + 20
    now = T0 + n * MIN - MIN // 2  # ticks T0 .. T0+(n-1)min missed, the last 30 s old... recent
    plan = plan_claim(Every(MIN), T0, now, RUN_ALL)
    assert plan.run == [T0 + i * MIN for i in range(MISFIRE_RUN_ALL_CAP)]
    # the rest of the missed ticks are skipped; the recent tick waits for the next claim
    recent = T0 + (n - 1) * MIN
    assert plan.skipped_count == n - 1 - MISFIRE_RUN_ALL_CAP
    assert plan.skipped_first == T0 + MISFIRE_RUN_ALL_CAP * MIN
    assert plan.skipped_last == recent - MIN
    assert plan.next_run_at == recent  # still due: the next claim runs it (lateness never skips)
    follow_up = plan_claim(Every(MIN), recent, now, RUN_ALL)
    assert follow_up == ClaimPlan([recent], 0, None, None, recent + MIN)


def test_recent_ticks_beyond_the_cap_stay_due_instead_of_being_skipped() -> None:
    period = 100  # 600 ticks inside the grace window
    now = T0 + 59 * SEC
    plan = plan_claim(Every(period), T0, now, SKIP, grace_ms=G)
    assert len(plan.run) == MISFIRE_RUN_ALL_CAP and plan.skipped_count == 0
    assert plan.next_run_at == T0 + MISFIRE_RUN_ALL_CAP * period <= now


def test_a_year_down_on_an_every_second_schedule_costs_bounded_evaluations() -> None:
    now = T0 + YEAR
    recent_first = now - MISFIRE_GRACE_MS
    recent = [recent_first + i * SEC for i in range(61)]  # the grace window, both ends included
    for policy in MisfirePolicy:
        fake = Every(SEC)
        plan = plan_claim(fake, T0, now, policy, grace_ms=G)
        assert fake.calls <= MISSED_SCAN_LIMIT + 2 * MISFIRE_RUN_ALL_CAP + 64, policy
        assert not plan.skipped_count_exact
        assert 0 < plan.skipped_count < YEAR // SEC  # a lower bound
        assert plan.skipped_last == recent_first - SEC  # exact, found by bisection
        if policy is RUN_ALL:
            # the cap is spent on the oldest missed ticks; the recent ones stay due
            assert plan.run == [T0 + i * SEC for i in range(MISFIRE_RUN_ALL_CAP)]
            assert plan.skipped_first == T0 + MISFIRE_RUN_ALL_CAP * SEC
            assert plan.next_run_at == recent_first
            assert plan.catch_up == tuple(plan.run)
            follow_up = plan_claim(Every(SEC), recent_first, now, policy, grace_ms=G)
            assert follow_up == ClaimPlan(recent, 0, None, None, now + SEC)
        else:
            assert plan.run == recent
            assert plan.catch_up == ((recent[0],) if policy is RUN_ONCE else ())
            assert plan.skipped_first == T0
            assert plan.next_run_at == now + SEC


def test_run_once_after_a_long_outage_without_recent_tick_runs_the_exact_latest() -> None:
    # every 5 minutes, down for a month: far more missed ticks than the scan limit, no tick in
    # the last minute, so the latest missed tick must be found exactly
    now = T0 + 30 * DAY + 3 * MIN
    fake = Every(5 * MIN)
    plan = plan_claim(fake, T0, now, RUN_ONCE)
    assert plan.run == [T0 + 30 * DAY]
    assert plan.skipped_first == T0
    assert plan.skipped_last == T0 + 30 * DAY - 5 * MIN
    assert plan.next_run_at == T0 + 30 * DAY + 5 * MIN
    assert fake.calls < 3 * MISSED_SCAN_LIMIT
    assert not plan.skipped_count_exact and plan.skipped_count >= MISSED_SCAN_LIMIT


def test_skip_count_is_exact_when_the_scan_limit_is_not_reached() -> None:
    plan = plan_claim(Every(MIN), T0, T0 + 150 * MIN + 30 * SEC, SKIP)
    assert plan.skipped_count == 150 and plan.skipped_count_exact
    assert plan.skipped_last == T0 + 149 * MIN and plan.run == [T0 + 150 * MIN]


def test_skip_count_exact_when_the_jump_lands_on_the_last_missed_tick() -> None:
    n = MISSED_SCAN_LIMIT + 1  # missed ticks: exactly one past the scan limit
    now = T0 + (n + 1) * MIN
    plan = plan_claim(Every(MIN), T0, now, SKIP, grace_ms=G)
    assert plan.skipped_count == n and plan.skipped_count_exact
    assert plan.skipped_last == T0 + (n - 1) * MIN
    assert plan.run == [now - MIN, now]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (RUN_ONCE, ClaimPlan([T0], 0, None, None, None, True, (T0,))),
        (RUN_ALL, ClaimPlan([T0], 0, None, None, None, True, (T0,))),
        (SKIP, ClaimPlan([], 1, T0, T0, None)),
    ],
)
def test_one_off_missed_long_ago(policy: MisfirePolicy, expected: ClaimPlan) -> None:
    assert plan_claim(never, T0, T0 + DAY, policy) == expected


@pytest.mark.parametrize("policy", list(MisfirePolicy))
def test_one_off_on_time_runs_once_and_never_again(policy: MisfirePolicy) -> None:
    assert plan_claim(never, T0, T0 + 5, policy) == ClaimPlan([T0], 0, None, None, None)


def test_a_schedule_that_ends_during_the_outage() -> None:
    fake = Every(MIN, until=T0 + 3 * MIN)
    plan = plan_claim(fake, T0, T0 + HOUR, SKIP)
    assert plan == ClaimPlan([], 4, T0, T0 + 3 * MIN, None)
    plan = plan_claim(Every(MIN, until=T0 + 3 * MIN), T0, T0 + HOUR, RUN_ONCE)
    assert plan == ClaimPlan([T0 + 3 * MIN], 3, T0, T0 + 2 * MIN, None, True, (T0 + 3 * MIN,))


@pytest.mark.parametrize("period", [SEC, 7 * SEC, MIN, 13 * MIN, HOUR])
@pytest.mark.parametrize("down_for", [0, 59 * SEC, 61 * SEC, 10 * MIN, 3 * HOUR, 2 * DAY])
@pytest.mark.parametrize("policy", list(MisfirePolicy))
@pytest.mark.parametrize("grace", [None, G, 5 * SEC])
def test_against_brute_force(period: int, down_for: int, policy: MisfirePolicy, grace: int | None) -> None:
    """Whenever the scan limit is not hit, the plan equals the obvious enumeration."""
    now = T0 + down_for + 17
    ticks = list(range(T0, now + 1, period))
    if grace is None:  # the default: until the next tick comes due, at most 60 s
        missed = [t for t in ticks if t < now - G or t + period <= now]
    else:
        missed = [t for t in ticks if t < now - grace]
    recent = ticks[len(missed):]  # missed ticks are a prefix
    plan = plan_claim(Every(period), T0, now, policy, grace_ms=grace)
    planned_until = plan.run[-1] if plan.run else None
    # invariants that hold always
    assert plan.run == sorted(plan.run) and len(plan.run) <= MISFIRE_RUN_ALL_CAP
    assert set(plan.run) <= set(ticks)
    assert plan.next_run_at is not None
    assert plan.next_run_at > now or len(plan.run) == MISFIRE_RUN_ALL_CAP
    assert planned_until is None or plan.next_run_at > planned_until
    if len(missed) > MISSED_SCAN_LIMIT or len(ticks) > MISFIRE_RUN_ALL_CAP:
        return
    if policy is RUN_ALL:
        expected_run, expected_skipped, catch_up = ticks, [], missed
    elif policy is SKIP or recent:
        expected_run, expected_skipped = recent, missed
        catch_up = recent[:1] if policy is RUN_ONCE and missed else []
    else:
        expected_run, expected_skipped, catch_up = missed[-1:], missed[:-1], missed[-1:]
    assert plan.run == expected_run
    assert plan.catch_up == tuple(catch_up)
    assert plan.skipped_count == len(expected_skipped)
    assert plan.skipped_first == (expected_skipped[0] if expected_skipped else None)
    assert plan.skipped_last == (expected_skipped[-1] if expected_skipped else None)
    assert plan.next_run_at == ticks[-1] + period


def test_bisection_finds_the_last_tick_of_an_irregular_schedule() -> None:
    fires = sorted({T0 + k * k * SEC for k in range(2000)})  # ever sparser ticks

    def next_tick(after: int) -> int | None:
        for f in fires:
            if f > after:
                return f
        return None

    now = fires[-1] + 5 * MIN
    plan: Callable[[], ClaimPlan] = lambda: plan_claim(next_tick, T0, now, RUN_ONCE)  # noqa: E731
    result = plan()
    assert result.run == [fires[-1]]
    assert result.skipped_first == T0 and result.skipped_last == fires[-2]


# ---------------------------------------------------------------- a job's backlog (decide_claim)

BACKLOG = f"backlog: {MAX_WAITING_RUNS} runs of this job are overdue and waiting to start"


def _rows(waiting: int, ticks: list[int], overlap: OverlapPolicy = OverlapPolicy.ALLOW) -> list[tuple[int, bool, str | None]]:
    plan = ClaimPlan(ticks, 0, None, None, ticks[-1] + SEC)
    decision = decide_claim("j", plan, overlap, [], None, 0, waiting)
    return sorted((row.tick, row.run, row.reason) for row in decision.rows)


def test_an_allow_job_runs_every_tick_while_its_backlog_is_below_the_bound() -> None:
    ticks = [T0, T0 + SEC, T0 + 2 * SEC]
    assert _rows(0, ticks) == [(t, True, None) for t in ticks]
    assert _rows(MAX_WAITING_RUNS - 3, ticks) == [(t, True, None) for t in ticks]


def test_ticks_beyond_the_bound_are_held_back_in_one_record_the_earliest_run() -> None:
    ticks = [T0, T0 + SEC, T0 + 2 * SEC]
    waiting = MAX_WAITING_RUNS - 1
    why = (f"backlog: {waiting} runs of this job are overdue and waiting to start; "
           "2 ticks skipped from 2026-01-01T00:00:01.000Z to 2026-01-01T00:00:02.000Z")
    assert _rows(waiting, ticks) == [(T0, True, None), (T0 + SEC, False, why)]
    assert _rows(MAX_WAITING_RUNS, ticks) == [(T0, False, BACKLOG + "; 3 ticks skipped from 2026-01-01T00:00:00.000Z"
                                                             " to 2026-01-01T00:00:02.000Z")]
    assert _rows(MAX_WAITING_RUNS + 5, ticks[:1]) == [(T0, False, f"backlog: {MAX_WAITING_RUNS + 5} runs of this job are overdue and waiting to start")]


def _held(period: int, waiting: int = MAX_WAITING_RUNS, until: int | None = None) -> tuple[list[tuple[int, bool, str | None]], int | None]:
    """A claim at T0 of a job of that period whose tick T0 is due, with its schedule given."""
    every = Every(period, until)
    plan = ClaimPlan([T0], 0, None, None, every(T0))
    decision = decide_claim("j", plan, OverlapPolicy.ALLOW, [], None, 0, waiting, every, T0)
    return [(row.tick, row.run, row.reason) for row in decision.rows], decision.next_run_at


def test_a_job_held_at_its_backlog_is_looked_at_again_about_a_minute_later_with_one_record() -> None:
    """Held one tick at a time, an every-second job nobody starts cost a claim, a probe of its
    waiting runs and a row every second: now one of each about once a minute."""
    look = backlog_look_again("j", T0)
    rows, next_run_at = _held(SEC)
    ticks = -(-(look - T0) // SEC)  # those before the next look: T0, T0 + 1 s, ...
    assert rows == [(T0, False, f"{BACKLOG}; {ticks} ticks skipped from 2026-01-01T00:00:00.000Z to "
                                f"{format_instant(T0 + (ticks - 1) * SEC)}")]
    assert next_run_at == T0 + ticks * SEC >= look
    # every 7 s: the ticks before the next look, then the first one at or after it
    rows, next_run_at = _held(7 * SEC)
    sevens = -(-(look - T0) // (7 * SEC))
    assert rows[0][2] is not None and rows[0][2].endswith(f"{sevens} ticks skipped from 2026-01-01T00:00:00.000Z to "
                                                          f"{format_instant(T0 + (sevens - 1) * 7 * SEC)}")
    assert next_run_at == T0 + sevens * 7 * SEC
    # a job ticking less often than the look comes is held one tick at a time, as it always was
    assert _held(2 * MIN) == ([(T0, False, BACKLOG)], T0 + 2 * MIN)
    assert _held(HOUR) == ([(T0, False, BACKLOG)], T0 + HOUR)
    # a schedule that ends before the look ends there
    rows, next_run_at = _held(SEC, until=T0 + 10 * SEC)
    assert next_run_at is None and rows[0][2] is not None and "11 ticks skipped" in rows[0][2]
    # below the bound nothing is held, and the plan's next tick stands
    assert _held(SEC, waiting=MAX_WAITING_RUNS - 1) == ([(T0, True, None)], T0 + SEC)


def test_the_jobs_of_a_flood_held_together_are_looked_at_again_spread_over_a_minute() -> None:
    """Each look at a held job recounts its waiting runs; a flood's jobs all reach the bound in
    the same second, and must not all be recounted in the same second again."""
    looks = [backlog_look_again(f"job{i}", T0) - T0 for i in range(1000)]
    assert all(BACKLOG_RECHECK_MS // 2 <= d < BACKLOG_RECHECK_MS * 3 // 2 for d in looks)
    per_second = Counter(d // SEC for d in looks)
    assert len(per_second) == 60 and max(per_second.values()) < 40  # ~17 a second
    assert backlog_look_again("job7", T0 + MIN) - (T0 + MIN) == looks[7]  # the same for a job every time


def test_a_guarded_job_is_decided_by_its_overlap_policy_not_by_the_backlog() -> None:
    """forbid and replace keep at most one run live: the count is not even read for them."""
    assert _rows(MAX_WAITING_RUNS, [T0], OverlapPolicy.FORBID) == [(T0, True, None)]
    assert _rows(MAX_WAITING_RUNS, [T0], OverlapPolicy.REPLACE) == [(T0, True, None)]


def test_the_misfire_record_stays_when_the_runs_are_skipped_as_backlog() -> None:
    plan = ClaimPlan([T0 + 5 * MIN], 5, T0, T0 + 4 * MIN, T0 + 6 * MIN, catch_up=(T0 + 5 * MIN,))
    decision = decide_claim("j", plan, OverlapPolicy.ALLOW, [], None, 0, MAX_WAITING_RUNS)
    assert [(r.tick, r.run, (r.reason or "").split(":")[0]) for r in decision.rows] == [
        (T0, False, "misfire"), (T0 + 5 * MIN, False, "backlog")]
