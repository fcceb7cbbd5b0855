"""The node's side of notifications for the API and the CLI: pings, the notifications'
history and dead-letter queue, tenant default rules. ``NotifyServiceMixin`` is a part of
``Node`` (engine/parts.py says how the parts fit); delivery is ``Node.notifications``
(engine/notifications.py)."""

from __future__ import annotations

from cronwheel.core import notify as nt
from cronwheel.core.model import Execution, Job
from cronwheel.engine.service import Conflict, NotFound
from cronwheel.engine.tenancy import TenancyMixin


def is_ping_job(job: Job) -> bool:
    """A job cronwheel watches but does not run: its runs are reported by pings."""
    return "ping" in job.spec.target


def refuse_ping_job(job: Job, verb: str) -> None:
    """A ping job is not run here: triggering it, or replaying one of its runs, is a Conflict."""
    if is_ping_job(job):
        raise Conflict(f"cannot {verb} job {job.id!r}: it is run elsewhere and reports by pings")


class NotifyServiceMixin(TenancyMixin):
    async def ping(
        self, job_ref: str, kind: str, exit_code: int | None = None, output: str | None = None,
        tenant: str | None = None,
    ) -> tuple[Job, Execution | None]:
        """A run elsewhere reports: start, success or fail (``cronwheel ping``)."""
        job = await self.resolve_job(job_ref, tenant)
        if kind != "start":  # a finished run is recorded (a start only remembered): a submission
            self.admit_submission(job.spec, what="report")  # 429 when the tenant's bucket is empty
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
            await self._no_such_tenant(name)
        return rules

    async def set_tenant_notify(self, name: str, rules: tuple[nt.Rule, ...]) -> tuple[nt.Rule, ...]:
        now = self.clock.now_ms()
        if not await self._write(lambda s: s.set_tenant_notify(name, rules, now)):
            await self._no_such_tenant(name)
        self.events.emit("tenant.notify_set", tenant=name, rules=len(rules))
        return rules
