"""Stored JSON columns are read by msgspec (``store.common.loads``), and read exactly as
``json.loads`` read them, including what msgspec refuses: rows written before the API's door
refused lone surrogates and non-finite numbers must stay readable."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cronwheel.store.common import JsonMemo, dumps, loads

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
JSON_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5), max_leaves=25
)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 == 1.0 == True would hide a change)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b) and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


@given(JSON_VALUES)
def test_a_stored_value_reads_as_json_loads_reads_it(value: Any) -> None:
    for text in (dumps(value), json.dumps(value), json.dumps(value, ensure_ascii=False)):
        assert same(loads(text), json.loads(text)), text
        assert same(loads(text.encode()), json.loads(text)), text  # psycopg hands over bytes


def test_what_msgspec_refuses_is_read_as_before() -> None:
    for text in ('"\\ud800"', '{"a": "x\\udfffy"}', "NaN", "[Infinity, -Infinity]", "1e400", '{"a": 1, "a": 2}'):
        assert same(loads(text), json.loads(text)), text
        assert same(loads(text.encode()), json.loads(text)), text


def test_a_batch_parses_each_distinct_text_once() -> None:
    memo = JsonMemo()
    first = memo('{"command": "true"}')
    assert memo('{"command": "true"}') is first
    assert memo("null") is None and memo('"\\ud800"') == "\ud800"
