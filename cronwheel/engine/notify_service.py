"""The node's side of notifications for the API and the CLI: pings, the notifications'
history and dead-letter queue, tenant default rules. Mixed into ``Node`` (it uses the
node's store runners, clock, events and deliverer)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core.clock import Clock
from cronwheel.core.model import Execution, Job
from cronwheel.core.tenants import Tenant, effective_http_allow
from cronwheel.engine.service import Conflict, NotFound
from cronwheel.obs.events import EventLog
from cronwheel.store.base import Store

PING_KINDS = ("start", "success", "fail")


def is_ping_job(job: Job) -> bool:
    """A job cronwheel watches but does not run: its runs are reported by pings."""
    return "ping" in job.spec.target


class NotifyServiceMixin:
    # provided by Node
    clock: Clock
    events: EventLog
    config: Any
    notifications: Any
    _read: Callable[[Callable[[Store], Any]], Awaitable[Any]]
    _write: Callable[[Callable[[Store], Any]], Awaitable[Any]]
    tenant_config: Callable[[str], Tenant]
    resolve_job: Callable[..., Awaitable[Job]]

    def webhook_allow(self, tenant: str) -> tuple[str, ...]:
        """The hosts a tenant's webhooks may call: its own HTTP allow-list, else the daemon's."""
        return effective_http_allow(self.tenant_config(tenant), self.config.http_allow)

    async def ping(
        self, job_ref: str, kind: str, exit_code: int | None = None, output: str | None = None,
        tenant: str | None = None,
    ) -> tuple[Job, Execution | None]:
        """A run elsewhere reports: start, success or fail (``cronwheel ping``)."""
        job = await self.resolve_job(job_ref, tenant)
        now = self.clock.now_ms()
        found, ex = await self._write(lambda s: s.record_ping(job.id, kind, now, exit_code, output, tenant))
        if not found:
            raise NotFound(f"no job {job_ref!r}")
        self.events.emit("job.ping", jobId=job.id, kind=kind, exitCode=exit_code,
                         executionId=None if ex is None else ex.execution_id)  # fmt: skip
        if ex is not None:
            self.notifications.wake()
        return job, ex

    async def list_notifications(
        self, tenant: str | None = None, job_id: str | None = None, status: nt.NotificationStatus | None = None,
        limit: int = 100, before: str | None = None,
    ) -> list[nt.Notification]:
        return await self._read(lambda s: s.list_notifications(tenant, job_id, status, limit, before))

    async def replay_notification(self, notification_id: str, tenant: str | None = None) -> nt.Notification:
        now = self.clock.now_ms()
        n = await self._write(lambda s: s.replay_notification(notification_id, now, tenant))
        if n is None:
            raise NotFound(f"no dead-lettered or held notification {notification_id!r}")
        self.events.emit("notification.replayed", notificationId=notification_id)
        self.notifications.wake()
        return n

    async def purge_notification(self, notification_id: str, tenant: str | None = None) -> None:
        if not await self._write(lambda s: s.purge_notification(notification_id, tenant)):
            raise NotFound(f"no dead-lettered notification {notification_id!r}")
        self.events.emit("notification.purged", notificationId=notification_id)

    async def tenant_notify(self, name: str) -> tuple[nt.Rule, ...]:
        rules = await self._read(lambda s: s.tenant_notify(name))
        if rules is None:
            raise NotFound(f"no tenant {name!r}")
        return rules

    async def set_tenant_notify(self, name: str, rules: tuple[nt.Rule, ...]) -> tuple[nt.Rule, ...]:
        now = self.clock.now_ms()
        if not await self._write(lambda s: s.set_tenant_notify(name, rules, now)):
            raise NotFound(f"no tenant {name!r}")
        self.events.emit("tenant.notify_set", tenant=name, rules=len(rules))
        return rules

    async def notification_counts(self) -> dict[str, int]:
        now = self.clock.now_ms()
        return await self._read(lambda s: s.notification_counts(now))

    def refuse_ping_job(self, job: Job, verb: str) -> None:
        if is_ping_job(job):
            raise Conflict(f"cannot {verb} job {job.id!r}: it is run elsewhere and reports by pings")
