"""The store contract suite: every test here talks to ``Store`` only, through the ``store``
fixture, and runs against every backend in ``BACKENDS`` (like APScheduler 4's
tests/conftest.py): SQLite on a temporary file, PostgreSQL on a fresh database of the
session's server (tests/support/postgres.py; skipped loudly when there is none, failed when
CRONWHEEL_REQUIRE_POSTGRES=1).

Time is a fake ``now_ms`` passed in; nothing sleeps.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cronwheel.core import schedule
from cronwheel.core.ids import bucket_of
from cronwheel.core.model import (
    JobSpec,
    MisfirePolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)
from cronwheel.core.records import NewJob, StartRequest
from cronwheel.store.base import Store

BACKENDS = [pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SEC = 1_000
MIN = 60 * SEC
HOUR = 60 * MIN
ALL_BUCKETS = list(range(64))

StoreFactory = Callable[[], Store]


def open_backend(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> StoreFactory:
    """A function that opens a new handle on one and the same store (reopen = durability)."""
    if backend == "sqlite":
        from cronwheel.store.sqlite import SqliteStore

        path = tmp_path / "cronwheel.db"
        return lambda: SqliteStore.open(path)
    if backend == "postgres":
        from cronwheel.store.postgres import PostgresStore

        dsn = str(request.getfixturevalue("postgres_dsn"))  # the server starts on first use
        return lambda: PostgresStore.open(dsn)
    raise AssertionError(f"unknown backend {backend!r}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_factory(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    opened: list[Store] = []
    factory = open_backend(backend, tmp_path, request)

    def open_store() -> Store:
        s = factory()
        opened.append(s)
        return s

    yield open_store
    for s in opened:
        s.close()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    return store_factory()


# ---------------------------------------------------------------- builders

_ids = itertools.count(1)


def job_id(prefix: str = "job") -> str:
    return f"{prefix}{next(_ids):06d}"


def spec(**kw: Any) -> JobSpec:
    """A JobSpec with test defaults: every minute, command target."""
    kw.setdefault("target", {"command": "echo hi"})
    if "run_at" not in kw:
        kw.setdefault("schedule", "* * * * *")
    return JobSpec(**kw)


def new_job(
    *,
    jid: str | None = None,
    next_run_at: int | None = T0,
    key: str | None = None,
    request_hash: str | None = None,
    **kw: Any,
) -> NewJob:
    return NewJob(jid or job_id(), spec(**kw), next_run_at, key, request_hash)


def one_off(at: int = T0, **kw: Any) -> NewJob:
    return new_job(next_run_at=at, run_at=at, schedule=None, **kw)


def create(store: Store, *jobs: NewJob, now: int = T0 - MIN) -> list[str]:
    results = store.create_jobs(list(jobs), now)
    ids = [r.job_id for r in results]
    assert all(i is not None for i in ids)
    return [str(i) for i in ids]


def claim_all(store: Store, now: int, limit: int = 1000) -> Any:
    return store.claim_due(ALL_BUCKETS, now, limit)


def start(store: Store, eid: str, now: int, worker: str = "w1") -> Any:
    grants = store.start_executions([StartRequest(eid, worker)], now)
    assert len(grants) == 1, f"{eid} was not dispatchable"
    return grants[0]


def next_tick(text: str, jid: str, after: int) -> int:
    t = schedule.next_fire(text, jid, "UTC", after)
    assert t is not None
    return t


__all__ = [
    "ALL_BUCKETS",
    "HOUR",
    "MIN",
    "SEC",
    "T0",
    "MisfirePolicy",
    "OverlapPolicy",
    "Priority",
    "RetryPolicy",
    "bucket_of",
    "claim_all",
    "create",
    "job_id",
    "new_job",
    "next_tick",
    "one_off",
    "spec",
    "start",
]
