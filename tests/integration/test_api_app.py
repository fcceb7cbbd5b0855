"""The HTTP layer alone: routing, validation, status codes and problem documents.

The service behind ``make_app`` is an in-memory fake that only has to be plausible; the
real engine's behaviour is pinned by the daemon tests. Each test drives the app through
aiohttp's TestServer/TestClient inside ``asyncio.run`` (no pytest plugin)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from click.testing import CliRunner, Result

from cronwheel.api.app import ROUTES, make_app
from cronwheel.api.validation import MAX_PAYLOAD_BYTES
from cronwheel.cli.client import ApiError, Client, DaemonUnreachable
from cronwheel.cli.main import cli
from cronwheel.core import schedule as sched
from cronwheel.core.ids import bucket_of, execution_id
from cronwheel.core.model import (
    DEFAULT_TENANT,
    ExecStatus,
    Execution,
    Job,
    JobSpec,
    JobStatus,
)
from cronwheel.core.records import (
    Completion,
    CompletionResult,
    CreateOutcome,
    CreateResult,
    EffectVerdict,
    HeartbeatResult,
    LeaseVerdict,
)
from cronwheel.core.tenants import Tenant
from cronwheel.engine.service import Conflict, NotFound, ServiceError, Unavailable
from tests.support.threadserver import app_in_a_thread

NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z
ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
OPENAPI = Path(__file__).parents[2] / "cronwheel" / "api" / "openapi.json"


_DIGITS_AS_LETTERS = str.maketrans("0123456789", "abcdefghij")

class FakeService:
    """SchedulerService in memory, just enough for the HTTP layer."""

    node_id = "test-node"

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.executions: dict[str, Execution] = {}
        self.keys: dict[tuple[str, str], tuple[str | None, str, int | None]] = {}
        self.effects: set[tuple[str, str]] = set()
        self.created: list[JobSpec] = []
        self.fail_status: Exception | None = None
        self._n = 0

    def now_ms(self) -> int:
        return NOW

    def tenant_config(self, name: str) -> Tenant:
        return Tenant(name, allow_high_priority=True)  # the callers here are admins, of the default tenant

    async def create_job(self, spec: JobSpec, idempotency_key: str | None = None, request_hash: str | None = None) -> CreateResult:
        if idempotency_key is not None and (spec.tenant, idempotency_key) in self.keys:
            h, job_id, nxt = self.keys[(spec.tenant, idempotency_key)]
            if h == request_hash:
                return CreateResult(CreateOutcome.REPLAYED, job_id, nxt)
            return CreateResult(CreateOutcome.CONFLICT, None, None)
        self._n += 1
        job_id = "j" + f"{self._n:016d}".translate(_DIGITS_AS_LETTERS)  # a real id's shape, paging checks it
        nxt = spec.run_at if spec.schedule is None else sched.next_fire(spec.schedule, job_id, spec.timezone, NOW)
        if nxt is None:
            raise ServiceError("schedule never fires", field="schedule")
        self.jobs[job_id] = Job(job_id, bucket_of(job_id), JobStatus.ACTIVE, nxt, NOW, NOW, spec)
        self.created.append(spec)
        if idempotency_key is not None:
            self.keys[(spec.tenant, idempotency_key)] = (request_hash, job_id, nxt)
        return CreateResult(CreateOutcome.CREATED, job_id, nxt)

    async def get_job(self, job_id: str, tenant: str | None = None) -> Job | None:
        job = self.jobs.get(job_id)
        return job if job is not None and tenant in (None, job.tenant) else None

    async def resolve_job(self, ref: str, tenant: str | None = None) -> Job:
        job = await self.get_job(ref, tenant)
        if job is None:
            raise NotFound(f"no job {ref!r}")
        return job

    async def last_runs(self, job_ids: list[str], tenant: str | None = None) -> dict[str, Any]:
        return {}

    async def jobs_named(self, name: str, tenant: str | None = None) -> list[Job]:
        return [j for j in self.jobs.values() if j.spec.name == name and tenant in (None, j.tenant)]

    async def list_jobs(self, tenant=None, status=None, limit=100, after_id=None) -> list[Job]:
        jobs = sorted(self.jobs.values(), key=lambda j: j.id)
        jobs = [j for j in jobs if (status is None or j.status is status) and (after_id is None or j.id > after_id)]
        return jobs[:limit]

    async def _job(self, job_id: str, tenant: str | None) -> Job:
        job = await self.get_job(job_id, tenant)
        if job is None:
            raise NotFound(f"no job {job_id!r}")
        return job

    async def cancel_job(self, job_id: str, tenant: str | None = None) -> Job:
        job = await self._job(job_id, tenant)
        job.status = JobStatus.CANCELLED
        job.next_run_at = None
        return job

    async def pause_job(self, job_id: str, tenant: str | None = None) -> Job:
        job = await self._job(job_id, tenant)
        if job.status not in (JobStatus.ACTIVE, JobStatus.PAUSED):
            raise Conflict(f"cannot pause a {job.status.value} job")
        job.status = JobStatus.PAUSED
        return job

    async def resume_job(self, job_id: str, tenant: str | None = None) -> Job:
        job = await self._job(job_id, tenant)
        job.status = JobStatus.ACTIVE
        return job

    def add_execution(self, job_id: str, scheduled_at: int, status: ExecStatus = ExecStatus.PENDING, **kw: Any) -> Execution:
        job = self.jobs[job_id]
        ex = Execution(execution_id(job_id, scheduled_at), job_id, job.tenant, job.spec.priority, scheduled_at, status, **kw)
        self.executions[ex.execution_id] = ex
        return ex

    async def trigger_job(self, job_id: str, tenant: str | None = None) -> Execution:
        job = await self._job(job_id, tenant)
        if job.status is JobStatus.CANCELLED:
            raise Conflict("cannot trigger a CANCELLED job")
        return self.add_execution(job_id, NOW, available_at=NOW, created_at=NOW)

    async def list_executions(self, job_id: str, limit: int = 50, before: int | None = None, tenant=None) -> list[Execution]:
        await self._job(job_id, tenant)
        exs = sorted((e for e in self.executions.values() if e.job_id == job_id), key=lambda e: -e.scheduled_at)
        return [e for e in exs if before is None or e.scheduled_at < before][:limit]

    async def get_execution(self, execution_id: str, tenant: str | None = None) -> Execution | None:
        return self.executions.get(execution_id)

    def _lease(self, execution_id: str, lease_epoch: int) -> LeaseVerdict:
        ex = self.executions.get(execution_id)
        if ex is None:
            return LeaseVerdict.NOT_FOUND
        if ex.status is ExecStatus.CANCELLED:
            return LeaseVerdict.CANCELLED
        if ex.status is not ExecStatus.RUNNING or ex.lease_epoch != lease_epoch:
            return LeaseVerdict.LEASE_LOST
        return LeaseVerdict.OK

    async def heartbeat(self, execution_id: str, worker_id: str, lease_epoch: int) -> HeartbeatResult:
        verdict = self._lease(execution_id, lease_epoch)
        return HeartbeatResult(verdict, NOW + 60_000 if verdict is LeaseVerdict.OK else None)

    async def complete(self, completion: Completion) -> CompletionResult:
        verdict = self._lease(completion.execution_id, completion.lease_epoch)
        if verdict is not LeaseVerdict.OK:
            return CompletionResult(completion.execution_id, verdict)
        ex = self.executions[completion.execution_id]
        ex.status = ExecStatus.SUCCEEDED if completion.outcome.value == "succeeded" else ExecStatus.RETRY_WAIT
        ex.output = completion.output
        available = None if ex.status is ExecStatus.SUCCEEDED else NOW + 1000
        return CompletionResult(ex.execution_id, LeaseVerdict.OK, ex.status, available)

    async def record_effect(self, execution_id: str, worker_id: str, lease_epoch: int, key: str) -> EffectVerdict:
        verdict = self._lease(execution_id, lease_epoch)
        if verdict is LeaseVerdict.NOT_FOUND:
            return EffectVerdict.NOT_FOUND
        if (execution_id, key) in self.effects:
            return EffectVerdict.DUPLICATE
        if verdict is not LeaseVerdict.OK:
            return EffectVerdict.FENCED
        self.effects.add((execution_id, key))
        return EffectVerdict.RECORDED

    async def list_dead(self, tenant=None, limit=100, after=None) -> list[Execution]:
        dead = sorted((e for e in self.executions.values() if e.status is ExecStatus.DEAD), key=lambda e: e.execution_id)
        return [e for e in dead if after is None or e.execution_id > after][:limit]

    async def replay_dead(self, execution_id: str, tenant: str | None = None) -> Execution:
        ex = self.executions.get(execution_id)
        if ex is None or ex.status is not ExecStatus.DEAD:
            raise NotFound(f"no dead-lettered execution {execution_id!r}")
        ex.status, ex.attempt = ExecStatus.PENDING, 0
        return ex

    async def purge_dead(self, execution_id: str, tenant: str | None = None) -> None:
        ex = self.executions.get(execution_id)
        if ex is None or ex.status is not ExecStatus.DEAD:
            raise NotFound(f"no dead-lettered execution {execution_id!r}")
        del self.executions[execution_id]

    async def status(self) -> dict[str, Any]:
        if self.fail_status is not None:
            raise self.fail_status
        return {"nodeId": self.node_id, "jobs": {"ACTIVE": len(self.jobs)}}


@asynccontextmanager
async def api(service: FakeService | None = None, **kw: Any) -> AsyncIterator[tuple[TestClient, FakeService]]:
    svc = service or FakeService()
    async with TestClient(TestServer(make_app(svc, **kw))) as client:
        yield client, svc


def run(fn: Callable[[TestClient, FakeService], Awaitable[None]], **kw: Any) -> None:
    async def main() -> None:
        async with api(**kw) as (client, svc):
            await fn(client, svc)

    asyncio.run(main())


async def problem(resp: Any, status: int) -> dict[str, Any]:
    assert resp.status == status, await resp.text()
    assert resp.content_type == "application/problem+json"
    body = await resp.json(content_type=None)
    assert body["status"] == status
    assert {"type", "title", "detail"} <= body.keys()
    return body


JOB = {"schedule": "0 * * * *", "command": "echo hi"}


# ---------------------------------------------------------------- POST /v1/jobs


def test_create_returns_201_with_job_id_and_next_run() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        resp = await client.post("/v1/jobs", json={**JOB, "payload": {"a": 1}, "retryPolicy": {"maxAttempts": 5}, "timeoutSec": 30})
        assert resp.status == 201
        assert resp.content_type == "application/json"
        body = await resp.json()
        assert set(body) == {"jobId", "nextRunAt"}
        assert body["nextRunAt"] == "2026-01-01T01:00:00.000Z"
        assert resp.headers["Location"] == f"/v1/jobs/{body['jobId']}"
        assert "Idempotent-Replayed" not in resp.headers
        spec = svc.created[0]
        assert (spec.schedule, spec.target, spec.payload, spec.retry.max_attempts, spec.timeout_sec) == (
            "0 * * * *", {"command": "echo hi"}, {"a": 1}, 5, 30.0)
        assert spec.tenant == DEFAULT_TENANT

        got = await (await client.get(f"/v1/jobs/{body['jobId']}")).json()
        assert got["jobId"] == body["jobId"] and got["status"] == "ACTIVE"
        assert got["nextRunAt"] == body["nextRunAt"] and got["schedule"] == "0 * * * *"

    run(t)


def test_one_off_with_run_at_and_relative_schedule() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        resp = await client.post("/v1/jobs", json={"runAt": "2026-03-01T10:00:00+01:00", "command": "x"})
        assert (await resp.json())["nextRunAt"] == "2026-03-01T09:00:00.000Z"
        resp = await client.post("/v1/jobs", json={"schedule": "+90s", "command": "x"})
        assert resp.status == 201
        assert (await resp.json())["nextRunAt"] == "2026-01-01T00:01:30.000Z"
        assert svc.created[1].schedule is None and svc.created[1].run_at == NOW + 90_000

    run(t)


def test_idempotent_replay_returns_the_original_and_reuse_is_422() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        headers = {"Idempotency-Key": "order-42"}
        first = await client.post("/v1/jobs", json=JOB, headers=headers)
        assert first.status == 201
        original = await first.json()
        # same body, other key order and whitespace: a replay
        raw = '{ "command": "echo hi",\n "schedule": "0 * * * *" }'
        again = await client.post("/v1/jobs", data=raw, headers={**headers, "Content-Type": "application/json"})
        assert again.status == 201
        assert await again.json() == original
        assert again.headers["Idempotent-Replayed"] == "true"
        assert len(svc.jobs) == 1

        other = await client.post("/v1/jobs", json={**JOB, "command": "echo bye"}, headers=headers)
        body = await problem(other, 422)
        assert body["code"] == "idempotency_key_reused"
        assert body["type"].endswith("idempotency_key_reused")
        assert body["field"] == "Idempotency-Key"
        assert len(svc.jobs) == 1

        # no key: two jobs
        await client.post("/v1/jobs", json=JOB)
        await client.post("/v1/jobs", json=JOB)
        assert len(svc.jobs) == 3

    run(t)


@pytest.mark.parametrize("key", ["", "x" * 201, "tab\there"])
def test_bad_idempotency_key_is_400(key: str) -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        body = await problem(await client.post("/v1/jobs", json=JOB, headers={"Idempotency-Key": key}), 400)
        assert body["field"] == "Idempotency-Key"

    run(t)


def test_invalid_schedule_is_400_with_the_schedule_error() -> None:
    with pytest.raises(sched.ScheduleError) as expected:
        sched.parse_schedule("61 * * * *", "jx")

    async def t(client: TestClient, svc: FakeService) -> None:
        body = await problem(await client.post("/v1/jobs", json={**JOB, "schedule": "61 * * * *"}), 400)
        assert body["field"] == "schedule"
        assert body["code"] == "invalid_schedule"
        assert str(expected.value) in body["detail"]
        body = await problem(await client.post("/v1/jobs", json={**JOB, "timezone": "Mars/Base"}), 400)
        assert body["field"] == "timezone" and "Mars/Base" in body["detail"]
        assert not svc.jobs

    run(t)


def test_unknown_field_is_422_naming_it() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        body = await problem(await client.post("/v1/jobs", json={**JOB, "maxAttempts": 3}), 422)
        assert body["field"] == "maxAttempts" and "maxAttempts" in body["detail"]
        body = await problem(await client.post("/v1/jobs", json={**JOB, "retryPolicy": {"tries": 2}}), 422)
        assert body["field"] == "retryPolicy.tries"
        body = await problem(await client.post("/v1/jobs", json={**JOB, "retries": 3}), 422)  # Dkron's word
        assert body["field"] == "retries" and "retries (did you mean 'retryPolicy'?)" in body["detail"], body
        body = await problem(await client.post("/v1/jobs", json={**JOB, "timeoutSec": True}), 422)
        assert body["field"] == "timeoutSec" and "boolean" in body["detail"]

    run(t)


def test_body_over_one_mib_is_413() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        big = io.BytesIO(json.dumps({**JOB, "payload": "x" * (1 << 20)}).encode())
        body = await problem(await client.post("/v1/jobs", data=big, headers={"Content-Type": "application/json"}), 413)
        assert body["code"] == "payload_too_large"

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: caught while reading
            yield b'{"payload": "'
            for _ in range(17):
                yield b"x" * 65536
            yield b'"}'

        await problem(await client.post("/v1/jobs", data=chunks(), headers={"Content-Type": "application/json"}), 413)
        body = await problem(await client.post("/v1/jobs", json={**JOB, "payload": "x" * MAX_PAYLOAD_BYTES}), 413)
        assert body["field"] == "payload"
        assert not svc.jobs

    run(t)


def test_bad_content_type_is_415_and_malformed_json_is_400() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        body = await problem(await client.post("/v1/jobs", data="schedule=x", headers={"Content-Type": "application/x-www-form-urlencoded"}), 415)
        assert "application/json" in body["detail"]
        await problem(await client.post("/v1/jobs", data=b'{"a": 1}'), 415)  # no Content-Type at all
        hdr = {"Content-Type": "application/json"}
        body = await problem(await client.post("/v1/jobs", data='{"schedule": ', headers=hdr), 400)
        assert body["code"] == "malformed_json" and "line 1" in body["detail"]
        await problem(await client.post("/v1/jobs", data='{"timeoutSec": NaN}', headers=hdr), 400)
        await problem(await client.post("/v1/jobs", data=b'{"name": "\xff"}', headers=hdr), 400)
        await problem(await client.post("/v1/jobs", data="[" * 100_000, headers=hdr), 400)
        body = await problem(await client.post("/v1/jobs", data="[1, 2]", headers=hdr), 400)
        assert "object" in body["detail"]
        await problem(await client.post("/v1/jobs"), 400)  # no body

    run(t)


def test_tenant_resolver_is_the_one_seam() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        # a tenant's commands would run as the daemon's user: refused unless it has allowShell
        body = await problem(await client.post("/v1/jobs", json=JOB, headers={"X-Tenant": "acme"}), 403)
        assert body["field"] == "command" and "allowShell" in body["detail"]
        web_job = {"schedule": "0 * * * *", "http": {"url": "https://example.com/hook"}}
        resp = await client.post("/v1/jobs", json=web_job, headers={"X-Tenant": "acme"})
        job_id = (await resp.json())["jobId"]
        assert svc.created[0].tenant == "acme"
        assert (await client.get(f"/v1/jobs/{job_id}", headers={"X-Tenant": "acme"})).status == 200
        await problem(await client.get(f"/v1/jobs/{job_id}", headers={"X-Tenant": "other"}), 404)
        assert (await client.get(f"/v1/jobs/{job_id}")).status == 200  # admin

    async def resolver(request: web.Request) -> str | None:
        return request.headers.get("X-Tenant")

    run(t, tenant_resolver=resolver)


# ---------------------------------------------------------------- reading and changing jobs


def test_list_jobs_paginates_with_a_cursor() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        for i in range(5):
            await client.post("/v1/jobs", json={**JOB, "name": f"job {i}"})
        page = await (await client.get("/v1/jobs", params={"limit": "2"})).json()
        assert [j["name"] for j in page["jobs"]] == ["job 0", "job 1"] and page["next"]
        page2 = await (await client.get("/v1/jobs", params={"limit": "2", "after": page["next"]})).json()
        assert [j["name"] for j in page2["jobs"]] == ["job 2", "job 3"]
        last = await (await client.get("/v1/jobs", params={"limit": "2", "after": page2["next"]})).json()
        assert [j["name"] for j in last["jobs"]] == ["job 4"] and last["next"] is None
        assert len((await (await client.get("/v1/jobs", params={"status": "active"})).json())["jobs"]) == 5
        assert (await (await client.get("/v1/jobs", params={"status": "PAUSED"})).json())["jobs"] == []
        body = await problem(await client.get("/v1/jobs", params={"status": "sleeping"}), 400)
        assert body["field"] == "status"
        body = await problem(await client.get("/v1/jobs", params={"limit": "0"}), 400)
        assert body["field"] == "limit"

    run(t)


def test_cancel_pause_resume_trigger() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        job_id = (await (await client.post("/v1/jobs", json=JOB)).json())["jobId"]
        resp = await client.post(f"/v1/jobs/{job_id}/pause")
        assert resp.status == 200 and (await resp.json())["status"] == "PAUSED"
        resp = await client.post(f"/v1/jobs/{job_id}/resume", json={})
        assert resp.status == 200 and (await resp.json())["status"] == "ACTIVE"
        resp = await client.post(f"/v1/jobs/{job_id}/trigger")
        assert resp.status == 202
        ex = await resp.json()
        assert ex["executionId"] == f"{job_id}:{NOW}" and ex["status"] == "PENDING"
        assert resp.headers["Location"] == f"/v1/executions/{job_id}:{NOW}"
        resp = await client.delete(f"/v1/jobs/{job_id}")
        assert resp.status == 200 and (await resp.json())["status"] == "CANCELLED"
        body = await problem(await client.post(f"/v1/jobs/{job_id}/pause"), 409)
        assert "CANCELLED" in body["detail"]
        await problem(await client.post(f"/v1/jobs/{job_id}/trigger"), 409)

    run(t)


def test_not_found_and_method_not_allowed_are_problems() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        body = await problem(await client.get("/v1/jobs/jnope"), 404)
        assert "jnope" in body["detail"]
        await problem(await client.delete("/v1/jobs/jnope"), 404)
        await problem(await client.post("/v1/jobs/jnope/trigger"), 404)
        await problem(await client.get("/v1/jobs/jnope/executions"), 404)
        await problem(await client.get("/v1/executions/jnope:1"), 404)
        await problem(await client.post("/v1/dlq/jnope:1/replay"), 404)
        await problem(await client.delete("/v1/dlq/jnope:1"), 404)
        body = await problem(await client.get("/v2/nothing/here"), 404)
        assert body["code"] == "not_found"
        resp = await client.put("/v1/jobs")
        body = await problem(resp, 405)
        assert "GET" in resp.headers["Allow"] and "POST" in resp.headers["Allow"]

    run(t)


# ---------------------------------------------------------------- executions and workers


def test_executions_newest_first_with_cursor_and_seed_fields() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        job_id = (await (await client.post("/v1/jobs", json=JOB)).json())["jobId"]
        for h in range(3):
            svc.add_execution(job_id, NOW + h * 3_600_000, ExecStatus.SUCCEEDED, attempt=1, lease_epoch=1,
                              started_at=NOW + h * 3_600_000 + 250, finished_at=NOW + h * 3_600_000 + 900,
                              exit_code=0, output="secret output")
        resp = await client.get(f"/v1/jobs/{job_id}/executions", params={"limit": "2"})
        assert resp.status == 200
        page = await resp.json()
        first = page["executions"][0]
        assert {"executionId", "status", "leaseEpoch", "startedAt", "finishedAt"} <= first.keys()
        assert {"jobId", "scheduledAt", "attempt", "maxAttempts", "workerId", "leaseUntil", "availableAt",
                "exitCode", "error", "reason", "lagMs"} <= first.keys()
        assert "output" not in first
        assert [e["scheduledAt"] for e in page["executions"]] == ["2026-01-01T02:00:00.000Z", "2026-01-01T01:00:00.000Z"]
        assert first["lagMs"] == 250 and ISO_MS.match(first["startedAt"]) and first["leaseUntil"] is None
        rest = await (await client.get(f"/v1/jobs/{job_id}/executions", params={"before": page["next"]})).json()
        assert [e["scheduledAt"] for e in rest["executions"]] == ["2026-01-01T00:00:00.000Z"] and rest["next"] is None
        one = await (await client.get(f"/v1/executions/{first['executionId']}")).json()
        assert one["output"] == "secret output"
        await problem(await client.get(f"/v1/jobs/{job_id}/executions", params={"before": "yesterday"}), 400)

    run(t)


def test_heartbeat_complete_and_effects_are_fenced() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        job_id = (await (await client.post("/v1/jobs", json=JOB)).json())["jobId"]
        ex = svc.add_execution(job_id, NOW, ExecStatus.RUNNING, attempt=1, lease_epoch=2, worker_id="w1")
        url = f"/v1/executions/{ex.execution_id}"

        resp = await client.post(f"{url}/heartbeat", json={"workerId": "w1", "leaseEpoch": 2})
        assert resp.status == 200
        assert (await resp.json())["extendUntil"] == "2026-01-01T00:01:00.000Z"

        stale = await problem(await client.post(f"{url}/heartbeat", json={"workerId": "w0", "leaseEpoch": 1}), 409)
        assert stale["reason"] == "lease_lost"
        await problem(await client.post("/v1/executions/jnope:1/heartbeat", json={"workerId": "w", "leaseEpoch": 1}), 404)
        body = await problem(await client.post(f"{url}/heartbeat", json={"workerId": "w1"}), 422)
        assert body["field"] == "leaseEpoch"
        body = await problem(await client.post(f"{url}/heartbeat", json={"workerId": "w1", "leaseEpoch": True}), 422)
        assert body["field"] == "leaseEpoch"

        resp = await client.post(f"{url}/effects", json={"workerId": "w1", "leaseEpoch": 2, "key": "charge"})
        assert resp.status == 201 and (await resp.json())["recorded"] is True
        resp = await client.post(f"{url}/effects", json={"workerId": "w1", "leaseEpoch": 2, "key": "charge"})
        assert resp.status == 200 and (await resp.json())["duplicate"] is True
        body = await problem(await client.post(f"{url}/effects", json={"workerId": "w0", "leaseEpoch": 1, "key": "mail"}), 409)
        assert body["reason"] == "fenced"

        body = await problem(await client.post(f"{url}/complete", json={"workerId": "w0", "leaseEpoch": 1, "outcome": "succeeded"}), 409)
        assert body["reason"] == "lease_lost"
        body = await problem(await client.post(f"{url}/complete", json={"workerId": "w1", "leaseEpoch": 2, "outcome": "lost"}), 422)
        assert body["field"] == "outcome"
        resp = await client.post(f"{url}/complete", json={"workerId": "w1", "leaseEpoch": 2, "outcome": "failed", "exitCode": 3, "output": "o"})
        assert resp.status == 200
        assert await resp.json() == {"executionId": ex.execution_id, "status": "RETRY_WAIT", "availableAt": "2026-01-01T00:00:01.000Z"}

        ex.status = ExecStatus.CANCELLED
        cancelled = await problem(await client.post(f"{url}/heartbeat", json={"workerId": "w1", "leaseEpoch": 2}), 409)
        assert cancelled["reason"] == "cancelled"

    run(t)


def test_dlq_routes() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        job_id = (await (await client.post("/v1/jobs", json=JOB)).json())["jobId"]
        a = svc.add_execution(job_id, NOW, ExecStatus.DEAD, attempt=3, error="boom")
        b = svc.add_execution(job_id, NOW + 1, ExecStatus.DEAD, attempt=3)
        page = await (await client.get("/v1/dlq", params={"limit": "1"})).json()
        assert [e["executionId"] for e in page["executions"]] == [a.execution_id] and page["next"] == a.execution_id
        resp = await client.post(f"/v1/dlq/{a.execution_id}/replay")
        assert resp.status == 200 and (await resp.json())["status"] == "PENDING"
        resp = await client.delete(f"/v1/dlq/{b.execution_id}")
        assert resp.status == 200 and (await resp.json())["purged"] is True
        assert (await (await client.get("/v1/dlq")).json())["executions"] == []

    run(t)


# ---------------------------------------------------------------- the node and errors


def test_status_health_and_service_errors() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        assert await (await client.get("/healthz")).json() == {"status": "ok"}
        assert (await (await client.get("/v1/status")).json())["nodeId"] == "test-node"
        svc.fail_status = Unavailable("store failing over")
        body = await problem(await client.get("/v1/status"), 503)
        assert "failing over" in body["detail"]

    run(t)


class _Boom(RuntimeError):
    """An error of this test's own kind: tracebacks are rate-limited per kind."""


def test_unexpected_exception_is_a_500_problem_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        ids = []
        for _ in range(3):
            svc.fail_status = _Boom("secret internals at /srv/app.py")
            resp = await client.get("/v1/status")
            text = await resp.text()
            body = await problem(resp, 500)
            assert "Traceback" not in text and "secret internals" not in text and "Boom" not in text
            assert body["errorId"] in body["detail"]
            ids.append(body["errorId"])
        # one structured line per error, carrying its id; the traceback only with the first
        lines = [json.loads(r.getMessage().split(" ", 1)[1]) for r in caplog.records if r.name == "cronwheel.api"]
        assert [x["errorId"] for x in lines] == ids
        assert all(x["error"] == "_Boom" and x["path"] == "/v1/status" for x in lines)
        assert "Traceback" in lines[0]["traceback"] and "traceback" not in lines[1] and "traceback" not in lines[2]

    with caplog.at_level(logging.ERROR, logger="cronwheel.api"):
        run(t)


# ---------------------------------------------------------------- OpenAPI


def _route_table() -> set[tuple[str, str]]:
    app = make_app(FakeService())
    return {
        (r.method, r.resource.canonical)
        for r in app.router.routes()
        if r.method not in ("HEAD", "OPTIONS", "*") and r.resource is not None
    }


def test_openapi_document_matches_the_route_table() -> None:
    doc = json.loads(OPENAPI.read_text())
    assert doc["openapi"].startswith("3.1")
    documented = {
        (method.upper(), path)
        for path, item in doc["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert documented == _route_table() == {(m, p) for m, p, _ in ROUTES}
    for path, item in doc["paths"].items():
        params = {p["name"] for p in item.get("parameters", [])}
        assert params == set(re.findall(r"{(\w+)}", path)), path
        for method, op in item.items():
            if method == "parameters":
                continue
            assert op["operationId"] and op["responses"], (path, method)


def test_openapi_schemas_are_valid_and_every_ref_resolves() -> None:
    doc = json.loads(OPENAPI.read_text())
    for name, schema in doc["components"]["schemas"].items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:  # pragma: no cover - the message names the schema
            raise AssertionError(f"components.schemas.{name}: {exc.message}") from exc

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            own = [node["$ref"]] if "$ref" in node else []
            return own + [r for v in node.values() for r in refs(v)]
        if isinstance(node, list):
            return [r for v in node for r in refs(v)]
        return []

    for ref in refs(doc):
        assert ref.startswith("#/")
        node: Any = doc
        for part in ref[2:].split("/"):
            node = node[part]

    job_schema = {"$ref": "#/components/schemas/JobRequest", "components": doc["components"]}
    jsonschema.validate(JOB, job_schema, cls=jsonschema.Draft202012Validator)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**JOB, "maxAttempts": 3}, job_schema, cls=jsonschema.Draft202012Validator)


def test_openapi_is_served_and_responses_fit_its_schemas() -> None:
    async def t(client: TestClient, svc: FakeService) -> None:
        resp = await client.get("/v1/openapi.json")
        assert resp.status == 200
        doc = await resp.json()
        assert doc == json.loads(OPENAPI.read_text())

        def check(instance: Any, name: str) -> None:
            schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
            jsonschema.validate(instance, schema, cls=jsonschema.Draft202012Validator)

        created = await (await client.post("/v1/jobs", json=JOB)).json()
        check(created, "JobCreated")
        check(await (await client.get(f"/v1/jobs/{created['jobId']}")).json(), "Job")
        check(await (await client.get("/v1/jobs")).json(), "JobPage")
        check(await (await client.post(f"/v1/jobs/{created['jobId']}/trigger")).json(), "Execution")
        check(await (await client.get(f"/v1/jobs/{created['jobId']}/executions")).json(), "ExecutionPage")
        check(await (await client.get("/v1/jobs/jnope")).json(content_type=None), "Problem")

    run(t)


# ---------------------------------------------------------------- the CLI and its client against the app


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, FakeService]]:
    """The app on a real Unix socket, in a thread: ``(url, service)``."""
    svc = FakeService()
    with app_in_a_thread(lambda: make_app(svc), unix=tmp_path / "api.sock") as url:
        yield url, svc


def test_client_over_a_unix_socket(served: tuple[str, FakeService], tmp_path: Path) -> None:
    url, svc = served
    client = Client(url, timeout=10)
    assert client.health() == {"status": "ok"}
    created = client.create_job({**JOB, "name": "nightly"}, idempotency_key="k1")
    assert not created.replayed
    again = client.create_job({**JOB, "name": "nightly"}, idempotency_key="k1")
    assert again.replayed and again.body == created.body
    assert client.resolve_job("nightly")["jobId"] == created.body["jobId"]
    ex = client.trigger_job(created.body["jobId"])
    assert client.get_execution(ex["executionId"])["status"] == "PENDING"
    with pytest.raises(ApiError) as err:
        client.resolve_job("nobody")
    assert err.value.status == 404
    other = client.create_job({**JOB, "name": "nightly"}).body["jobId"]
    svc.jobs[other].spec.tenant = "acme"  # names are unique per tenant: an admin may see two
    with pytest.raises(ApiError) as err:
        client.resolve_job("nightly")
    assert err.value.status == 409 and created.body["jobId"] in err.value.detail
    with pytest.raises(ApiError) as err:
        client.create_job({**JOB, "schedule": "* * *"})
    assert err.value.status == 400 and err.value.problem["field"] == "schedule"
    assert "expected 5 or 6 fields" in err.value.detail
    with pytest.raises(DaemonUnreachable):
        Client(f"unix:{tmp_path / 'gone.sock'}").health()


def cli_run(url: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env={"CRONWHEEL_URL": url, **(env or {})})


def test_cli_add_ls_show_history(served: tuple[str, FakeService]) -> None:
    url, svc = served
    r = cli_run(url, "add", "0 3 * * *", "--name", "backup", "--tz", "Europe/Paris", "--max-attempts", "5",
                "--timeout", "10m", "--priority", "high", "--", "backup.sh", "--full", "a b")
    assert r.exit_code == 0, r.output
    assert "Created job" in r.stdout and "CET" in r.stdout
    spec = svc.created[0]
    assert spec.target == {"command": "backup.sh --full 'a b'"} and spec.timezone == "Europe/Paris"
    assert (spec.retry.max_attempts, spec.timeout_sec, spec.priority.label) == (5, 600.0, "high")
    r = cli_run(url, "add", "+90s", "--json", "--python", "app.tasks:run", "--payload", '{"x": 1}')
    assert r.exit_code == 0, r.output
    assert set(json.loads(r.stdout)) == {"jobId", "nextRunAt"}
    assert svc.created[1].run_at is not None and svc.created[1].payload == {"x": 1}

    r = cli_run(url, "ls", "--json")
    assert [j["name"] for j in json.loads(r.stdout)] == ["backup", None]
    r = cli_run(url, "ls")
    assert r.stdout.splitlines()[0].split()[:4] == ["ID", "NAME", "STATUS", "SCHEDULE"]
    r = cli_run(url, "show", "backup", "--json")
    assert json.loads(r.stdout)["schedule"] == "0 3 * * *"
    r = cli_run(url, "next", "backup", "-n", "2", "--json")
    assert r.exit_code == 0 and all(t.endswith(":00:00.000Z") for t in json.loads(r.stdout))
    r = cli_run(url, "history", "backup")
    assert r.exit_code == 0 and "no executions of" in r.stderr
    r = cli_run(url, "show", "nobody")
    assert r.exit_code == 1 and "no job with id or name 'nobody'" in r.stderr and "did you mean" not in r.stderr
    r = cli_run(url, "show", "bakcup")  # a typo is answered with the name it is close to
    assert r.exit_code == 1 and "no job with id or name 'bakcup' (did you mean 'backup'?)" in r.stderr, r.stderr


def test_cli_run_wait_exits_with_the_command_status(served: tuple[str, FakeService]) -> None:
    url, svc = served
    job_id = Client(url).create_job({**JOB, "name": "w"}).body["jobId"]

    def finish_later(status: ExecStatus, code: int | None) -> None:
        def go() -> None:
            for _ in range(100):
                exs = [e for e in svc.executions.values() if e.job_id == job_id and e.status is ExecStatus.PENDING]
                if exs:
                    exs[0].status, exs[0].exit_code, exs[0].output = status, code, "hello\n"
                    return
                threading.Event().wait(0.05)

        threading.Thread(target=go, daemon=True).start()

    finish_later(ExecStatus.SUCCEEDED, 0)
    r = cli_run(url, "run", "w", "--wait")
    assert r.exit_code == 0, r.output
    assert r.stdout == "hello\n" and "SUCCEEDED" in r.stderr
    svc.executions.clear()
    finish_later(ExecStatus.DEAD, 7)
    r = cli_run(url, "run", "w", "--wait")
    assert r.exit_code == 7, r.output
    svc.executions.clear()
    r = cli_run(url, "run", "w", "--wait", "--timeout", "0.3s")
    assert r.exit_code == 124 and "PENDING" in r.stderr


def test_cli_effect_exit_codes(served: tuple[str, FakeService]) -> None:
    url, svc = served
    job_id = Client(url).create_job(JOB).body["jobId"]
    ex = svc.add_execution(job_id, NOW, ExecStatus.RUNNING, attempt=1, lease_epoch=2, worker_id="w1")
    env = {"CRONWHEEL_EXECUTION_ID": ex.execution_id, "CRONWHEEL_LEASE_EPOCH": "2", "CRONWHEEL_WORKER_ID": "w1"}
    assert cli_run(url, "effect", "charge-1", env=env).exit_code == 0
    assert cli_run(url, "effect", "charge-1", env=env).exit_code == 3
    r = cli_run(url, "effect", "charge-2", env={**env, "CRONWHEEL_LEASE_EPOCH": "1"})
    assert r.exit_code == 4 and "fenced" in r.stderr
    r = cli_run(url, "effect", "k", env={**env, "CRONWHEEL_EXECUTION_ID": "jnope:1"})
    assert r.exit_code == 1
