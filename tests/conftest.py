from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.postgres import PostgresServer, session_server

# a host's /etc/cronwheel/cronwheel.toml must not reach the daemons and CLIs the tests start
os.environ.setdefault("CRONWHEEL_CONFIG", "")


@pytest.fixture
def make_daemon(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Start real daemons on temporary data dirs; every one is stopped (or killed) afterwards."""
    started: list[Daemon] = []

    def make(name: str = "node", **kw) -> Daemon:
        d = Daemon(tmp_path / name, **kw)
        started.append(d)
        return d.start()

    yield make
    for d in started:
        try:
            d.stop(timeout=20)
        except AssertionError:
            d.kill()


@pytest.fixture
def daemon(make_daemon: Callable[..., Daemon]) -> Daemon:
    return make_daemon()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL (tests/support/postgres.py): skipped loudly when there is
    none, failed instead when CRONWHEEL_REQUIRE_POSTGRES=1. Started on first use only."""
    with session_server() as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database at the latest schema, for this test alone."""
    with postgres_server.database() as dsn:
        yield dsn
