"""A lease's holder, over HTTP on a real daemon: the worker a claim granted an execution to is
the only one that may heartbeat it, complete it or record its effects. Another worker of the
same tenant that learnt the execution id and its current epoch gets 409 ``wrong_worker`` and
changes nothing; the epoch and the other integers of these calls are JSON integers as sent."""

from __future__ import annotations

from typing import Any

from tests.support.daemon import Daemon
from tests.support.wait import wait_for


def _tenant_with_workers(daemon: Daemon) -> tuple[str, str, str]:
    """Tenant acme, a token that submits its jobs and two worker tokens of it."""
    assert daemon.post("/v1/tenants", {"name": "acme"}).status == 201
    submitter, *workers = (daemon.post("/v1/tokens", {"tenant": "acme", "role": role}).json()["token"]
                           for role in ("tenant", "worker", "worker"))  # fmt: skip
    return submitter, workers[0], workers[1]


def test_another_worker_of_the_tenant_may_not_touch_a_lease_it_does_not_hold(daemon: Daemon) -> None:
    submitter, token_a, token_b = _tenant_with_workers(daemon)
    r = daemon.post("/v1/jobs", {"schedule": "+0s", "queue": "reports"}, token=submitter)
    assert r.status == 201, r
    job = r.json()
    wait_for(lambda: daemon.executions(job["jobId"]), 20, what="the execution claimed by the scheduler")
    claim = {"workerId": "rw-a", "queues": ["reports"], "max": 1, "waitSec": 0}
    [g] = daemon.post("/v1/workers/claim", claim, token=token_a).json()["executions"]
    xid, epoch = g["executionId"], g["leaseEpoch"]
    url = f"/v1/executions/{xid}"

    def as_b(call: str, **extra: Any) -> dict[str, Any]:
        resp = daemon.post(f"{url}/{call}", {"workerId": "rw-b", "leaseEpoch": epoch, **extra}, token=token_b)
        assert resp.status == 409, (call, resp)
        body: dict[str, Any] = resp.json()
        assert (body["code"], body["reason"]) == ("wrong_worker", "wrong_worker"), body
        assert "rw-b" in body["detail"] and "another worker" in body["detail"]
        return body

    as_b("heartbeat")
    as_b("effects", key="charge-1")
    as_b("complete", outcome="succeeded")
    ex = daemon.get(url).json()
    assert (ex["status"], ex["workerId"], ex["leaseEpoch"]) == ("RUNNING", "rw-a", epoch)
    assert not [e for e in daemon.events("effect.recorded") if e.get("executionId") == xid]
    assert [e for e in daemon.events("effect.wrong_worker") if e.get("executionId") == xid]
    # a remote zombie's heartbeat is logged and counted as a local worker's is
    stale = daemon.post(f"{url}/heartbeat", {"workerId": "rw-a", "leaseEpoch": epoch + 3}, token=token_a)
    assert stale.status == 409 and stale.json()["reason"] == "lease_lost", stale
    beats = [(e["worker"], e["reason"]) for e in daemon.events("lease.fenced") if e.get("via") == "heartbeat"]
    assert beats == [("rw-b", "wrong_worker")], beats  # the stale one: the same execution's minute (debug)
    assert 'cronwheel_fenced_rejections_total{via="heartbeat"} 2.0' in daemon.get("/metrics").body.decode()

    # the integers of these calls are integers as sent: 1.0 is not the epoch 1
    bad = daemon.post(f"{url}/heartbeat", {"workerId": "rw-a", "leaseEpoch": float(epoch)}, token=token_a)
    assert bad.status == 422 and bad.json()["field"] == "leaseEpoch", bad
    assert "must be an integer" in bad.json()["detail"]

    # the holder goes on: renews, records, completes
    own = {"workerId": "rw-a", "leaseEpoch": epoch}
    assert daemon.post(f"{url}/heartbeat", own, token=token_a).status == 200
    assert daemon.post(f"{url}/effects", {**own, "key": "charge-1"}, token=token_a).status == 201
    # a recorded key is a duplicate for the stranger too: "do not perform it" either way
    dup = daemon.post(f"{url}/effects", {"workerId": "rw-b", "leaseEpoch": epoch, "key": "charge-1"}, token=token_b)
    assert dup.status == 200 and dup.json()["duplicate"] is True
    done = daemon.post(f"{url}/complete", {**own, "outcome": "succeeded"}, token=token_a)
    assert done.status == 200 and done.json()["status"] == "SUCCEEDED", done
