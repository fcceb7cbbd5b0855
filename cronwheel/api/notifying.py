"""Ping and notification bodies to values, notifications to JSON. A ping is decoded into its
struct (``api/schema.py``); a rule list is ``core/notify.py``'s to check. Pure, like
validation.py: every refusal is a ``ValidationError`` naming the field."""

from __future__ import annotations

from typing import Any

import msgspec

from cronwheel.api import answers
from cronwheel.api.decode import decode
from cronwheel.api.fields import ValidationError
from cronwheel.api.schema import PingRequest, TenantNotify
from cronwheel.core import notify as nt
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import MAX_PING_OUTPUT_CHARS


def parse_ping(body: Any) -> tuple[str, int | None, str | None]:
    """``{"status": "start"|"success"|"fail", "exitCode"?: int, "output"?: str}``
    (``schema.PingRequest``); an empty body is a success (``curl -X POST …/ping`` at the end
    of a script), and so is an exit code of 0 with no status; any other exit code with no
    status is a fail, as ``cronwheel ping --exit-code`` reports it (``-d "{\"exitCode\": $?}"``
    recorded a failed run as a success, and nobody was told)."""
    req = decode(PingRequest, {} if body is None else body)
    kind = req.status or ("fail" if req.exit_code not in (None, 0) else "success")
    output = None if req.output is None else req.output[-MAX_PING_OUTPUT_CHARS:]
    if kind == "start" and (req.exit_code is not None or output is not None):
        raise ValidationError("status", "a start ping carries no exitCode or output (send them with success or fail)")
    return kind, req.exit_code, output


def parse_rules_body(body: Any) -> tuple[nt.Rule, ...]:
    """``PUT /v1/tenants/{name}/notify``: ``{"notify": [rules]}`` (``schema.TenantNotify``;
    the rules are ``core/notify.py``'s to check). ``tenant`` is the answer's (read only)."""
    try:
        req = decode(TenantNotify, body)
    except ValidationError as exc:
        if exc.field == "notify" and exc.detail == "notify is required":  # null too: say how to clear them
            raise ValidationError("notify", "notify is required (a list of rules; [] clears the defaults)") from None
        raise
    if req.tenant is not msgspec.UNSET:
        raise ValidationError("tenant", "unknown field: tenant (allowed: notify)", code="unknown_field")
    try:
        return nt.rules_from_json(req.notify)
    except nt.RuleError as exc:
        raise ValidationError(exc.field, exc.detail) from None


def parse_notification_status(value: str | None) -> nt.NotificationStatus | None:
    if value is None:  # an empty value is no status either: refused below, as documented
        return None
    try:
        return nt.NotificationStatus(value.upper())
    except ValueError:
        names = ", ".join(s.value for s in nt.NotificationStatus)
        raise ValidationError("status", f"status must be one of {names}", status=400, code="invalid_query") from None


def parse_before(value: str | None) -> str | None:
    """A notifications page cursor: ``<created_at ms>|<notification id>``."""
    if value is None:  # absent; an empty value is refused below, as the document says
        return None
    at, sep, nid = value.partition("|")
    if not sep or not at.isdigit() or len(at) > 18 or not nid or len(nid) > 500:
        raise ValidationError("before", "before must be the next cursor of a previous page", status=400, code="invalid_query")
    return value


def notification_answer(n: nt.Notification) -> answers.Notification:
    return answers.Notification(
        notification_id=n.notification_id,
        job_id=n.job_id,
        tenant=n.tenant,
        event=n.event,
        subject=n.subject,
        rule_id=n.rule_id,
        rule=n.rule.to_json(redact=True),
        status=n.status.value,
        attempt=n.attempt,
        lease_epoch=n.lease_epoch,
        available_at=format_instant(n.available_at),
        created_at=format_instant(n.created_at),
        sent_at=format_instant(n.sent_at),
        error=n.error,
        body=n.body,
    )


def cursor_of(n: nt.Notification) -> str:
    return f"{n.created_at}|{n.notification_id}"
