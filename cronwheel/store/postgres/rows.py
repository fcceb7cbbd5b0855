"""Rows to model objects and back, for the PostgreSQL store.

psycopg returns BIGINT as int, DOUBLE PRECISION as float and ``json`` columns parsed; the
retry policy is read as text (policies are cached by their text).
"""

from __future__ import annotations

import functools
from typing import Any

import psycopg

from cronwheel.store.outbox.sql import Sql, pg_statement
from cronwheel.store.rowreader import RowReader


def text(value: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL characters (SQLite can): a worker's output or error
    that contains one is stored with U+FFFD in its place rather than refused."""
    if value is None or "\x00" not in value:
        return value
    return value.replace("\x00", "\ufffd")


def parsed(value: Any) -> Any:
    """``decode`` for psycopg: json columns arrive parsed already."""
    return value


READER = RowReader(parsed)  # psycopg parses json columns
job_from_row = READER.job
execution_from_row = READER.execution
tenant_from_row = READER.tenant
token_from_row = READER.token


_statement = functools.lru_cache(maxsize=256)(pg_statement)


def outbox_sql(conn: psycopg.Connection[Any]) -> Sql:
    """The notification outbox's statements (``store/outbox``) on this connection."""

    def rows(sql: str, args: dict[str, Any]) -> list[Any]:
        return conn.execute(_statement(sql), args).fetchall()

    def changes(sql: str, args: dict[str, Any]) -> int:
        return conn.execute(_statement(sql), args).rowcount

    return Sql(
        rows=rows, changes=changes, decode=parsed, json_cast="::json", skip_locked="FOR UPDATE SKIP LOCKED",
        in_list=lambda col, name, kind: f"{col} = ANY(:{name}::{'text' if kind == 'text' else 'int'}[])",
        list_value=list, key_share="FOR KEY SHARE",
    )
