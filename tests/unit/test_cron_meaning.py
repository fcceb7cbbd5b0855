"""A schedule's meaning (core/cron.py ``meaning``, importmatch's ``schedule_meaning``): two
spellings that fire at the same instants mean the same, and a meaning never joins two
schedules that fire apart."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cronwheel.core.importmatch import schedule_meaning
from cronwheel.core.schedule import ScheduleError, next_fire

JOB = "j-meaning"
T0 = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000)


def fires(text: str, tz: str = "UTC", after_ms: int = T0, n: int = 50) -> list[int]:
    """The next ``n`` fire times of ``text`` for one job id (H and @every hash it)."""
    out: list[int] = []
    at: int | None = after_ms
    while at is not None and len(out) < n:
        at = next_fire(text, JOB, tz, at)
        if at is not None:
            out.append(at)
    return out


SAME = [
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 0 * * *"),
    ("@DAILY", "  0\t0  *  *  * "),
    ("* * * * *", "*/1 * * * *"),
    ("0 0 * * MON-FRI", "0 0 * * 1-5"),
    ("0 0 * * mon,tue,wed,thu,fri", "0 0 ? * 1-5"),
    ("0,30 * * * *", "*/30 * * * *"),
    ("0,30 * * * *", "0-59/30 * * * *"),
    ("0 0 1 jan *", "0 0 1 1 *"),
    ("@yearly", "0 0 1 JAN ?"),
    ("0 0 * * 0", "0 0 * * 7"),
    ("0 0 * * SUN", "0 0 * * 0"),
    ("0 0 * * SAT-SUN", "0 0 * * 0,6"),
    ("0 0 * * *", "0 0 * * 0-7"),  # '*' in day-of-month ANDs: every weekday is every day
    ("0 0 1-31 * 1", "0 0 * * *"),  # no '*': OR-ed, and 1-31 is every day
    ("0 0 30,31 4 *", "0 0 30 4 *"),  # April has no 31st
    ("0 0 31 4 1", "0 0 * 4 1"),  # OR-ed with a day April does not have: its Mondays
    ("0 0 * * 5#2,5", "0 0 * * 5"),  # every Friday holds the second one
    ("0 9 * * 1-5", "0 0 9 * * MON-FRI"),
    ("H 3 * * *", "H(0-59) 3 * * *"),  # the same term in the same place: the same hash
    ("H 3 * * *", "0 H 3 */1 * *"),
    ("@every 5m", "@every 300s"),
    ("@triggered", "@TRIGGERED"),
]

DIFFERENT = [
    ("0 0 1 * 1", "0 0 1 * *"),  # OR: the 1st and every Monday
    ("0 0 */1 * 1", "0 0 1-31 * 1"),  # '*/1' starts with '*': AND, Mondays; '1-31' ORs: every day
    ("0 0 1 * *", "0 0 1 * 0-6"),  # '0-6' does not start with '*': OR, every day
    ("0 0 * * 1", "0 0 * * 2"),
    ("0 0 L * *", "0 0 31 * *"),
    ("0 0 * * 5L", "0 0 * * 5#4"),
    ("0 0 31 4 5", "0 0 30,31 4 5"),  # Fridays in April, and April 30th
    ("0 0 * * *", "0 0 * * * *"),  # six fields: the first is the second
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_spellings_of_one_schedule_mean_the_same(a: str, b: str) -> None:
    assert schedule_meaning(a) == schedule_meaning(b)
    assert fires(a, "Europe/London") == fires(b, "Europe/London")


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_schedules_that_fire_apart_mean_apart(a: str, b: str) -> None:
    assert schedule_meaning(a) != schedule_meaning(b)
    assert fires(a) != fires(b)


def test_h_means_itself_only_not_the_time_it_hashes_to() -> None:
    # for this job id, H is some minute; a job imported from a line gets another id, and so
    # another minute: H is never the number, nor H in another place, nor @every its interval
    minute = datetime.fromtimestamp(fires("H 3 * * *", n=1)[0] / 1000, UTC).minute
    assert schedule_meaning("H 3 * * *") != schedule_meaning(f"{minute} 3 * * *")
    assert schedule_meaning("H,5 3 * * *") != schedule_meaning("5,H 3 * * *")
    assert schedule_meaning("H * * * *") != schedule_meaning("H/1 * * * *")
    assert schedule_meaning("@every 1m") != schedule_meaning("* * * * *")


def test_what_does_not_parse_is_its_own_text_and_no_meaning() -> None:
    for bad in ("bogus", "61 * * * *", "0 0 30 2 *", "@every", "@reboot", "", "+30s"):
        with pytest.raises(ScheduleError):
            next_fire(bad, JOB, "UTC", T0)
        assert schedule_meaning(bad) == ["text", bad]
    assert schedule_meaning(["0 0 * * *"]) == ["text", ["0 0 * * *"]]  # not even a string
    # no text passes for a meaning, not even a meaning's own text
    text = schedule_meaning("@daily")[1]
    assert schedule_meaning(text) != schedule_meaning("@daily")


#: spellings per field, in groups that mostly mean the same alone (day-of-month and
#: day-of-week mean together), so that drawn pairs often mean the same
SECONDS = [["0", "00", "0,0", "*/60", "0-0"], ["*/30", "0,30", "0-59/30"], ["H", "H(0-59)"]]
MINUTES = [["0", "0,0", "00"], ["*/30", "0,30", "0-59/30"], ["30/30", "30"], ["H", "H(0-59)"], ["H/30"]]
HOURS = [["0", "00"], ["*", "*/1", "0-23"], ["*/12", "0,12", "0-23/12"], ["12/12", "12"], ["H"]]
DOMS = [["*", "?", "*/1", "1-31"], ["1", "1,1"], ["1,15"], ["L"], ["LW"], ["*/2", "1-31/2"], ["31", "30,31"], ["H"]]
MONTHS = [["*", "1-12", "*/1"], ["1", "JAN"], ["jan,jul", "1,7", "1-12/6"], ["4", "APR"], ["2", "feb"]]
DOWS = [["*", "?", "*/1", "0-6", "0-7"], ["1-5", "MON-FRI", "mon,tue,wed,thu,fri"], ["0", "7", "SUN"],
        ["5L"], ["5#2"], ["5#2,5", "5", "FRI"], ["H"]]  # fmt: skip
ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe"]


@st.composite
def spelled_pair(draw: st.DrawFn) -> tuple[str, str]:
    """Two expressions: each field of the second mostly another spelling of the first's."""
    first, second = [], []
    for groups in (SECONDS, MINUTES, HOURS, DOMS, MONTHS, DOWS):
        group = draw(st.sampled_from(groups))
        first.append(draw(st.sampled_from(group)))
        second.append(draw(st.sampled_from(group if draw(st.integers(0, 3)) else [s for g in groups for s in g])))
    # a seconds field of 0 may be left out: five fields
    texts = [" ".join(fields[1:] if fields[0] == "0" and draw(st.booleans()) else fields) for fields in (first, second)]
    return texts[0], texts[1]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spelled_pair(), st.sampled_from(ZONES), st.integers(min_value=T0, max_value=T0 + 366 * 86_400_000))
def test_the_same_meaning_fires_at_the_same_instants(pair: tuple[str, str], tz: str, after_ms: int) -> None:
    a, b = pair
    same = schedule_meaning(a) == schedule_meaning(b)
    event(("same meaning" if a != b else "the same text") if same else "different meanings")
    if same and schedule_meaning(a)[0] == "meaning":
        assert fires(a, tz, after_ms) == fires(b, tz, after_ms), (a, b)
