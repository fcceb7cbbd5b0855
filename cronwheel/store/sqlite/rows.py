"""Rows to model objects and back, for the SQLite store (hot paths avoid per-row enum calls)."""

from __future__ import annotations

import json

from cronwheel.store.common import RowReader

_reader = RowReader(json.loads)  # SQLite keeps JSON as text
job_from_row = _reader.job
execution_from_row = _reader.execution
tenant_from_row = _reader.tenant
token_from_row = _reader.token
