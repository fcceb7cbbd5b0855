"""Retry math: exponential backoff inside the jitter band, bounded by maxAttempts."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.model import ExecStatus, RetryPolicy
from cronwheel.core.retry import after_failure, backoff_ms

POLICY = RetryPolicy(max_attempts=5, initial_backoff_sec=1, max_backoff_sec=10, multiplier=2, jitter=0.2)


@pytest.mark.parametrize(
    ("attempt", "rand", "expected"),
    [
        (1, 0.5, 1000),  # no jitter at the midpoint
        (2, 0.5, 2000),
        (3, 0.5, 4000),
        (4, 0.5, 8000),
        (5, 0.5, 10000),  # capped
        (9, 0.5, 10000),
        (1, 0.0, 800),  # -20 %
        (1, 0.999999, 1200),  # +20 %
    ],
)
def test_backoff_table(attempt, rand, expected):
    assert backoff_ms(attempt, POLICY, rand) == expected


@given(st.integers(1, 50), st.floats(0, 1, exclude_max=True))
def test_backoff_stays_in_jitter_band(attempt, rand):
    base = min(10_000, 1000 * 2 ** (attempt - 1))
    assert base * 0.8 - 1 <= backoff_ms(attempt, POLICY, rand) <= base * 1.2 + 1


def test_after_failure_retries_then_dead_letters():
    now = 1_000_000
    assert after_failure(1, POLICY, now, 0.5).status is ExecStatus.RETRY_WAIT
    assert after_failure(1, POLICY, now, 0.5).available_at == now + 1000
    assert after_failure(4, POLICY, now, 0.5).status is ExecStatus.RETRY_WAIT
    dead = after_failure(5, POLICY, now, 0.5)
    assert dead.status is ExecStatus.DEAD and dead.available_at is None


def test_single_attempt_policy_dead_letters_first_failure():
    assert after_failure(1, RetryPolicy(max_attempts=1), 0, 0.5).status is ExecStatus.DEAD


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"initial_backoff_sec": -1},
        {"initial_backoff_sec": 10, "max_backoff_sec": 5},
        {"multiplier": 0.5},
        {"jitter": 1.5},
    ],
)
def test_policy_rejects_nonsense(kwargs):
    with pytest.raises(ValueError, match="retryPolicy"):
        RetryPolicy(**kwargs)
