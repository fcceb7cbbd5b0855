"""A hostile tenant ('evil') beside a neighbour ('acme') on one real daemon: what evil sends
costs evil, gets a clear 4xx naming the problem, and never holds up acme's work or the node."""

from __future__ import annotations

import json

from tests.support.daemon import Daemon
from tests.support.tenants import tenant_token

JOB = {"schedule": "0 0 1 1 *", "http": {"url": "https://example.org/hook"}}


def test_a_body_of_many_unknown_fields_names_a_few_of_them_and_what_is_allowed(daemon: Daemon) -> None:
    """A misspelt field gets the one it is close to ("did you mean"); a 1 MiB body of 78,000
    unknown members had each of them compared with every known one, on the event loop: 9 s
    in which the node answered nobody and started nothing (node.stalled), and the detail
    listing them all was cut before it said which fields are allowed."""
    evil = tenant_token(daemon, "evil")
    body: dict[str, object] = dict(JOB)
    body.update({f"s{i}": 1 for i in range(78_000)})
    assert len(json.dumps(body)) < 1 << 20
    r = daemon.post("/v1/jobs", body, token=evil)
    assert r.status == 422, r
    problem = r.json()
    assert problem["code"] == "unknown_field" and problem["field"] == "s0", problem
    detail = problem["detail"]
    assert detail.startswith("unknown fields: s0, s1, s10, s100, ") and ", and 77,990 more (allowed: " in detail, detail
    assert detail.endswith(")") and "(allowed: " in detail and "timezone" in detail, detail
    assert daemon.get("/v1/jobs", token=evil).json()["jobs"] == []
