"""Backfill: the ticks of a job's schedule over a past range. Pure: time is an argument.

``plan_backfill`` walks the job's ticks in ``[from_ms, to_ms]`` (both ends included), bounded
by its active window, and splits them into those to run and those its calendars exclude
(excluded ticks are reported as spans, never created: a backfill recreates what the
schedule would have run). It stops after ``limit`` runnable ticks and says so, so the caller can refuse a
range that is too large for one request with a clear error instead of half-doing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import UNSET, Meta, UnsetType

from cronwheel.core import schedule as sched
from cronwheel.core.calendar import ExcludedSpan, Exclusions, NextTick, bounded
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_BACKFILL_TICKS

#: steps (runnable ticks and excluded spans) before a backfill request gives up
MAX_BACKFILL_SCAN = 2 * MAX_BACKFILL_TICKS


@dataclass(slots=True)
class BackfillPlan:
    ticks: list[int] = field(default_factory=list)  #: to run, ascending
    excluded: list[ExcludedSpan] = field(default_factory=list)  #: runs of ticks calendars exclude
    truncated: bool = False  #: more ticks in the range than ``limit`` (or than the scan bound)


def job_ticks(schedule_text: str, job_id: str, timezone: str, active_from: int | None, active_until: int | None) -> NextTick:
    """``next_tick(after)`` of a job: its schedule within its active window."""
    parsed = sched.parse_schedule(schedule_text, job_id, timezone)
    return bounded(parsed.next_after, active_from, active_until)


def plan_backfill(
    next_tick: NextTick, from_ms: int, to_ms: int, exclusions: Exclusions | None, limit: int = MAX_BACKFILL_TICKS
) -> BackfillPlan:
    plan = BackfillPlan()
    t = next_tick(from_ms - 1)
    steps = 0
    while t is not None and t <= to_ms:
        steps += 1
        if len(plan.ticks) >= limit or steps > MAX_BACKFILL_SCAN:
            plan.truncated = True
            break
        span = exclusions.span(t) if exclusions is not None else None
        if span is None:
            plan.ticks.append(t)
            t = next_tick(t)
        else:  # an excluded day or window is passed over in one step
            plan.excluded.append(ExcludedSpan(t, span[1], span[0]))
            t = next_tick(span[1] - 1)
    return plan


# ---------------------------------------------------------------- what a backfill and the upcoming ticks answer
# (the engine fills them, the API encodes them; the OpenAPI components are generated from them)

_INSTANT = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]
_EXCLUDED_DOC = "Stretches of ticks the job's calendars exclude: from the first excluded tick `at` up to `until` (exclusive)."


class ExcludedStretch(msgspec.Struct, kw_only=True):
    json_schema_extra: ClassVar[dict[str, Any]] = {"x-inline": True}  # written in place, not a component

    at: _INSTANT | UnsetType = UNSET
    until: _INSTANT | UnsetType = UNSET
    reason: str | UnsetType = UNSET


def excluded_stretch(span: ExcludedSpan) -> ExcludedStretch:
    return ExcludedStretch(at=format_instant(span.first_tick), until=format_instant(span.until), reason=span.reason)


class BackfillResult(msgspec.Struct, rename="camel", kw_only=True):
    job_id: str
    from_: _INSTANT | UnsetType = msgspec.field(default=UNSET, name="from")
    to: _INSTANT | UnsetType = UNSET
    dry_run: bool | UnsetType = UNSET
    ticks: Annotated[int, Meta(description="Ticks of the range that run (calendar exclusions left out), at most 10,000 per request (422 `backfill_too_large` beyond).")]
    created: Annotated[int, Meta(description="Executions created now (batch priority).")]
    existing: Annotated[int, Meta(description="Ticks that already had an execution: left alone.")]
    excluded: Annotated[list[ExcludedStretch], Meta(description=_EXCLUDED_DOC)]
    execution_ids: list[str] | UnsetType = UNSET
    planned_ticks: Annotated[list[_INSTANT], Meta(description="dryRun: the ticks.")] | UnsetType = UNSET


class Upcoming(msgspec.Struct, rename="camel", kw_only=True):
    job_id: str
    timezone: str | UnsetType = UNSET
    next: list[_INSTANT]
    excluded: Annotated[list[ExcludedStretch], Meta(description=_EXCLUDED_DOC)]


STRUCTS: tuple[type[msgspec.Struct], ...] = (ExcludedStretch, BackfillResult, Upcoming)
