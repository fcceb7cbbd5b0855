"""A big tenant's forced deletion on a real daemon: ``DELETE /v1/tenants/{name}?force=true``
answers once the tenant is marked and its tokens revoked, its live jobs still to cancel in the
answer and at its ``Location``, which counts them down while the node cancels them in the
background; and ``cronwheel tenant rm --force`` waits for that (or not, ``--no-wait``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.daemon import Daemon
from tests.support.tenants import tenant_token
from tests.support.wait import wait_for

YEARLY = {"schedule": "0 0 1 1 *", "queue": "q"}  #: never due here, run by no worker


def add_jobs(d: Daemon, token: str, n: int) -> None:
    for start in range(0, n, 1000):
        r = d.post("/v1/jobs/batch", {"jobs": [YEARLY] * min(1000, n - start)}, token=token)
        assert r.status == 200 and all(item["status"] == 201 for item in r.json()["results"]), r


@pytest.mark.runs_no_jobs
def test_a_forced_deletion_answers_before_its_jobs_are_cancelled_and_its_location_counts_them_down(
    make_daemon: Callable[..., Daemon],
) -> None:
    d = make_daemon(workers=0)
    add_jobs(d, tenant_token(d, "acme"), 1500)
    r = d.request("DELETE", "/v1/tenants/acme?force=true")
    assert r.status == 202 and r.headers["Location"] == "/v1/tenants/acme", r
    answer = r.json()
    assert answer["status"] == "deleting" and 0 < answer["jobs"] <= 1500, answer
    seen = [answer["jobs"]]

    def left() -> bool:
        shown = d.get("/v1/tenants/acme").json()
        assert shown["status"] == "deleting", shown
        seen.append(shown["jobs"])
        return shown["jobs"] == 0

    wait_for(left, timeout=60, what="acme's jobs to be cancelled")
    assert seen == sorted(seen, reverse=True), seen  # only ever down
    done = d.wait_event("tenant.jobs_cancelled", tenant="acme")
    assert (done["jobs"], done["pages"]) == (1500, 15), done  # a hundred per transaction
    assert len(d.events("tenant.jobs_cancelled")) == 1
    assert d.wait_event("tenant.deleting", tenant="acme")["remote"] == "127.0.0.1"
    # asking again answers the same, with nothing left to cancel
    again = d.request("DELETE", "/v1/tenants/acme?force=true")
    assert again.status == 202 and again.json()["jobs"] == 0, again
    d.wait_event("tenant.deleted", tenant="acme", timeout=60)
    assert d.get("/v1/tenants/acme").status == 404


@pytest.mark.runs_no_jobs
def test_tenant_rm_force_waits_for_the_cancellation_unless_told_not_to(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon(workers=0)
    add_jobs(d, tenant_token(d, "acme"), 700)
    add_jobs(d, tenant_token(d, "beta"), 700)
    waited = d.cli("tenant", "rm", "acme", "--force", "--yes")
    assert waited.returncode == 0 and "being deleted" in waited.stdout and "being cancelled" not in waited.stdout, waited
    shown = d.cli("tenant", "show", "acme")
    assert shown.returncode == 0 and "0 live jobs left to cancel" in shown.stdout, shown
    assert d.event("tenant.jobs_cancelled", tenant="acme") is not None  # over before the command returned
    at_once = d.cli("tenant", "rm", "beta", "--force", "--yes", "--no-wait", "--json")
    assert at_once.returncode == 0, at_once
    d.wait_event("tenant.jobs_cancelled", tenant="beta")
    listed = d.cli("tenant", "ls")
    assert "acme (deleting)" in listed.stdout and "beta (deleting)" in listed.stdout, listed

