"""Waiting on conditions with deadlines: the only way tests wait (no bare sleeps)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Timeout(AssertionError):
    pass


def wait_for(condition: Callable[[], T], timeout: float = 20.0, interval: float = 0.02, what: str = "") -> T:
    """Poll ``condition`` until it returns something truthy; return it. Fails the test with
    ``what`` (and the last exception, if the condition raised) when the deadline passes."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # the condition may fail while a process is starting up
            last_exc = exc
        if time.monotonic() >= deadline:
            raise Timeout(f"timed out after {timeout}s waiting for {what or condition!r}" + (f" (last error: {last_exc!r})" if last_exc else ""))
        time.sleep(interval)
