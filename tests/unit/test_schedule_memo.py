"""The schedule memos: one entry for every job of a text that does not depend on the job's id,
and bounds in bytes that hold (pure: no clock, no sleeping)."""

from __future__ import annotations

import gc
import threading
import tracemalloc

import pytest

from cronwheel.core import schedule as sched
from cronwheel.core.memo import Memo

T0 = 1_790_000_000_000  # 2026-09-21T...Z, a Monday
IDS = [f"job-{i:07d}" for i in range(60_000)]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    sched.cache_clear()


def test_jobs_of_one_text_share_one_entry_and_one_schedule() -> None:
    first = sched.parse_schedule("0 * * * *", IDS[0], "Europe/Paris")
    for job_id in IDS:
        assert sched.parse_schedule("0 * * * *", job_id, "Europe/Paris") is first
        assert sched.next_fire("0 * * * *", job_id, "Europe/Paris", T0) == first.next_after(T0)
    info = sched.cache_info()
    assert (info["parse_size"], info["parse_misses"], info["job_misses"]) == (1, 1, 0)
    assert first.job_id == ""  # it depends on no job: it names none


def test_a_text_in_another_zone_is_another_schedule() -> None:
    paris = sched.parse_schedule("0 9 * * *", "a", "Europe/Paris")
    utc = sched.parse_schedule("0 9 * * *", "a", "UTC")
    assert paris is not utc and paris.next_after(T0) != utc.next_after(T0)
    assert sched.cache_info()["parse_size"] == 2


@pytest.mark.parametrize("text", ["H H * * *", "@every 90m", "H/5 * * * *"])
def test_schedules_of_a_job_id_are_each_jobs_own(text: str) -> None:
    a1, b1 = sched.parse_schedule(text, "job-a"), sched.parse_schedule(text, "job-b")
    assert sched.parse_schedule(text, "job-a") is a1 and sched.parse_schedule(text, "job-b") is b1
    assert (a1.job_id, b1.job_id) == ("job-a", "job-b")
    # what each job gets is what a fresh parse gives it: the memo changes no answer
    sched.cache_clear()
    assert sched.parse_schedule(text, "job-b") == b1 and sched.parse_schedule(text, "job-a") == a1
    assert sched.cache_info()["parse_misses"] == 1  # the text parsed once for both ids


def test_a_job_specific_error_is_the_jobs_alone() -> None:
    """'31 H': some ids expand to a month without a 31st; the others still parse."""
    outcomes = {"ok": 0, "never": 0}
    for job_id in IDS[:200]:
        try:
            sched.parse_schedule("0 0 31 H *", job_id)
            outcomes["ok"] += 1
        except sched.ScheduleError:
            outcomes["never"] += 1
    assert outcomes["ok"] and outcomes["never"]
    with pytest.raises(sched.ScheduleError, match="job id must be a string"):
        sched.parse_schedule("H * * * *", 5)  # type: ignore[arg-type]


def test_sixty_thousand_hashed_jobs_hold_the_per_job_bound() -> None:
    for job_id in IDS:
        sched.next_fire("H H * * *", job_id, "UTC", T0)
    info = sched.cache_info()
    assert info["parse_size"] < 40_000  # lru_cache held all 60,000 (up to 131,072)
    assert info["parse_bytes"] <= sched.SHARED_BYTES + sched.PER_JOB_BYTES
    # the latest are still held: a claim's repeated lookups of its jobs hit
    misses = info["job_misses"]
    for job_id in IDS[-1000:]:
        sched.next_fire("H H * * *", job_id, "UTC", T0)
    assert sched.cache_info()["job_misses"] == misses


def test_the_evaluations_hold_their_bound() -> None:
    every_second = sched.parse_schedule("* * * * * *", "j")
    for k in range(30_000):
        assert every_second.next_after(T0 + k * 1000) == T0 + (k + 1) * 1000
    info = sched.cache_info()
    assert info["eval_size"] < 25_000  # lru_cache held 65,536
    assert info["eval_bytes"] <= sched.NEXT_BYTES


def test_the_estimates_are_near_what_the_entries_hold() -> None:
    """The bounds are in bytes as estimated: tracemalloc's figure, within 40 % (a dict's and a
    deque's spare room vary with their fill)."""
    # ids made as a claim reads them from its rows, which are gone after it: the memo's copy
    # is the one left (ids as long as the daemon's)
    for fill, what in ((lambda: [sched.next_fire("H H * * *", f"job-{i:020d}", "UTC", T0) for i in range(5_000)],
                        "parse_bytes"),
                       (lambda: [sched.next_fire("* * * * * *", "j", "UTC", T0 + k * 1000) for k in range(5_000)],
                        "eval_bytes")):
        fill()  # what is made once (compiled expressions, the zone) outside the figure
        sched.cache_clear()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            fill()
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        estimate = sched.cache_info()[what]
        assert held * 0.75 <= estimate <= held * 1.4, (what, held, estimate)
        sched.cache_clear()


def test_memo_drops_the_oldest_past_its_bytes_across_its_dicts() -> None:
    memo: Memo[str, str] = Memo(100, lambda key, value: len(key) + len(value))
    other: dict[str, str] = {}
    memo.put("a", "x" * 40)
    memo.put("b", "y" * 40, other)
    assert memo.bytes == 82 and len(memo) == 2
    memo.put("c", "z" * 40)  # 123 bytes: "a" goes, the first in
    assert memo.held == {"c": "z" * 40} and other == {"b": "y" * 40} and memo.bytes == 82
    memo.put("d", "w" * 40, other)  # "b" goes, from the dict it was put in
    assert other == {"d": "w" * 40} and memo.held == {"c": "z" * 40}
    memo.put("huge", "v" * 500)  # alone over the bound: kept, the others dropped
    assert memo.held == {"huge": "v" * 500} and other == {} and len(memo) == 1
    memo.clear()
    assert (memo.held, memo.bytes, len(memo), memo.misses) == ({}, 0, 0, 0)


def test_memo_put_keeps_the_first_value_of_a_key() -> None:
    memo: Memo[str, object] = Memo(1 << 20, lambda _k, _v: 1)
    first, second = object(), object()
    assert memo.put("k", first) is first
    assert memo.put("k", second) is first and len(memo) == 1 and memo.bytes == 1


def test_threads_putting_at_once_keep_the_bound_and_the_counts() -> None:
    memo: Memo[int, int] = Memo(1000, lambda _k, _v: 10)

    def put(base: int) -> None:
        for i in range(5000):
            memo.put(base + i, i)

    threads = [threading.Thread(target=put, args=(n * 10_000,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(memo) == len(memo.held) == 100 and memo.bytes == 1000
