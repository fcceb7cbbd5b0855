"""The notification part of the store contract, implemented once for both backends on top
of ``store/outbox``. A backend provides ``_outbox_write(fn)`` (run ``fn(Sql)`` in one
durable write transaction) and ``_outbox_read(fn)`` (run it on a read connection), each
translating its driver's errors into ``StoreError``/``StoreUnavailable``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from cronwheel.core import notify as nt
from cronwheel.core.model import Execution
from cronwheel.core.records import DeadLettersPruned
from cronwheel.store import tenantgone
from cronwheel.store.common import prune_dead_letter_pages
from cronwheel.store.outbox import delivery, hooks, reads, windows
from cronwheel.store.outbox.sql import Sql

T = TypeVar("T")


class NotificationMethods:
    def _outbox_write(self, fn: Callable[[Sql], T]) -> T:
        raise NotImplementedError

    def _outbox_read(self, fn: Callable[[Sql], T]) -> T:
        raise NotImplementedError

    def record_ping(
        self, job_id: str, kind: str, now_ms: int, exit_code: int | None = None, output: str | None = None,
        tenant: str | None = None,
    ) -> tuple[bool, Execution | None]:
        def run(s: Sql) -> tuple[bool, Execution | None]:
            tenantgone.refuse_deleting(s, "job", job_id)
            return hooks.record_ping(s, job_id, kind, now_ms, exit_code, output, tenant)

        return self._outbox_write(run)

    def claim_notifications(self, owner: str, now_ms: int, limit: int, lease_ms: int) -> list[nt.Notification]:
        return self._outbox_write(lambda s: delivery.claim(s, owner, now_ms, limit, lease_ms))

    def finish_notifications(self, results: Sequence[nt.DeliveryResult], now_ms: int) -> list[bool]:
        if not results:
            return []
        return self._outbox_write(lambda s: delivery.finish(s, results, now_ms))

    def expire_notification_leases(self, now_ms: int, limit: int) -> int:
        return self._outbox_write(lambda s: delivery.expire(s, now_ms, limit))

    def release_notifications(self, prefix: str, current: str, now_ms: int) -> int:
        return self._outbox_write(lambda s: delivery.release_owner(s, prefix, current, now_ms))

    def summarize_held_notifications(self, now_ms: int) -> int:
        return self._outbox_write(lambda s: delivery.summarize_held(s, now_ms))

    def check_windows(self, buckets: Sequence[int], now_ms: int, limit: int) -> list[tuple[str, int, int]]:
        return self._outbox_write(lambda s: windows.check_windows(s, buckets, now_ms, limit))

    def list_notifications(
        self, tenant: str | None = None, job_id: str | None = None, status: nt.NotificationStatus | None = None,
        limit: int = 100, before: str | None = None,
    ) -> list[nt.Notification]:
        st = None if status is None else status.value
        return self._outbox_read(lambda s: reads.list_notifications(s, tenant, job_id, st, limit, before))

    def replay_notification(self, notification_id: str, now_ms: int, tenant: str | None = None) -> nt.Notification | None:
        def run(s: Sql) -> nt.Notification | None:
            tenantgone.refuse_deleting(s, "notification", notification_id)
            return reads.replay(s, notification_id, now_ms, tenant)

        return self._outbox_write(run)

    def purge_notification(self, notification_id: str, tenant: str | None = None) -> bool:
        return self._outbox_write(lambda s: reads.purge(s, notification_id, tenant))

    def prune_notifications(self, older_than_ms: int, limit: int) -> int:
        return self._outbox_write(lambda s: reads.prune(s, older_than_ms, limit))

    def prune_dead_notifications(
        self, keep: int, after_job: str | None, rows_per_call: int, limit: int
    ) -> tuple[list[DeadLettersPruned], str | None]:
        rows = max(rows_per_call, keep + 1)  # a job over the bound is seen over it in one call
        page = self._outbox_read(lambda s: reads.dead_page(s, after_job or "", rows))
        return prune_dead_letter_pages(
            page, rows, keep, after_job, limit,
            lambda job_id, budget: self._outbox_write(lambda s: reads.prune_dead(s, job_id, keep, budget)),
        )

    def prune_dead_notifications_of_gone_jobs(
        self, older_than_ms: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        page = self._outbox_read(lambda s: reads.dead_jobs_page(s, after_job or "", jobs_per_call))
        gone = [job_id for job_id, is_gone in page if is_gone]
        deleted, stopped = 0, None
        if gone:
            deleted, stopped = self._outbox_write(lambda s: reads.prune_dead_of_gone(s, gone, older_than_ms, limit))
        if stopped is not None:  # cut short: the next call starts at that job again
            at = [job_id for job_id, _ in page].index(stopped)
            return deleted, page[at - 1][0] if at else after_job or ""
        return deleted, page[-1][0] if len(page) == jobs_per_call else None

    def notification_counts(self, now_ms: int) -> dict[str, int]:
        return self._outbox_read(lambda s: reads.counts(s, now_ms))

    def set_tenant_notify(self, name: str, rules: Sequence[nt.Rule], now_ms: int) -> bool:
        text = json.dumps(nt.rules_to_json(tuple(rules)), separators=(",", ":"))

        def run(s: Sql) -> bool:
            return s.changes(
                f"UPDATE tenants SET notify = :rules{s.json_cast}, updated_at = :now"
                " WHERE name = :name AND deleting_since IS NULL",
                {"rules": text, "now": now_ms, "name": name},
            ) == 1

        return self._outbox_write(run)

    def tenant_notify(self, name: str) -> tuple[nt.Rule, ...] | None:
        def run(s: Sql) -> tuple[nt.Rule, ...] | None:
            rows = s.rows("SELECT notify FROM tenants WHERE name = :name AND deleting_since IS NULL", {"name": name})
            return None if not rows else nt.stored_rules(s.decode(rows[0][0]))

        return self._outbox_read(run)
