"""The one timestamp format cronwheel prints (RFC 3339, UTC, milliseconds), and its round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.schedule import parse_instant
from cronwheel.obs.events import iso_ms

YEAR_1 = -62_135_596_800_000  # 0001-01-01T00:00:00Z


@pytest.mark.parametrize(("ms", "text"), [
    (0, "1970-01-01T00:00:00.000Z"),
    (1_796_104_649_194, "2026-12-01T05:57:29.194Z"),
    (YEAR_1, "0001-01-01T00:00:00.000Z"),  # a year below 1000 keeps its four digits
    (YEAR_1 + 366 * 86_400_000, "0002-01-02T00:00:00.000Z"),
])
def test_iso_ms_writes_four_digit_years(ms: int, text: str) -> None:
    assert iso_ms(ms) == text


@given(st.integers(min_value=YEAR_1, max_value=253_402_300_799_999))
def test_what_iso_ms_writes_parses_back(ms: int) -> None:
    assert parse_instant(iso_ms(ms) or "") == ms
