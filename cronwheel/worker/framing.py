"""Frames as bytes: the 4-byte big-endian length prefix and msgpack body of ``protocol.py``.
One compiled msgspec encoder, and one decoder per direction: encoding a frame, or decoding
and validating one, is one C call (plus ``protocol.check_frame`` for what types cannot say).
Grants are encoded a batch per frame, checked as the worker will check them; a stream is
decoded with every length bounded before it is buffered."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Sequence
from typing import Generic, TypeVar

import msgspec

from cronwheel.core.model import Grant
from cronwheel.core.records import Completion
from cronwheel.worker.protocol import (
    MAX_FRAME,
    MAX_GRANTS_PER_FRAME,
    MAX_RESULTS_PER_FRAME,
    DaemonFrame,
    Frame,
    Grants,
    Hello,
    ProtocolError,
    Results,
    WorkerFrame,
    check_frame,
)

_HEADER = struct.Struct(">I")
HEADER_SIZE = _HEADER.size

F = TypeVar("F", bound=Frame)

_encoder = msgspec.msgpack.Encoder()


# ---------------------------------------------------------------- decoding


def _refuse_ext(code: int, data: memoryview) -> object:
    raise ValueError(f"msgpack ext type {code} is not allowed")


class Codec(Generic[F]):
    """Decodes the frames of one direction (a union of frame types) and checks them."""

    def __init__(self, kind: object) -> None:
        self._decoder: msgspec.msgpack.Decoder[F] = msgspec.msgpack.Decoder(kind, ext_hook=_refuse_ext)

    def decode(self, body: bytes | memoryview) -> F:
        """One frame body. Raises ProtocolError."""
        try:
            frame = self._decoder.decode(body)
        except (msgspec.DecodeError, ValueError, TypeError, RecursionError) as exc:  # ValidationError is a DecodeError
            raise ProtocolError(f"bad frame: {type(exc).__name__}: {exc}") from None
        check_frame(frame)
        return frame


#: what a daemon reads from a worker, and what a worker reads from its daemon
FROM_WORKER: Codec[WorkerFrame] = Codec(WorkerFrame)
FROM_DAEMON: Codec[DaemonFrame] = Codec(DaemonFrame)
HELLO: Codec[Hello] = Codec(Hello)  #: the first frame of a connection, and nothing else


# ---------------------------------------------------------------- encoding


def encode_frame(frame: Frame) -> bytearray:
    """Length prefix + msgpack body, encoded in place. Raises ProtocolError when the body
    exceeds MAX_FRAME (a frame we could not send intact must not be sent at all)."""
    buf = bytearray(HEADER_SIZE)
    try:
        _encoder.encode_into(frame, buf, HEADER_SIZE)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode frame: {exc}") from None
    n = len(buf) - HEADER_SIZE
    if n > MAX_FRAME:
        raise ProtocolError(f"frame of {n} bytes exceeds MAX_FRAME ({MAX_FRAME})")
    _HEADER.pack_into(buf, 0, n)
    return buf


def encode_grant_frames(grants: Sequence[Grant]) -> tuple[list[bytearray], list[tuple[Grant, str]]]:
    """Frames carrying ``grants`` in order, as many per frame as fit under MAX_FRAME (and
    MAX_GRANTS_PER_FRAME), each checked as the worker will check it (decoded again by its
    decoder), so that a grant the worker would refuse is never sent: those come back, with
    why, as the second list. A batch that fails is split until the bad grant is alone."""
    frames: list[bytearray] = []
    bad: list[tuple[Grant, str]] = []

    def go(batch: Sequence[Grant]) -> None:
        try:
            data = encode_frame(Grants(list(batch)))
            FROM_DAEMON.decode(memoryview(data)[HEADER_SIZE:])
        except ProtocolError as exc:
            if len(batch) == 1:
                bad.append((batch[0], str(exc)))
                return
            half = len(batch) // 2
            go(batch[:half])
            go(batch[half:])
            return
        frames.append(data)

    for i in range(0, len(grants), MAX_GRANTS_PER_FRAME):
        go(grants[i : i + MAX_GRANTS_PER_FRAME])
    return frames, bad


def encode_result_frames(results: Sequence[Completion]) -> list[bytearray]:
    """``result`` frames for a batch of ``Completion``: as many per frame as fit. A result
    that cannot be sent even alone raises ProtocolError (the worker's texts are bounded far
    below MAX_FRAME: it does not happen)."""
    frames: list[bytearray] = []

    def go(batch: Sequence[Completion]) -> None:
        try:
            frames.append(encode_frame(Results(list(batch))))
        except ProtocolError:
            if len(batch) == 1:
                raise
            half = len(batch) // 2
            go(batch[:half])
            go(batch[half:])

    for i in range(0, len(results), MAX_RESULTS_PER_FRAME):
        go(results[i : i + MAX_RESULTS_PER_FRAME])
    return frames


class FrameDecoder(Generic[F]):
    """Incremental decoder for a byte stream: ``feed(data)`` returns the complete frames.

    A length prefix over MAX_FRAME is refused as soon as its 4 bytes arrive, so a hostile peer
    can make us buffer at most MAX_FRAME + 4 bytes. After a ProtocolError the stream is out of
    sync and the decoder refuses everything (the caller closes the connection).
    """

    def __init__(self, codec: Codec[F]) -> None:
        self._buf = bytearray()
        self._codec = codec
        self._broken = False

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[F]:
        if self._broken:
            raise ProtocolError("stream is out of sync after an earlier error")
        buf = self._buf
        buf += data
        frames: list[F] = []
        pos = 0
        try:
            with memoryview(buf) as view:
                end = len(buf)
                while end - pos >= HEADER_SIZE:
                    (n,) = _HEADER.unpack_from(buf, pos)
                    if n == 0 or n > MAX_FRAME:
                        raise ProtocolError(f"frame length {n} outside 1..{MAX_FRAME}")
                    if end - pos - HEADER_SIZE < n:
                        break
                    start = pos + HEADER_SIZE
                    pos = start + n
                    frames.append(self._codec.decode(view[start:pos]))
        except ProtocolError:
            self._broken = True
            self._buf = bytearray()  # not clear(): the error's traceback may still hold a view of it
            raise
        if pos:
            del buf[:pos]
        return frames


async def read_frame(reader: asyncio.StreamReader, codec: Codec[F], max_size: int = MAX_FRAME) -> F:
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
    return codec.decode(body)
