"""Where a followed stream resumes: the cursors of the event stream (``LOG:SEQ``) and of an
execution's live output (``EPOCH:OFFSET``), and what each names. No daemon, no event loop
needed: an event log, a ring and a hub of live output fed by hand."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

from cronwheel.api.fields import ValidationError
from cronwheel.api.ops import tail_of
from cronwheel.api.queries import parse_event_cursor, parse_output_cursor
from cronwheel.engine.liveoutput import TAIL_BYTES, LiveOutput
from cronwheel.obs.events import EventLog


def log_with(n: int, ring_size: int = 10_000) -> EventLog:
    log = EventLog("n1", stream=io.StringIO(), ring_size=ring_size)
    for i in range(n):
        log.emit("test.tick", jobId="ja" if i % 2 else "jb", i=i)
    return log


def seqs(records: list[dict[str, Any]]) -> list[int]:
    return [r["seq"] for r in records]


def every(_: dict[str, Any]) -> bool:
    return True


def test_a_cursor_names_where_the_answer_starts_and_resumes_there() -> None:
    log = log_with(10)
    ring = list(log.ring)
    tail, cursor = tail_of(ring, every, 3, None, log)
    assert seqs(tail) == [8, 9, 10] and cursor == f"{log.log_id}:7"  # asked again: the same answer
    assert seqs(tail_of(ring, every, 3, parse_event_cursor(cursor), log)[0]) == [8, 9, 10]
    assert tail_of(ring, every, 0, None, log) == ([], f"{log.log_id}:10")  # nothing sent: after the last
    after_9 = (log.log_id, 9)
    assert seqs(tail_of(ring, every, 3, after_9, log)[0]) == [10]
    # a filter: only the kept ones past the cursor, whatever n says
    only_a = tail_of(ring, lambda r: r["jobId"] == "ja", 1, (log.log_id, 2), log)[0]
    assert seqs(only_a) == [4, 6, 8, 10]


def test_another_log_is_a_restarted_daemon_sent_whole_and_a_gap_is_one_dropped_line() -> None:
    old, new = log_with(50), log_with(5)
    ring = list(new.ring)
    tail, cursor = tail_of(ring, every, 10, (old.log_id, 50), new)
    assert seqs(tail) == [1, 2, 3, 4, 5] and cursor == f"{new.log_id}:0"
    small = log_with(30, ring_size=10)  # it holds 21..30
    tail, _ = tail_of(list(small.ring), every, 10, (small.log_id, 15), small)
    assert tail[0]["event"] == "stream.dropped" and tail[0]["dropped"] == 5 and tail[0]["seq"] == 20
    assert seqs(tail[1:]) == list(range(21, 31))
    tail, _ = tail_of(list(small.ring), every, 10, (old.log_id, 3), small)
    assert tail[0]["dropped"] == 20 and seqs(tail[1:]) == list(range(21, 31))


@pytest.mark.parametrize("text", ["1:2", "abc:1", "0123456789abcdeg:1", "0123456789abcdef:", "0123456789abcdef:-1",
                                  "0123456789abcdef:1234567890123456789", " 0123456789abcdef:1"])
def test_a_bad_event_cursor_is_refused_naming_after(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_event_cursor(text)
    assert caught.value.field == "after" and "Cronwheel-Cursor" in str(caught.value)


@pytest.mark.parametrize("text", ["1", "1:", ":5", "a:1", "1:2:3", "1:1e3", "1:1234567890123456789"])
def test_a_bad_output_cursor_is_refused_naming_after(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_output_cursor(text)
    assert caught.value.field == "after" and "EPOCH:OFFSET" in str(caught.value)


def test_cursors_read() -> None:
    assert parse_event_cursor("0123456789abcdef:42") == ("0123456789abcdef", 42)
    assert parse_output_cursor("3:65536") == (3, 65536)
    assert parse_event_cursor(None) is None and parse_output_cursor("") is None


def test_live_output_offsets_count_the_bytes_served_from_the_hand_off_s_first() -> None:
    hub = LiveOutput()
    f = hub.follow("x:1")
    hub.append("x:1", 1, "é".encode()[:1])  # half a character: nothing to serve yet
    tail = hub.tail("x:1")
    assert tail is not None and (tail.epoch, tail.start, tail.data) == (1, 0, b"")
    hub.append("x:1", 1, "é".encode()[1:] + b"\x00\xff\n")  # a NUL and a byte that is not UTF-8: as stored
    served = "é\ufffd\ufffd\n".encode()
    tail = hub.tail("x:1")
    assert tail is not None and tail.data == served and tail.end == len(served)
    hub.append("x:1", 1, b"a" * TAIL_BYTES + "€".encode())
    tail = hub.tail("x:1")
    assert tail is not None and tail.end == len(served) + TAIL_BYTES + 3
    assert tail.start == tail.end - len(tail.data) and len(tail.data) <= TAIL_BYTES
    assert tail.data.decode() == "a" * (len(tail.data) - 3) + "€"  # cut between characters
    hub.append("x:1", 2, b"retry\n")  # a new hand-off: its own output, from byte 0
    tail = hub.tail("x:1")
    assert tail is not None and (tail.epoch, tail.start, tail.data) == (2, 0, b"retry\n")
    hub.append("x:1", 2, "ü".encode()[:1])
    hub.finish("x:1")  # a character left unfinished: replaced, not lost
    assert hub.tail("x:1") is None and f.ended
    # a follower got the very same bytes, the unfinished character's replacement last
    assert asyncio.run(f.next(0)).decode() == "é\ufffd\ufffd\n" + "a" * TAIL_BYTES + "€" + "retry\n" + "\ufffd"
