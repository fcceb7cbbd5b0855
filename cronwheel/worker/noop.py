"""Built-in Python targets for benchmarks and smoke tests: ``{"python": "cronwheel.worker.noop:noop"}``.

They let a benchmark measure the scheduler rather than fork/exec.
"""

from __future__ import annotations

from typing import Any


def noop(**_: Any) -> None:
    """Does nothing, successfully."""


def fail(**_: Any) -> None:
    """Always fails: a poison pill for retry and dead-letter tests."""
    raise RuntimeError("cronwheel.worker.noop:fail always fails")
