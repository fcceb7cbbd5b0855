"""Deleting a tenant on a real daemon: ``DELETE /v1/tenants/{name}`` and ``cronwheel tenant rm``
(docs/security.md). Refused while it has work unless forced; forced, its running command is
killed, its tokens stop at once (a remote worker's long poll too), its rows go in the
background and its name is free only then; a neighbour running throughout loses nothing; and
what the node held in memory for deleted tenants returns to what it was."""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support.daemon import ApiResponse, Daemon
from tests.support.tenants import tenant_token
from tests.support.wait import wait_for

SHELL = {"allowShell": True}


def problem(r: ApiResponse, status: int) -> dict[str, Any]:
    assert r.status == status, r
    assert r.headers["Content-Type"].startswith("application/problem+json"), r
    return dict(r.json())


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def running_run(d: Daemon, job_id: str) -> dict[str, Any]:
    return wait_for(lambda: next((e for e in d.executions(job_id) if e["status"] == "RUNNING"), None),
                    timeout=30, what=f"a run of {job_id}")  # fmt: skip


def tenant_names(d: Daemon) -> dict[str, str]:
    return {t["name"]: t["status"] for t in d.get("/v1/tenants").json()["tenants"]}


def test_a_forced_deletion_kills_its_run_stops_its_tokens_and_frees_its_name_only_once_its_rows_are_gone(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    d = make_daemon()
    acme = tenant_token(d, "acme", **SHELL)
    acme_worker = tenant_token(d, "acme", role="worker")
    zeta = tenant_token(d, "zeta", **SHELL)
    # the same job name and idempotency key in both tenants; a calendar each
    for token in (acme, zeta):
        assert d.request("PUT", "/v1/calendars/holidays", {"dates": ["2026-12-25"]}, token=token).status in (200, 201)
    pidfile = {t: tmp_path / f"{t}.pid" for t in ("acme", "zeta")}
    jobs = {}
    for name, token in (("acme", acme), ("zeta", zeta)):
        body = {"schedule": "+0s", "name": "long", "command": f"echo $$ > {pidfile[name]}; exec sleep 300"}
        r = d.request("POST", "/v1/jobs", body, headers={"Idempotency-Key": "k-1"}, token=token)
        assert r.status == 201, r
        jobs[name] = r.json()["jobId"]
    ticker = d.post("/v1/jobs", {"schedule": "* * * * * *", "command": "true"}, token=zeta).json()["jobId"]
    acme_run, zeta_run = running_run(d, jobs["acme"]), running_run(d, jobs["zeta"])
    acme_pid = int(wait_for(lambda: pidfile["acme"].read_text().strip() if pidfile["acme"].exists() else None))
    zeta_pid = int(wait_for(lambda: pidfile["zeta"].read_text().strip() if pidfile["zeta"].exists() else None))

    # not while it has work, and the answer says how much
    refused = problem(d.request("DELETE", "/v1/tenants/acme"), 409)
    assert refused["code"] == "tenant_not_empty" and (refused["liveJobs"], refused["inFlight"]) == (1, 1), refused
    assert "force" in refused["detail"], refused
    assert d.get("/v1/jobs", token=acme).status == 200  # nothing changed
    # a remote worker of the tenant, polling when the deletion comes
    polled: list[ApiResponse] = []
    poll = threading.Thread(target=lambda: polled.append(d.post(
        "/v1/workers/claim", {"workerId": "rw", "queues": ["q"], "max": 1, "waitSec": 20}, token=acme_worker)))
    poll.start()

    r = d.request("DELETE", "/v1/tenants/acme?force=true")
    assert r.status == 202, r
    assert (r.json()["name"], r.json()["status"]) == ("acme", "deleting") and r.json()["deletingSince"], r
    # its tokens stop at once, on this node; its long poll ends within a second or two
    assert problem(d.get("/v1/jobs", token=acme), 401)
    assert problem(d.post("/v1/workers/claim", {"workerId": "rw", "queues": ["q"]}, token=acme_worker), 401)
    poll.join(timeout=10)
    assert not poll.is_alive() and polled and not polled[0].json().get("executions"), polled
    # its running command is killed through the cancel's path, the neighbour's is not
    wait_for(lambda: not pid_alive(acme_pid), timeout=30, what="acme's command to be killed")
    assert d.wait_event("execution.aborted", executionId=acme_run["executionId"])
    # deleting again answers the same; the name is not free while its row stays (10 s at least)
    again = d.request("DELETE", "/v1/tenants/acme?force=true")
    assert again.status == 202 and again.json()["status"] == "deleting", again
    assert problem(d.post("/v1/tenants", {"name": "acme"}), 409)["code"] == "tenant_deleting"
    assert tenant_names(d)["acme"] == "deleting"
    followed = d.get(r.headers["Location"])  # where the deletion said to follow it: its one job cancelled
    assert followed.status == 200 and (followed.json()["status"], followed.json()["jobs"]) == ("deleting", 0), followed
    for method, path, body in (("PATCH", "", {"weight": 2}), ("GET", "/notify", None), ("PUT", "/notify", {"notify": []})):
        assert problem(d.request(method, f"/v1/tenants/acme{path}", body), 409)["code"] == "tenant_deleting"
    listed = d.cli("tenant", "ls")
    assert "acme (deleting)" in listed.stdout, listed
    # its rows go in the background; the tenant row last
    gone = d.wait_event("tenant.deleted", tenant="acme", timeout=30)
    assert gone["rows"] >= 5, gone
    assert "acme" not in tenant_names(d)
    assert problem(d.request("DELETE", "/v1/tenants/acme"), 404)["code"] == "not_found"
    # a new tenant of that name has nothing of the old one
    fresh = tenant_token(d, "acme", **SHELL)
    assert d.get("/v1/jobs", token=fresh).json()["jobs"] == []
    assert d.get("/v1/calendars/holidays", token=fresh).status == 404
    again = d.request("POST", "/v1/jobs", {"schedule": "@yearly", "name": "long", "command": "true"},
                      headers={"Idempotency-Key": "k-1"}, token=fresh)  # fmt: skip
    assert again.status == 201 and again.json()["jobId"] != jobs["acme"], again  # not a replay of the old one
    # the neighbour ran throughout: its command alive, its run RUNNING, its ticker ticking, its rows whole
    assert pid_alive(zeta_pid)
    assert d.get(f"/v1/executions/{zeta_run['executionId']}", token=zeta).json()["status"] == "RUNNING"
    ticks = len(d.executions(ticker))
    wait_for(lambda: len(d.executions(ticker)) > ticks, timeout=10, what="the neighbour's ticker")
    assert d.get("/v1/calendars/holidays", token=zeta).status == 200
    assert d.get(f"/v1/jobs/{jobs['zeta']}", token=zeta).json()["name"] == "long"
    assert d.request("DELETE", f"/v1/jobs/{jobs['zeta']}", token=zeta).status == 200


@pytest.mark.runs_no_jobs
def test_refusals_name_their_reason(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    assert problem(d.request("DELETE", "/v1/tenants/default?force=true"), 409)["code"] == "default_tenant"
    for odd in ("nosuch", "ünï", "a%2Fb", "x" * 300, "..", "a b", "a\u202eb"):
        p = problem(d.request("DELETE", f"/v1/tenants/{urllib.parse.quote(odd, safe='%')}"), 404)
        assert p["code"] == "not_found" and len(p["detail"]) < 200, p
    assert problem(d.request("DELETE", "/v1/tenants/%00"), 400)["code"] == "invalid_path"  # the door's
    assert problem(d.request("DELETE", "/v1/tenants/x?force=maybe"), 400)["field"] == "force"
    acme = tenant_token(d, "acme")
    assert problem(d.request("DELETE", "/v1/tenants/acme", token=acme), 403)  # admin only
    r = d.request("DELETE", "/v1/tenants/acme")
    assert r.status == 202, r
    d.wait_event("tenant.deleted", tenant="acme")
    assert problem(d.request("DELETE", "/v1/tenants/acme"), 404)


@pytest.mark.runs_no_jobs
def test_tenant_rm_asks_refuses_and_forces_like_the_api(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    acme = tenant_token(d, "acme", **SHELL)
    assert d.post("/v1/jobs", {"schedule": "@yearly", "command": "true"}, token=acme).status == 201
    unasked = d.cli("tenant", "rm", "acme")  # no terminal, no --yes: nothing is deleted
    assert unasked.returncode == 2 and "--yes" in unasked.stderr, unasked
    busy = d.cli("tenant", "rm", "acme", "--yes")
    assert busy.returncode != 0 and "1 live" in busy.stderr and "--force" in busy.stderr, busy
    default = d.cli("tenant", "rm", "default", "--yes", "--force")
    assert default.returncode != 0 and "default tenant cannot be deleted" in default.stderr, default
    done = d.cli("tenant", "rm", "acme", "--yes", "--force")
    assert done.returncode == 0 and "being deleted" in done.stdout, done
    d.wait_event("tenant.deleted", tenant="acme")
    listed = d.cli("tenant", "ls", "--json")
    assert [t["name"] for t in json.loads(listed.stdout)] == ["default"], listed


@pytest.mark.runs_no_jobs
def test_deleting_500_tenants_returns_the_nodes_memory_per_tenant_to_what_it_was(make_daemon: Callable[..., Daemon]) -> None:
    """Every per-tenant structure the node keeps (settings, submission buckets, the readers'
    turns, the stores' cached calendars) is dropped with the tenant: an operator who makes and
    deletes a tenant per customer does not grow the daemon for ever."""
    d = make_daemon()
    d.status()  # the admin's own turn among the readers, before the count
    baseline = d.status()["tenantStateEntries"]
    names = [f"t{i:03d}" for i in range(500)]
    for name in names:
        token = tenant_token(d, name, submitRate=100, **SHELL)
        assert d.request("PUT", "/v1/calendars/c", {"dates": ["2026-12-25"]}, token=token).status in (200, 201)
        assert d.get("/v1/calendars/c", token=token).status == 200
        assert d.post("/v1/jobs", {"schedule": "@yearly", "command": "true"}, token=token).status == 201
    held = d.status()["tenantStateEntries"]
    assert held >= baseline + 3 * 500, (baseline, held)  # settings, bucket, calendars: at least
    for name in names:
        assert d.request("DELETE", f"/v1/tenants/{name}?force=true").status == 202
    wait_for(lambda: set(tenant_names(d)) == {"default"}, timeout=120, what="the 500 tenants to be gone")
    wait_for(lambda: d.status()["tenantStateEntries"] == baseline, timeout=10,
             what=f"the per-tenant state back to {baseline}")  # fmt: skip


def test_on_a_cluster_every_node_refuses_the_deleted_tenant_and_forgets_it(
    make_daemon: Callable[..., Daemon], postgres_dsn: str,
) -> None:
    """Deleted through one node: the other, which trusted the tenant's token a moment before,
    never creates a job for it (the store refuses, 409 ``tenant_deleting``), refuses the token
    once its tenants' refresh says the tenant is going, and drops the tenant once it is gone."""
    n1 = make_daemon("n1", args=("--store", postgres_dsn, "--node-id", "n1"))
    n2 = make_daemon("n2", args=("--store", postgres_dsn, "--node-id", "n2"))
    n2.status()  # the admin's own turn among the readers, before the count
    baseline = n2.status()["tenantStateEntries"]
    acme = tenant_token(n1, "acme", submitRate=50, **SHELL)
    job = {"schedule": "@yearly", "command": "true"}
    # n2 trusts the token from now on (once its refresh brought it acme's allowShell)
    wait_for(lambda: n2.post("/v1/jobs", job, token=acme).status == 201, timeout=10, what="n2 to take acme's job")
    assert n1.request("DELETE", "/v1/tenants/acme?force=true").status == 202
    late = n2.post("/v1/jobs", job, token=acme)
    assert late.status in (401, 409), late
    if late.status == 409:
        assert late.json()["code"] == "tenant_deleting", late
    wait_for(lambda: n2.get("/v1/jobs", token=acme).status == 401, timeout=20, what="n2 to refuse the token")
    wait_for(lambda: "acme" not in tenant_names(n2), timeout=30, what="acme gone, as n2 sees it")
    wait_for(lambda: n2.status()["tenantStateEntries"] == baseline, timeout=10, what="n2 to forget acme")
    assert n2.post("/v1/tenants", {"name": "acme"}).status == 201  # the name is free, through either node


def test_a_forced_deletion_cut_short_by_a_stop_is_finished_by_retention(make_daemon: Callable[..., Daemon]) -> None:
    """The daemon stopped after acme was marked deleting but before its jobs were cancelled
    (the state a crash in the middle of a forced deletion leaves): once back, retention cancels
    them and acme goes, its name free; before, its jobs went on and the tenant stayed for ever."""
    d = make_daemon(workers=0)
    acme = tenant_token(d, "acme")
    jobs = [d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "queue": "q"}, token=acme).json()["jobId"] for _ in range(3)]
    d.stop()
    db = apsw.Connection(str(d.data_dir / "cronwheel.db"))
    db.execute("UPDATE tenants SET deleting_since = 1 WHERE name = 'acme'")
    db.close()
    d.start()
    wait_for(lambda: d.event("tenant.deleted", tenant="acme"), 30, what="acme's deletion to be finished")
    assert "acme" not in tenant_names(d)
    assert all(d.get(f"/v1/jobs/{job}").status == 404 for job in jobs)
    assert d.post("/v1/tenants", {"name": "acme"}).status == 201
