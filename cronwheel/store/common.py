"""Small pieces every store backend shares: the stored forms of enums and JSON, and the
decisions both backends make alike around their SQL (a replayed execution's history, a
tenant's merged settings, a token's scope, the reaper's completions).

Pure (no driver, no clock). The bigger shared decisions have modules of their own:
``completions`` (what a completion does), ``chaining`` (chain children, backfills),
``calendars`` and ``rowreader``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from cronwheel.core.model import (
    ExecOrigin,
    ExecStatus,
    JobSpec,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)

#: the reason on a tick claimed ahead that an update of its job's schedule cancelled
SUPERSEDED = "superseded: the job's schedule was updated before this tick was due"
EXEC_STATUS: dict[str, ExecStatus] = {s.value: s for s in ExecStatus}

PRIORITY: dict[int, Priority] = {p.value: p for p in Priority}
JOB_STATUS: dict[str, JobStatus] = {s.value: s for s in JobStatus}
MISFIRE: dict[str, MisfirePolicy] = {m.value: m for m in MisfirePolicy}
ORIGIN: dict[str, ExecOrigin] = {o.value: o for o in ExecOrigin}
OVERLAP: dict[str, OverlapPolicy] = {o.value: o for o in OverlapPolicy}

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(value: Any) -> str:
    """Compact JSON, as every backend stores it."""
    return "null" if value is None else _dumps(value)


def process_text(spec: JobSpec) -> str | None:
    """The stored form of a job's process setup: JSON, or NULL for a job that sets none."""
    process = spec.process_json()
    return None if process is None else _dumps(process)


@functools.lru_cache(maxsize=4096)
def retry_to_json(policy: RetryPolicy) -> str:
    return _dumps(policy.to_json())


@functools.lru_cache(maxsize=4096)
def retry_from_json(text: str | None) -> RetryPolicy:
    return RetryPolicy() if text is None else RetryPolicy.from_json(json.loads(text))


class JsonMemo:
    """``json.loads`` for one batch of rows, parsing each distinct text once: in a herd many
    executions share a target or a payload text (a ``null`` payload above all). The values
    are shared between the rows of the batch, so they must be treated as read-only (grants
    are)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, Any] = {}

    def __call__(self, text: str) -> Any:
        try:
            return self._seen[text]
        except KeyError:
            value = self._seen[text] = json.loads(text)
            return value


def short(value: str | None, limit: int = 200) -> str:
    if not value:
        return ""
    return value if len(value) <= limit else value[: limit - 1] + "…"
