from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.daemon import Daemon


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
