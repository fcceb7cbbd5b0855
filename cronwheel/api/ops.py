"""Operations endpoints: ``GET /metrics`` (Prometheus), ``GET /v1/status/activity`` (the last
hour's dispatch lag per minute and the running executions, for the dashboard) and
``GET /v1/events`` (the event log, optionally followed, as newline-delimited JSON;
``cronwheel logs -f``).

They read objects that the daemon hands to ``make_app`` (the node's ``NodeMetrics`` and
``EventLog``); an app built without them (tests with a fake service) answers 404.

A follower gets the matching tail of the ring buffer, then every new matching event. Each
follower has a bounded queue: a client that reads slower than events arrive loses events,
never the daemon's memory, and is told so by a ``stream.dropped`` line carrying the count.

An event is named for good by its log (one start of the daemon, ``EventLog.log_id``) and its
``seq``: the ``Cronwheel-Cursor`` header says where an answer starts, and ``after`` resumes
from there, on the same daemon (the events since) or a restarted one (all of its events).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from cronwheel.api.appkeys import EVENTS, METRICS
from cronwheel.api.context import CredentialWatch, tenant_of
from cronwheel.api.fields import ValidationError
from cronwheel.api.queries import CURSOR_HEADER, parse_event_cursor
from cronwheel.core import schedule as sched
from cronwheel.core.instants import format_instant
from cronwheel.core.lagstats import MINUTE_MS
from cronwheel.obs.events import EventLog, json_line
from cronwheel.obs.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from cronwheel.obs.metrics import NodeMetrics

NDJSON = "application/x-ndjson"
MAX_TAIL = 10_000
FOLLOW_QUEUE = 1_000  #: events buffered per follower before its stream drops some
#: events of the tail written at a time to a follower (a reader that stops reading holds one piece)
TAIL_PIECE = 200
IDLE_CHECK_SEC = 1.0  #: how often an idle follower checks that its client is still there

_FOLLOWERS: web.AppKey[set[asyncio.Event]] = web.AppKey("cronwheel.followers", set)


def install(app: web.Application, *, metrics: NodeMetrics | None, events: EventLog | None) -> None:
    """Give the app what the ops routes read, and end followers when the server shuts down."""
    app[METRICS] = metrics
    app[EVENTS] = events
    app[_FOLLOWERS] = set()
    app.on_shutdown.append(_end_followers)


async def _end_followers(app: web.Application) -> None:
    followers: set[asyncio.Event] = app[_FOLLOWERS]
    for closing in list(followers):
        closing.set()


# ---------------------------------------------------------------- /metrics


async def metrics(request: web.Request) -> web.Response:
    m = request.app.get(METRICS)
    if not isinstance(m, NodeMetrics):
        raise web.HTTPNotFound()
    body = await m.render()
    return web.Response(body=body, headers={"Content-Type": METRICS_CONTENT_TYPE})


# ---------------------------------------------------------------- /v1/status/activity


async def activity(request: web.Request) -> web.Response:
    """The last hour of dispatch lag, minute by minute, and what this node's workers run now
    (the dashboard's overview; admin only, like ``/v1/status``)."""
    m = request.app.get(METRICS)
    if not isinstance(m, NodeMetrics):
        raise web.HTTPNotFound()
    now = m.source.now_ms()
    total, running = m.running(limit=100)
    return web.json_response({
        "nodeId": m.source.snapshot().node_id,
        "at": format_instant(now),
        "lagHistory": {
            "minuteSec": MINUTE_MS // 1000,
            "minutes": [
                {"at": format_instant(x.start_ms), "count": x.count, "p50": x.p50, "p99": x.p99, "max": x.max}
                for x in m.lag_history.snapshot(now)
            ],
        },
        "running": running,
        "runningTotal": total,
    })


# ---------------------------------------------------------------- /v1/events


def _query_error(field: str, detail: str) -> ValidationError:
    return ValidationError(field, detail, status=400, code="invalid_query")


def parse_since(text: str | None, now_ms: int) -> int | None:
    """``since``: a duration back from now (``90s``, ``1h``, ``2d``) or an RFC 3339 instant."""
    if text is None or text == "":
        return None
    try:
        return now_ms - round(sched.parse_duration(text) * 1000)
    except ValueError:
        pass
    try:
        return sched.parse_instant(text, now_ms)
    except ValueError as exc:
        if sched.INSTANT_START.match(text):  # an instant, but not one cronwheel keeps: say so
            raise _query_error("since", f"since: {exc}") from None
        raise _query_error("since", f"since must be a duration (90s, 10m, 1h, 2d) or an RFC 3339 instant, not {text[:50]!r}") from None


def parse_flag(name: str, text: str | None) -> bool:
    if text is None or text.lower() in ("", "0", "false", "no"):
        return False
    if text.lower() in ("1", "true", "yes"):
        return True
    raise _query_error(name, f"{name} must be 1 or 0 (or true/false, yes/no), not {text[:20]!r}")


def follows(request: web.Request) -> bool:
    """``follow=1``, except for HEAD: a HEAD gets the headers a GET would, then its end."""
    return parse_flag("follow", request.query.get("follow")) and request.method != "HEAD"


def event_filter(job: str | None, event: str | None, since_ms: int | None) -> Callable[[dict[str, Any]], bool]:
    """``job``: events naming the job or one of its executions (``jobId:…``); ``event``: a
    name or a prefix ending in '.' (``execution.``); ``since_ms``: not older than this."""
    cutoff = format_instant(since_ms) if since_ms is not None else None
    prefix = job + ":" if job else None

    def keep(rec: dict[str, Any]) -> bool:
        if cutoff is not None and rec.get("ts", "") < cutoff:  # same fixed-width UTC format
            return False
        if event and not (rec.get("event") == event or (event.endswith(".") and str(rec.get("event", "")).startswith(event))):
            return False
        if job is not None and rec.get("jobId") != job:
            xid = rec.get("executionId")
            if not (isinstance(xid, str) and prefix and xid.startswith(prefix)):
                return False
        return True

    return keep


def _line(rec: dict[str, Any]) -> bytes:
    """One record of the stream as strict JSON, as the daemon's own log lines are (a NaN or a
    lone surrogate in a record must not make a line its readers refuse, or one that cannot
    be encoded at all)."""
    return (json_line(rec) + "\n").encode()


async def events(request: web.Request) -> web.StreamResponse:
    log = request.app.get(EVENTS)
    if not isinstance(log, EventLog):
        raise web.HTTPNotFound()
    if await tenant_of(request) is not None:  # events carry every tenant's ids and errors
        raise web.HTTPForbidden(text="the event stream covers every tenant: it is for admins only")
    q = request.query
    follow = follows(request)
    n_text = q.get("n")
    if n_text in (None, ""):
        n = 10 if follow else 100
    elif n_text.isascii() and n_text.isdigit() and len(n_text) <= 6 and 0 <= int(n_text) <= MAX_TAIL:
        n = int(n_text)
    else:
        raise _query_error("n", f"n must be an integer between 0 and {MAX_TAIL}, not {n_text[:20]!r}")
    keep = event_filter(q.get("job") or None, q.get("event") or None, parse_since(q.get("since"), time.time_ns() // 1_000_000))
    after = parse_event_cursor(q.get("after"))

    if not follow:
        tail, cursor = tail_of(list(log.ring), keep, n, after, log)
        return web.Response(body=b"".join(_line(r) for r in tail), headers={"Content-Type": NDJSON, CURSOR_HEADER: cursor})

    follower = _Follower(asyncio.get_running_loop(), keep, log.node_id)
    unsubscribe = log.subscribe(follower.offer)  # before reading the ring: no gap between them
    closing = asyncio.Event()
    request.app[_FOLLOWERS].add(closing)
    try:
        ring = list(log.ring)
        tail, cursor = tail_of(ring, keep, n, after, log)
        last_seq = ring[-1]["seq"] if ring else 0  # queued events up to here are in the snapshot
        resp = web.StreamResponse(headers={"Content-Type": NDJSON, "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                                           CURSOR_HEADER: cursor})
        await resp.prepare(request)
        try:
            # in pieces: a client that never reads holds one piece, not the whole tail (MBs)
            for start in range(0, len(tail), TAIL_PIECE):
                await resp.write(b"".join(_line(r) for r in tail[start : start + TAIL_PIECE]))
        except ConnectionError:  # it hung up: not the daemon's error
            return resp
        await follower.pump(resp, request, closing, after_seq=last_seq, credential=CredentialWatch(request))
        with contextlib.suppress(ConnectionError):
            await resp.write_eof()
        return resp
    finally:
        unsubscribe()
        request.app[_FOLLOWERS].discard(closing)


def tail_of(
    ring: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool], n: int, after: tuple[str, int] | None, log: EventLog
) -> tuple[list[dict[str, Any]], str]:
    """The events of ``ring`` an answer starts with, and the cursor of where they start (asked
    for as ``after``, the same answer comes, and so do the events that follow it): the last
    ``n`` that ``keep`` keeps, or with ``after`` every kept one past it: of this log, those
    after its ``seq`` (a ``seq`` it has not reached: 400); of another (the daemon restarted
    since), all of this one. Events the ring no longer holds are a ``stream.dropped`` line
    (counting them all, kept or not: they cannot be filtered now)."""
    if after is None:
        tail = [r for r in ring if keep(r)][-n:] if n else []
        before = tail[0]["seq"] - 1 if tail else ring[-1]["seq"] if ring else 0
        return tail, f"{log.log_id}:{before}"
    if after[0] == log.log_id and after[1] > log.last_seq:  # no header said so: an empty answer would hide every event to come
        raise _query_error("after", f"after: the event log {log.log_id} has no event {after[1]} yet (its last is {log.last_seq}): "
                                    f"give back a {CURSOR_HEADER} header as it came")
    seen = after[1] if after[0] == log.log_id else 0
    tail = [r for r in ring if r["seq"] > seen and keep(r)]
    if ring and ring[0]["seq"] > seen + 1:
        first = ring[0]
        gone = {"ts": first["ts"], "event": "stream.dropped", "node": log.node_id, "seq": first["seq"] - 1, "dropped": first["seq"] - seen - 1}
        tail.insert(0, gone)
    return tail, f"{log.log_id}:{seen}"


class _Follower:
    """One client's bounded queue between ``EventLog.emit`` and its HTTP stream."""

    def __init__(self, loop: asyncio.AbstractEventLoop, keep: Callable[[dict[str, Any]], bool], node: str) -> None:
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self.keep = keep
        self.node = node
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=FOLLOW_QUEUE)
        self.dropped = 0

    def offer(self, rec: dict[str, Any]) -> None:
        if threading.get_ident() != self.loop_thread:  # an event from a store thread
            self.loop.call_soon_threadsafe(self.offer, rec)
            return
        try:
            if not self.keep(rec):
                return
        except Exception:  # a record the filter cannot read: not for this follower
            return
        if self.dropped:
            if self.queue.maxsize - self.queue.qsize() < 2:
                self.dropped += 1
                return
            # its seq: the last one dropped (the next, rec, follows it): a cursor taken there resumes at rec
            seq = rec.get("seq")
            self.queue.put_nowait({"ts": rec.get("ts"), "event": "stream.dropped", "node": self.node, "dropped": self.dropped,
                                   "seq": seq - 1 if isinstance(seq, int) else seq})
            self.dropped = 0
        if self.queue.full():
            self.dropped += 1
            return
        self.queue.put_nowait(rec)

    async def pump(
        self, resp: web.StreamResponse, request: web.Request, closing: asyncio.Event, after_seq: int,
        credential: CredentialWatch,
    ) -> None:
        """Write queued events until the client goes away, its token is revoked or the server
        shuts down (then flush what is queued)."""
        while True:
            if not await credential.holds():
                return
            if closing.is_set():
                batch = self._drain()
                if batch:
                    with contextlib.suppress(ConnectionError):
                        await resp.write(self._lines(batch, after_seq))
                return
            try:
                first = await asyncio.wait_for(self.queue.get(), IDLE_CHECK_SEC)
            except TimeoutError:
                transport = request.transport
                if transport is None or transport.is_closing():
                    return
                continue
            batch = [first, *self._drain()]
            data = self._lines(batch, after_seq)
            if not data:
                continue
            try:
                await resp.write(data)
            except ConnectionError:
                return

    @staticmethod
    def _lines(batch: list[dict[str, Any]], after_seq: int) -> bytes:
        """The queued events not in the tail already sent (a stream.dropped line's seq is the
        last it stands for: it belongs if the event after it does)."""
        def fresh(r: dict[str, Any]) -> bool:
            seq = r.get("seq")
            if not isinstance(seq, int):
                return True
            return seq >= after_seq if r.get("event") == "stream.dropped" else seq > after_seq

        return b"".join(_line(r) for r in batch if fresh(r))

    def _drain(self) -> list[dict[str, Any]]:
        out = []
        while not self.queue.empty():
            out.append(self.queue.get_nowait())
        return out
