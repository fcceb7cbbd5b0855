"""Delivering notifications, and watching the dead-man's windows.

Notifications are queued by the store in the transaction that records an outcome (see
store/outbox.py), so this loop only moves durable rows: claim (RUNNING under a lease, epoch
+ 1) → send → finish (fenced by epoch: SENT, a retry with backoff, or the notifications'
DLQ). It runs beside dispatch, never in it: a slow webhook costs a delivery slot here, not
a worker slot, and a full delivery queue never delays an execution.

* At most ``concurrency`` deliveries run at once; each has ``DELIVERY_TIMEOUT_SEC``.
* A delivery whose node died mid-way is given back by the next start of that node
  (``release_notifications``) or by any node's lease expiry sweep, and is sent again with
  the same ``Cronwheel-Notification-Id``: receivers deduplicate on it (at-least-once, like
  executions; the store never holds two notifications for one (execution, rule)).
* The window watcher fires ``missed`` for the buckets this node schedules (all of them on
  one node; its leased buckets in a cluster), so windows fail over with the buckets.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cronwheel.core import notify as nt
from cronwheel.core.clock import Clock
from cronwheel.core.instants import format_instant
from cronwheel.core.tenants import HostAllow
from cronwheel.engine import channels
from cronwheel.engine.outage import LoopHealth
from cronwheel.engine.runner import StoreRunner
from cronwheel.obs.events import EventLog
from cronwheel.worker.waiting import wait_event

if TYPE_CHECKING:  # imported when the first webhook goes out: most nodes never send one
    import aiohttp

#: a claimed notification is someone else's to retry once this lease passes
DELIVERY_LEASE_MS = round(nt.DELIVERY_TIMEOUT_SEC * 1000) * 4
#: the quiet poll: a notification queued by another node (or a retry's backoff) is seen this soon
POLL_MS = 1_000
WINDOW_CHECK_MS = 1_000
HELD_SUMMARY_MS = 30_000
EXPIRY_SWEEP_MS = 5_000


class NotificationDeliverer:
    def __init__(
        self,
        clock: Clock,
        writer: StoreRunner,
        events: EventLog,
        *,
        owner: str,
        buckets: Callable[[], Sequence[int]],
        http_allow: Callable[[str], HostAllow],
        mail: channels.MailConfig | None = None,
        command_env: dict[str, str] | None = None,
        concurrency: int = 16,
        rng: random.Random | None = None,
    ) -> None:
        self.clock = clock
        self.writer = writer
        self.events = events
        self.owner = owner
        self.buckets = buckets
        self.http_allow = http_allow
        self.mail = mail
        self.command_env = command_env or {}
        self.concurrency = concurrency
        self.rng = rng or random.Random()
        self.outcomes: Counter[str] = Counter()  #: deliveries by outcome: sent, retried, dead
        self.missed_total = 0
        self._wake = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None
        self.health = LoopHealth(events, clock, "notify")
        self.watch_health = LoopHealth(events, clock, "deadman")
        self._stopping = False

    def wake(self) -> None:
        """Outcomes were just recorded here: look for their notifications now, not at the poll."""
        self._wake.set()

    def start(self) -> list[asyncio.Task[None]]:
        loop = asyncio.get_running_loop()
        return [
            loop.create_task(self._deliver_loop(), name="notify"),
            loop.create_task(self._watch_loop(), name="deadman"),
        ]

    async def recover(self, prefix: str) -> None:
        """This node restarted: what its previous incarnation was delivering goes out again."""
        n = await self.writer.run(lambda s: s.release_notifications(prefix, self.owner, self.clock.now_ms()))
        if n:
            self.events.emit("notification.recovered", notifications=n)

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._inflight:  # let deliveries under way finish (each is bounded by its timeout)
            await asyncio.wait(set(self._inflight), timeout=nt.DELIVERY_TIMEOUT_SEC + 1)
        for task in self._inflight:
            task.cancel()
        if self._session is not None:
            await self._session.close()

    # ---- delivery
    async def _deliver_loop(self) -> None:
        last_sweep = 0
        while not self._stopping:
            reached = False  # every slot busy and no sweep due: the store is not asked
            try:
                now = self.clock.now_ms()
                if now - last_sweep >= EXPIRY_SWEEP_MS:
                    last_sweep = now
                    expired = await self._expire_leases(now)
                    reached = True
                    if expired:
                        self.events.emit("notification.lease_expired", notifications=expired)
                reached = await self._claim_and_send() or reached
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a store hiccup: log it once, try again at the next poll
                self.health.failed(exc)
            else:
                if reached:  # only a store call that went through ends an outage
                    self.health.ok()
            await wait_event(self._wake, POLL_MS / 1000)
            self._wake.clear()

    async def _expire_leases(self, now: int) -> int:
        return await self.writer.run(lambda s: s.expire_notification_leases(now, 500))

    async def _claim(self, now: int, room: int) -> list[nt.Notification]:
        return await self.writer.run(lambda s: s.claim_notifications(self.owner, now, room, DELIVERY_LEASE_MS))

    async def _summarize_held(self, now: int) -> int:
        return await self.writer.run(lambda s: s.summarize_held_notifications(now))

    async def _claim_and_send(self) -> bool:
        """Claim and start deliveries while there is room: True if the store was asked."""
        asked = False
        while not self._stopping:
            room = self.concurrency - len(self._inflight)
            if room <= 0:
                return asked
            now = self.clock.now_ms()
            claimed = await self._claim(now, room)
            asked = True
            for n in claimed:
                task = asyncio.get_running_loop().create_task(self._deliver(n), name="notify-deliver")
                self._inflight.add(task)
                task.add_done_callback(self._delivered)
            if len(claimed) < room:
                return asked
        return asked

    def _delivered(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._wake.set()  # a slot is free
        error = None if task.cancelled() else task.exception()
        if isinstance(error, Exception):  # its lease expires: it goes out again
            self.health.failed(error)

    async def _deliver(self, n: nt.Notification) -> None:
        self.events.emit("notification.sending", notificationId=n.notification_id, on=n.event, via=n.rule.via.value,
                         attempt=n.attempt, jobId=n.job_id)  # fmt: skip
        error: str | None = None
        try:
            await self._send(n)
        except channels.DeliveryError as exc:
            error = str(exc)
        except Exception as exc:  # a bug in a channel must cost a retry, not the loop
            error = f"{type(exc).__name__}: {exc}"
        now = self.clock.now_ms()
        if error is None:
            result = nt.DeliveryResult(n.notification_id, n.lease_epoch, nt.NotificationStatus.SENT)
        else:
            status, at = nt.after_failed_delivery(n.attempt, n.rule, now, self.rng.random())
            result = nt.DeliveryResult(n.notification_id, n.lease_epoch, status, at, error[:500])
        try:
            (applied,) = await self.writer.run(lambda s: s.finish_notifications([result], now))
        except Exception as exc:  # the store is down: the lease expires and it goes out again
            self.events.emit("notification.finish_failed", notificationId=n.notification_id, error=repr(exc))
            return
        outcome = {nt.NotificationStatus.SENT: "sent", nt.NotificationStatus.DEAD: "dead"}.get(result.status, "retried")
        if not applied:
            self.events.emit("notification.fenced", notificationId=n.notification_id, leaseEpoch=n.lease_epoch)
            return
        self.outcomes[outcome] += 1
        self.events.emit(
            f"notification.{outcome}", notificationId=n.notification_id, on=n.event, via=n.rule.via.value,
            attempt=n.attempt, jobId=n.job_id, tenant=n.tenant, error=error,
            availableAt=format_instant(result.available_at),
        )

    async def _send(self, n: nt.Notification) -> None:
        timeout = nt.DELIVERY_TIMEOUT_SEC
        if n.rule.via is nt.Via.WEBHOOK:
            await channels.send_webhook(self._http(), n, self.http_allow(n.tenant), self.clock.now_ms() // 1000, timeout)
        elif n.rule.via is nt.Via.EMAIL:
            await channels.send_email(self.mail, n, timeout)
        else:
            await channels.send_command(n, self.command_env, timeout)

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self.concurrency))
        return self._session

    # ---- the dead-man's windows
    async def _watch_loop(self) -> None:
        last_summary = 0
        while not self._stopping:
            await asyncio.sleep(WINDOW_CHECK_MS / 1000)
            reached = False  # a turn with no bucket owned (lost in an outage) may ask nothing
            try:
                reached = await self.check_windows() is not None
                now = self.clock.now_ms()
                if now - last_summary >= HELD_SUMMARY_MS:
                    last_summary = now
                    made = await self._summarize_held(now)
                    reached = True
                    if made:
                        self.events.emit("notification.held_summary", notifications=made)
                        self._wake.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.watch_health.failed(exc)
            else:
                if reached:  # only a store call that went through ends an outage
                    self.watch_health.ok()

    async def check_windows(self) -> int | None:
        """Fire ``missed`` for the passed windows of this node's buckets (one pass): how many,
        None when it owns no bucket (the store was not asked)."""
        buckets = list(self.buckets())
        if not buckets:
            return None
        now = self.clock.now_ms()
        fired = await self.writer.run(lambda s: s.check_windows(buckets, now, 500))
        for job_id, deadline, queued in fired:
            self.missed_total += 1
            self.events.emit("window.missed", jobId=job_id, deadlineAt=format_instant(deadline), notifications=queued)
        if fired:
            self._wake.set()
        return len(fired)
