"""Notification rules: the validator (core.notify) and the OpenAPI document's NotifyRule
schema accept and refuse the same rules; rule ids, events and webhook signatures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cronwheel.core import notify as nt
from cronwheel.core import signing

DOC = json.loads((Path(__file__).resolve().parents[2] / "cronwheel" / "api" / "openapi.json").read_text())
SECRET = "0123456789abcdef"
HOOK = {"on": "failure", "via": "webhook", "url": "https://h.example/x", "secret": SECRET}


def schema_accepts(rule: Any) -> bool:
    schema = {"$ref": "#/components/schemas/NotifyRule", "components": DOC["components"]}
    try:
        jsonschema.validate(rule, schema, cls=jsonschema.Draft202012Validator)
    except jsonschema.ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        (HOOK, None),
        ({**HOOK, "maxPerHour": 5, "maxAttempts": 2}, None),
        ({"on": "dead", "via": "email", "to": ["ops@example.com", "b@c.d"]}, None),
        ({"on": "dead", "via": "email", "to": "ops@example.com"}, None),
        ({"on": "late", "afterSec": 60, "via": "command", "command": "logger late"}, None),
        ({"on": "missed", "via": "command", "command": "true"}, None),
        ({"on": "sometimes", "via": "webhook"}, "notify[0].on"),
        ({"on": "dead", "via": "pager"}, "notify[0].via"),
        ({"on": "dead", "via": "webhook", "url": "https://h.example/"}, "notify[0].secret"),
        ({**HOOK, "secret": "short"}, "notify[0].secret"),
        ({**HOOK, "secret": " " * 20}, "notify[0].secret"),
        ({**HOOK, "url": "ftp://h.example/"}, "notify[0].url"),
        ({**HOOK, "url": "HTTPS://H.example/x"}, None),
        # found by the API fuzzer: a control character and a NEL inside the host
        ({**HOOK, "url": "https://\u0105\u0011v\u0016\u0085"}, "notify[0].url"),
        ({**HOOK, "url": "https:///cw"}, "notify[0].url"),
        ({**HOOK, "url": "https://h.example/\x85"}, "notify[0].url"),
        ({**HOOK, "to": ["a@b.c"]}, "notify[0].to"),
        ({"on": "late", "via": "command", "command": "x"}, "notify[0].afterSec"),
        ({**HOOK, "afterSec": 5}, "notify[0].afterSec"),
        ({"on": "dead", "via": "email", "to": []}, "notify[0].to"),
        ({"on": "dead", "via": "email", "to": ["not an address"]}, "notify[0].to[0]"),
        ({"on": "dead", "via": "command", "command": "   "}, "notify[0].command"),
        ({**HOOK, "maxPerHour": 0}, "notify[0].maxPerHour"),
        ({**HOOK, "maxAttempts": True}, "notify[0].maxAttempts"),
        ("failure", "notify[0]"),
    ],
)
def test_the_validator_and_the_schema_agree(rule: Any, field: str | None) -> None:
    try:
        nt.rule_from_json(rule)
    except nt.RuleError as exc:
        assert exc.field == field, exc.detail
        assert not schema_accepts(rule), "the schema accepts a rule the daemon refuses"
    else:
        assert field is None
        assert schema_accepts(rule), "the schema refuses a rule the daemon accepts"


def test_a_webhook_url_is_checked_as_an_http_target_url_is() -> None:
    # the port range is the document's format `http-url`, which a pattern cannot state
    with pytest.raises(nt.RuleError, match="not a valid URL"):
        nt.rule_from_json({**HOOK, "url": "https://h.example:99999/"})


def test_a_stored_rule_loads_even_where_the_url_check_has_grown_stricter() -> None:
    # an older release stored this rule; reading it back must not fail the completion that fires it
    old = {**HOOK, "url": "https://h.example:99999/"}
    with pytest.raises(nt.RuleError):
        nt.rule_from_json(old)
    assert nt.stored_rules([old])[0].to_json()["url"] == old["url"]


def test_answers_hide_the_password_of_a_webhook_url_and_keep_it_stored() -> None:
    rule = nt.rule_from_json({**HOOK, "url": "https://ops:pa55word@h.example:8443/x?y=1"})
    shown = rule.to_json(redact=True)
    assert shown["url"] == "https://ops:********@h.example:8443/x?y=1" and shown["secret"] == "********"
    assert rule.to_json()["url"] == "https://ops:pa55word@h.example:8443/x?y=1"  # what is stored and called
    assert shown["ruleId"] == rule.rule_id
    for url in ("https://h.example/x", "https://ops@h.example/x"):  # nothing to hide
        assert nt.rule_from_json({**HOOK, "url": url}).to_json(redact=True)["url"] == url
    assert schema_accepts({k: v for k, v in shown.items() if k != "ruleId"} | {"secret": SECRET})


def test_rule_ids_follow_what_a_rule_does() -> None:
    a = nt.rule_from_json(HOOK)
    assert nt.rule_from_json({**HOOK, "maxPerHour": 3, "secret": "another-secret-16"}).rule_id == a.rule_id
    assert nt.rule_from_json({**HOOK, "on": "dead"}).rule_id != a.rule_id
    assert nt.rule_from_json(a.to_json()) == a
    shown = a.to_json(redact=True)
    assert shown["secret"] == "********" and shown["ruleId"] == a.rule_id
    with pytest.raises(nt.RuleError, match="repeats"):
        nt.rules_from_json([HOOK, {**HOOK, "maxPerHour": 2}])
    assert nt.email_rule("ops@example.com") == nt.rule_from_json({"on": "failure", "via": "email", "to": ["ops@example.com"]})


@pytest.mark.parametrize(
    ("status", "previous_failed", "events"),
    [
        ("RETRY_WAIT", False, {"failure"}),
        ("DEAD", False, {"failure", "dead"}),
        ("SUCCEEDED", False, {"success"}),
        ("SUCCEEDED", True, {"success", "recovered"}),
        ("CANCELLED", True, set()),
    ],
)
def test_events_of_an_outcome(status: str, previous_failed: bool, events: set[str]) -> None:
    assert {e.value for e in nt.events_for(status, previous_failed)} == events


def test_late_matches_past_its_threshold_only() -> None:
    late = nt.rule_from_json({"on": "late", "afterSec": 30, "via": "command", "command": "x"})
    assert nt.matching((late,), {nt.NotifyOn.LATE}, 30_000) == []
    assert nt.matching((late,), {nt.NotifyOn.LATE}, 30_001) == [late]
    assert nt.matching((late,), {nt.NotifyOn.LATE}, None) == []


def test_signatures_verify_and_refuse_tampering_and_replays() -> None:
    body = b'{"event":"dead"}'
    header = signing.sign(SECRET, 1_800_000_000, body)
    assert header.startswith("t=1800000000,v1=")
    assert signing.verify(SECRET, header, body, 1_800_000_100)
    assert not signing.verify(SECRET, header, body + b" ", 1_800_000_100)  # tampered body
    assert not signing.verify("another-secret!!", header, body, 1_800_000_100)  # wrong key
    assert not signing.verify(SECRET, header, body, 1_800_000_000 + signing.SIGNATURE_TOLERANCE_SEC + 1)  # a replay
    assert not signing.verify(SECRET, "garbage", body, 1_800_000_000)


def test_a_window_reads_back_what_it_writes() -> None:
    # a window of seconds with a fraction is kept in ms, shown as "<n>ms", and a patch sends
    # that text back: it must parse to the same window (found by the API fuzz's stateful phase)
    from cronwheel.core import notify as nt

    for seconds in (6647157.753125871, 1.5, 31_622_400, 90_000):
        ms = nt.parse_window(seconds)
        assert nt.parse_window(nt.format_window(ms)) == ms


def test_rule_integers_may_be_written_as_json_floats() -> None:
    from cronwheel.core import notify as nt

    rule = nt.rule_from_json({"on": "late", "afterSec": 300.0, "via": "command", "command": "true"})
    assert rule.after_sec == 300
    with pytest.raises(nt.RuleError):
        nt.rule_from_json({"on": "late", "afterSec": 300.5, "via": "command", "command": "true"})
    with pytest.raises(nt.RuleError):
        nt.parse_window(1e308)


@pytest.mark.parametrize(("sneaky", "why"), [
    ("=?utf-8?q?victim=40elsewhere.test=2C?=@a.example", "encoded word"),
    ("victim%elsewhere.test@a.example", "source route"),
    ("elsewhere.test!victim@a.example", "source route"),
])  # fmt: skip
def test_a_stored_recipient_routed_past_its_domain_reads_back_and_is_never_mailed(
    tmp_path: Path, sneaky: str, why: str
) -> None:
    """An email address whose local part holds '=?' (mail software decodes it into other
    addresses), '%' or '!' (source routes a relay forwards on) is refused when a rule is saved.
    A rule saved before that must still read back from the store, or every read of its job
    would fail; its delivery is refused instead, and sendmail is never started."""
    import asyncio

    from cronwheel.engine import channels

    rule = {"on": "failure", "via": "email", "to": ["ops@a.example", sneaky]}
    with pytest.raises(nt.RuleError, match=why):
        nt.rule_from_json(rule)
    [stored] = nt.stored_rules([rule])
    assert stored.to == ("ops@a.example", sneaky)
    started = tmp_path / "started"
    sendmail = tmp_path / "sendmail"
    sendmail.write_text(f"#!/bin/sh\ntouch {started}\ncat > /dev/null\n")
    sendmail.chmod(0o755)
    n = nt.Notification("n1", "j:1", "r1", "j", "t", "failure", stored, {"jobId": "j"}, nt.NotificationStatus.PENDING)
    with pytest.raises(channels.DeliveryError, match=why):
        asyncio.run(channels.send_email(channels.MailConfig(sender="cw@a.example", sendmail=str(sendmail)), n, 5))
    assert not started.exists()
