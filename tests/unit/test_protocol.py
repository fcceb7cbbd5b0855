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
from cronwheel.worker.framing import (
    FrameDecoder,
    decode_body,
    encode_frame,
    encode_grant_frames,
    pack_grant,
    read_frame,
)
from cronwheel.worker.protocol import (
    DAEMON_TO_WORKER,
    MAX_DEPTH,
    MAX_FRAME,
    MAX_ITEMS,
    MAX_OUT_DATA,
    PROTOCOL_VERSION,
    WORKER_TO_DAEMON,
    ProtocolError,
    grant_to_wire,
)


def wire_grant(**over: Any) -> dict[str, Any]:
    g = Grant(
        execution_id="j1:1767225600000", job_id="j1", tenant="acme", priority=Priority.HIGH,
        scheduled_at=1_767_225_600_000, attempt=2, lease_epoch=5, lease_until=1_767_225_660_000,
        lease_sec=60.0, timeout_sec=3600.0, target={"command": "echo hi"},
        payload={"a": [1, 2.5, None, True, "x"]},
    )
    return {**grant_to_wire(g), **over}


VALID: list[dict[str, Any]] = [
    {"t": "hello", "v": PROTOCOL_VERSION, "worker_id": "node-w0-0", "slots": 4, "pid": 1234},
    {"t": "welcome", "v": PROTOCOL_VERSION},
    {"t": "welcome", "v": PROTOCOL_VERSION, "lease_sec_hint": 60},
    {"t": "welcome", "v": PROTOCOL_VERSION, "live_output": True},
    {"t": "out", "execution_id": "j1:1", "lease_epoch": 3, "data": b"half a \xc3"},
    {"t": "grant", "grants": [wire_grant(), wire_grant(execution_id="j1:2", payload=None)]},
    {"t": "hb", "beats": [["j1:1", 3], ["j2:5", 1]]},
    {"t": "hb", "beats": []},
    {"t": "hb_ack", "lost": [["j1:1", "lease_lost"]]},
    {"t": "abort", "execution_id": "j1:1", "reason": "cancelled"},
    {"t": "result", "execution_id": "j1:1", "lease_epoch": 3, "outcome": "failed",
     "exit_code": -9, "error": "killed", "output": "tail é"},
    {"t": "result", "execution_id": "j1:1", "lease_epoch": 3, "outcome": "succeeded",
     "exit_code": None, "error": None, "output": None},
    {"t": "bye"},
]


def body(frame: Any) -> bytes:
    return msgpack.packb(frame, use_bin_type=True)


def framed(raw_body: bytes) -> bytes:
    return struct.pack(">I", len(raw_body)) + raw_body


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("frame", VALID, ids=lambda f: f["t"])
def test_round_trip_whole_and_byte_by_byte(frame: dict[str, Any]) -> None:
    data = encode_frame(frame)
    assert struct.unpack(">I", data[:4])[0] == len(data) - 4
    assert FrameDecoder().feed(data) == [frame]
    dec = FrameDecoder()
    out: list[dict[str, Any]] = []
    for i in range(len(data)):
        out += dec.feed(data[i : i + 1])
    assert out == [frame] and dec.buffered == 0


def test_many_frames_in_one_feed_come_out_in_order() -> None:
    data = b"".join(encode_frame(f) for f in VALID)
    assert FrameDecoder().feed(data + data[:3]) == VALID


def test_read_frame_from_a_stream() -> None:
    async def main() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(encode_frame(VALID[0]) + encode_frame(VALID[-1]))
        reader.feed_eof()
        assert await read_frame(reader) == VALID[0]
        assert await read_frame(reader, accept=WORKER_TO_DAEMON) == VALID[-1]
        with pytest.raises(EOFError):
            await read_frame(reader)

        truncated = asyncio.StreamReader()
        truncated.feed_data(encode_frame(VALID[0])[:-1])
        truncated.feed_eof()
        with pytest.raises(ProtocolError):
            await read_frame(truncated)

        huge = asyncio.StreamReader()
        huge.feed_data(struct.pack(">I", MAX_FRAME + 1))
        with pytest.raises(ProtocolError):  # refused without waiting for the body
            await read_frame(huge)

    asyncio.run(main())


def test_grant_to_wire_decodes_as_a_grant_frame() -> None:
    frames = encode_grant_frames([pack_grant(wire_grant())])
    [frame] = FrameDecoder(accept=DAEMON_TO_WORKER).feed(frames[0])
    [g] = frame["grants"]
    assert g["priority"] == 0 and g["lease_epoch"] == 5 and g["target"] == {"command": "echo hi"}


def test_a_process_setup_travels_with_its_grant_and_only_then() -> None:
    """Additive: a grant carries ``process`` (env, runAs, shell, stdin) only when its job sets
    one, so a worker that predates it reads every other grant exactly as before."""
    process = {"env": {"PATH": "/opt/bin"}, "runAs": {"user": "nobody"}, "shell": "/bin/bash", "stdin": "a\nb"}
    g = Grant(execution_id="j1:1", job_id="j1", tenant="t", priority=Priority.DEFAULT, scheduled_at=1, attempt=1,
              lease_epoch=1, lease_until=2, lease_sec=60.0, timeout_sec=60.0, target={"command": "cat"}, payload=None,
              process=process)  # fmt: skip
    [frame] = FrameDecoder(accept=DAEMON_TO_WORKER).feed(encode_grant_frames([pack_grant(grant_to_wire(g))])[0])
    assert frame["grants"][0]["process"] == process
    assert "process" not in wire_grant()


def test_grants_are_batched_under_the_frame_limit() -> None:
    packed = [pack_grant(wire_grant(execution_id=f"j:{i}", payload="p" * 60_000)) for i in range(60)]
    frames = encode_grant_frames(packed)
    assert len(frames) > 1
    assert all(len(f) <= MAX_FRAME + 4 for f in frames)
    decoded = FrameDecoder().feed(b"".join(frames))
    ids = [g["execution_id"] for f in decoded for g in f["grants"]]
    assert ids == [f"j:{i}" for i in range(60)]


def test_many_small_grants_respect_the_array_limit() -> None:
    packed = [pack_grant(wire_grant(execution_id=f"j:{i}", payload=None)) for i in range(10_000)]
    frames = encode_grant_frames(packed)
    decoded = FrameDecoder().feed(b"".join(frames))
    assert sum(len(f["grants"]) for f in decoded) == 10_000
    assert all(len(f["grants"]) <= MAX_ITEMS for f in decoded)


# ---------------------------------------------------------------- what the sender refuses


def test_encode_refuses_a_frame_over_the_limit() -> None:
    with pytest.raises(ProtocolError):
        encode_frame({"t": "result", "output": "x" * MAX_FRAME})


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
        {"lease_sec": 0},
        {"execution_id": ""},
    ],
)
def test_pack_grant_refuses_what_a_worker_would_refuse(over: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError):
        pack_grant(wire_grant(**over))


def test_pack_grant_bounds_payload_nesting() -> None:
    ok: Any = "leaf"
    for _ in range(MAX_DEPTH - 3):  # frame (1) > grants (2) > grant (3) > payload lists (4..)
        ok = [ok]
    frames = encode_grant_frames([pack_grant(wire_grant(payload=ok))])
    assert FrameDecoder().feed(frames[0])[0]["grants"][0]["payload"] == ok
    with pytest.raises(ProtocolError):
        pack_grant(wire_grant(payload=[ok]))


# ---------------------------------------------------------------- what the receiver refuses


def _nested(depth: int) -> bytes:
    # {"t": "bye", "x": [[[...]]]} with the frame map at depth 1
    return b"\x82" + body("t") + body("bye") + body("x") + b"\x91" * (depth - 1) + b"\xc0"


BAD_BODIES: list[bytes] = [
    body([1, 2]),  # not a map
    body({"x": 1}),  # no type
    body({"t": 7}),
    body({"t": "nope"}),
    body({"t": "hello", "v": 1, "worker_id": "w", "slots": 0, "pid": 1}),
    body({"t": "hello", "v": 1, "worker_id": "", "slots": 1, "pid": 1}),
    body({"t": "hello", "v": True, "worker_id": "w", "slots": 1, "pid": 1}),
    body({"t": "hello", "v": 1, "worker_id": "w" * 5000, "slots": 1, "pid": 1}),
    body({"t": "hb", "beats": [["x", "1"]]}),
    body({"t": "hb", "beats": [["x", -1]]}),
    body({"t": "hb", "beats": [["x", 1, 2]]}),
    body({"t": "hb", "beats": "nope"}),
    body({"t": "hb_ack", "lost": [["x", 3]]}),
    body({"t": "abort", "execution_id": "x"}),
    body({"t": "result", "execution_id": "x", "lease_epoch": 1, "outcome": "great"}),
    body({"t": "result", "execution_id": "x", "lease_epoch": 1, "outcome": "failed", "exit_code": "1"}),
    body({"t": "grant", "grants": []}),
    # a NUL could not be stored as text (PostgreSQL): refused at the frame, not at the write
    body({"t": "result", "execution_id": "x", "lease_epoch": 1, "outcome": "failed", "output": "o\x00"}),
    body({"t": "abort", "execution_id": "x\x00", "reason": "r"}),
    body({"t": "welcome", "v": 1, "live_output": "yes"}),
    body({"t": "out", "execution_id": "x", "lease_epoch": 1, "data": "text, not bytes"}),
    body({"t": "out", "execution_id": "x", "lease_epoch": 1, "data": b""}),
    body({"t": "out", "execution_id": "x", "lease_epoch": 1, "data": b"x" * (MAX_OUT_DATA + 1)}),
    body({"t": "out", "execution_id": "x", "data": b"x"}),
    body({"t": "grant", "grants": [{**wire_grant(), "timeout_sec": float("inf")}]}),
    body({"t": "grant", "grants": [{**wire_grant(), "payload": b"\x00"}]}),
    body({"t": "bye", 1: 2}),  # non-string map key
    body({"t": "bye", "x": msgpack.ExtType(5, b"")}),  # ext types, even empty
    body({"t": "bye", "x": msgpack.Timestamp(1, 0)}),
    body({"t": "bye", "x": list(range(MAX_ITEMS + 1))}),
    body({"t": "bye"}) + b"\xc0",  # trailing bytes
    body({"t": "bye"})[:-1],  # truncated
    b"\xc1",  # never-used byte
    b"\xa2\xff\xfe",  # invalid UTF-8 in a str
    b"\xdd\xff\xff\xff\xff",  # array of 4 billion elements (header only)
    b"\xdf\xff\xff\xff\xff",  # map of 4 billion pairs
    _nested(MAX_DEPTH + 1),
]


@pytest.mark.parametrize("raw", BAD_BODIES, ids=range(len(BAD_BODIES)))
def test_invalid_bodies_raise_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_body(raw)
    dec = FrameDecoder()
    with pytest.raises(ProtocolError):
        dec.feed(framed(raw))
    with pytest.raises(ProtocolError):  # and the stream stays refused
        dec.feed(encode_frame({"t": "bye"}))


def test_nesting_at_the_limit_is_accepted() -> None:
    assert decode_body(_nested(MAX_DEPTH))["t"] == "bye"


def test_extra_keys_are_ignored() -> None:
    assert decode_body(body({"t": "bye", "future": {"field": [1]}})) == {"t": "bye", "future": {"field": [1]}}


def test_direction_filter() -> None:
    with pytest.raises(ProtocolError):
        FrameDecoder(accept=WORKER_TO_DAEMON).feed(encode_frame({"t": "abort", "execution_id": "x", "reason": "r"}))
    with pytest.raises(ProtocolError):
        FrameDecoder(accept=DAEMON_TO_WORKER).feed(encode_frame(VALID[0]))


@pytest.mark.parametrize("length", [0, MAX_FRAME + 1, 0xFFFFFFFF])
def test_bad_length_prefix_is_refused_before_buffering(length: int) -> None:
    dec = FrameDecoder()
    with pytest.raises(ProtocolError):
        dec.feed(struct.pack(">I", length))
    assert dec.buffered == 0


def test_largest_frame_is_accepted() -> None:
    frame = {"t": "result", "execution_id": "x", "lease_epoch": 1, "outcome": "failed", "output": ""}
    overhead = len(body(frame))
    frame["output"] = "y" * (MAX_FRAME - overhead - 4)  # str header grows from 1 to 5 bytes
    data = encode_frame(frame)
    assert len(data) == MAX_FRAME + 4
    assert FrameDecoder().feed(data) == [frame]


# ---------------------------------------------------------------- fuzzing


def _feed_all(chunks: list[bytes]) -> None:
    dec = FrameDecoder()
    for chunk in chunks:
        try:
            frames = dec.feed(chunk)
        except ProtocolError:
            return
        assert dec.buffered <= MAX_FRAME + 4
        for f in frames:
            assert isinstance(f, dict) and f["t"] in WORKER_TO_DAEMON | DAEMON_TO_WORKER


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
_frame_like = st.fixed_dictionaries(
    {"t": st.sampled_from([*sorted(WORKER_TO_DAEMON | DAEMON_TO_WORKER), "x"])},
    optional={
        k: _json
        for k in ("v", "worker_id", "slots", "pid", "grants", "beats", "lost", "execution_id",
                  "reason", "lease_epoch", "outcome", "exit_code", "error", "output", "lease_sec_hint")
    },
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_frame_like)
def test_fuzz_structured_frames_are_validated_or_refused(frame: dict[str, Any]) -> None:
    try:
        raw = body(frame)
    except (TypeError, ValueError, OverflowError):
        return  # not even msgpack-encodable (a dict key of a type msgpack refuses)
    _feed_all([framed(raw)])


def test_memory_stays_bounded_under_a_flood_of_garbage() -> None:
    import random

    rnd = random.Random(1)
    dec = FrameDecoder()
    tracemalloc.start()
    try:
        for _ in range(200):
            try:
                dec.feed(rnd.randbytes(64 * 1024))
            except ProtocolError:
                dec = FrameDecoder()
            assert dec.buffered <= MAX_FRAME + 4
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MAX_FRAME
