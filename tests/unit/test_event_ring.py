"""The event ring is bounded in memory as well as in lines: events of long texts (a remote
worker's 8 KiB errors, in emoji four bytes a character) held ~85-320 MiB in 10,000 lines;
now what the ring holds, measured by tracemalloc, stays near its byte bound, and its running
sum matches its records through evictions by lines, by bytes and by batches."""

from __future__ import annotations

import gc
import io
import tracemalloc

import pytest

from cronwheel.obs.events import RING_BYTES, EventLog, record_bytes

MIB = 2**20


def _failures(log: EventLog, n: int, text: str, start: int = 0) -> None:
    for i in range(start, start + n):
        # distinct texts, as real errors are (a shared one would be held once)
        log.emit("execution.retry_scheduled", executionId=f"j{i:016d}:1796684580000", leaseEpoch=1, outcome="failed",
                 status="RETRY_WAIT", error=f"{i:08d}" + text, availableAt="2026-12-07T23:03:00.519Z")


def _held(log: EventLog) -> int:
    assert log.ring_bytes == sum(record_bytes(r) for r in log.ring), "the running sum drifted from the records"
    return log.ring_bytes


@pytest.mark.parametrize("char", ["x", "\N{GRINNING FACE}"])
def test_long_texts_are_held_to_the_byte_bound_measured(char: str) -> None:
    log = EventLog("n1", stream=io.StringIO(), fmt="json", level="critical")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _failures(log, 10_000, char * 8_192)
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # the estimate is what the records really hold (an emoji text is counted four times over)
    assert traced <= 18 * MIB, f"{traced / MIB:.1f} MiB held for a bound of 16"
    assert traced >= 12 * MIB, f"only {traced / MIB:.1f} MiB held: the estimate is far too high"
    assert 0 < _held(log) <= RING_BYTES
    assert len(log.ring) < 2_000, "the oldest went"
    assert log.ring[-1]["executionId"].startswith(f"j{9_999:016d}"), "the newest stays"


def test_ordinary_events_keep_their_10000_lines() -> None:
    log = EventLog("n1", stream=io.StringIO(), fmt="json", level="critical")
    _failures(log, 12_000, "exit code 3")
    assert len(log.ring) == 10_000 and log.ring[0]["seq"] == 2_001
    assert _held(log) < RING_BYTES, "ordinary events are bounded by their lines, below the bytes"


def test_batches_and_single_events_keep_the_sum_through_every_eviction() -> None:
    log = EventLog("n1", stream=io.StringIO(), fmt="json", level="critical", ring_size=50, ring_bytes=64 * 1024)
    _failures(log, 30, "short")
    log.emit_many("execution.succeeded", [{"executionId": f"b{i}:1", "error": "e" * (i * 100)} for i in range(40)])
    assert len(log.ring) <= 50 and _held(log) <= 64 * 1024
    log.emit_many("execution.started", [{"executionId": f"c{i}:1"} for i in range(120)])  # longer than the ring
    assert [r["executionId"] for r in log.ring] == [f"c{i}:1" for i in range(70, 120)]
    _held(log)
    _failures(log, 5, "z" * 100_000, start=500)  # each alone over the bound: the newest stays
    assert len(log.ring) == 1 and log.ring[0]["executionId"].startswith(f"j{504:016d}")
    _held(log)
    _failures(log, 3, "ok", start=900)
    assert len(log.ring) == 3 and _held(log) < 64 * 1024
