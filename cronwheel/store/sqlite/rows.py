"""Rows to model objects and back, for the SQLite store (hot paths avoid per-row enum calls)."""

from __future__ import annotations

import json
from typing import Any

import apsw

from cronwheel.store.common import loads
from cronwheel.store.outbox.sql import Sql
from cronwheel.store.rowreader import RowReader

READER = RowReader(loads)  # SQLite keeps JSON as text
job_from_row = READER.job
execution_from_row = READER.execution
tenant_from_row = READER.tenant
token_from_row = READER.token


def outbox_sql(conn: apsw.Connection) -> Sql:
    """The notification outbox's statements (``store/outbox``) on this connection."""

    def rows(sql: str, args: dict[str, Any]) -> list[Any]:
        return conn.execute(sql, args).fetchall()

    def changes(sql: str, args: dict[str, Any]) -> int:
        conn.execute(sql, args).fetchall()
        return conn.changes()

    return Sql(
        rows=rows, changes=changes, decode=loads, json_cast="", skip_locked="",
        in_list=lambda col, name, _kind: f"{col} IN (SELECT value FROM json_each(:{name}))",
        list_value=lambda values: json.dumps(list(values)),
    )
