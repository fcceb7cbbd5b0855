"""The herd preview: how many ticks of the registered jobs fall in each second of a window.

Pure code (the window's start is an argument, never read from a clock). ``cronwheel lint``
and ``GET /v1/herd`` show the result so that an operator sees a top-of-hour herd before it
comes, and can spread it with ``H`` or ``jitterSec``.

Cost: jobs are grouped by what their ticks depend on. A schedule without ``H`` and without
``@every`` does not depend on the job id, so every job sharing its text and zone is one group
and costs one parse; parsed schedules are grouped again by their concrete expression, so
100,000 jobs on ``0 * * * *`` cost one walk through the window (a handful of memoised
evaluations). A group never costs more than one evaluation per second of the window: fire
times are whole seconds, and every-second and ``@every`` groups are counted arithmetically.
Ticks are counted at their scheduled instant; a job's ``jitterSec`` delays its dispatch, not
its tick, and is not applied here.

A job with calendars or an active window is counted on its own, one evaluation per tick, and
a store can hold many such jobs: the evaluations of one count are bounded
(``MAX_HERD_EVALUATIONS``, a few seconds of one core at most), beyond which it stops with
``HerdTooLarge`` rather than take the node's CPU and memory for as long as it likes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cronwheel.core import schedule as sched
from cronwheel.core.calendar import Exclusions, bounded
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_HERD_EVALUATIONS

__all__ = ["HerdJob", "HerdTooLarge", "count_ticks", "herd_summary", "top_of_hour_suggestion"]

#: the largest window ``count_ticks`` accepts (one day)
MAX_WINDOW_S = 86_400
_EVERY_SECOND = "* * * * * *"


class HerdTooLarge(ValueError):
    """The count would take more than its budget of schedule evaluations."""


class _Budget:
    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.left = self.limit = limit

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise HerdTooLarge(
                f"counting this window takes more than {self.limit:,} schedule evaluations (jobs with "
                "calendars or an active window are counted one by one): ask for a shorter window"
            )


@dataclass(frozen=True, slots=True)
class HerdJob:
    job_id: str
    schedule: str | None  #: None: a one-off job (counted at ``next_run_at``)
    timezone: str = "UTC"
    next_run_at: int | None = None
    #: what excludes some of its ticks (calendars); such a job is counted on its own
    exclusions: Exclusions | None = None
    active_from: int | None = None
    active_until: int | None = None

    @property
    def restricted(self) -> bool:
        return self.exclusions is not None or self.active_from is not None or self.active_until is not None


@dataclass(slots=True)
class _Group:
    #: jobs by schedule text (or "once"): different texts may share a concrete schedule
    #: (``H * * * *`` hashing to minute 0 is ``0 * * * *``), and each is shown by its own text
    labels: dict[str, int]
    ticks: Sequence[int] = field(default_factory=list)  #: second offsets in the window

    @property
    def jobs(self) -> int:
        return sum(self.labels.values())


#: what callers may pass for a job: a HerdJob, or its fields as a tuple
JobLike = HerdJob | tuple[str, str | None, str, int | None] | tuple[str, str | None, str] | tuple[str, str | None]


def _as_job(item: JobLike) -> HerdJob:
    return item if isinstance(item, HerdJob) else HerdJob(*item)


def _group_ticks(schedule: sched.Schedule, start_s: int, window_s: int, budget: _Budget) -> Sequence[int]:
    """Second offsets in [0, window_s) at which ``schedule`` fires, from ``start_s``."""
    after_ms = start_s * 1000 - 1
    budget.spend()
    first = schedule.next_after(after_ms)
    if first is None or first >= (start_s + window_s) * 1000:
        return ()
    if schedule.kind == "every":
        step = schedule.interval_ms // 1000
        return range(first // 1000 - start_s, window_s, step)
    if schedule.kind == "cron" and schedule.expression == _EVERY_SECOND:
        return range(first // 1000 - start_s, window_s)
    ticks: list[int] = []
    t = first
    end_ms = (start_s + window_s) * 1000
    while t is not None and t < end_ms and len(ticks) < window_s:
        ticks.append(t // 1000 - start_s)
        budget.spend()
        nxt = schedule.next_after(t)
        if nxt is None or nxt <= t:
            break
        t = nxt
    return ticks


def _restricted_ticks(job: HerdJob, start_s: int, window_s: int, budget: _Budget) -> list[int]:
    """Second offsets of a job whose calendars or active window remove some of its ticks."""
    parsed = sched.parse_schedule(job.schedule or "", job.job_id, job.timezone or "UTC")
    next_tick = bounded(parsed.next_after, job.active_from, job.active_until)
    end_ms = (start_s + window_s) * 1000
    ticks: list[int] = []
    budget.spend()
    t = next_tick(start_s * 1000 - 1)
    while t is not None and t < end_ms and len(ticks) < window_s:
        if job.exclusions is None or job.exclusions.reason(t) is None:
            ticks.append(t // 1000 - start_s)
        budget.spend()
        t = next_tick(t)
    return ticks


def count_ticks(
    jobs: Iterable[JobLike], start_ms: int, window_s: int = 3600, max_evaluations: int = MAX_HERD_EVALUATIONS
) -> tuple[list[int], list[_Group], dict[str, int]]:
    """``(counts, groups, stats)``: ``counts[k]`` is the number of ticks in second
    ``start + k``; ``groups`` the contributors; ``stats`` jobs seen, skipped (bad schedule).
    Raises ``HerdTooLarge`` past ``max_evaluations`` schedule evaluations."""
    if not 1 <= window_s <= MAX_WINDOW_S:
        raise ValueError(f"window must be 1..{MAX_WINDOW_S} seconds, not {window_s}")
    budget = _Budget(max_evaluations)
    start_s = -(-start_ms // 1000)  # the first whole second at or after start
    end_ms = (start_s + window_s) * 1000
    # pass 1: group jobs by what their ticks depend on
    shared: dict[tuple[str, str], int] = {}  # (text, zone) -> jobs, for id-independent schedules
    once = 0
    once_ticks: dict[int, int] = {}
    per_job: list[HerdJob] = []
    restricted: list[HerdJob] = []  # observe calendars or an active window: counted one by one
    seen = skipped = 0
    for item in jobs:
        job = _as_job(item)
        seen += 1
        if job.schedule is None:
            at = job.next_run_at
            if at is not None and start_s * 1000 <= at < end_ms:
                k = at // 1000 - start_s
                once_ticks[k] = once_ticks.get(k, 0) + 1
                once += 1
            continue
        if job.restricted:
            restricted.append(job)
            continue
        text = job.schedule
        low = text.strip().lower()
        if low.startswith("@every") or (not low.startswith("@") and "h" in low):  # hashes the id
            per_job.append(job)
        else:
            key = (text, job.timezone or "UTC")
            shared[key] = shared.get(key, 0) + 1
    # pass 2: parse, then group by the concrete schedule
    by_schedule: dict[tuple[object, ...], tuple[sched.Schedule, dict[str, int]]] = {}

    def add(schedule: sched.Schedule, label: str, n: int) -> None:
        key = (schedule.kind, schedule.expression, schedule.timezone, schedule.wall_clock,
               schedule.interval_ms, schedule.anchor_ms)
        labels = by_schedule.setdefault(key, (schedule, {}))[1]
        labels[label] = labels.get(label, 0) + n

    for (text, tz), n in shared.items():
        try:
            add(sched.parse_schedule(text, "", tz), text, n)
        except sched.ScheduleError:
            skipped += n
    for job in per_job:
        try:
            add(sched.parse_schedule(job.schedule or "", job.job_id, job.timezone or "UTC"), job.schedule or "", 1)
        except sched.ScheduleError:
            skipped += 1
    counts = [0] * window_s
    groups: list[_Group] = []
    for schedule, labels in by_schedule.values():
        ticks = _group_ticks(schedule, start_s, window_s, budget)
        if not ticks:
            continue
        n = sum(labels.values())
        for k in ticks:
            counts[k] += n
        groups.append(_Group(labels, ticks))
    for job in restricted:
        try:
            ticks = _restricted_ticks(job, start_s, window_s, budget)
        except sched.ScheduleError:
            skipped += 1
            continue
        for k in ticks:
            counts[k] += 1
        if ticks:
            groups.append(_Group({job.schedule or "": 1}, ticks))
    if once:
        for k, n in once_ticks.items():
            counts[k] += n
            groups.append(_Group({"once": n}, (k,)))
    return counts, groups, {"jobs": seen, "skipped": skipped}


def _iso(second: int) -> str:
    return format_instant(second * 1000)


def herd_summary(
    jobs: Iterable[JobLike], start_ms: int, window_s: int = 3600, top: int = 10,
    max_evaluations: int = MAX_HERD_EVALUATIONS,
) -> dict[str, Any]:
    """The JSON summary of the window: the ``top`` busiest seconds (with the schedules that
    fill them), total ticks, max and p99 ticks per second, ticks per minute, and the busiest
    second's ticks in each minute."""
    counts, groups, stats = count_ticks(jobs, start_ms, window_s, max_evaluations)
    start_s = -(-start_ms // 1000)
    busiest = sorted((k for k, c in enumerate(counts) if c), key=lambda k: (-counts[k], k))[: max(0, top)]
    sets = [(g, g.ticks if isinstance(g.ticks, range) else frozenset(g.ticks)) for g in groups]
    top_rows = []
    for k in busiest:
        contrib: dict[str, int] = {}
        for g, ticks in sets:
            if k in ticks:
                for label, n in g.labels.items():
                    contrib[label] = contrib.get(label, 0) + n
        top_rows.append({
            "at": _iso(start_s + k),
            "offsetSec": k,
            "count": counts[k],
            "schedules": [
                {"schedule": s, "jobs": n}
                for s, n in sorted(contrib.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
            ],
        })
    ordered = sorted(counts)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0
    per_minute = [sum(counts[i : i + 60]) for i in range(0, window_s, 60)]
    # the busiest second of each minute: a herd shows as a spike here, whereas a minute's
    # total looks the same whether its ticks share one second or are spread over sixty
    peak_per_minute = [max(counts[i : i + 60], default=0) for i in range(0, window_s, 60)]
    return {
        "windowStart": _iso(start_s),
        "windowSec": window_s,
        "jobs": stats["jobs"],
        "skipped": stats["skipped"],
        "ticks": sum(counts),
        "maxPerSecond": ordered[-1] if ordered else 0,
        "p99PerSecond": p99,
        "busiest": top_rows,
        "perMinute": per_minute,
        "peakPerMinute": peak_per_minute,
    }


def top_of_hour_suggestion(text: str) -> str | None:
    """A spread-out alternative to a schedule pinned to the top of a minute range (``0 * * * *``
    → ``H * * * *``, ``*/15 * * * *`` → ``H/15 * * * *``, ``@daily`` → ``H H * * *``);
    None when the schedule is already spread (or is not such a schedule)."""
    body = text.strip()
    macros = {"@hourly": "H * * * *", "@daily": "H H * * *", "@midnight": "H H(0-2) * * *",
              "@weekly": "H H * * H", "@monthly": "H H H * *", "@yearly": "H H H H *",
              "@annually": "H H H H *"}
    if body.startswith("@"):
        return macros.get(body.lower())
    fields = body.split()
    if len(fields) == 6:
        if fields[0] not in ("0", "00"):
            return None
        fields = fields[1:]
    if len(fields) != 5:
        return None
    minute = fields[0]
    if minute in ("0", "00"):
        fields[0] = "H"
    elif minute.startswith("*/") and minute[2:].isdigit():
        fields[0] = "H/" + minute[2:]
    else:
        return None
    return " ".join(fields)
