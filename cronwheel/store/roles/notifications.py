"""Notifications: the outbox of webhook/email/command deliveries and dead-man's windows.

Part of the store contract (``store.base.Store`` is the union of the roles); the
conventions in ``store.base`` hold for every method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cronwheel.core.model import Execution
from cronwheel.core.notify import DeliveryResult, Notification, NotificationStatus, Rule
from cronwheel.core.records import DeadLettersPruned


class NotificationStore(ABC):
    """The notification outbox (core.notify) and dead-man's windows (core.deadman)."""

    # ---- notifications (core.notify, core.deadman); implemented once in store/notifying.py
    # ``complete_executions`` and ``expire_leases`` also queue, in their own transaction, one
    # notification per (execution, rule) that the outcome matches (the job's rules, else its
    # tenant's defaults), so an outcome is never acknowledged without its notifications.
    # ``create_jobs`` gives a job with rules or a window of its own a ``job_watch`` row (and
    # arms the window); the completion hook reads the wide job rows only of jobs that have
    # one (or of every job while some tenant has default rules). Whatever changes a job's
    # rules or window later must keep that row (``store/outbox/hooks.py`` ``after_create``).
    @abstractmethod
    def record_ping(
        self, job_id: str, kind: str, now_ms: int, exit_code: int | None = None, output: str | None = None,
        tenant: str | None = None,
    ) -> tuple[bool, Execution | None]:
        """A ping from a run elsewhere: ``start`` is remembered (the run's start time);
        ``success``/``fail`` insert a finished execution (SUCCEEDED / DEAD, at the first free
        millisecond from now) and queue its notifications and move its window like any
        completion. Returns ``(job found, the execution recorded or None)``."""

    @abstractmethod
    def claim_notifications(self, owner: str, now_ms: int, limit: int, lease_ms: int) -> list[Notification]:
        """Up to ``limit`` PENDING notifications with available_at <= now_ms become RUNNING:
        attempt + 1, lease_epoch + 1, owner, lease_until = now + lease_ms. One that would put
        its (job, rule) over the rule's ``max_per_hour`` (SENT in the last hour plus RUNNING)
        becomes HELD instead and is not returned. Concurrent claimers never share one."""

    @abstractmethod
    def finish_notifications(self, results: Sequence[DeliveryResult], now_ms: int) -> list[bool]:
        """Apply each result only while the notification is RUNNING at exactly its
        ``lease_epoch`` (SENT sets sent_at = now_ms; PENDING waits until available_at)."""

    @abstractmethod
    def expire_notification_leases(self, now_ms: int, limit: int) -> int:
        """RUNNING notifications with lease_until < now_ms: PENDING again at once, or DEAD
        when their attempts are spent. Returns how many."""

    @abstractmethod
    def release_notifications(self, prefix: str, current: str, now_ms: int) -> int:
        """As ``expire_notification_leases``, for RUNNING ones whose owner starts with
        ``prefix`` and is as long as ``current`` but is not it (a restarted node's previous
        incarnations, ``{node}-{incarnation}``; not another node whose id starts the same)."""

    @abstractmethod
    def summarize_held_notifications(self, now_ms: int) -> int:
        """For each (job, rule) with uncounted HELD notifications and room under the rule's
        ``max_per_hour`` again (SENT in the last hour plus RUNNING): one PENDING ``held``
        notification with their count; they are counted (sent_at = now_ms, still HELD).
        Returns the summaries queued."""

    @abstractmethod
    def check_windows(self, buckets: Sequence[int], now_ms: int, limit: int) -> list[tuple[str, int, int]]:
        """Dead-man's windows of ``buckets`` whose deadline <= now_ms: re-armed by
        compare-and-set (core.deadman.check) and one ``missed`` notification per rule, keyed
        ``<jobId>:missed:<deadline>``. Returns ``(job_id, deadline, notifications queued)``."""

    @abstractmethod
    def list_notifications(
        self, tenant: str | None = None, job_id: str | None = None, status: NotificationStatus | None = None,
        limit: int = 100, before: str | None = None,
    ) -> list[Notification]:
        """Newest first; ``before`` is ``"<created_at>|<notification_id>"`` of the last one seen."""

    @abstractmethod
    def replay_notification(self, notification_id: str, now_ms: int, tenant: str | None = None) -> Notification | None:
        """A DEAD or HELD notification becomes PENDING (attempt 0). None if absent or neither."""

    @abstractmethod
    def purge_notification(self, notification_id: str, tenant: str | None = None) -> bool:
        """Delete a DEAD notification (of ``tenant``, when given). False if absent or not DEAD."""

    @abstractmethod
    def prune_notifications(self, older_than_ms: int, limit: int) -> int:
        """Delete up to ``limit`` SENT notifications (and HELD ones already counted in a
        summary) created before ``older_than_ms``. DEAD ones are not aged out: each job's
        are bounded by ``prune_dead_notifications`` alone."""

    @abstractmethod
    def prune_dead_notifications(
        self, keep: int, after_job: str | None, rows_per_call: int, limit: int
    ) -> tuple[list[DeadLettersPruned], str | None]:
        """Bound each job's dead notifications as ``prune_dead_letters`` bounds its dead
        letters: read the next ``rows_per_call`` DEAD notifications (at least ``keep`` + 1)
        in job order after ``after_job``, from the index of DEAD rows alone, and for each job
        found with more than ``keep``, delete its oldest (by creation) until ``keep`` are
        left, up to ``limit`` in all. Returns ``(pruned, cursor)``: one entry per job that
        lost some, and the cursor to pass back as ``after_job``; None when the pass is over."""

    @abstractmethod
    def prune_dead_notifications_of_gone_jobs(
        self, older_than_ms: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        """Delete the dead notifications created before ``older_than_ms`` of jobs that are no
        longer in the store (``prune_dead_notifications`` bounds each job's while it is there;
        a tenant that creates and deletes jobs with failing receivers would pile them up): the
        next ``jobs_per_call`` jobs with dead notifications after ``after_job`` (job order),
        those gone losing theirs, up to ``limit`` in all; a job whose id is back keeps them.
        Returns ``(deleted, cursor)``: pass the cursor back as ``after_job``; None when the
        pass is over."""

    @abstractmethod
    def notification_counts(self, now_ms: int) -> dict[str, int]:
        """Notifications per status, and ``overdueJobs``: windows past their deadline."""

    @abstractmethod
    def set_tenant_notify(self, name: str, rules: Sequence[Rule], now_ms: int) -> bool:
        """Replace a tenant's default rules. False when the tenant does not exist or is being deleted."""

    @abstractmethod
    def tenant_notify(self, name: str) -> tuple[Rule, ...] | None:
        """A tenant's default rules (None: no such tenant, or one being deleted)."""
