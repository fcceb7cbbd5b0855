"""core.liveout: what of a command's output is forwarded live (rate and size bounded)."""

from __future__ import annotations

from cronwheel.core.liveout import OutputForwarder, gap_marker


def test_small_output_goes_at_once_then_no_more_often_than_the_interval() -> None:
    f = OutputForwarder(rate=1000, burst=1000, max_chunk=500, min_interval=0.1, min_send=1)
    f.add(b"hello\n")
    assert f.take(0.0) == b"hello\n"
    f.add(b"again\n")
    assert f.take(0.05) is None and f.pending
    assert abs(f.due_in(0.05) - 0.05) < 1e-9
    assert f.take(0.1) == b"again\n"
    assert not f.pending and f.take(0.5) is None


def test_a_flood_is_cut_to_the_rate_keeping_the_newest_with_a_marker_for_the_gap() -> None:
    f = OutputForwarder(rate=100, burst=100, max_chunk=50, min_interval=0.0, min_send=10)
    f.add(b"a" * 60 + b"b" * 20)  # the oldest 30 go
    assert f.take(0.0) == gap_marker(30) + b"a" * 30 + b"b" * 20
    sent = 0
    for step in range(1, 200):  # 2 seconds of a job printing 1000 bytes every 10 ms
        f.add(b"c" * 999 + b"\n")
        chunk = f.take(step * 0.01)
        sent += (chunk or b"").count(b"c")
    assert 0 < sent <= 100 * 2 + 100  # output bytes: never more than rate × time + burst
    f.add(b"the end\n")
    tail = f.take(2.0, final=True)
    assert tail is not None and tail.endswith(b"the end\n") and b"not shown live" in tail and not f.pending


def test_the_final_take_sends_everything_held_back() -> None:
    f = OutputForwarder(rate=10, burst=10, max_chunk=100, min_interval=1.0, min_send=1)
    f.add(b"x" * 40)
    assert f.take(0.0) == b"x" * 10
    assert f.take(0.1) is None
    assert f.take(0.2, final=True) == b"x" * 30
