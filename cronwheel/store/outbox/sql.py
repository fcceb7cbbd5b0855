"""The outbox's adapter to a backend (``Sql``), its row shape, and the one insert every part
shares.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cronwheel.core import notify as nt
from cronwheel.core.instants import format_instant
from cronwheel.core.model import Execution

HOUR_MS = 3_600_000


@dataclass
class Sql:
    """One backend's way of running the portable statements below (``:name`` parameters)."""

    rows: Callable[[str, dict[str, Any]], list[Any]]
    changes: Callable[[str, dict[str, Any]], int]
    decode: Callable[[Any], Any]  #: a JSON column's value as read → Python
    json_cast: str  #: appended to a parameter bound into a JSON column ("" or "::json")
    skip_locked: str  #: "" or "FOR UPDATE SKIP LOCKED"
    #: a ``col IN (list)`` condition for a list parameter ``name`` of ``kind`` ("text"/"int")
    in_list: Callable[[str, str, str], str]
    list_value: Callable[[Sequence[Any]], Any]
    #: "" or "FOR KEY SHARE": a row read so that deleting it (or locking it FOR UPDATE) waits
    #: until the reading transaction ends
    key_share: str = ""


def pg_statement(sql: str) -> str:
    """``:name`` parameters to psycopg's ``%(name)s`` (and a literal % doubled)."""
    return re.sub(r"(?<![:\w]):([a-z_][a-z0-9_]*)", r"%(\1)s", sql.replace("%", "%%"))


NOTIFICATION_COLUMNS = """notification_id, subject, rule_id, job_id, tenant, event, rule, body, status,
    attempt, lease_epoch, owner, lease_until, available_at, created_at, sent_at, error"""


def notification_from_row(sql: Sql, r: Any) -> nt.Notification:
    return nt.Notification(
        r[0], r[1], r[2], r[3], r[4], r[5], nt.rule_from_json(sql.decode(r[6])), sql.decode(r[7]),
        nt.NotificationStatus(r[8]), *r[9:17],
    )


INSERT_NOTIFICATION = """
INSERT INTO notifications (notification_id, subject, rule_id, job_id, tenant, event, rule, body,
                           status, available_at, created_at)
VALUES (:id, :subject, :rule_id, :job, :tenant, :event, :rule{json}, :body{json}, :status, :now, :now)
ON CONFLICT (notification_id) DO NOTHING
"""


def insert_notification(sql: Sql, subject: str, rule: nt.Rule, job_id: str, tenant: str, event: str,
                        body: dict[str, Any], now_ms: int, status: str = "PENDING") -> int:
    """Queue one notification of ``rule`` about ``subject`` (once: the id is the dedup key);
    returns 1 when it was new."""
    nid = nt.notification_id(subject, rule)
    body = {"notificationId": nid, "event": event, "ruleId": rule.rule_id, **body}
    return sql.changes(INSERT_NOTIFICATION.format(json=sql.json_cast), {
        "id": nid, "subject": subject, "rule_id": rule.rule_id, "job": job_id, "tenant": tenant,
        "event": event, "rule": json.dumps(rule.to_json()), "body": json.dumps(body), "status": status,
        "now": now_ms,
    })


def execution_body(ex: Execution, job_name: str | None) -> dict[str, Any]:
    def iso(ms: int | None) -> str | None:
        return None if ms is None else format_instant(ms)

    return {
        "jobId": ex.job_id, "jobName": job_name, "tenant": ex.tenant, "executionId": ex.execution_id,
        "status": ex.status.value, "attempt": ex.attempt, "maxAttempts": ex.max_attempts,
        "scheduledAt": iso(ex.scheduled_at), "startedAt": iso(ex.started_at), "finishedAt": iso(ex.finished_at),
        "lagMs": None if ex.started_at is None else ex.started_at - ex.scheduled_at,
        "exitCode": ex.exit_code, "error": ex.error, "reason": ex.reason, "output": nt.output_tail(ex.output),
    }
