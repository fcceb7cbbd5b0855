"""engine.outage.LoopHealth: a store outage is one event pair per loop; any other error keeps
its traceback every time."""

from __future__ import annotations

import io
import json

from cronwheel.core.clock import FakeClock
from cronwheel.engine.outage import LoopHealth
from cronwheel.obs.events import EventLog
from cronwheel.store.base import StoreUnavailable


def _events(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_an_outage_is_one_unavailable_and_one_available_with_its_length() -> None:
    out, clock = io.StringIO(), FakeClock()
    health = LoopHealth(EventLog("n", out, fmt="json"), clock, "scheduler")
    health.ok()  # nothing to say while all is well
    for _ in range(20):  # a loop retrying every half second
        try:
            raise StoreUnavailable("connection refused")
        except StoreUnavailable as exc:
            health.failed(exc)
        clock.advance(500)
    health.ok()
    health.ok()
    assert [(e["event"], e["loop"]) for e in _events(out)] == [("store.unavailable", "scheduler"), ("store.available", "scheduler")]
    assert _events(out)[0]["error"] == "connection refused"
    assert _events(out)[1]["downMs"] == 10_000


def test_other_errors_keep_their_traceback_once_per_interval() -> None:
    out, clock = io.StringIO(), FakeClock()
    health = LoopHealth(EventLog("n", out, fmt="json"), clock, "dispatch")

    def fail(exc: Exception) -> None:
        try:
            raise exc
        except Exception as caught:
            health.failed(caught)

    for _ in range(21):  # a loop failing on every turn, twice a second, for 10 s
        fail(KeyError("bug"))
        clock.advance(500)
    fail(ValueError("another bug"))  # a different error is told at once
    records = _events(out)
    assert [(e["event"], e["error"], e.get("suppressed")) for e in records] == [
        ("dispatch.error", "KeyError('bug')", None),
        ("dispatch.error", "KeyError('bug')", 19),  # 10 s later, with the 19 held back meanwhile
        ("dispatch.error", "ValueError('another bug')", None),
    ]
    assert all("Traceback" in e["traceback"] for e in records)
