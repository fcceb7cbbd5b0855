"""The ready queue's high tier is an admin's grant (``allowHighPriority``), on a real daemon.

Its tiers are strict across tenants, so the design's invariant, "a tenant that dumps 100,000
jobs delays only itself", holds only if no tenant can put its own flood in the high tier: a
hostile probe saw a neighbour's six one-second runs take 6.3 s instead of 3.4 s when the flood
asked for high. Without the grant, asking is refused (403 naming the grant and the tenant);
with it withdrawn, the tenant's high jobs are queued at default, the queued ones at once.

The fairness tests run one worker slot (no slot kept for neighbours) held by a gate job while
the runs queue up, then let them through one at a time: each run appends its tenant to a log,
so the log is the order the ready queue served them in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon
from tests.support.tenants import tenant_token
from tests.support.wait import wait_for

PAST = "2000-01-01T00:00:00Z"  # a one-off due at once


def problem(r: Any, status: int) -> dict[str, Any]:
    assert r.status == status, r
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    return dict(r.json())


def queued(d: Daemon, tenant: str) -> int:
    rows = [t for t in d.get("/v1/tenants").json()["tenants"] if t["name"] == tenant]
    return int(rows[0].get("queued", 0)) if rows else 0


def hold_the_slot(d: Daemon, gate: Path) -> None:
    """The admin's job that holds the node's one slot until ``gate`` exists."""
    r = d.post("/v1/jobs", {"runAt": PAST, "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"})
    assert r.status == 201, r
    wait_for(lambda: d.event("execution.started") is not None, 20, what="the gate job to hold the slot")


def served(d: Daemon, log: Path, count: int) -> list[str]:
    wait_for(lambda: log.exists() and len(log.read_text().split()) == count, 60, what=f"{count} runs")
    return log.read_text().split()


@pytest.mark.runs_no_jobs
def test_high_priority_needs_the_grant_unless_admin(daemon: Daemon) -> None:
    plain = tenant_token(daemon, "plain")
    body = problem(daemon.post("/v1/jobs", {"runAt": PAST, "queue": "q", "priority": "high"}, token=plain), 403)
    assert body["code"] == "forbidden_priority" and body["field"] == "priority", body
    assert "allowHighPriority" in body["detail"] and "'plain'" in body["detail"], body
    batch = {"jobs": [{"runAt": PAST, "queue": "q"}, {"schedule": "0 0 1 1 *", "queue": "q", "priority": "high"}]}
    body = problem(daemon.post("/v1/jobs/batch", batch, token=plain), 403)
    assert body["field"] == "jobs[1].priority" and body["detail"].startswith("jobs[1]: "), body
    assert daemon.get("/v1/jobs", token=plain).json()["jobs"] == []  # the batch is all or nothing

    # default and batch stay open; changing a job to high is refused too, and nothing changed
    job = daemon.post("/v1/jobs", {"schedule": "0 0 1 1 *", "queue": "q", "priority": "batch"}, token=plain).json()["jobId"]
    body = problem(daemon.request("PATCH", f"/v1/jobs/{job}", {"priority": "high"}, token=plain), 403)
    assert "allowHighPriority" in body["detail"], body
    assert daemon.get(f"/v1/jobs/{job}", token=plain).json()["priority"] == "batch"

    # the admin may, in the default tenant, which holds the grant from the start
    assert daemon.get("/v1/tenants/default").json()["allowHighPriority"] is True
    mine = daemon.post("/v1/jobs", {"schedule": "0 0 1 1 *", "queue": "q", "priority": "high"})
    assert mine.status == 201, mine
    assert "effectivePriority" not in daemon.get(f"/v1/jobs/{mine.json()['jobId']}").json()

    # granted: the tenant may; a new tenant has no grant
    assert daemon.get("/v1/tenants/plain").json()["allowHighPriority"] is False
    granted = daemon.request("PATCH", "/v1/tenants/plain", {"allowHighPriority": True})
    assert granted.status == 200 and granted.json()["allowHighPriority"] is True, granted
    assert daemon.request("PATCH", f"/v1/jobs/{job}", {"priority": "high"}, token=plain).status == 200
    assert daemon.post("/v1/jobs", {"runAt": PAST, "queue": "q", "priority": "high"}, token=plain).status == 201

    # withdrawn: the high jobs stay high, are shown queued at default, and a patch of another
    # member still goes through; a new high job is refused again
    assert daemon.request("PATCH", "/v1/tenants/plain", {"allowHighPriority": False}).status == 200
    read = daemon.get(f"/v1/jobs/{job}", token=plain).json()
    assert (read["priority"], read["effectivePriority"]) == ("high", "default"), read
    assert daemon.request("PATCH", f"/v1/jobs/{job}", {"jitterSec": 5}, token=plain).status == 200
    problem(daemon.post("/v1/jobs", {"runAt": PAST, "queue": "q", "priority": "high"}, token=plain), 403)
    problem(daemon.request("POST", "/v1/tenants", {"name": "x", "allowHighPriority": "yes"}), 422)


def test_a_tenant_asking_for_high_cannot_get_ahead_of_its_neighbour(make_daemon: Any, tmp_path: Path) -> None:
    """The invariant: evil floods asking for the high tier (and takes default when refused);
    acme's runs, queued after the flood, still get every other turn."""
    d: Daemon = make_daemon(workers=1, slots=1)
    evil = tenant_token(d, "evil", allowShell=True)
    acme = tenant_token(d, "acme", allowShell=True)
    gate, log = tmp_path / "gate", tmp_path / "served"
    hold_the_slot(d, gate)
    refused = 0
    for _ in range(6):
        job = {"runAt": PAST, "command": f"echo evil >> {log}", "priority": "high"}
        r = d.post("/v1/jobs", job, token=evil)
        if r.status == 403:  # what a tenant without the grant is left with
            refused += 1
            r = d.post("/v1/jobs", {**job, "priority": "default"}, token=evil)
        assert r.status == 201, r
    wait_for(lambda: queued(d, "evil") == 6, 20, what="evil's flood to queue")
    for _ in range(3):
        assert d.post("/v1/jobs", {"runAt": PAST, "command": f"echo acme >> {log}"}, token=acme).status == 201
    wait_for(lambda: queued(d, "acme") == 3, 20, what="acme's runs to queue")
    gate.touch()
    order = served(d, log, 9)
    assert order[:6] == ["evil", "acme"] * 3, order  # on the high tier: evil six times, then acme
    assert refused == 6


def test_a_withdrawn_grant_queues_the_tenants_high_runs_at_default_at_once(make_daemon: Any, tmp_path: Path) -> None:
    """evil's high runs, queued while it held the grant, move to the default tier when the admin
    withdraws it: acme's runs, queued after, take every other turn with them."""
    d: Daemon = make_daemon(workers=1, slots=1)
    evil = tenant_token(d, "evil", allowShell=True, allowHighPriority=True)
    acme = tenant_token(d, "acme", allowShell=True)
    gate, log = tmp_path / "gate", tmp_path / "served"
    hold_the_slot(d, gate)
    jobs = [d.post("/v1/jobs", {"runAt": PAST, "command": f"echo evil >> {log}", "priority": "high"}, token=evil)
            for _ in range(6)]
    assert all(r.status == 201 for r in jobs), jobs
    wait_for(lambda: queued(d, "evil") == 6, 20, what="evil's flood to queue")
    assert d.get("/v1/status").json()["queue"]["high"] == 6
    assert d.request("PATCH", "/v1/tenants/evil", {"allowHighPriority": False}).status == 200
    assert d.get("/v1/status").json()["queue"]["high"] == 0  # moved at once, not at their turn
    first = jobs[0].json()["jobId"]
    runs = d.get(f"/v1/jobs/{first}/executions", token=evil).json()["executions"]
    assert [(e["status"], e["priority"], e.get("effectivePriority")) for e in runs] == [("PENDING", "high", "default")]
    run_id = runs[0]["executionId"]
    assert d.get(f"/v1/executions/{run_id}", token=evil).json()["effectivePriority"] == "default"
    chained = d.request("PUT", f"/v1/jobs/{first}/chain", {"onSuccess": []}, token=evil)
    assert chained.status == 200 and chained.json()["effectivePriority"] == "default", chained
    for _ in range(3):
        assert d.post("/v1/jobs", {"runAt": PAST, "command": f"echo acme >> {log}"}, token=acme).status == 201
    wait_for(lambda: queued(d, "acme") == 3, 20, what="acme's runs to queue")
    gate.touch()
    order = served(d, log, 9)
    assert order[:6] == ["evil", "acme"] * 3, order
    assert d.get(f"/v1/jobs/{first}", token=evil).json()["effectivePriority"] == "default"
    ran = d.get(f"/v1/executions/{run_id}", token=evil).json()  # the tier it waited at is past
    assert (ran["status"], ran["priority"], "effectivePriority" in ran) == ("SUCCEEDED", "high", False), ran


@pytest.mark.runs_no_jobs
def test_the_cli_grants_shows_and_refuses_the_high_tier(daemon: Daemon, tmp_path: Path) -> None:
    d = daemon
    added = d.cli("tenant", "add", "acme", "--allow-shell")
    assert added.returncode == 0 and "high priority:  not allowed" in added.stdout, added.stdout
    token = d.cli("token", "create", "--tenant", "acme").stdout.strip()
    as_acme = ("--token", token, "--url", d.url)
    refused = d.cli(*as_acme, "add", "--priority", "high", "0 0 1 1 *", "--", "true")
    assert refused.returncode != 0 and "allowHighPriority" in refused.stderr and "Traceback" not in refused.stderr, refused

    # apply --dry-run says which jobs would be refused, and why, before anything is sent
    jobs = tmp_path / "jobs.toml"
    jobs.write_text('[urgent]\nschedule = "0 0 1 1 *"\nqueue = "q"\npriority = "high"\n'
                    '[calm]\nschedule = "0 0 1 1 *"\nqueue = "q"\n')
    dry = d.cli(*as_acme, "apply", str(jobs), "--dry-run")
    assert dry.returncode == 1 and "urgent: would be refused: priority high needs allowHighPriority" in dry.stderr, dry
    assert "calm" not in dry.stderr.split("plan:")[-1], dry.stderr
    assert d.cli("apply", str(jobs), "--dry-run").returncode == 0  # the admin may

    granted = d.cli("tenant", "set", "acme", "--allow-high-priority", "--json")
    assert granted.returncode == 0 and '"allowHighPriority": true' in granted.stdout, granted
    assert d.cli(*as_acme, "apply", str(jobs), "--dry-run").returncode == 0
    assert "high priority:  allowed" in d.cli("tenant", "show", "acme").stdout
    listing = d.cli("tenant", "ls").stdout.splitlines()
    assert "HIGH" in listing[0].split() and [row.split()[0] for row in listing[1:]] == ["acme", "default"], listing
