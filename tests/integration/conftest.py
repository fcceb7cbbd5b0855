"""Fixtures the integration tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.threadserver import redirecting_endpoint

Endpoint = tuple[str, list[dict[str, Any]]]  #: a local HTTP server's base URL, and the requests it got


@pytest.fixture
def front() -> Iterator[Endpoint]:
    """A local endpoint (127.0.0.1) that redirects where it is told (tests/support/threadserver.py)."""
    with redirecting_endpoint() as endpoint:
        yield endpoint


@pytest.fixture
def far() -> Iterator[Endpoint]:
    """Another, on 127.0.0.2: a host off a list that holds 127.0.0.1."""
    with redirecting_endpoint("127.0.0.2") as endpoint:
        yield endpoint
