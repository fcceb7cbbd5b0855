"""The wire protocol between ``cronwheel serve`` and its local workers (one Unix socket): its
version, limits and frame types. Turning frames into bytes and back, with the checks, is
``framing.py``'s.

A frame is a 4-byte big-endian unsigned length followed by that many bytes of one msgpack
array: its first element names the frame type, the others are its fields in order (msgspec
structs, ``array_like``). The version is negotiated once, in ``hello`` / ``welcome``
(``PROTOCOL_VERSION``). Frames, by direction::

    worker → daemon   hello   [v, worker_id, slots, pid]
                      hb      [[[execution_id, lease_epoch], ...]]
                      out     [execution_id, lease_epoch, data]   (output so far, as it comes:
                                                       only after a welcome with live_output)
                      result  [[completion, ...]]     (``core.records.Completion``: a batch of
                                                       the results that ended in one loop turn)
                      bye     []                      (the worker is leaving on purpose)
    daemon → worker   welcome [v, lease_sec_hint?, live_output?]
                      grant   [[grant, ...]]          (``core.model.Grant``, as arrays)
                      hb_ack  [[[execution_id, reason], ...]]   only lost leases listed
                      abort   [execution_id, reason]
                      bye     []                      (finish running jobs, take no more, exit)

A grant and a result are the core records themselves (``Grant``, ``Completion``), one shape
from the store's start to the worker and back to the completion batch: decoding a frame
builds them directly.

Both ends treat the other as untrusted input: a body is at most ``MAX_FRAME`` bytes and is
decoded by one compiled msgspec decoder per direction, which checks every field's type and
bounds (``core.wire``); what msgspec cannot say is checked after it (``check_frame``): the
JSON-valued fields of a grant (target, payload, process, context) hold JSON values only
(no bytes, ext types, non-string keys or non-finite numbers) nested at most ``MAX_DEPTH``
deep, and a result's texts hold no NUL. Anything else raises ``ProtocolError``, on which the
receiver drops that one connection. Unknown trailing elements of a frame or record are
skipped without being built (room for a compatible extension without a version bump: a new
field goes last, with a default).

Version 2 (this one) made frames arrays and results batches; version 1 spoke maps, one
result per frame. Extensions, each offered by the daemon in ``welcome`` (a worker sends
nothing the daemon did not offer, so either side may be older):

* ``live_output: true``: the worker may send ``out`` frames, each at most ``MAX_OUT_DATA``
  bytes of a running command's stdout/stderr (raw bytes, cut anywhere), already bounded in
  rate and size by ``core.liveout``. The daemon keeps them only while that lease is current.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from cronwheel.core.limits import MAX_FRAME_BYTES, MAX_FRAME_ID_CHARS, MAX_FRAME_ITEMS
from cronwheel.core.model import Grant
from cronwheel.core.records import Completion, Outcome
from cronwheel.core.wire import Count, Id

PROTOCOL_VERSION = 2
MAX_FRAME = MAX_FRAME_BYTES  #: largest body (bytes, without the 4-byte prefix)
MAX_ITEMS = MAX_FRAME_ITEMS  #: longest array of records in a frame
MAX_ID = MAX_FRAME_ID_CHARS  #: longest execution/job/worker id, tenant, reason
MAX_PAYLOAD = 64 * 1024  #: the API's bound on one job payload; a grant stays far below MAX_FRAME
MAX_DEPTH = 32  #: deepest nesting of arrays/maps in a frame (the frame itself is depth 1)
MAX_GRANTS_PER_FRAME = 4096
MAX_RESULTS_PER_FRAME = 4096
MAX_SLOTS = 100_000
MAX_OUT_DATA = 64 * 1024  #: bytes of output in one ``out`` frame

OUTCOMES = frozenset({"succeeded", "failed", "timed_out", "lost"})  #: the Outcome values a worker may report

#: a short text that is not on the hot path (a reason, a worker id): also refused with a NUL
Word = Annotated[str, Meta(min_length=1, max_length=MAX_ID, pattern="^[^\x00]*$")]


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame: drop the connection."""


class Frame(msgspec.Struct, array_like=True, tag_field="t"):
    """A frame: its tag (the type's name) first, then its fields."""


class Hello(Frame, tag="hello"):
    v: Count
    worker_id: Word
    slots: Annotated[int, Meta(ge=1, le=MAX_SLOTS)]
    pid: Count


class Welcome(Frame, tag="welcome"):
    v: Count
    lease_sec_hint: Annotated[float, Meta(gt=0, le=1e15)] | None = None
    live_output: bool = False


class Beats(Frame, tag="hb"):
    beats: Annotated[list[tuple[Id, Count]], Meta(max_length=MAX_ITEMS)]


class HbAck(Frame, tag="hb_ack"):
    lost: Annotated[list[tuple[Id, Word]], Meta(max_length=MAX_ITEMS)]


class Out(Frame, tag="out"):
    execution_id: Id
    lease_epoch: Count
    data: Annotated[bytes, Meta(min_length=1, max_length=MAX_OUT_DATA)]


class Results(Frame, tag="result"):
    results: Annotated[list[Completion], Meta(min_length=1, max_length=MAX_ITEMS)]


class Grants(Frame, tag="grant"):
    grants: Annotated[list[Grant], Meta(min_length=1, max_length=MAX_ITEMS)]


class Abort(Frame, tag="abort"):
    execution_id: Word
    reason: Word


class Bye(Frame, tag="bye"):
    pass


class Ping(Frame, tag="ping"):
    """daemon -> worker: answer with pong (a sign of life)."""


class Pong(Frame, tag="pong"):
    pass


WorkerFrame = Hello | Beats | Out | Results | Bye | Pong  #: worker → daemon
DaemonFrame = Welcome | Grants | HbAck | Abort | Bye | Ping  #: daemon → worker
WORKER_TO_DAEMON = frozenset({"hello", "hb", "out", "result", "bye", "pong"})
DAEMON_TO_WORKER = frozenset({"welcome", "grant", "hb_ack", "abort", "bye", "ping"})


# ---------------------------------------------------------------- checks msgspec cannot make


def check_frame(frame: Frame) -> Frame:
    """What the decoder's types cannot say, for the frames that carry it: a grant's
    JSON-valued fields, a result's texts. Raises ProtocolError."""
    try:
        if type(frame) is Grants:
            for g in frame.grants:
                check_grant(g)
        elif type(frame) is Results:
            for c in frame.results:
                check_completion(c)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"bad {frame.__struct_config__.tag} frame: {exc}") from None
    return frame


def _check_json(value: Any, depth: int) -> None:
    """A JSON-compatible value (null, bool, number, string, array, string-keyed map) nested at
    most MAX_DEPTH deep, counting from ``depth`` for ``value`` itself. Iterative."""
    if value is None or type(value) is str:  # the usual payload, and a target's leaves
        return
    stack = [(value, depth)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            if d > MAX_DEPTH:
                raise ValueError("nested too deeply")
            if isinstance(v, dict):
                for k, item in v.items():
                    if not isinstance(k, str):
                        raise TypeError("map keys must be strings")
                    stack.append((item, d + 1))
            else:
                stack.extend((item, d + 1) for item in v)
        elif v is None or isinstance(v, bool | int | str):
            continue
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise ValueError("non-finite number")
        else:
            raise TypeError(f"{type(v).__name__} is not a JSON value")


def check_grant(g: Grant, depth: int = 3) -> None:
    """A grant (its array at nesting ``depth``: frame 1, grants 2, grant 3) beyond its types:
    JSON values nested at most MAX_DEPTH deep, ids without NUL. Raises TypeError/ValueError."""
    if "\x00" in g.execution_id or "\x00" in g.job_id or "\x00" in g.tenant:
        raise ValueError("an id holds a NUL character")
    _check_json(g.target, depth + 1)
    _check_json(g.payload, depth + 1)
    if g.process is not None:
        _check_json(g.process, depth + 1)
    if g.context is not None:
        _check_json(g.context, depth + 1)


def check_completion(c: Completion) -> None:
    """A result's texts go to the store: a NUL could not be kept as text (PostgreSQL), so it
    is refused at the frame, not at the write. Raises ValueError."""
    if (c.error is not None and "\x00" in c.error) or (c.output is not None and "\x00" in c.output):
        raise ValueError("a text holds a NUL character")
    if c.outcome is Outcome.INTERRUPTED:  # the daemon's verdict on its own stop: a worker's would cost no attempt
        raise ValueError("a worker does not report 'interrupted'")
    if "\x00" in c.execution_id:
        raise ValueError("execution_id holds a NUL character")
