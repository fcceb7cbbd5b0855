"""``api.context.json_response``: one encoder for every JSON answer, and what it does with
text that cannot be UTF-8."""

from __future__ import annotations

import json

from cronwheel.api.answers import Tenant, TenantList
from cronwheel.api.context import json_response


def test_an_answer_is_utf8_json_of_its_value() -> None:
    value = {"name": "café ☕", "n": 12345678901234567, "none": None, "pair": (1, 2.5), "nested": {"a": [True]}}
    r = json_response(value, status=201)
    assert r.status == 201 and r.content_type == "application/json" and r.charset == "utf-8"
    assert r.body is not None and "café ☕".encode() in bytes(r.body)  # not \u-escaped
    assert json.loads(bytes(r.body)) == {**value, "pair": [1, 2.5]}


def test_a_struct_leaves_out_its_unset_members_and_uses_its_json_names() -> None:
    t = Tenant(name="a", weight=1, max_running=None, max_jobs=None, submit_rate=None, submit_burst=None,
               allow_shell=False, allow_high_priority=False, http_allow=[])
    body = json.loads(bytes(json_response(TenantList([t])).body))  # type: ignore[arg-type]
    assert body == {"tenants": [{"name": "a", "weight": 1, "maxRunning": None, "maxJobs": None, "submitRate": None,
                                 "submitBurst": None, "allowShell": False, "allowHighPriority": False,
                                 "httpAllow": [], "status": "active"}]}


def test_a_lone_surrogate_stored_before_the_door_refused_it_is_escaped_not_a_500() -> None:
    r = json_response({"output": "half \udc00 a character"})
    assert r.body is not None and b"\\udc00" in bytes(r.body)
    assert json.loads(bytes(r.body)) == {"output": "half \udc00 a character"}


def test_structs_inside_a_plain_answer_fall_back_too() -> None:
    """A listing is a dict of structs (``GET /v1/jobs``): the fallback encodes them as JSON
    objects, not as their ``repr``."""
    t = Tenant(name="b\udc00", weight=2, max_running=None, max_jobs=None, submit_rate=None, submit_burst=None,
               allow_shell=False, allow_high_priority=False, http_allow=[])
    r = json_response({"tenants": [t], "next": None})
    assert r.body is not None and b"\\udc00" in bytes(r.body)
    assert json.loads(bytes(r.body))["tenants"][0] == {"name": "b\udc00", "weight": 2, "maxRunning": None, "maxJobs": None,
                                                       "submitRate": None, "submitBurst": None, "allowShell": False,
                                                       "allowHighPriority": False, "httpAllow": [], "status": "active"}
