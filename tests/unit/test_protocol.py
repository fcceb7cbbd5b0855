"""The worker wire protocol: framing, limits, validation, and fuzzing of the decoder."""

from __future__ import annotations

import asyncio
import struct
import tracemalloc
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronwheel.core.model import Grant, Priority
from cronwheel.core.records import Completion, Outcome
from cronwheel.worker.framing import (
    FROM_DAEMON,
    FROM_WORKER,
    Codec,
    FrameDecoder,
    encode_frame,
    encode_grant_frames,
    encode_result_frames,
    read_frame,
)
from cronwheel.worker.protocol import (
    MAX_DEPTH,
    MAX_FRAME,
    MAX_GRANTS_PER_FRAME,
    MAX_ITEMS,
    MAX_OUT_DATA,
    PROTOCOL_VERSION,
    Abort,
    Beats,
    Bye,
    Frame,
    Grants,
    HbAck,
    Hello,
    Out,
    Ping,
    Pong,
    ProtocolError,
    Results,
    Welcome,
)

ANY: Codec[Any] = Codec(Hello | Welcome | Out | Grants | Beats | HbAck | Abort | Results | Bye | Ping | Pong)


def grant(**over: Any) -> Grant:
    fields: dict[str, Any] = dict(
        execution_id="j1:1767225600000", job_id="j1", tenant="acme", priority=Priority.HIGH,
        scheduled_at=1_767_225_600_000, attempt=2, lease_epoch=5, lease_until=1_767_225_660_000,
        lease_sec=60.0, timeout_sec=3600.0, target={"command": "echo hi"},
        payload={"a": [1, 2.5, None, True, "x"]},
    )
    return Grant(**{**fields, **over})


def wire_grant(**over: Any) -> list[Any]:
    """A grant as the wire carries it: an array, in Grant's field order."""
    return list(msgpack.unpackb(bytes(encode_frame(Grants([grant(**over)])))[4:])[1][0])


def completion(**over: Any) -> Completion:
    return Completion(**{**dict(execution_id="j1:1", worker_id=None, lease_epoch=3, outcome=Outcome.FAILED,
                                exit_code=-9, error="killed", output="tail é"), **over})


VALID: list[Frame] = [
    Hello(PROTOCOL_VERSION, "node-w0-0", 4, 1234),
    Welcome(PROTOCOL_VERSION),
    Welcome(PROTOCOL_VERSION, lease_sec_hint=60.0),
    Welcome(PROTOCOL_VERSION, live_output=True),
    Out("j1:1", 3, b"half a \xc3"),
    Grants([grant(), grant(execution_id="j1:2", payload=None)]),
    Beats([("j1:1", 3), ("j2:5", 1)]),
    Beats([]),
    HbAck([("j1:1", "lease_lost")]),
    Abort("j1:1", "cancelled"),
    Results([completion()]),
    Results([completion(outcome=Outcome.SUCCEEDED, exit_code=None, error=None, output=None),
             completion(execution_id="j2:1", worker_id="w")]),
    Bye(),
]


def body(frame: Any) -> bytes:
    return msgpack.packb(frame, use_bin_type=True)


def framed(raw_body: bytes) -> bytes:
    return struct.pack(">I", len(raw_body)) + raw_body


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("frame", VALID, ids=lambda f: f.__struct_config__.tag)
def test_round_trip_whole_and_byte_by_byte(frame: Frame) -> None:
    data = bytes(encode_frame(frame))
    assert struct.unpack(">I", data[:4])[0] == len(data) - 4
    assert msgpack.unpackb(data[4:])[0] == frame.__struct_config__.tag  # an array, its type first
    assert FrameDecoder(ANY).feed(data) == [frame]
    dec = FrameDecoder(ANY)
    out: list[Frame] = []
    for i in range(len(data)):
        out += dec.feed(data[i : i + 1])
    assert out == [frame] and dec.buffered == 0


def test_many_frames_in_one_feed_come_out_in_order() -> None:
    data = b"".join(encode_frame(f) for f in VALID)
    assert FrameDecoder(ANY).feed(data + data[:3]) == VALID


def test_read_frame_from_a_stream() -> None:
    async def main() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(bytes(encode_frame(VALID[0]) + encode_frame(VALID[-1])))
        reader.feed_eof()
        assert await read_frame(reader, ANY) == VALID[0]
        assert await read_frame(reader, FROM_WORKER) == VALID[-1]
        with pytest.raises(EOFError):
            await read_frame(reader, ANY)

        truncated = asyncio.StreamReader()
        truncated.feed_data(bytes(encode_frame(VALID[0])[:-1]))
        truncated.feed_eof()
        with pytest.raises(ProtocolError):
            await read_frame(truncated, ANY)

        huge = asyncio.StreamReader()
        huge.feed_data(struct.pack(">I", MAX_FRAME + 1))
        with pytest.raises(ProtocolError):  # refused without waiting for the body
            await read_frame(huge, ANY)

    asyncio.run(main())


def test_a_grant_decodes_as_the_grant_it_was() -> None:
    frames, bad = encode_grant_frames([grant()])
    assert not bad
    [frame] = FrameDecoder(FROM_DAEMON).feed(bytes(frames[0]))
    assert isinstance(frame, Grants)
    [g] = frame.grants
    assert g == grant() and g.priority is Priority.HIGH and g.lease_epoch == 5 and g.target == {"command": "echo hi"}


def test_a_process_setup_travels_with_its_grant() -> None:
    process = {"env": {"PATH": "/opt/bin"}, "runAs": {"user": "nobody"}, "shell": "/bin/bash", "stdin": "a\nb"}
    g = Grant(execution_id="j1:1", job_id="j1", tenant="t", priority=Priority.DEFAULT, scheduled_at=1, attempt=1,
              lease_epoch=1, lease_until=2, lease_sec=60.0, timeout_sec=60.0, target={"command": "cat"}, payload=None,
              process=process)  # fmt: skip
    frames, _ = encode_grant_frames([g, grant()])
    [frame] = FrameDecoder(FROM_DAEMON).feed(bytes(frames[0]))
    assert isinstance(frame, Grants)
    assert frame.grants[0].process == process and frame.grants[1].process is None


def test_grants_are_batched_under_the_frame_limit() -> None:
    grants = [grant(execution_id=f"j:{i}", payload="p" * 60_000) for i in range(60)]
    frames, bad = encode_grant_frames(grants)
    assert len(frames) > 1 and not bad
    assert all(len(f) <= MAX_FRAME + 4 for f in frames)
    decoded = FrameDecoder(FROM_DAEMON).feed(b"".join(frames))
    ids = [g.execution_id for f in decoded if isinstance(f, Grants) for g in f.grants]
    assert ids == [f"j:{i}" for i in range(60)]


def test_many_small_grants_respect_the_array_limit() -> None:
    frames, _ = encode_grant_frames([grant(execution_id=f"j:{i}", payload=None) for i in range(10_000)])
    decoded = [f for f in FrameDecoder(FROM_DAEMON).feed(b"".join(frames)) if isinstance(f, Grants)]
    assert sum(len(f.grants) for f in decoded) == 10_000
    assert all(len(f.grants) <= min(MAX_ITEMS, MAX_GRANTS_PER_FRAME) for f in decoded)


def test_results_are_batched_under_the_frame_limit_in_order() -> None:
    results = [completion(execution_id=f"j:{i}", output="o" * 60_000) for i in range(40)]
    frames = encode_result_frames(results)
    assert len(frames) > 1 and all(len(f) <= MAX_FRAME + 4 for f in frames)
    decoded = FrameDecoder(FROM_WORKER).feed(b"".join(frames))
    assert [c for f in decoded if isinstance(f, Results) for c in f.results] == results


# ---------------------------------------------------------------- what the sender refuses


def test_encode_refuses_a_frame_over_the_limit() -> None:
    with pytest.raises(ProtocolError):
        encode_frame(Results([completion(output="x" * MAX_FRAME)]))


@pytest.mark.parametrize(
    "over",
    [
        {"payload": b"bytes are not JSON"},
        {"payload": "x" * MAX_FRAME},
        {"payload": {1: "int key"}},
        {"payload": float("nan")},
        {"target": "not a map"},
        {"process": "not a map"},
        {"process": {"stdin": b"bytes"}},
        {"lease_epoch": True},
        {"lease_epoch": -1},
        {"lease_sec": 0},
        {"timeout_sec": float("inf")},
        {"execution_id": ""},
        {"execution_id": "x" * 2000},
        {"tenant": "a\x00b"},
    ],
)
def test_a_grant_the_worker_would_refuse_is_not_sent_and_the_others_are(over: dict[str, Any]) -> None:
    grants = [grant(execution_id="ok:1"), grant(**over), grant(execution_id="ok:2")]
    frames, bad = encode_grant_frames(grants)
    assert [g for g, _ in bad] == [grants[1]] and bad[0][1]
    sent = [g.execution_id for f in FrameDecoder(FROM_DAEMON).feed(b"".join(frames)) if isinstance(f, Grants)
            for g in f.grants]  # fmt: skip
    assert sent == ["ok:1", "ok:2"]


def test_grant_payload_nesting_is_bounded() -> None:
    ok: Any = "leaf"
    for _ in range(MAX_DEPTH - 3):  # frame (1) > grants (2) > grant (3) > payload lists (4..)
        ok = [ok]
    frames, bad = encode_grant_frames([grant(payload=ok)])
    assert not bad
    [frame] = FrameDecoder(FROM_DAEMON).feed(bytes(frames[0]))
    assert isinstance(frame, Grants) and frame.grants[0].payload == ok
    _, bad = encode_grant_frames([grant(payload=[ok])])
    assert len(bad) == 1


# ---------------------------------------------------------------- what the receiver refuses


def _grant_body(g: list[Any]) -> bytes:
    return body(["grant", [g]])


def _nested_payload(depth: int) -> bytes:
    """A grant frame whose first grant's payload holds lists ``depth`` deep in all (the frame
    array is depth 1, the grants 2, the grant 3)."""
    g = wire_grant()
    g[11] = "P"
    raw = _grant_body(g)
    nested = b"\x91" * (depth - 3) + b"\xc0"
    return raw.replace(body("P"), nested)


def _result(**over: Any) -> list[Any]:
    r: dict[str, Any] = {"execution_id": "x", "worker_id": None, "lease_epoch": 1, "outcome": "failed",
                         "exit_code": None, "error": None, "output": None}
    r.update(over)
    return list(r.values())


BAD_BODIES: list[bytes] = [
    body({"t": "bye"}),  # a map: protocol 1's frame shape
    body([1, 2]),  # no type
    body([]),
    body([7]),
    body(["nope"]),
    body(["hello", 2, "w", 0, 1]),
    body(["hello", 2, "", 1, 1]),
    body(["hello", True, "w", 1, 1]),
    body(["hello", 2, "w" * 5000, 1, 1]),
    body(["hello", 2, "w"]),  # fields missing
    body(["hb", [["x", "1"]]]),
    body(["hb", [["x", -1]]]),
    body(["hb", [["x", 1, 2]]]),
    body(["hb", "nope"]),
    body(["hb_ack", [["x", 3]]]),
    body(["abort", "x"]),
    body(["result", [_result(outcome="great")]]),
    body(["result", [_result(exit_code="1")]]),
    body(["result", [_result(lease_epoch=-1)]]),
    body(["result", []]),
    body(["result", "nope"]),
    body(["grant", []]),
    # a NUL could not be stored as text (PostgreSQL): refused at the frame, not at the write
    body(["result", [_result(output="o\x00")]]),
    body(["result", [_result(error="e\x00")]]),
    # the daemon's own verdict on its stop: from a worker it would be a retry that costs nothing
    body(["result", [_result(outcome="interrupted")]]),
    body(["abort", "x\x00", "r"]),
    body(["welcome", 2, None, "yes"]),
    body(["out", "x", 1, "text, not bytes"]),
    body(["out", "x", 1, b""]),
    body(["out", "x", 1, b"x" * (MAX_OUT_DATA + 1)]),
    body(["out", "x", b"x"]),
    _grant_body([*wire_grant()[:9], float("inf"), *wire_grant()[10:]]),  # timeout_sec
    _grant_body([*wire_grant()[:11], b"\x00", *wire_grant()[12:]]),  # payload: bytes
    _grant_body([*wire_grant()[:11], {1: 2}, *wire_grant()[12:]]),  # payload: non-string key
    _grant_body([*wire_grant()[:11], msgpack.ExtType(5, b""), *wire_grant()[12:]]),  # ext types, even empty
    _grant_body([*wire_grant()[:11], msgpack.Timestamp(1, 0), *wire_grant()[12:]]),
    _grant_body([*wire_grant()[:3], 9, *wire_grant()[4:]]),  # no such priority
    _grant_body([*wire_grant()[:10], "not a map", *wire_grant()[11:]]),
    _grant_body(wire_grant()[:8]),  # fields missing
    body(["bye"]) + b"\xc0",  # trailing bytes
    body(["bye"])[:-1],  # truncated
    b"\xc1",  # never-used byte
    b"\x93\xa5abort\xa2\xff\xfe\xa1r",  # invalid UTF-8 in a str
    b"\x93\xa5abort\xa3\xed\xa0\x80\xa1r",  # a lone surrogate, UTF-8-encoded
    b"\xdd\xff\xff\xff\xff",  # array of 4 billion elements (header only)
    b"\xdf\xff\xff\xff\xff",  # map of 4 billion pairs
    b"\x92\xa3bye" + b"\x91" * 3000 + b"\xc0",  # nested beyond any stack, even where skipped
    _nested_payload(MAX_DEPTH + 1),
]


@pytest.mark.parametrize("raw", BAD_BODIES, ids=range(len(BAD_BODIES)))
def test_invalid_bodies_raise_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        ANY.decode(raw)
    dec = FrameDecoder(ANY)
    with pytest.raises(ProtocolError):
        dec.feed(framed(raw))
    with pytest.raises(ProtocolError):  # and the stream stays refused
        dec.feed(bytes(encode_frame(Bye())))


def test_nesting_at_the_limit_is_accepted() -> None:
    frame = ANY.decode(_nested_payload(MAX_DEPTH))
    assert isinstance(frame, Grants)


def test_trailing_elements_are_skipped() -> None:
    """Room for a compatible extension: a newer peer's extra fields, at the end of a frame or
    of a record, are skipped without being built."""
    assert ANY.decode(body(["bye", {"future": [1]}, msgpack.ExtType(5, b"")])) == Bye()
    frame = ANY.decode(_grant_body([*wire_grant(), "a future field"]))
    assert isinstance(frame, Grants) and frame.grants == [grant()]
    frame = ANY.decode(body(["result", [[*_result(), 7]]]))
    assert isinstance(frame, Results) and frame.results[0].execution_id == "x"


def test_direction_filter() -> None:
    with pytest.raises(ProtocolError):
        FrameDecoder(FROM_WORKER).feed(bytes(encode_frame(Abort("x", "r"))))
    with pytest.raises(ProtocolError):
        FrameDecoder(FROM_WORKER).feed(bytes(encode_frame(Grants([grant()]))))
    with pytest.raises(ProtocolError):
        FrameDecoder(FROM_DAEMON).feed(bytes(encode_frame(VALID[0])))
    with pytest.raises(ProtocolError):
        FrameDecoder(FROM_DAEMON).feed(bytes(encode_frame(Results([completion()]))))


@pytest.mark.parametrize("length", [0, MAX_FRAME + 1, 0xFFFFFFFF])
def test_bad_length_prefix_is_refused_before_buffering(length: int) -> None:
    dec = FrameDecoder(ANY)
    with pytest.raises(ProtocolError):
        dec.feed(struct.pack(">I", length))
    assert dec.buffered == 0


def test_largest_frame_is_accepted() -> None:
    overhead = len(encode_frame(Results([completion(output="")]))) - 4
    frame = Results([completion(output="y" * (MAX_FRAME - overhead - 4))])  # str header grows from 1 to 5 bytes
    data = bytes(encode_frame(frame))
    assert len(data) == MAX_FRAME + 4
    assert FrameDecoder(FROM_WORKER).feed(data) == [frame]


# ---------------------------------------------------------------- fuzzing


def _feed_all(chunks: list[bytes]) -> None:
    dec = FrameDecoder(ANY)
    for chunk in chunks:
        try:
            frames = dec.feed(chunk)
        except ProtocolError:
            return
        assert dec.buffered <= MAX_FRAME + 4
        for f in frames:
            assert isinstance(f, Frame)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=2048), max_size=8))
def test_fuzz_random_bytes_only_ever_raise_protocol_error(chunks: list[bytes]) -> None:
    _feed_all(chunks)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=512), min_size=1, max_size=8), st.data())
def test_fuzz_random_bodies_behind_valid_length_prefixes(bodies: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(framed(b) if b else b"" for b in bodies)
    cut = data.draw(st.integers(0, len(stream)))
    _feed_all([stream[:cut], stream[cut:]])


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=True)
    | st.text(max_size=20) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4),
    max_leaves=20,
)
TAGS = ["hello", "welcome", "out", "grant", "hb", "hb_ack", "abort", "result", "bye", "ping", "pong", "x"]
_frame_like = st.tuples(st.sampled_from(TAGS), st.lists(_json, max_size=8)).map(lambda tf: [tf[0], *tf[1]])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_frame_like)
def test_fuzz_structured_frames_are_validated_or_refused(frame: list[Any]) -> None:
    try:
        raw = body(frame)
    except (TypeError, ValueError, OverflowError):
        return  # not even msgpack-encodable (a dict key of a type msgpack refuses)
    _feed_all([framed(raw)])


def test_memory_stays_bounded_under_a_flood_of_garbage() -> None:
    import random

    rnd = random.Random(1)
    dec = FrameDecoder(ANY)
    tracemalloc.start()
    try:
        for _ in range(200):
            try:
                dec.feed(rnd.randbytes(64 * 1024))
            except ProtocolError:
                dec = FrameDecoder(ANY)
            assert dec.buffered <= MAX_FRAME + 4
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MAX_FRAME
