"""POST /v1/jobs/batch on a real daemon: many jobs in one request and one commit, validated
all or nothing, one result per job with the status a single POST /v1/jobs would have had,
idempotent per job (also across the two endpoints), and the tenant's quotas applied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_quotas import make_tenant
from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

NOOP = "cronwheel.worker.noop:noop"
LATER = {"schedule": "0 0 1 1 *", "python": NOOP}


def jobs_count(d: Daemon, token: str | None = None) -> int:
    return len(d.get("/v1/jobs?limit=1000", token=token).json()["jobs"]) if token else len(d.get("/v1/jobs?limit=1000").json()["jobs"])


def problem(r: Any, status: int) -> dict[str, Any]:
    assert r.status == status, r
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    return dict(r.json())


def test_a_batch_commits_every_job_and_each_runs(daemon: Daemon) -> None:
    body = {"jobs": [
        {"runAt": "+0s", "python": NOOP, "name": "now-1", "idempotencyKey": "k1"},
        {"runAt": "+0s", "python": NOOP, "name": "now-2"},
        {**LATER, "name": "yearly", "idempotencyKey": "k3"},
    ]}
    r = daemon.post("/v1/jobs/batch", body)
    assert r.status == 200, r
    results = r.json()["results"]
    assert [x["index"] for x in results] == [0, 1, 2]
    assert [x["status"] for x in results] == [201, 201, 201]
    ids = [x["jobId"] for x in results]
    assert len(set(ids)) == 3
    assert results[2]["nextRunAt"].endswith("-01-01T00:00:00.000Z")
    for job_id in ids[:2]:
        wait_for(lambda j=job_id: [e["status"] for e in daemon.executions(j)] == ["SUCCEEDED"], 30, what=f"{job_id} to run")
    assert daemon.get(f"/v1/jobs/{ids[2]}").json()["name"] == "yearly"
    assert len(daemon.events("job.created")) >= 3

    # the same batch again: keyed jobs replay (same ids); the unkeyed one would be a new job,
    # but its name is held by the first one's (names are unique per tenant)
    again = daemon.post("/v1/jobs/batch", body).json()["results"]
    assert [x["status"] for x in again] == [200, 409, 200]
    assert again[0]["jobId"] == ids[0] and again[2]["jobId"] == ids[2] and again[1]["jobId"] == ids[1]
    assert again[1]["code"] == "name_taken"
    assert again[0]["replayed"] is True
    # a key reused with another job: refused for that job only
    mixed = daemon.post("/v1/jobs/batch", {"jobs": [{**LATER, "name": "other", "idempotencyKey": "k3"}, LATER]}).json()["results"]
    assert (mixed[0]["status"], mixed[0]["code"], mixed[0]["jobId"]) == (422, "idempotency_key_reused", ids[2])
    assert mixed[1]["status"] == 201


@pytest.mark.runs_no_jobs
def test_one_key_across_the_single_and_the_batch_endpoint_is_one_job(daemon: Daemon) -> None:
    single = daemon.add_job(dict(LATER), key="same")
    (res,) = daemon.post("/v1/jobs/batch", {"jobs": [{**LATER, "idempotencyKey": "same"}]}).json()["results"]
    assert (res["status"], res["jobId"]) == (200, single["jobId"])


def test_a_bad_job_refuses_the_whole_batch_by_its_index(daemon: Daemon) -> None:
    before = jobs_count(daemon)
    bad = problem(daemon.post("/v1/jobs/batch", {"jobs": [LATER, {**LATER, "schedule": "61 * * * *"}, LATER]}), 400)
    assert bad["field"].startswith("jobs[1].schedule") and bad["detail"].startswith("jobs[1]: "), bad
    assert problem(daemon.post("/v1/jobs/batch", {"jobs": []}), 422)["field"] == "jobs"
    assert problem(daemon.post("/v1/jobs/batch", {"jobs": [LATER] * 1001}), 422)["field"] == "jobs"
    assert problem(daemon.post("/v1/jobs/batch", {"jobs": [LATER, "nope"]}), 422)["field"] == "jobs[1]"
    assert problem(daemon.post("/v1/jobs/batch", {"jobs": LATER}), 422)["field"] == "jobs"
    assert problem(daemon.post("/v1/jobs/batch", {"jobs": [LATER], "extra": 1}), 422)["field"] == "extra"
    assert problem(daemon.post("/v1/jobs/batch", [LATER]), 400)["code"] == "invalid_body"
    dup = problem(daemon.post("/v1/jobs/batch", {"jobs": [{**LATER, "idempotencyKey": "d"}, {**LATER, "idempotencyKey": "d"}]}), 422)
    assert dup["field"] == "jobs[1].idempotencyKey"
    assert problem(daemon.post("/v1/jobs/batch", {"jobs": [{**LATER, "idempotencyKey": 7}]}), 422)["field"] == "jobs[0].idempotencyKey"
    assert problem(daemon.post("/v1/jobs/batch", {"jobs": [{**LATER, "unknownField": 1}]}), 422)["field"].startswith("jobs[0]")
    never = problem(daemon.post("/v1/jobs/batch", {"jobs": [LATER, {"schedule": "0 0 30 2 *", "python": NOOP}]}), 400)
    assert "jobs[1]" in never["detail"], never
    assert jobs_count(daemon) == before, "nothing of a refused batch was created"
    big = {"jobs": [{**LATER, "payload": "x" * 60_000} for _ in range(20)]}  # 1.2 MB
    assert problem(daemon.post("/v1/jobs/batch", big), 413)["code"] == "payload_too_large"


@pytest.mark.runs_no_jobs
def test_tenant_quotas_and_target_policy_apply_to_a_batch(daemon: Daemon) -> None:
    small = make_tenant(daemon, "small", maxJobs=2)
    res = daemon.post("/v1/jobs/batch", {"jobs": [{"schedule": "0 0 1 1 *", "http": {"url": "https://hooks.example.com/x"}}] * 3}, token=small)
    assert res.status == 200, res
    assert [x["status"] for x in res.json()["results"]] == [201, 201, 429]
    assert res.json()["results"][2]["code"] == "quota_exceeded"
    assert jobs_count(daemon, small) == 2

    chatty = make_tenant(daemon, "chatty", submitRate=1, submitBurst=2)
    web = {"schedule": "0 0 1 1 *", "http": {"url": "https://hooks.example.com/x"}}
    never = problem(daemon.post("/v1/jobs/batch", {"jobs": [web] * 3}, token=chatty), 429)
    assert never["quota"] == "submitBurst" and "smaller batches" in never["detail"]
    assert [x["status"] for x in daemon.post("/v1/jobs/batch", {"jobs": [web] * 2}, token=chatty).json()["results"]] == [201, 201]
    refused = problem(daemon.post("/v1/jobs/batch", {"jobs": [web]}, token=chatty), 429)
    assert refused["quota"] == "submitRate"
    assert jobs_count(daemon, chatty) == 2

    plain = make_tenant(daemon, "plain")  # no allowShell: no command or python targets
    denied = problem(daemon.post("/v1/jobs/batch", {"jobs": [web, {"schedule": "0 0 1 1 *", "command": "true"}]}, token=plain), 403)
    assert denied["field"].startswith("jobs[1]") and denied["detail"].startswith("jobs[1]: ")
    assert jobs_count(daemon, plain) == 0


@pytest.mark.runs_no_jobs
def test_import_of_many_jobs_and_its_line_by_line_fallback(daemon: Daemon, tmp_path: Path) -> None:
    """`cronwheel import` posts 500 jobs per request (1,200 here: three batches); when the
    server refuses a batch as a whole (a tenant token may not create command targets), it
    goes line by line, so the other jobs are still created and the refused one is named."""
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{"schedule": "0 0 1 1 *", "python": NOOP, "name": f"j{i}"} for i in range(1200)]))
    res = daemon.cli("import", str(many))
    assert res.returncode == 0 and "1200 jobs created" in res.stderr, res.stderr
    assert len(daemon.events("job.submit_retry")) == 0
    assert jobs_count(daemon) == 1000  # (the listing's page size): at least 1,000 are there

    tok = make_tenant(daemon, "plain")
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps([{"schedule": "0 0 1 1 *", "http": {"url": "https://hooks.example.com/a"}},
                                 {"schedule": "0 0 1 1 *", "command": "true"}]))
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_URL": daemon.url, "CRONWHEEL_DATA_DIR": str(tmp_path / "elsewhere")}
    env.pop("CRONWHEEL_TOKEN", None)
    out = subprocess.run([sys.executable, "-m", "cronwheel", "--token", tok, "import", str(mixed)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "job 1: created" in out.stdout and "job 2:" in out.stderr and "1 job created" in out.stderr, (out.stdout, out.stderr)
    assert jobs_count(daemon, tok) == 1
