"""Cluster membership: which time buckets this node schedules (docs/scaling.md: fenced
scheduling, bucket leases on the store's clock).

Every ``ttl/3`` the membership loop heartbeats the node's row, computes the buckets it should
own (``core.rendezvous`` over the live nodes), releases the ones it should not (hand-off: the
new owner may take them at once) and acquires or renews the ones it should (free, expired, or
already ours: the store's compare-and-set on the database clock decides).

A lease is a term ``(bucket, epoch)`` with a local trust window, as in River's leadership:
``trusted_until = t0 + ttl − margin`` on this node's monotonic clock, where ``t0`` is read
*before* the acquire was sent, so the window always closes before the database's
``lease_until``. The scheduler asks ``Holdings.owned(now)`` before every claim: a bucket
whose window closed is not scheduled, even while the database cannot be reached (step down
when in doubt). And every claim carries the epochs as a fence that the store re-checks in the
claim's own transaction, so a node that was paused past its lease claims nothing.

``Holdings`` is pure (time is an argument); ``ClusterMember`` is the asyncio shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cronwheel.core.clock import Clock, StoreAlignedClock
from cronwheel.core.ids import N_BUCKETS
from cronwheel.core.instants import format_instant
from cronwheel.core.records import Fence, NodeInfo
from cronwheel.core.rendezvous import buckets_of
from cronwheel.engine.outage import LoopHealth
from cronwheel.engine.runner import StoreRunner
from cronwheel.obs.events import EventLog
from cronwheel.worker.waiting import wait_event

DEFAULT_LEASE_TTL_MS = 10_000


class NodeIdInUse(Exception):
    """Another process heartbeats this node id on the store: starting would take its running
    executions over as a crashed incarnation's (``ClusterMember.join``)."""


@dataclass(frozen=True, slots=True)
class Term:
    bucket: int
    epoch: int
    trusted_until: float  #: monotonic seconds


class Holdings:
    """The bucket terms this node holds, each with its local trust window."""

    def __init__(self, node_id: str, ttl_ms: int, margin_ms: int | None = None) -> None:
        self.node_id = node_id
        self.ttl_ms = ttl_ms
        #: what the window gives up against the database's lease_until: clock-rate drift,
        #: scheduling delays between reading the window and the claim reaching the database
        self.margin_ms = margin_ms if margin_ms is not None else max(100, ttl_ms // 5)
        self.terms: dict[int, Term] = {}

    def granted(self, t0: float, grants: Iterable[tuple[int, int, int]]) -> tuple[list[int], list[int]]:
        """Record ``(bucket, epoch, lease_until)`` grants of an acquire sent at monotonic
        ``t0``. Returns (buckets newly held, buckets whose term changed under us)."""
        window = (self.ttl_ms - self.margin_ms) / 1000
        new, changed = [], []
        for bucket, epoch, _until in grants:
            old = self.terms.get(bucket)
            if old is None:
                new.append(bucket)
            elif old.epoch != epoch:
                changed.append(bucket)
            self.terms[bucket] = Term(bucket, epoch, t0 + window)
        return new, changed

    def drop(self, buckets: Iterable[int]) -> list[int]:
        return [b for b in buckets if self.terms.pop(b, None) is not None]

    def expired(self, now: float) -> list[int]:
        """Terms whose trust window closed (forgotten here: they are lost)."""
        gone = [b for b, t in self.terms.items() if now >= t.trusted_until]
        return self.drop(gone)

    def owned(self, now: float) -> tuple[list[int], Fence]:
        """The buckets to schedule now and the fence for the claim."""
        live = {b: t.epoch for b, t in self.terms.items() if now < t.trusted_until}
        return sorted(live), (self.node_id, live)


class ClusterMember:
    def __init__(
        self,
        node_id: str,
        address: str,
        runner: StoreRunner,
        clock: Clock,
        events: EventLog,
        *,
        ttl_ms: int = DEFAULT_LEASE_TTL_MS,
        margin_ms: int | None = None,
        on_change: Callable[[], None] = lambda: None,
        refill: Callable[[], Any] | None = None,
        n_buckets: int = N_BUCKETS,
        aligned: StoreAlignedClock | None = None,
    ) -> None:
        """``aligned``: the node's clock, moved onto the database's at every turn (core.clock)."""
        self.node_id = node_id
        self.address = address
        self.runner = runner
        self.clock = clock
        self.events = events
        self.health = LoopHealth(events, clock, "cluster")
        self.ttl_ms = ttl_ms
        self.holdings = Holdings(node_id, ttl_ms, margin_ms)
        self.on_change = on_change
        self.refill = refill
        self.n_buckets = n_buckets
        self.aligned = aligned
        self.interval = ttl_ms / 3000
        self.live_nodes: list[str] = [node_id]
        self._stopping = False
        self._wake = asyncio.Event()
        self.turns = 0
        self.first_turn = asyncio.Event()
        #: the store's clock at our last acquire, and our monotonic clock then (for status)
        self._store_now: tuple[int, float] | None = None
        #: this process's claim on the node id (its row's ``incarnation``): random, for two
        #: processes may start in one millisecond
        self.incarnation = secrets.token_hex(8)
        #: another live process holds the node id (this one was frozen past the TTL): said once
        self._id_taken = False
        self._keepalive: asyncio.Future[None] | None = None

    # ---- for the scheduler
    def owned(self) -> tuple[list[int], Fence]:
        now = self.clock.monotonic()
        for bucket in self.holdings.expired(now):
            self.events.emit("bucket.lost", bucket=bucket, reason="trust window closed")
            self._wake.set()
        return self.holdings.owned(now)

    # ---- start
    async def join(self) -> None:
        """Before the node touches anything on the store: is its node id free? A row of this
        id that is live (heartbeat within the TTL) is either this node's previous incarnation,
        killed less than a TTL ago, or another process with the same id (a cloned machine: the
        default id is the host name). The first has stopped heartbeating, the second has not:
        watch the row until it expires (start) or its heartbeat moves on (``NodeIdInUse``). A
        node stopped gracefully removed its row, so only a restart after a crash waits, at
        most one TTL. The data directory's lock does not tell them apart: a clone has a copy
        of the directory and the same host name and port."""
        await self.align_clock()
        # taken in one statement (a compare-and-set on the row): of two processes that join
        # with one id at the same moment (cloned machines booted together), one gets it and the
        # other waits here, sees its heartbeat move on, and is refused
        await self._take_id()
        self._keepalive = asyncio.ensure_future(self._heartbeat_until_run())

    async def _take_id(self) -> None:
        first = await self._claim_id()
        if first is None:
            return
        self.events.emit("node.waiting_for_previous", nodeId=self.node_id, address=first.address,
                         lastSeenAt=format_instant(first.last_seen), leaseTtlMs=self.ttl_ms)
        for _ in range(12):  # every TTL/6 for up to two TTLs: the row expires, or is refreshed
            await asyncio.sleep(self.interval / 2)
            row = await self._claim_id()
            if row is None:
                return
            if row.last_seen != first.last_seen or row.incarnation != first.incarnation:
                raise self._in_use(row)
        # a row that is neither refreshed nor expiring (a clock stepped back): nobody heartbeats
        # it, so take it, unless it moved at the last moment
        row = await self._claim_id(take_from=first.last_seen)
        if row is not None:
            raise self._in_use(row)

    async def _heartbeat_until_run(self) -> None:
        """The id's heartbeat from ``join`` until the loop's turns take it over: the node starts
        its workers and recovers its previous runs in between (seconds on a loaded machine), and
        a row left unheartbeaten for a TTL would be free for a twin to take."""
        while True:
            await asyncio.sleep(self.interval)
            with contextlib.suppress(Exception):  # the loop's first turn says what is wrong
                await self._claim_id()

    def _in_use(self, row: NodeInfo) -> NodeIdInUse:
        return NodeIdInUse(
            f"node id '{self.node_id}' is in use: another cronwheel node with that id (address "
            f"{row.address}, up since {format_instant(row.started_at)}, last heartbeat "
            f"{format_instant(row.last_seen)}) is live on this store. Give this node its own "
            f"--node-id (the default is the host name, which cloned machines share)")

    async def _claim_id(self, take_from: int | None = None) -> NodeInfo | None:
        """Register this process under the node id if it is free (``register_node``); None
        when it did, else the live row of the process that holds it."""
        ttl, now_ms, incarnation = self.ttl_ms, self.clock.now_ms(), self.incarnation
        holder = await self.runner.run(
            lambda s: s.register_node(self.node_id, self.address, incarnation, ttl, now_ms, take_from))
        return None if holder.incarnation == incarnation else holder

    async def align_clock(self) -> None:
        """Read the database's clock (an empty acquire) and move the node's onto it: before the
        node reaps, claims or dispatches anything."""
        ttl, now_ms = self.ttl_ms, self.clock.now_ms()
        sent = self._local_ms()
        grants = await self.runner.run(lambda s: s.acquire_buckets(self.node_id, [], ttl, now_ms))
        self._aligned(grants.store_now, sent)

    def _local_ms(self) -> int:
        return self.aligned.base.now_ms() if self.aligned is not None else self.clock.now_ms()

    def _aligned(self, store_ms: int, sent_ms: int) -> None:
        """Move the node's clock onto the database's (``StoreAlignedClock.align``), and say so."""
        if self.aligned is None or store_ms <= 0:  # store_ms 0: a store without a clock of its own
            return
        offset = self.aligned.align(store_ms, sent_ms, self._local_ms())
        if offset is None:
            return
        if offset:
            self.events.emit("clock.skewed", offsetMs=offset, toleranceMs=self.aligned.tolerance_ms)
        else:
            self.events.emit("clock.aligned", toleranceMs=self.aligned.tolerance_ms)

    # ---- the loop
    async def run(self) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
        while not self._stopping:
            started = self.clock.monotonic()
            try:
                await self.turn()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is down or slow: the trust windows step us down
                self.health.failed(exc, traceback_limit=6)
                self.owned()
            else:
                self.health.ok()
            self.first_turn.set()
            if self.refill is not None:
                with contextlib.suppress(Exception):  # the shared ready queue: other nodes' work
                    await self.refill()
            delay = max(0.0, self.interval - (self.clock.monotonic() - started))
            await wait_event(self._wake, delay)
            self._wake.clear()

    async def turn(self) -> None:
        ttl = self.ttl_ms
        now_ms = self.clock.now_ms()
        incarnation = self.incarnation
        holder, live = await self.runner.run(
            lambda s: (s.register_node(self.node_id, self.address, incarnation, ttl, now_ms), s.live_nodes(ttl, now_ms)))
        if holder.incarnation != incarnation:
            self._lost_id(holder)
            return
        self._id_taken = False
        self.live_nodes = [n.node_id for n in live] or [self.node_id]
        desired = set(buckets_of(self.node_id, self.live_nodes, self.n_buckets))
        unwanted = sorted(set(self.holdings.terms) - desired)
        if unwanted:
            # stop scheduling them first, then hand them off
            self.holdings.drop(unwanted)
            self.on_change()
            released = await self.runner.run(lambda s: s.release_buckets(self.node_id, unwanted))
            self._said("released", [{"bucket": b} for b in released])
        t0 = self.clock.monotonic()  # before the request: the window closes before lease_until
        want = sorted(desired)
        sent = self._local_ms()
        grants = await self.runner.run(lambda s: s.acquire_buckets(self.node_id, want, ttl, now_ms))
        self._store_now = (grants.store_now, self.clock.monotonic())
        self._aligned(grants.store_now, sent)
        got = {b for b, _, _ in grants.granted}
        lost = self.holdings.drop([b for b in list(self.holdings.terms) if b not in got])
        for bucket in lost:
            self.events.emit("bucket.lost", bucket=bucket, reason="held by another node")
        new, changed = self.holdings.granted(t0, grants.granted)
        fresh = set(new) | set(changed)
        self._said("acquired", [{"bucket": b, "epoch": e} for b, e, _ in grants.granted if b in fresh])
        if new or changed or lost:
            self.on_change()
        self.turns += 1

    def _lost_id(self, holder: NodeInfo) -> None:
        """Another live process took the node id while this one did not heartbeat for a TTL (it
        was frozen, or cut off): its buckets are that process's now; this one schedules
        nothing, and says so (an error: two processes run with one id)."""
        dropped = self.holdings.drop(list(self.holdings.terms))
        if dropped:
            self.on_change()
        for bucket in dropped:
            self.events.emit("bucket.lost", bucket=bucket, reason="node id taken by another process")
        if not self._id_taken:
            self._id_taken = True
            self.events.emit("node.id_taken", nodeId=self.node_id, address=holder.address,
                             startedAt=format_instant(holder.started_at), error=str(self._in_use(holder)))
        self.turns += 1

    async def leave(self) -> None:
        """Graceful leave: stop scheduling, hand every bucket off, remove the node's row."""
        self._stopping = True
        if self._keepalive is not None:
            self._keepalive.cancel()
        self._wake.set()
        held = sorted(self.holdings.terms)
        self.holdings.drop(held)
        self.on_change()
        try:
            released = await self.runner.run(lambda s: s.release_buckets(self.node_id, list(range(self.n_buckets))))
            await self.runner.run(lambda s: s.deregister_node(self.node_id, self.incarnation))
        except Exception as exc:  # the leases expire on their own
            self.events.emit("cluster.error", error=repr(exc))
            return
        self._said("released", [{"bucket": b} for b in released])

    def _said(self, what: str, terms: list[dict[str, int]]) -> None:
        """A turn's acquired or released buckets: one ``buckets.acquired`` / ``buckets.released``
        line (a start takes all 64 at once, a stop hands them all off), and each bucket's own
        ``bucket.*`` event at debug level (counted and streamed, printed with --log-level debug)."""
        if not terms:
            return
        self.events.emit_many(f"bucket.{what}", terms)
        self.events.emit(f"buckets.{what}", count=len(terms), buckets=sorted(t["bucket"] for t in terms),
                         held=len(self.holdings.terms))

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()

    async def status(self) -> dict[str, Any]:
        def read(s: Any) -> tuple[Any, Any]:
            return s.live_nodes(self.ttl_ms, self.clock.now_ms()), s.bucket_leases()

        nodes, leases = await self.runner.run(read)
        # live leases only, by an estimate of the store's clock (its reading at our last
        # acquire, moved on by our monotonic clock): a dead node's expired leases are not shown
        now = 0 if self._store_now is None else self._store_now[0] + int(
            (self.clock.monotonic() - self._store_now[1]) * 1000
        )
        counts: dict[str, int] = {}
        for lease in leases:
            if lease.owner is not None and lease.lease_until > now:
                counts[lease.owner] = counts.get(lease.owner, 0) + 1
        return {
            "leaseTtlMs": self.ttl_ms,
            "nodes": [{"nodeId": n.node_id, "address": n.address, "lastSeen": n.last_seen} for n in nodes],
            "buckets": counts,
            "owned": len(self.holdings.terms),
        }
