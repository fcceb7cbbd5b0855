"""Notification rules: who is told what, when a job's run ends well or badly. Pure.

A rule is ``on`` one event, ``via`` one channel::

    {"on": "failure", "via": "webhook", "url": "https://hooks.example/cw", "secret": "…"}
    {"on": "dead", "via": "email", "to": ["ops@example.com"]}
    {"on": "late", "afterSec": 300, "via": "command", "command": "page-oncall"}
    {"on": "missed", "via": "webhook", "url": "…", "secret": "…", "maxPerHour": 4}

Events:

* ``failure``: an attempt failed (non-zero exit, timeout, lost worker, a ``fail`` ping)
* ``dead``: the execution moved to the dead-letter queue (its attempts are spent)
* ``success``: an execution succeeded
* ``recovered``: the first success after a failure of the same job
* ``late``: a run started more than ``afterSec`` after its tick (told as it starts)
* ``missed``: the job's ``expectSuccessWithin`` window passed without a success
  (``core.deadman``)

A notification's identity is ``(subject, rule id)``: the subject is the execution id, or
``<jobId>:missed:<deadline ms>`` for a missed window. The store holds that pair unique, so
an event noticed twice (a retried transaction, two nodes) is told once. The rule id is a
hash of what the rule does (not of its rate limit or secret), so it stays the same when a
job is saved again with the same rule.

Webhooks are signed: ``core/signing.py``.

Why one module: a rule, the window it may carry (``expectSuccessWithin``), which rules an
outcome fires, and the durable notification that records one telling are one idea, what is
told to whom and when; they share the rule's validation and its errors (``RuleError``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET, Meta, UnsetType

from cronwheel.core.jobfields import HTTP_URL_PATTERN
from cronwheel.core.limits import (
    EXPECT_SUCCESS_WITHIN_MS_RANGE,
    MAX_NOTIFY_COMMAND_BYTES,
    MAX_NOTIFY_RULES,
    MAX_NOTIFY_URL_CHARS,
    MAX_RECIPIENTS,
    MAX_SECRET_CHARS,
    MIN_SECRET_CHARS,
    NOTIFY_AFTER_SEC_RANGE,
    NOTIFY_MAX_ATTEMPTS_RANGE,
    NOTIFY_MAX_PER_HOUR_RANGE,
)
from cronwheel.core.model import RetryPolicy
from cronwheel.core.retry import after_failure
from cronwheel.core.tenants import HostAllow, Principal, Refusal, host_allowed
from cronwheel.core.urls import http_url_problem


class NotifyOn(StrEnum):
    FAILURE = "failure"  #: an attempt failed
    DEAD = "dead"  #: attempts spent: the execution is in the dead-letter queue
    SUCCESS = "success"  #: an execution succeeded
    RECOVERED = "recovered"  #: the first success after a failure
    LATE = "late"  #: started more than ``afterSec`` after its tick
    MISSED = "missed"  #: the ``expectSuccessWithin`` window passed without a success


class Via(StrEnum):
    WEBHOOK = "webhook"  #: a signed JSON POST
    EMAIL = "email"  #: through the daemon's SMTP relay or the local sendmail
    COMMAND = "command"  #: a shell command, the notification as JSON on its stdin


class NotificationStatus(StrEnum):
    PENDING = "PENDING"  #: waiting to be delivered (first time, or a retry at available_at)
    RUNNING = "RUNNING"  #: being delivered under a lease (fenced by lease_epoch)
    SENT = "SENT"  #: delivered
    DEAD = "DEAD"  #: attempts spent: in the notifications' dead-letter queue
    HELD = "HELD"  #: held back by the rule's rate limit; counted in the next summary


#: how often a notification is tried before it is dead-lettered, and how long it waits
DELIVERY_RETRY = RetryPolicy(max_attempts=8, initial_backoff_sec=2.0, max_backoff_sec=600.0, multiplier=3.0, jitter=0.2)
#: a delivery that takes longer than this is abandoned (and retried)
DELIVERY_TIMEOUT_SEC = 15.0
DEFAULT_MAX_PER_HOUR = 30
#: the tail of a run's output a notification carries
OUTPUT_TAIL_CHARS = 2000

#: the local part: no white space, no control character (spelled out, since Python's ``\s``
#: and JSON Schema's differ on a few of them: the document states the same class), and none of
#: the forms mail software routes on past the domain the allow-list judged (``ROUTED_LOCAL_PARTS``)
_EMAIL_RE = re.compile(r"^(?![^@]*(?:=\?|[%!]))[^@\s<>,;:\"\x00-\x1f\x7f-\x9f\ufeff]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,253}[A-Za-z0-9])?$")
#: what in a local part sends the mail elsewhere than its domain, and why: ``=?`` is an encoded
#: word (``=?utf-8?q?ops=40acme.com=2C?=@a.example``, which ``sendmail -t`` read as ``To:
#: ops@acme.com,@a.example``); ``%`` and ``!`` are the old source routes, which a relay that is
#: the domain's own (Postfix's allow_percent_hack, sendmail's UUCP rules) forwards on:
#: ``victim%elsewhere.test@acme.com`` to ``victim@elsewhere.test``
ROUTED_LOCAL_PARTS = {
    "=?": "'=?' starts an encoded word, which mail software decodes into other addresses",
    "%": "'%' is a source route, which a relay forwards to the domain after it",
    "!": "'!' is a source route, which a relay forwards to the host before it",
}
_RULE_FIELDS = {
    Via.WEBHOOK: ("url", "secret"),
    Via.EMAIL: ("to",),
    Via.COMMAND: ("command",),
}
_COMMON_FIELDS = ("on", "via", "afterSec", "maxPerHour", "maxAttempts")


#: what answers show in place of a secret
REDACTED = "********"


#: a rule's text members as the document states them (the server's checks are ``_text``'s)
_TEXT_PATTERN = "^[^\\u0000]*\\S[^\\u0000]*$"
_URL_DOC = ("webhook: an absolute http:// or https:// URL with a host, no spaces or control characters (format `http-url`, as for an HTTP target, "
            "but user information is taken: a webhook has no headers). Answers show the password of its user information, if any, as `********`.")
_ON_DOC = ("failure: an attempt failed; dead: moved to the DLQ; success; recovered: the first success after a failure; late: started more than `afterSec` after its tick; "
           "missed: the `expectSuccessWithin` window passed without a success.")
_RULE_DOC = (
    "A notification rule: `on` one event, `via` one channel. A webhook needs `url` and `secret` (the HMAC-SHA256 key of the `Cronwheel-Signature` header: "
    "`t=<unix seconds>,v1=<hex of HMAC(secret, \"<t>.\" + body)>`), an email `to`, a command `command` (the notification's JSON on its stdin; needs allowShell for tenants). "
    "Webhook hosts obey the tenant's HTTP allow-list. Answers show the secret as `********`, and the password of a URL that carries one (`https://user:********@host/`), "
    "and add the rule's `ruleId`."
)


def _others_absent(*names: str) -> dict[str, Any]:
    return {"not": {"anyOf": [{"required": [n]} for n in names]}}


def _doc(schema: dict[str, Any]) -> Meta:
    """What the document says of a member beyond its type: the rule's checks are the
    server's (``rule_from_json``), worded as they always were."""
    return Meta(extra_json_schema=schema)


def _range(bounds: tuple[int, int], description: str, default: int | None = None) -> Meta:
    extra: dict[str, Any] = {"minimum": bounds[0], "maximum": bounds[1], "description": description}
    if default is not None:
        extra["default"] = default
    return _doc(extra)


class NotifyRule(msgspec.Struct, rename="camel", kw_only=True):
    """A rule's body as decoded (``rule_from_json``): the members' types; which members a
    channel takes, their lengths, the URL and the addresses are checked over it."""

    json_schema_extra: ClassVar[dict[str, Any]] = {
        "additionalProperties": False,
        "description": _RULE_DOC,
        "allOf": [
            {"if": {"properties": {"via": {"const": "webhook"}}, "required": ["via"]},
             "then": {"required": ["url", "secret"], **_others_absent("to", "command")}},
            {"if": {"properties": {"via": {"const": "email"}}, "required": ["via"]},
             "then": {"required": ["to"], **_others_absent("url", "secret", "command")}},
            {"if": {"properties": {"via": {"const": "command"}}, "required": ["via"]},
             "then": {"required": ["command"], **_others_absent("url", "secret", "to")}},
            {"if": {"properties": {"on": {"const": "late"}}, "required": ["on"]},
             "then": {"required": ["afterSec"]}, "else": {"not": {"required": ["afterSec"]}}},
        ],
    }  # fmt: skip

    on: Annotated[str, Meta(extra_json_schema={"type": "string", "x-enum": [o.value for o in NotifyOn], "description": _ON_DOC})]
    via: Annotated[str, Meta(extra_json_schema={"type": "string", "x-enum": [v.value for v in Via]})]
    url: Annotated[str, _doc({"maxLength": MAX_NOTIFY_URL_CHARS, "format": "http-url", "description": _URL_DOC, "pattern": HTTP_URL_PATTERN})] | UnsetType = UNSET
    secret: Annotated[str, _doc({"minLength": MIN_SECRET_CHARS, "maxLength": MAX_SECRET_CHARS, "description": "webhook: the signing key.", "pattern": _TEXT_PATTERN})] | UnsetType = UNSET
    to: Annotated[str | list[str], _doc({"x-schema": {
        "oneOf": [{"$ref": "#/components/schemas/EmailAddress"},
                  {"type": "array", "items": {"$ref": "#/components/schemas/EmailAddress"}, "minItems": 1, "maxItems": MAX_RECIPIENTS}],
        "description": "email: the recipients."}})] | UnsetType = UNSET  # fmt: skip
    command: Annotated[str, _doc({"minLength": 1, "description": "command: a shell command line, at most 8 KiB.", "maxLength": MAX_NOTIFY_COMMAND_BYTES,
                                  "pattern": _TEXT_PATTERN})] | UnsetType = UNSET
    after_sec: Annotated[int, _range(NOTIFY_AFTER_SEC_RANGE, "late: the lag that counts as late.")] | UnsetType = UNSET
    max_per_hour: Annotated[int, _range(NOTIFY_MAX_PER_HOUR_RANGE, "Notifications of this rule per job and rolling hour; the others are HELD and counted in one later `held` notification.",
                                        DEFAULT_MAX_PER_HOUR)] | UnsetType = UNSET
    max_attempts: Annotated[int, _range(NOTIFY_MAX_ATTEMPTS_RANGE, "Delivery attempts (with backoff) before the notification is dead-lettered.",
                                        DELIVERY_RETRY.max_attempts)] | UnsetType = UNSET
    rule_id: Annotated[str, _doc({"readOnly": True, "description": "In answers: the rule's stable id (a hash of what it does)."})] | UnsetType = UNSET


class NotifyRuleAnswer(NotifyRule, kw_only=True):
    """A rule as answers show it (``Rule.to_json(redact=True)`` writes it): its document's
    component is generated from this."""

    json_schema_extra: ClassVar[dict[str, Any]] = {
        "additionalProperties": False,
        "description": "A notification rule as answers show it: the same members as NotifyRule, the secret as `********`, and the rule's `ruleId`.",
    }

    secret: Annotated[str, _doc({"const": REDACTED, "description": "webhook: never shown; answers carry `********`."})] | UnsetType = UNSET


class RuleError(ValueError):
    """A rule is malformed; ``field`` names the offending member."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail


def redact_url_password(url: str) -> str:
    """``url`` with the password of its user information (``https://user:pw@host/``) shown as
    ``********``; a URL without one is returned as it is."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return parts._replace(netloc=f"{user}:{REDACTED}@{hostport}").geturl()


@dataclass(frozen=True, slots=True)
class Rule:
    on: NotifyOn
    via: Via
    url: str | None = None  #: webhook
    secret: str | None = None  #: webhook: the HMAC key
    to: tuple[str, ...] = ()  #: email recipients
    command: str | None = None  #: command
    after_sec: int | None = None  #: late: the lag that counts as late
    max_per_hour: int = DEFAULT_MAX_PER_HOUR  #: rate limit: sent per rolling hour, per job
    max_attempts: int = DELIVERY_RETRY.max_attempts  #: delivery attempts before the DLQ

    @property
    def rule_id(self) -> str:
        """What the rule does, hashed: the same rule saved again keeps its id (and its dedup)."""
        what = [self.on.value, self.via.value, self.url, list(self.to), self.command, self.after_sec]
        return "r_" + hashlib.sha256(json.dumps(what, separators=(",", ":")).encode()).hexdigest()[:16]

    def to_json(self, *, redact: bool = False) -> dict[str, Any]:
        """The rule's JSON; ``redact`` hides the webhook secret and the password of its URL
        (API answers never show them; the rule keeps them, and its ``ruleId`` is the same)."""
        data: dict[str, Any] = {"on": self.on.value, "via": self.via.value}
        if self.via is Via.WEBHOOK:
            data["url"] = redact_url_password(self.url or "") if redact else self.url
            data["secret"] = REDACTED if redact else self.secret
        elif self.via is Via.EMAIL:
            data["to"] = list(self.to)
        else:
            data["command"] = self.command
        if self.after_sec is not None:
            data["afterSec"] = self.after_sec
        data["maxPerHour"] = self.max_per_hour
        data["maxAttempts"] = self.max_attempts
        if redact:
            data["ruleId"] = self.rule_id
        return data

    def describe(self) -> str:
        where = self.url if self.via is Via.WEBHOOK else ", ".join(self.to) if self.via is Via.EMAIL else self.command
        return f"on {self.on.value} via {self.via.value} {where}"


def email_rule(to: str | list[str], on: NotifyOn = NotifyOn.FAILURE) -> Rule:
    """The simplest email rule (a crontab's MAILTO maps to ``email_rule(addr)``)."""
    return rule_from_json({"on": on.value, "via": "email", "to": [to] if isinstance(to, str) else list(to)})


def _text(field: str, value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise RuleError(field, f"{field} must be a string")
    if not value.strip():
        raise RuleError(field, f"{field} must not be blank")
    if len(value.encode()) > limit or "\x00" in value:
        raise RuleError(field, f"{field} must be at most {limit} bytes, without NUL characters")
    return value


def _int(field: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, float) and value.is_integer():  # JSON has one number type: 300.0 is 300
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise RuleError(field, f"{field} must be an integer from {lo} to {hi}")
    return value


#: members whose null counts as absent (the others' null is refused, as their wrong type is)
_NULL_IS_ABSENT = ("url", "secret", "to", "command", "afterSec")
_INT_MEMBERS = {"afterSec": NOTIFY_AFTER_SEC_RANGE, "maxPerHour": NOTIFY_MAX_PER_HOUR_RANGE, "maxAttempts": NOTIFY_MAX_ATTEMPTS_RANGE}
_AT_RE = re.compile(r"at `\$\.([A-Za-z]+)(\[(\d+)\])?")
_MISSING_RE = re.compile(r"missing required field `([A-Za-z]+)`")


def _decoded(data: dict[str, Any], field: str) -> NotifyRule:
    """``data`` as a ``NotifyRule`` (msgspec checks the members' types), or the RuleError
    that names the first member of the wrong type, worded as the rule's checks word it."""
    value: dict[str, Any] = {}
    for key, item in data.items():
        if key == "ruleId" or (item is None and key in _NULL_IS_ABSENT):
            continue  # ruleId is an answer's: refused below as unknown
        if key in _INT_MEMBERS and isinstance(item, float) and item.is_integer():
            item = int(item)  # JSON has one number type: 300.0 is 300
        value[key] = item
    try:
        return msgspec.convert(value, NotifyRule, strict=True)
    except msgspec.ValidationError as exc:
        at = _AT_RE.search(str(exc)) or _MISSING_RE.search(str(exc))
        member = at.group(1) if at else ""
        raise _type_error(field, member, at.group(3) if at and at.re is _AT_RE else None, data) from None


def _type_error(field: str, member: str, index: str | None, data: dict[str, Any]) -> RuleError:
    where = f"{field}.{member}"
    if member in ("on", "via"):
        choices = NotifyOn if member == "on" else Via
        return RuleError(where, f"{where} must be one of {', '.join(c.value for c in choices)}")
    if member in _INT_MEMBERS:
        lo, hi = _INT_MEMBERS[member]
        return RuleError(where, f"{where} must be an integer from {lo} to {hi}")
    if member == "to" and index is not None:
        return RuleError(f"{where}[{index}]", f"{where}[{index}] is not an email address: {str(data['to'][int(index)])[:100]!r}")
    if member == "to":
        return RuleError(where, f"{where} must be a list of 1 to {MAX_RECIPIENTS} email addresses")
    if member in ("url", "secret", "command"):
        return RuleError(where, f"{where} must be a string")
    return RuleError(field, f"{field} must be an object like {{\"on\": \"failure\", \"via\": \"webhook\", ...}}")


def rule_from_json(data: Any, field: str = "notify[0]", *, stored: bool = False) -> Rule:
    """Validate one rule (see the module docstring): decoded as a ``NotifyRule``, then checked
    over it. Raises RuleError naming the field. ``stored``: a rule read back from the store,
    checked when it was written; a rule that an older release took (a URL check has since
    grown stricter) must still load, or the completion that fires it would fail."""
    if not isinstance(data, dict):
        raise RuleError(field, f"{field} must be an object like {{\"on\": \"failure\", \"via\": \"webhook\", ...}}")
    # the event, the channel and the members it takes first, as always: they say what is wrong
    ons = ", ".join(o.value for o in NotifyOn)
    vias = ", ".join(v.value for v in Via)
    try:
        on = NotifyOn(str(data.get("on")))
    except ValueError:
        raise RuleError(f"{field}.on", f"{field}.on must be one of {ons}") from None
    try:
        via = Via(str(data.get("via")))
    except ValueError:
        raise RuleError(f"{field}.via", f"{field}.via must be one of {vias}") from None
    allowed = (*_COMMON_FIELDS, *_RULE_FIELDS[via])
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        raise RuleError(f"{field}.{unknown[0]}", f"unknown field {field}.{unknown[0]} for a {via.value} rule (allowed: {', '.join(allowed)})")
    body = _decoded(data, field)
    for need in _RULE_FIELDS[via]:
        if getattr(body, need) is UNSET:
            raise RuleError(f"{field}.{need}", f"{field}.{need} is required for a {via.value} rule")
    after_sec = None
    if on is NotifyOn.LATE:
        if body.after_sec is UNSET:
            raise RuleError(f"{field}.afterSec", f"{field}.afterSec is required for a late rule (seconds after the tick)")
        after_sec = _int(f"{field}.afterSec", body.after_sec, *NOTIFY_AFTER_SEC_RANGE)
    elif body.after_sec is not UNSET:
        raise RuleError(f"{field}.afterSec", f"{field}.afterSec applies to late rules only")
    max_per_hour = _int(f"{field}.maxPerHour", DEFAULT_MAX_PER_HOUR if body.max_per_hour is UNSET else body.max_per_hour, *NOTIFY_MAX_PER_HOUR_RANGE)
    max_attempts = _int(f"{field}.maxAttempts", DELIVERY_RETRY.max_attempts if body.max_attempts is UNSET else body.max_attempts, *NOTIFY_MAX_ATTEMPTS_RANGE)
    if via is Via.WEBHOOK:
        url = _text(f"{field}.url", body.url, MAX_NOTIFY_URL_CHARS)
        problem = None if stored else http_url_problem(url, MAX_NOTIFY_URL_CHARS)
        if problem is not None:
            raise RuleError(f"{field}.url", f"{field}.url {problem}")
        secret = _text(f"{field}.secret", body.secret, MAX_SECRET_CHARS)
        if len(secret) < MIN_SECRET_CHARS:
            raise RuleError(f"{field}.secret", f"{field}.secret must be at least {MIN_SECRET_CHARS} characters (it keys the HMAC signature)")
        return Rule(on, via, url=url, secret=secret, after_sec=after_sec, max_per_hour=max_per_hour, max_attempts=max_attempts)
    if via is Via.EMAIL:
        to = [body.to] if isinstance(body.to, str) else list(body.to or ())
        if not 1 <= len(to) <= MAX_RECIPIENTS:
            raise RuleError(f"{field}.to", f"{field}.to must be a list of 1 to {MAX_RECIPIENTS} email addresses")
        for i, addr in enumerate(to):
            # a stored rule was checked when it was written; one from before the routed forms
            # were refused must still read back (its delivery refuses that address: routed_recipient)
            if not stored and not _EMAIL_RE.fullmatch(addr):
                why = routed_local_part(addr)
                raise RuleError(f"{field}.to[{i}]", f"{field}.to[{i}] is not an email address: {addr[:100]!r}"
                                + (f" ({why})" if why else ""))
        return Rule(on, via, to=tuple(to), after_sec=after_sec, max_per_hour=max_per_hour, max_attempts=max_attempts)
    command = _text(f"{field}.command", body.command, MAX_NOTIFY_COMMAND_BYTES)
    return Rule(on, via, command=command, after_sec=after_sec, max_per_hour=max_per_hour, max_attempts=max_attempts)


def rules_from_json(data: Any, field: str = "notify") -> tuple[Rule, ...]:
    if not isinstance(data, list):
        raise RuleError(field, f"{field} must be a list of rules")
    if len(data) > MAX_NOTIFY_RULES:
        raise RuleError(field, f"{field} may hold at most {MAX_NOTIFY_RULES} rules, not {len(data)}")
    rules = tuple(rule_from_json(item, f"{field}[{i}]") for i, item in enumerate(data))
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        if rule.rule_id in seen:
            raise RuleError(f"{field}[{i}]", f"{field}[{i}] repeats an earlier rule")
        seen.add(rule.rule_id)
    return rules


#: how a daemon is given a mail transport (the warning of an email rule on a daemon without one)
MAIL_TRANSPORT_HOWTO = ("start the daemon with --smtp-url URL or --sendmail PATH (CRONWHEEL_SMTP_URL / CRONWHEEL_SENDMAIL, "
                        "or smtp_url / sendmail in cronwheel.toml)")


def no_mail_warnings(rules: tuple[Rule, ...] | list[Rule], field: str = "notify") -> list[str]:
    """One warning per email rule, for a daemon that has no mail transport: the rule is kept
    (the transport may be configured later, or another node of a cluster has one), but until
    then its notifications fail, are retried and are dead-lettered."""
    return [f"{field}[{i}].to: this daemon has no mail transport, so this email rule's notifications will be retried, "
            f"then dead-lettered, until one is configured: {MAIL_TRANSPORT_HOWTO}"
            for i, r in enumerate(rules) if r.via is Via.EMAIL]  # fmt: skip


def rules_to_json(rules: tuple[Rule, ...] | list[Rule], *, redact: bool = False) -> list[dict[str, Any]]:
    return [r.to_json(redact=redact) for r in rules]


def stored_rules(data: Any) -> tuple[Rule, ...]:
    """Rules read back from the store (validated when they were written)."""
    if not data:
        return ()
    return tuple(rule_from_json(item, stored=True) for item in data)


# ---------------------------------------------------------------- durations

_DURATION_RE = re.compile(r"^\s*(\d{1,12})\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def parse_window(value: Any, field: str = "expectSuccessWithin") -> int:
    """``"26h"``, ``"90m"``, ``"2d"``, ``"45s"`` or a number of seconds, as milliseconds."""
    if isinstance(value, bool):
        raise RuleError(field, f"{field} must be a duration like \"26h\" or a number of seconds")
    if isinstance(value, int | float):
        lo_s, hi_s = EXPECT_SUCCESS_WITHIN_MS_RANGE[0] / 1000, EXPECT_SUCCESS_WITHIN_MS_RANGE[1] / 1000
        if not lo_s <= value <= hi_s:  # checked before scaling: 1e308 seconds is no window either
            raise RuleError(field, f"{field} must be between 1s and 366d")
        ms = round(value * 1000)
    elif isinstance(value, str) and (m := _DURATION_RE.match(value)):
        ms = int(m.group(1)) * _UNIT_MS[m.group(2) or "s"]
    else:
        raise RuleError(field, f"{field} must be a duration like \"26h\", \"90m\", \"2d\" or a number of seconds, not {str(value)[:50]!r}")
    lo, hi = EXPECT_SUCCESS_WITHIN_MS_RANGE
    if not lo <= ms <= hi:
        raise RuleError(field, f"{field} must be between 1s and 366d")
    return ms


def format_window(ms: int) -> str:
    for unit in ("w", "d", "h", "m", "s"):
        size = _UNIT_MS[unit]
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


# ---------------------------------------------------------------- which rules fire


def events_for(status: str, previous_failed: bool) -> set[NotifyOn]:
    """What an execution's new status means to rules. ``status``: RETRY_WAIT or DEAD (a
    failed attempt) or SUCCEEDED; ``previous_failed``: the job's last outcome before this
    one was a failure. (``late`` is told at the start, ``missed`` by the window watcher.)"""
    events: set[NotifyOn] = set()
    if status in ("RETRY_WAIT", "DEAD"):
        events.add(NotifyOn.FAILURE)
        if status == "DEAD":
            events.add(NotifyOn.DEAD)
    elif status == "SUCCEEDED":
        events.add(NotifyOn.SUCCESS)
        if previous_failed:
            events.add(NotifyOn.RECOVERED)
    return events


def matching(rules: tuple[Rule, ...], events: set[NotifyOn], lag_ms: int | None) -> list[Rule]:
    out = []
    for rule in rules:
        if rule.on not in events:
            continue
        if rule.on is NotifyOn.LATE and (lag_ms is None or rule.after_sec is None or lag_ms <= rule.after_sec * 1000):
            continue
        out.append(rule)
    return out


def effective_rules(job_rules: tuple[Rule, ...], tenant_defaults: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """A job's own rules replace its tenant's defaults (a job with none gets the defaults)."""
    return job_rules or tenant_defaults


def notification_id(subject: str, rule: Rule) -> str:
    return f"{subject}@{rule.rule_id}"


def missed_subject(job_id: str, deadline_ms: int) -> str:
    return f"{job_id}:missed:{deadline_ms}"


def output_tail(output: str | None) -> str | None:
    if output is None:
        return None
    return output[-OUTPUT_TAIL_CHARS:]


# ---------------------------------------------------------------- rate limit


def within_rate(sent_in_last_hour: int, rule: Rule) -> bool:
    """Whether one more notification of ``rule`` (for one job) may go out now."""
    return sent_in_last_hour < rule.max_per_hour


# ---------------------------------------------------------------- durable notifications


@dataclass(slots=True)
class Notification:
    """One notification as stored: ``(subject, rule_id)`` is its identity (unique)."""

    notification_id: str
    subject: str  #: an execution id, or ``<jobId>:missed:<deadline>``
    rule_id: str
    job_id: str
    tenant: str
    event: str  #: a NotifyOn value, or ``held`` (a rate limit's summary)
    rule: Rule
    body: dict[str, Any]
    status: NotificationStatus
    attempt: int = 0
    lease_epoch: int = 0  #: fencing token: +1 on every claim
    owner: str | None = None
    lease_until: int | None = None
    available_at: int = 0
    created_at: int = 0
    sent_at: int | None = None  #: SENT: when; HELD: when a summary counted it
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """What the engine reports about one claimed notification (fenced by lease_epoch)."""

    notification_id: str
    lease_epoch: int
    status: NotificationStatus  #: SENT, PENDING (retry at available_at) or DEAD
    available_at: int | None = None
    error: str | None = None


def after_failed_delivery(attempt: int, rule: Rule, now_ms: int, rand01: float) -> tuple[NotificationStatus, int | None]:
    """A failed delivery attempt: retried with backoff, or dead-lettered once the rule's
    ``maxAttempts`` are spent."""
    after = after_failure(attempt, replace(DELIVERY_RETRY, max_attempts=rule.max_attempts), now_ms, rand01)
    if after.available_at is None:
        return NotificationStatus.DEAD, None
    return NotificationStatus.PENDING, after.available_at


def routed_local_part(address: str) -> str | None:
    """Why the local part of ``address`` would send the mail past its domain
    (``ROUTED_LOCAL_PARTS``), or None."""
    local = address.rpartition("@")[0]
    return next((why for mark, why in ROUTED_LOCAL_PARTS.items() if mark in local), None)


def routed_recipient(rule: Rule) -> tuple[str, str] | None:
    """The first of an email rule's recipients whose local part routes the mail past its
    domain, and why (refused since it was saved: a rule stored before reads back, and its
    delivery is refused here)."""
    return next(((address, why) for address in rule.to if (why := routed_local_part(address))), None)


def unallowed_recipient(rule: Rule, allow: HostAllow) -> str | None:
    """The first of an email rule's recipients whose domain the allow-list does not hold (None:
    every one's does, or there is no list: any). A tenant restricted to its own hosts could
    otherwise have the operator's mail relay write, with words of its choosing (a job's name,
    its output), to any address."""
    for address in rule.to:
        if not host_allowed(address.rpartition("@")[2], allow):
            return address
    return None


def rules_refusal(rules: tuple[Rule, ...], principal: Principal, field: str = "notify") -> Refusal | None:
    """Why ``principal`` may not save these rules (None: it may): a webhook obeys the same
    HTTP allow-list as HTTP targets, and so do an email rule's recipients' domains; a command
    needs the same permission as command targets."""
    if principal.is_admin:
        return None
    for i, rule in enumerate(rules):
        if rule.via is Via.EMAIL and (address := unallowed_recipient(rule, principal.http_allow)) is not None:
            return Refusal(f"{field}[{i}].to[{rule.to.index(address)}]",
                           f"email rules of tenant {principal.tenant!r} may write to the domains of its allow-list, "
                           f"{principal.allowed_hosts()}; not {address!r}")  # fmt: skip
        if rule.via is Via.WEBHOOK:
            host = urlsplit(rule.url or "").hostname or ""
            if not host_allowed(host, principal.http_allow):
                return Refusal(f"{field}[{i}].url", f"webhooks of tenant {principal.tenant!r} may call "
                               f"{principal.allowed_hosts()}; not {host!r}")  # fmt: skip
        if rule.via is Via.COMMAND and not principal.allow_shell:
            return Refusal(f"{field}[{i}].command", f"command rules run code as the daemon's user: only admins, or tenants "
                           f"granted allowShell, may save them (tenant {principal.tenant!r} is not)")  # fmt: skip
    return None
