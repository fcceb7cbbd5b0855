"""Retry math: exponential backoff with jitter, bounded by maxAttempts. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from cronwheel.core.model import ExecStatus, RetryPolicy


def backoff_ms(attempt: int, policy: RetryPolicy, rand01: float) -> int:
    """Delay before the attempt after ``attempt`` (1-based) failed.

    ``initial * multiplier**(attempt-1)``, capped at ``max_backoff``, then spread uniformly by
    ``± jitter`` so that many jobs failing together do not retry together. ``rand01`` is a
    uniform draw in [0, 1) passed in by the caller, so tests can pin it.
    """
    if attempt < 1:
        raise ValueError("attempt is 1-based")
    base = min(policy.max_backoff_sec, policy.initial_backoff_sec * policy.multiplier ** (attempt - 1))
    spread = 1.0 + policy.jitter * (2.0 * rand01 - 1.0)
    return max(0, round(base * spread * 1000))


@dataclass(frozen=True, slots=True)
class AfterFailure:
    status: ExecStatus  #: RETRY_WAIT or DEAD
    available_at: int | None  #: when the retry may start (RETRY_WAIT only)


def after_failure(attempt: int, policy: RetryPolicy, now_ms: int, rand01: float) -> AfterFailure:
    """What a failed attempt number ``attempt`` turns into: a retry, or the dead-letter queue."""
    if attempt >= policy.max_attempts:
        return AfterFailure(ExecStatus.DEAD, None)
    return AfterFailure(ExecStatus.RETRY_WAIT, now_ms + backoff_ms(attempt, policy, rand01))
