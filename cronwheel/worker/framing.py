"""Frames as bytes: the 4-byte big-endian length prefix and msgpack body of ``protocol.py``,
encoded (a grant frame assembled from grants packed once), and decoded from a stream with every
length bounded before it is buffered."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgpack

from cronwheel.worker.protocol import (
    MAX_FRAME,
    MAX_GRANTS_PER_FRAME,
    MAX_ITEMS,
    ProtocolError,
    check_frame,
    check_grant,
)

_HEADER = struct.Struct(">I")
HEADER_SIZE = _HEADER.size


# ---------------------------------------------------------------- encoding


def encode_frame(frame: dict[str, Any]) -> bytes:
    """Length prefix + msgpack body. Raises ProtocolError when the body exceeds MAX_FRAME
    (a frame we could not send intact must not be sent at all)."""
    try:
        body: bytes = msgpack.packb(frame, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode frame: {exc}") from None
    if len(body) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds MAX_FRAME ({MAX_FRAME})")
    return _HEADER.pack(len(body)) + body


# {"t": "grant", "grants": [...]} up to the array header: fixmap(2), "t", "grant", "grants"
_GRANT_FRAME_HEAD = b"\x82" + msgpack.packb("t") + msgpack.packb("grant") + msgpack.packb("grants")
_ARRAY_HEADER_MAX = 5


def _array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


def pack_grant(grant: Mapping[str, object]) -> bytes:
    """One grant's msgpack bytes, checked as the receiver will check it (types, depth, size),
    so a grant the worker would refuse is never sent. Raises ProtocolError."""
    try:
        check_grant(grant, depth=3)
        packed: bytes = msgpack.packb(grant, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"grant cannot be encoded: {exc}") from None
    if len(packed) + len(_GRANT_FRAME_HEAD) + _ARRAY_HEADER_MAX > MAX_FRAME:
        raise ProtocolError(f"grant of {len(packed)} bytes does not fit in one frame")
    return packed


def encode_grant_frames(packed_grants: Sequence[bytes]) -> list[bytes]:
    """Frames carrying the given packed grants (from ``pack_grant``), as many per frame as fit
    under MAX_FRAME (and MAX_GRANTS_PER_FRAME), in order."""
    frames: list[bytes] = []
    batch: list[bytes] = []
    size = len(_GRANT_FRAME_HEAD) + _ARRAY_HEADER_MAX

    def flush() -> None:
        body = _GRANT_FRAME_HEAD + _array_header(len(batch)) + b"".join(batch)
        frames.append(_HEADER.pack(len(body)) + body)

    for packed in packed_grants:
        if batch and (size + len(packed) > MAX_FRAME or len(batch) >= MAX_GRANTS_PER_FRAME):
            flush()
            batch, size = [], len(_GRANT_FRAME_HEAD) + _ARRAY_HEADER_MAX
        batch.append(packed)
        size += len(packed)
    if batch:
        flush()
    return frames


# ---------------------------------------------------------------- decoding


def _refuse_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack ext type {code} is not allowed")


def decode_body(body: bytes, accept: Iterable[str] | None = None) -> dict[str, Any]:
    """Unpack and validate one frame body. Raises ProtocolError."""
    try:
        frame = msgpack.unpackb(
            body,
            raw=False,
            use_list=True,
            strict_map_key=True,
            max_str_len=MAX_FRAME,
            max_bin_len=MAX_FRAME,
            max_array_len=MAX_ITEMS,
            max_map_len=MAX_ITEMS,
            max_ext_len=0,
            ext_hook=_refuse_ext,
        )
    except (ValueError, TypeError, msgpack.UnpackException) as exc:  # ExtraData, StackError, …
        raise ProtocolError(f"bad msgpack body: {type(exc).__name__}: {exc}") from None
    return check_frame(frame, accept)


class FrameDecoder:
    """Incremental decoder for a byte stream: ``feed(data)`` returns the complete frames.

    A length prefix over MAX_FRAME is refused as soon as its 4 bytes arrive, so a hostile peer
    can make us buffer at most MAX_FRAME + 4 bytes. After a ProtocolError the stream is out of
    sync and the decoder refuses everything (the caller closes the connection).
    """

    def __init__(self, accept: Iterable[str] | None = None) -> None:
        self._buf = bytearray()
        self._need: int | None = None  # body length of the frame being read
        self._accept = frozenset(accept) if accept is not None else None
        self._broken = False

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if self._broken:
            raise ProtocolError("stream is out of sync after an earlier error")
        self._buf += data
        frames: list[dict[str, Any]] = []
        try:
            while True:
                if self._need is None:
                    if len(self._buf) < HEADER_SIZE:
                        break
                    (n,) = _HEADER.unpack_from(self._buf)
                    if n == 0 or n > MAX_FRAME:
                        raise ProtocolError(f"frame length {n} outside 1..{MAX_FRAME}")
                    del self._buf[:HEADER_SIZE]
                    self._need = n
                if len(self._buf) < self._need:
                    break
                body = bytes(self._buf[: self._need])
                del self._buf[: self._need]
                self._need = None
                frames.append(decode_body(body, self._accept))
        except ProtocolError:
            self._broken = True
            self._buf.clear()
            raise
        return frames


async def read_frame(
    reader: asyncio.StreamReader, accept: Iterable[str] | None = None, max_size: int = MAX_FRAME
) -> dict[str, Any]:
    """Read exactly one frame of at most ``max_size`` bytes. Raises EOFError on a clean end of
    stream (no byte of a new frame read), ProtocolError on a truncated or invalid frame."""
    try:
        header = await reader.readexactly(HEADER_SIZE)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            raise EOFError("connection closed") from None
        raise ProtocolError("connection closed inside a frame header") from None
    (n,) = _HEADER.unpack(header)
    if n == 0 or n > max_size:
        raise ProtocolError(f"frame length {n} outside 1..{max_size}")
    try:
        body = await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        raise ProtocolError("connection closed inside a frame body") from None
    return decode_body(body, accept)
