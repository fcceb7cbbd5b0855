"""The doors of a tenant being deleted, on a real daemon: an admin naming it, or one of its
jobs, dead letters or settings, adds nothing to it (409 ``tenant_deleting``, the reason named),
while the same calls for a neighbour pass; its deletion then finishes as if nobody had tried."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.daemon import ApiResponse, Daemon
from tests.support.tenants import tenant_token
from tests.support.wait import wait_for


def dead_letter(d: Daemon, token: str) -> tuple[str, str]:
    """A one-off of the tenant that failed for good: (its job id, its dead execution id)."""
    body = {"schedule": "+0s", "command": "exit 3", "retryPolicy": {"maxAttempts": 1}}
    job = d.post("/v1/jobs", body, token=token).json()["jobId"]
    dead = wait_for(lambda: next((e for e in d.executions(job) if e["status"] == "DEAD"), None), timeout=30,
                    what=f"{job} in the dead-letter queue")  # fmt: skip
    return job, dead["executionId"]


def doors(d: Daemon, tenant: str, job: str, dead: str) -> dict[str, Callable[[], ApiResponse]]:
    """An admin's calls that would add to ``tenant`` (its settled job ``job``, its dead letter ``dead``)."""
    return {
        "replay": lambda: d.post(f"/v1/dlq/{dead}/replay"),
        "trigger": lambda: d.post(f"/v1/jobs/{job}/trigger"),
        "chain": lambda: d.request("PUT", f"/v1/jobs/{job}/chain", {"onSuccess": [], "onFailure": []}),
        "calendar": lambda: d.request("PUT", f"/v1/calendars/holidays?tenant={tenant}", {"dates": ["2026-12-25"]}),
        "token": lambda: d.post("/v1/tokens", {"tenant": tenant}),
        "settings": lambda: d.request("PATCH", f"/v1/tenants/{tenant}", {"weight": 2}),
        "notify": lambda: d.request("PUT", f"/v1/tenants/{tenant}/notify", {"notify": []}),
    }


def test_an_admin_adds_nothing_to_a_tenant_being_deleted(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    acme = tenant_token(d, "acme", allowShell=True)
    zeta = tenant_token(d, "zeta", allowShell=True)
    acme_job, acme_dead = dead_letter(d, acme)
    zeta_job, zeta_dead = dead_letter(d, zeta)
    assert d.request("DELETE", "/v1/tenants/acme").status == 202  # nothing live: no force needed
    for what, call in doors(d, "acme", acme_job, acme_dead).items():
        r = call()
        assert r.status == 409, (what, r)
        problem: dict[str, Any] = r.json()
        assert problem["code"] == "tenant_deleting" and "acme" in problem["detail"], (what, problem)
    assert [e["status"] for e in d.executions(acme_job)] == ["DEAD"]  # no run of it came back
    for what, call in doors(d, "zeta", zeta_job, zeta_dead).items():
        assert call().status in (200, 201, 202), what
    gone = d.wait_event("tenant.deleted", tenant="acme", timeout=60)
    assert gone["rows"] >= 3, gone
    assert d.get("/v1/calendars/holidays?tenant=acme").status == 404

