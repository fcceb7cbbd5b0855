"""Rows to model objects and back, for the PostgreSQL store.

psycopg returns BIGINT as int, DOUBLE PRECISION as float and ``json`` columns parsed; the
retry policy is read as text (policies are cached by their text).
"""

from __future__ import annotations

from typing import Any

from cronwheel.store.common import RowReader


def text(value: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL characters (SQLite can): a worker's output or error
    that contains one is stored with U+FFFD in its place rather than refused."""
    if value is None or "\x00" not in value:
        return value
    return value.replace("\x00", "\ufffd")


def parsed(value: Any) -> Any:
    """``decode`` for psycopg: json columns arrive parsed already."""
    return value


_reader = RowReader(parsed)  # psycopg parses json columns
job_from_row = _reader.job
execution_from_row = _reader.execution
tenant_from_row = _reader.tenant
token_from_row = _reader.token
