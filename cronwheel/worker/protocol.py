"""The wire protocol between ``cronwheel serve`` and its local workers (one Unix socket): its
version, limits and frame types, and what makes a frame valid (``check_frame``). Turning frames
into bytes and back is ``framing.py``'s.

A frame is a 4-byte big-endian unsigned length followed by that many bytes of one msgpack
map. The map's ``"t"`` names the frame type; the version is negotiated once, in ``hello`` /
``welcome`` (``PROTOCOL_VERSION``). Frames, by direction::

    worker → daemon   hello   {v, worker_id, slots, pid}
                      hb      {beats: [[execution_id, lease_epoch], ...]}
                      out     {execution_id, lease_epoch, data}   (output so far, as it comes:
                                                       only after a welcome with live_output)
                      result  {execution_id, lease_epoch, outcome, exit_code, error, output}
                      bye     {}                      (the worker is leaving on purpose)
    daemon → worker   welcome {v, lease_sec_hint?, live_output?}
                      grant   {grants: [grant, ...]}  (see ``grant_to_wire``)
                      hb_ack  {lost: [[execution_id, reason], ...]}   only lost leases listed
                      abort   {execution_id, reason}
                      bye     {}                      (finish running jobs, take no more, exit)

Both ends treat the other as untrusted input: a body is at most ``MAX_FRAME`` bytes, msgpack is
unpacked with every length bounded, ext types refused and map keys restricted to strings, the
nesting depth is bounded, and every field of every frame type is type-checked. Anything else
raises ``ProtocolError``, on which the receiver drops that one connection. Unknown extra keys
are ignored (room for a compatible extension without a version bump).

Extensions within version 1, each offered by the daemon in ``welcome`` (a worker sends
nothing the daemon did not offer, so either side may be older):

* ``live_output: true``: the worker may send ``out`` frames, each at most ``MAX_OUT_DATA``
  bytes of a running command's stdout/stderr (raw bytes, cut anywhere), already bounded in
  rate and size by ``core.liveout``. The daemon keeps them only while that lease is current.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict

from cronwheel.core.limits import text_problem
from cronwheel.core.model import Grant

PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 20  #: largest body (bytes, without the 4-byte prefix)
MAX_PAYLOAD = 64 * 1024  #: the API's bound on one job payload; a grant stays far below MAX_FRAME
MAX_ITEMS = 65_536  #: longest array or map in a frame
MAX_DEPTH = 32  #: deepest nesting of arrays/maps in a frame (the frame map itself is depth 1)
MAX_GRANTS_PER_FRAME = 4096
MAX_ID = 1024  #: longest execution/job/worker id, tenant, reason
MAX_SLOTS = 100_000
MAX_OUT_DATA = 64 * 1024  #: bytes of output in one ``out`` frame

WORKER_TO_DAEMON = frozenset({"hello", "hb", "out", "result", "bye", "pong"})
DAEMON_TO_WORKER = frozenset({"welcome", "grant", "hb_ack", "abort", "bye", "ping"})
OUTCOMES = frozenset({"succeeded", "failed", "timed_out", "lost"})  #: store.base.Outcome values


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame: drop the connection."""


class WireGrant(TypedDict):
    """One grant as a ``grant`` frame carries it (``grant_to_wire``; checked by ``check_grant``)."""

    execution_id: str
    job_id: str
    tenant: str
    priority: int
    scheduled_at: int  #: ms since the epoch
    attempt: int
    lease_epoch: int
    lease_until: int  #: ms since the epoch
    lease_sec: float
    timeout_sec: float
    target: dict[str, Any]
    payload: Any
    process: NotRequired[dict[str, Any]]  #: only when the job sets one
    context: NotRequired[dict[str, Any]]  #: a chain child's parent, a backfill mark


def grant_to_wire(grant: Grant) -> WireGrant:
    """The wire form of a ``Grant`` (plain msgpack types). ``process`` (the job's env, runAs,
    shell, stdin) is sent only when the job sets one: most grants stay as small as before."""
    wire: WireGrant = {
        "execution_id": grant.execution_id,
        "job_id": grant.job_id,
        "tenant": grant.tenant,
        "priority": int(grant.priority),
        "scheduled_at": int(grant.scheduled_at),
        "attempt": int(grant.attempt),
        "lease_epoch": int(grant.lease_epoch),
        "lease_until": int(grant.lease_until),
        "lease_sec": float(grant.lease_sec),
        "timeout_sec": float(grant.timeout_sec),
        "target": grant.target,
        "payload": grant.payload,
    }
    if grant.process is not None:
        wire["process"] = grant.process
    if grant.context is not None:  # a chain child's parent, a backfill mark
        wire["context"] = grant.context
    return wire


# ---------------------------------------------------------------- checks


def check_frame(frame: object, accept: Iterable[str] | None = None) -> dict[str, Any]:
    """Validate one unpacked frame: a map of one known type (one of ``accept``, when given),
    nested at most MAX_DEPTH deep, every field of its type well-formed. Raises ProtocolError."""
    if not isinstance(frame, dict):
        raise ProtocolError("a frame must be a map")
    if not _depth_ok(frame):
        raise ProtocolError(f"frame nested deeper than {MAX_DEPTH}")
    t = frame.get("t")
    if not isinstance(t, str):
        raise ProtocolError("frame has no type")
    if accept is not None and t not in accept:
        raise ProtocolError(f"unexpected frame type {t!r}")
    check = _CHECKS.get(t)
    if check is None:
        raise ProtocolError(f"unknown frame type {t!r}")
    try:
        check(frame)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"bad {t} frame: {exc}") from None
    return frame


# Each field check raises TypeError/ValueError with a short reason; check_frame turns it into
# ProtocolError.


def _int(frame: dict[str, Any], key: str, lo: int | None = None, hi: int | None = None) -> int:
    v = frame.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{key} must be an integer")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{key} out of range")
    return v


def _opt_int(frame: dict[str, Any], key: str) -> None:
    if frame.get(key) is not None:
        _int(frame, key)


def _num(frame: dict[str, Any], key: str, optional: bool = False) -> None:
    v = frame.get(key)
    if v is None and optional:
        return
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
        raise TypeError(f"{key} must be a positive number")


def _str(frame: dict[str, Any], key: str, max_len: int = MAX_ID, optional: bool = False) -> None:
    """A string of 1..max_len characters (optional: also None, and empty is fine)."""
    v = frame.get(key)
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise TypeError(f"{key} must be a string")
    if len(v) > max_len or (not v and not optional):
        raise ValueError(f"{key} has a bad length")
    problem = text_problem(v)  # msgpack's UTF-8 is strict, but a NUL gets through it
    if problem is not None:
        raise ValueError(f"{key} holds {problem}")


def _pairs(frame: dict[str, Any], key: str, second: type) -> None:
    """An array of [execution_id, x] where x is a non-negative int (hb) or a short string (hb_ack)."""
    v = frame.get(key)
    if not isinstance(v, list):
        raise TypeError(f"{key} must be an array")
    for item in v:
        if not isinstance(item, list) or len(item) != 2:
            raise TypeError(f"{key} entries must be pairs")
        a, b = item
        if not isinstance(a, str) or not a or len(a) > MAX_ID:
            raise TypeError(f"{key}: bad execution id")
        if not isinstance(b, second) or isinstance(b, bool):
            raise TypeError(f"{key}: bad second element")
        if (isinstance(b, int) and b < 0) or (isinstance(b, str) and len(b) > MAX_ID):
            raise ValueError(f"{key}: second element out of range")


def _depth_ok(frame: dict[str, Any]) -> bool:
    """No array/map deeper than MAX_DEPTH (the frame is depth 1). Iterative: no recursion."""
    stack: list[tuple[Any, int]] = [(frame, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            return False
        if isinstance(v, dict):
            stack.extend((item, d + 1) for item in v.values() if isinstance(item, dict | list))
        else:
            stack.extend((item, d + 1) for item in v if isinstance(item, dict | list))
    return True


def _check_json(value: Any, depth: int) -> None:
    """A JSON-compatible value (null, bool, number, string, array, string-keyed map) nested at
    most MAX_DEPTH deep, counting from ``depth`` for ``value`` itself. Iterative."""
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


def check_grant(g: Any, depth: int) -> None:
    """A grant (``WireGrant``) whose map sits at nesting ``depth``. Raises TypeError/ValueError."""
    if not isinstance(g, dict):
        raise TypeError("a grant must be a map")
    for key in ("execution_id", "job_id", "tenant"):
        _str(g, key)
    _int(g, "priority", 0, 1000)
    _int(g, "scheduled_at")
    _int(g, "attempt", 0)
    _int(g, "lease_epoch", 0)
    _int(g, "lease_until")
    _num(g, "lease_sec")
    _num(g, "timeout_sec")
    target = g.get("target")
    if not isinstance(target, dict):
        raise TypeError("target must be a map")
    _check_json(target, depth + 1)
    _check_json(g.get("payload"), depth + 1)
    process = g.get("process")
    if process is not None:
        if not isinstance(process, dict):
            raise TypeError("process must be a map")
        _check_json(process, depth + 1)
    if g.get("context") is not None:
        if not isinstance(g["context"], dict):
            raise TypeError("context must be a map")
        _check_json(g["context"], depth + 1)


def _check_hello(f: dict[str, Any]) -> None:
    _int(f, "v", 0)
    _str(f, "worker_id")
    _int(f, "slots", 1, MAX_SLOTS)
    _int(f, "pid", 0)


def _check_welcome(f: dict[str, Any]) -> None:
    _int(f, "v", 0)
    _num(f, "lease_sec_hint", optional=True)
    if not isinstance(f.get("live_output", False), bool):
        raise TypeError("live_output must be a boolean")


def _check_out(f: dict[str, Any]) -> None:
    _str(f, "execution_id")
    _int(f, "lease_epoch", 0)
    data = f.get("data")
    if not isinstance(data, bytes):
        raise TypeError("data must be bytes")
    if not data or len(data) > MAX_OUT_DATA:
        raise ValueError("data has a bad length")


def _check_grant_frame(f: dict[str, Any]) -> None:
    grants = f.get("grants")
    if not isinstance(grants, list) or not grants:
        raise TypeError("grants must be a non-empty array")
    for g in grants:
        check_grant(g, depth=3)


def _check_hb(f: dict[str, Any]) -> None:
    _pairs(f, "beats", int)


def _check_hb_ack(f: dict[str, Any]) -> None:
    _pairs(f, "lost", str)


def _check_abort(f: dict[str, Any]) -> None:
    _str(f, "execution_id")
    _str(f, "reason")


def _check_result(f: dict[str, Any]) -> None:
    _str(f, "execution_id")
    _int(f, "lease_epoch", 0)
    if f.get("outcome") not in OUTCOMES:
        raise ValueError("unknown outcome")
    _opt_int(f, "exit_code")
    _str(f, "error", MAX_FRAME, optional=True)
    _str(f, "output", MAX_FRAME, optional=True)


def _check_empty(f: dict[str, Any]) -> None:
    pass


_CHECKS = {
    "hello": _check_hello,
    "welcome": _check_welcome,
    "grant": _check_grant_frame,
    "hb": _check_hb,
    "hb_ack": _check_hb_ack,
    "abort": _check_abort,
    "result": _check_result,
    "out": _check_out,
    "bye": _check_empty,
    "ping": _check_empty,  # daemon -> worker: answer with pong (a sign of life)
    "pong": _check_empty,
}
