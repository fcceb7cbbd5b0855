"""The one timestamp format cronwheel prints (RFC 3339, UTC, milliseconds), and its round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_INSTANT_MS
from cronwheel.core.schedule import parse_instant

YEAR_1 = -62_135_596_800_000  # 0001-01-01T00:00:00Z


@pytest.mark.parametrize(("ms", "text"), [
    (0, "1970-01-01T00:00:00.000Z"),
    (1_796_104_649_194, "2026-12-01T05:57:29.194Z"),
    (YEAR_1, "0001-01-01T00:00:00.000Z"),  # a year below 1000 keeps its four digits
    (YEAR_1 + 366 * 86_400_000, "0002-01-02T00:00:00.000Z"),
    (-500, "1969-12-31T23:59:59.500Z"),  # before the epoch: the milliseconds count forward
    (1_796_119_200_007, "2026-12-01T10:00:00.007Z"),
])
def test_format_instant_writes_milliseconds_and_four_digit_years(ms: int, text: str) -> None:
    assert format_instant(ms) == text
    if 0 <= ms < MAX_INSTANT_MS:  # parse_instant keeps to 1970..9899 (test_schedule)
        assert parse_instant(text) == ms


def test_a_whole_second_keeps_its_milliseconds_and_none_stays_none() -> None:
    assert format_instant(1_796_119_200_000) == "2026-12-01T10:00:00.000Z"
    assert format_instant(None) is None


def test_the_cached_second_never_leaks_into_another() -> None:
    """The text of the last second is reused: a different second, even 1 ms away, is new."""
    assert format_instant(1_796_119_200_999) == "2026-12-01T10:00:00.999Z"
    assert format_instant(1_796_119_201_000) == "2026-12-01T10:00:01.000Z"
    assert format_instant(1_796_119_200_999) == "2026-12-01T10:00:00.999Z"


@given(st.integers(min_value=0, max_value=MAX_INSTANT_MS - 1))
def test_what_format_instant_writes_parses_back(ms: int) -> None:
    assert parse_instant(format_instant(ms)) == ms


@given(st.integers(min_value=YEAR_1, max_value=MAX_INSTANT_MS - 1))
def test_the_cli_reads_epoch_milliseconds_exactly(ms: int) -> None:
    # `cronwheel next` printed 9899-12-31 23:59:59.998 for a runAt of .999: ms / 1000 as a float
    from cronwheel.cli import render

    dt = render.ms_to_dt(ms)
    assert render.fmt_utc(dt) == format_instant(ms)
    assert render.fmt_local(dt).endswith(" UTC") and (ms % 1000 == 0 or render.fmt_local(dt).endswith(f".{ms % 1000:03d} UTC"))


@pytest.mark.parametrize(("ms", "shown"), [
    (MAX_INSTANT_MS - 1, "9899-12-31 23:59:59.999 UTC"),  # the last instant a runAt may name
    (0, "1970-01-01 00:00:00 UTC"),
    (-1, "1969-12-31 23:59:59.999 UTC"),
    (YEAR_1 + 999, "0001-01-01 00:00:00.999 UTC"),
])
def test_the_cli_reads_the_extreme_instants_to_the_millisecond(ms: int, shown: str) -> None:
    from cronwheel.cli import render

    assert render.fmt_local(render.ms_to_dt(ms)) == shown
    assert render.fmt_utc(render.ms_to_dt(ms)) == format_instant(ms)
