"""core.absence: when a command that lost the daemon tries again, says so, and gives up. A
fake clock: the times are the arguments."""

from __future__ import annotations

from cronwheel.core.absence import (
    REMIND_FIRST_SEC,
    REMIND_MAX_SEC,
    RETRY_FIRST_SEC,
    RETRY_MAX_SEC,
    Absence,
)


def test_a_follower_says_it_at_once_then_retries_sooner_than_every_two_seconds() -> None:
    a = Absence()
    first = a.failed(100.0)
    assert (first.say, first.give_up, first.retry_in, first.away_sec) == ("away", False, RETRY_FIRST_SEC, 0.0)
    now, waits = 100.0, []
    for _ in range(8):
        now += waits[-1] if waits else first.retry_in
        step = a.failed(now)
        assert step.say is None and not step.give_up
        waits.append(step.retry_in)
    assert waits == [0.5, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0] and RETRY_MAX_SEC == 2.0
    assert a.away


def test_reminders_come_after_a_minute_then_twice_as_long_each_time_up_to_hourly() -> None:
    a = Absence()
    a.failed(0.0)
    said = [t for t in range(1, 6 * 3600 + 1) if a.failed(float(t)).say == "still"]
    gaps = [later - earlier for earlier, later in zip([0, *said], said, strict=False)]
    assert gaps[:7] == [60, 120, 240, 480, 960, 1920, 3600] and REMIND_FIRST_SEC == 60.0
    assert set(gaps[6:]) == {REMIND_MAX_SEC}


def test_back_says_how_long_and_a_new_absence_starts_afresh() -> None:
    a = Absence()
    assert a.back(5.0) is None  # it was not away
    a.failed(10.0)
    a.failed(10.25)
    a.failed(10.75)
    assert a.back(12.5) == 2.5 and not a.away
    again = a.failed(500.0)
    assert again.say == "away" and again.retry_in == RETRY_FIRST_SEC and again.away_sec == 0.0
    assert a.failed(559.0).say is None and a.failed(560.0).say == "still"  # a minute after this one began


def test_a_script_gives_up_after_its_limit_and_is_not_reminded() -> None:
    a = Absence(limit_sec=60.0)
    assert a.failed(0.0).say == "away"
    assert [a.failed(float(t)).give_up for t in (30, 60)] == [False, False]
    late = a.failed(60.5)
    assert late.give_up and late.away_sec == 60.5
    assert all(a.failed(float(t)).say is None for t in range(61, 200))
