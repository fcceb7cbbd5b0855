"""The token bucket behind submissions/s quotas, on a fake clock (integers, no sleeping)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronwheel.core.quota import RateLimiter, TokenBucket, retry_after_header


def test_the_worked_example_of_the_module_docstring() -> None:
    b = TokenBucket.full(rate=2, burst=3, now_ms=0)
    assert [b.take(0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert b.take(0) == pytest.approx(0.5)
    assert b.take(500) == 0.0
    assert b.take(500) == pytest.approx(0.5)
    assert [b.take(10_000) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert b.take(10_000) > 0


def test_refusal_takes_nothing_and_says_how_long_to_wait() -> None:
    b = TokenBucket.full(rate=0.5, burst=1, now_ms=1_000)
    assert b.take(1_000) == 0.0
    assert b.take(1_000) == pytest.approx(2.0)
    assert b.take(2_000) == pytest.approx(1.0)  # half a token earned, none taken
    assert b.take(3_000) == 0.0


def test_a_clock_going_backwards_refills_nothing() -> None:
    b = TokenBucket.full(rate=10, burst=1, now_ms=5_000)
    assert b.take(5_000) == 0.0
    assert b.take(4_000) > 0
    assert b.take(5_050) > 0  # 50 ms after the last real reading: half a token
    assert b.take(5_100) == 0.0


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        TokenBucket.full(rate=0, burst=1, now_ms=0)
    with pytest.raises(ValueError):
        TokenBucket.full(rate=1, burst=0.5, now_ms=0)
    with pytest.raises(ValueError):
        TokenBucket.full(rate=float("inf"), burst=1, now_ms=0)


@settings(max_examples=200, deadline=None)
@given(
    rate=st.floats(0.1, 1000),
    burst=st.integers(1, 50),
    gaps=st.lists(st.integers(0, 2_000), min_size=1, max_size=200),
)
def test_never_more_than_burst_plus_rate_times_elapsed(rate: float, burst: int, gaps: list[int]) -> None:
    b = TokenBucket.full(rate, burst, 0)
    now = 0
    granted = 0
    for gap in gaps:
        now += gap
        if b.take(now) == 0.0:
            granted += 1
        assert granted <= burst + rate * now / 1000 + 1e-6
        assert 0 <= b.tokens <= burst


def test_limiter_keeps_one_bucket_per_tenant_and_follows_new_limits() -> None:
    lim = RateLimiter()
    assert lim.take("a", 1, 2, 0) == 0.0
    assert lim.take("a", 1, 2, 0) == 0.0
    assert lim.take("a", 1, 2, 0) > 0
    assert lim.take("b", 1, 2, 0) == 0.0  # b has its own bucket
    assert lim.take("a", None, None, 0) == 0.0  # the quota was lifted
    assert "a" not in lim._buckets
    assert lim.take("c", 2.5, None, 0) == 0.0  # default burst: ceil(rate) = 3
    assert lim.take("c", 2.5, None, 0) == 0.0
    assert lim.take("c", 2.5, None, 0) == 0.0
    assert lim.take("c", 2.5, None, 0) > 0
    lim.take("c", 100, 1, 0)  # tightened: tokens kept, capped at the new burst
    assert lim._buckets["c"].burst == 1


def test_limiter_forgets_full_buckets_when_it_grows() -> None:
    lim = RateLimiter(max_keys=3)
    for i, key in enumerate("abc"):
        lim.take(key, 1, 1, i)
    lim.take("d", 1, 1, 10_000)  # a, b, c are full again by then
    assert len(lim) == 1


@pytest.mark.parametrize(("seconds", "header"), [(0.0, "1"), (0.2, "1"), (1.0, "1"), (1.01, "2"), (59.5, "60")])
def test_retry_after_is_whole_seconds_rounded_up(seconds: float, header: str) -> None:
    assert retry_after_header(seconds) == header
