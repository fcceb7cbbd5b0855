"""Delivering notifications: claim under a fenced lease (with each rule's rate limit), finish,
expire or give back, and summarise what the rate limit held back."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core.instants import format_instant
from cronwheel.store.outbox.sql import (
    HOUR_MS,
    NOTIFICATION_COLUMNS,
    Sql,
    insert_notification,
    notification_from_row,
)

# ---------------------------------------------------------------- delivery


#: tenants with PENDING notifications that one claim looks at (in name order; each costs one
#: indexed read): a bound on the claim's time, which runs in a write transaction
CLAIM_TENANTS = 1000

#: the tenants that have PENDING notifications, one index probe each (notifications_pending_of_tenant)
PENDING_TENANTS = """
    WITH RECURSIVE pending(tenant) AS (
        SELECT (SELECT min(tenant) FROM notifications WHERE status = 'PENDING')
        UNION ALL
        SELECT (SELECT min(tenant) FROM notifications WHERE status = 'PENDING' AND tenant > pending.tenant)
        FROM pending WHERE pending.tenant IS NOT NULL
    )
    SELECT tenant FROM pending WHERE tenant IS NOT NULL LIMIT :cap"""

#: the busy: deliveries under way, per tenant (bounded by the deliverers' concurrency)
RUNNING_PER_TENANT = "SELECT tenant, count(*) FROM notifications WHERE status = 'RUNNING' GROUP BY tenant"


#: one tenant's oldest due notifications (PostgreSQL skips those another node is claiming)
DUE_OF_TENANT = """SELECT notification_id, job_id, rule_id, rule, available_at FROM notifications
    WHERE status = 'PENDING' AND tenant = :tenant AND available_at <= :now
    ORDER BY available_at, notification_id LIMIT :limit"""


def claim(sql: Sql, owner: str, now_ms: int, limit: int, lease_ms: int) -> list[nt.Notification]:
    """Take up to ``limit`` PENDING notifications that are due: RUNNING under ``owner``,
    attempt + 1, lease_epoch + 1. A rule over its rate (``maxPerHour`` sent or in flight,
    per job) gets HELD instead (``summarize_held`` tells about them later).

    Tenants are taken in turn, the one with the fewest deliveries under way first (those
    claimed here counted as they are taken), oldest first within a tenant. Oldest first
    across tenants let one tenant's backlog (a thousand failing jobs told to a webhook that
    never answers: 15 s a delivery) stand between every other tenant and its alerts. The
    tenants' due notifications are read fewest under way first, and only until ``limit``
    tenants have some: a claim for one free slot reads one or two tenants, not all of them."""
    tenants = [t for (t,) in sql.rows(PENDING_TENANTS, {"cap": CLAIM_TENANTS})]
    if not tenants:
        return []
    busy: dict[str, int] = {t: int(n) for t, n in sql.rows(RUNNING_PER_TENANT, {})}
    due: dict[str, list[Any]] = {}
    for t in sorted(tenants, key=lambda t: busy.get(t, 0)):  # stable: in name order among equals
        rows = sql.rows(f"{DUE_OF_TENANT} {sql.skip_locked}", {"tenant": t, "now": now_ms, "limit": limit})
        if rows:
            due[t] = list(rows)
            if len(due) >= limit:
                break
    turns = [(busy.get(t, 0), rows[0][4], t) for t, rows in due.items()]
    heapq.heapify(turns)
    taken = dict.fromkeys(due, 0)
    cands: list[Any] = []
    while turns and len(cands) < limit:
        under_way, _, t = heapq.heappop(turns)
        cands.append(due[t][taken[t]])
        taken[t] += 1
        if taken[t] < len(due[t]):
            heapq.heappush(turns, (under_way + 1, due[t][taken[t]][4], t))
    used: dict[tuple[str, str], int] = {}
    claimed: list[nt.Notification] = []
    for nid, job_id, rule_id, rule_json, _available_at in cands:
        key = (job_id, rule_id)
        if key not in used:
            used[key] = _sent_or_sending(sql, job_id, rule_id, now_ms)
        rule = nt.rule_from_json(sql.decode(rule_json))
        if not nt.within_rate(used[key], rule):
            sql.changes("UPDATE notifications SET status = 'HELD' WHERE notification_id = :id AND status = 'PENDING'", {"id": nid})
            continue
        rows = sql.rows(
            f"""UPDATE notifications SET status = 'RUNNING', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
                    owner = :owner, lease_until = :until
                WHERE notification_id = :id AND status = 'PENDING' RETURNING {NOTIFICATION_COLUMNS}""",
            {"id": nid, "owner": owner, "until": now_ms + lease_ms},
        )
        if rows:
            used[key] += 1
            claimed.append(notification_from_row(sql, rows[0]))
    return claimed


def _sent_or_sending(sql: Sql, job_id: str, rule_id: str, now_ms: int) -> int:
    rows = sql.rows(
        """SELECT count(*) FROM notifications WHERE job_id = :job AND rule_id = :rule
           AND ((status = 'SENT' AND sent_at > :since) OR status = 'RUNNING')""",
        {"job": job_id, "rule": rule_id, "since": now_ms - HOUR_MS},
    )
    return int(rows[0][0])


def finish(sql: Sql, results: Sequence[nt.DeliveryResult], now_ms: int) -> list[bool]:
    """Apply delivery results, each only while the notification is RUNNING at its epoch."""
    done = []
    for r in results:
        done.append(sql.changes(
            """UPDATE notifications SET status = :status, available_at = COALESCE(:avail, available_at),
                   error = :error, sent_at = :sent, owner = NULL, lease_until = NULL
               WHERE notification_id = :id AND status = 'RUNNING' AND lease_epoch = :epoch""",
            {"id": r.notification_id, "epoch": r.lease_epoch, "status": r.status.value, "avail": r.available_at,
             "error": r.error, "sent": now_ms if r.status is nt.NotificationStatus.SENT else None},
        ) == 1)  # fmt: skip
    return done


def _give_back(sql: Sql, rows: list[Any], now_ms: int, error: str) -> int:
    """RUNNING notifications whose deliverer is gone: tried again at once, or dead-lettered
    when that was their last attempt."""
    n = 0
    for nid, epoch, attempt, rule in rows:
        status = "DEAD" if attempt >= nt.rule_from_json(sql.decode(rule)).max_attempts else "PENDING"
        n += sql.changes(
            """UPDATE notifications SET status = :status, available_at = :now, error = :error,
                   owner = NULL, lease_until = NULL
               WHERE notification_id = :id AND status = 'RUNNING' AND lease_epoch = :epoch""",
            {"id": nid, "epoch": epoch, "status": status, "now": now_ms, "error": error},
        )
    return n


def expire(sql: Sql, now_ms: int, limit: int) -> int:
    rows = sql.rows(
        """SELECT notification_id, lease_epoch, attempt, rule FROM notifications
           WHERE status = 'RUNNING' AND lease_until < :now ORDER BY lease_until LIMIT :limit""",
        {"now": now_ms, "limit": limit},
    )
    return _give_back(sql, rows, now_ms, "delivery lease expired")


def release_owner(sql: Sql, prefix: str, current: str, now_ms: int) -> int:
    """A restarted node: the deliveries its previous incarnation had under way died with it.
    Its owners are as long as ``current`` (another node whose id starts like this one's has
    longer ones: ``n-2-…`` is not ``n-…``)."""
    rows = sql.rows(
        """SELECT notification_id, lease_epoch, attempt, rule FROM notifications
           WHERE status = 'RUNNING' AND substr(owner, 1, :n) = :prefix AND length(owner) = :length
             AND owner <> :current""",
        {"n": len(prefix), "prefix": prefix, "length": len(current), "current": current},
    )
    return _give_back(sql, rows, now_ms, "its node stopped during delivery")


def summarize_held(sql: Sql, now_ms: int) -> int:
    """For each (job, rule) with notifications held back by the rate limit and room again
    under it: one ``held`` notification that counts them (it goes out, and counts, like any
    other of the rule); they are marked counted."""
    groups = sql.rows(
        """SELECT job_id, rule_id, tenant, count(*), min(created_at), max(created_at), max(notification_id)
           FROM notifications WHERE status = 'HELD' AND sent_at IS NULL GROUP BY job_id, rule_id, tenant""",
        {},
    )
    made = 0
    for job_id, rule_id, tenant, count, first, last, sample in groups:
        rule_row = sql.rows("SELECT rule FROM notifications WHERE notification_id = :id", {"id": sample})
        rule = nt.rule_from_json(sql.decode(rule_row[0][0]))
        if not nt.within_rate(_sent_or_sending(sql, job_id, rule_id, now_ms), rule):
            continue  # not before the rule has room again: the summary counts against its rate

        body = {"jobId": job_id, "tenant": tenant, "heldBack": int(count), "firstAt": format_instant(first),
                "lastAt": format_instant(last), "maxPerHour": rule.max_per_hour}  # fmt: skip
        made += insert_notification(sql, f"{job_id}:held:{now_ms}", rule, job_id, tenant, "held", body, now_ms)
        sql.changes(
            """UPDATE notifications SET sent_at = :now WHERE job_id = :job AND rule_id = :rule
               AND status = 'HELD' AND sent_at IS NULL AND created_at <= :last""",
            {"now": now_ms, "job": job_id, "rule": rule_id, "last": last},
        )
    return made
