"""Job names are unique per tenant, and `PATCH /v1/jobs/{id}` / `cronwheel update` change a
job in place, against a real daemon."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.daemon import Daemon
from tests.support.wait import wait_for

PROBLEM = "application/problem+json"


def test_a_second_job_of_the_same_name_is_refused_everywhere(daemon: Daemon, tmp_path: Path) -> None:
    first = daemon.cli("add", "@every 1h", "--name", "ev", "--json", "--", "echo", "one")
    assert first.returncode == 0, first.stderr
    holder = json.loads(first.stdout)["jobId"]

    again = daemon.cli("add", "@every 1h", "--name", "ev", "--", "echo", "two")
    assert again.returncode == 1 and holder in again.stderr and "already exists" in again.stderr, again

    r = daemon.post("/v1/jobs", {"schedule": "@every 1h", "command": "true", "name": "ev"})
    assert r.status == 409 and r.headers["Content-Type"].startswith(PROBLEM), r
    assert (r.json()["code"], r.json()["jobId"]) == ("name_taken", holder)

    batch = daemon.post("/v1/jobs/batch", {"jobs": [
        {"schedule": "@every 1h", "command": "true", "name": "ev"},
        {"schedule": "@every 1h", "command": "true", "name": "ev2"},
        {"schedule": "@every 1h", "command": "true", "name": "ev2"},
    ]}).json()["results"]
    assert [x["status"] for x in batch] == [409, 201, 409]
    assert batch[0]["jobId"] == holder and batch[2]["jobId"] == batch[1]["jobId"]

    dump = tmp_path / "jobs.json"
    dump.write_text(json.dumps([{"schedule": "@every 2h", "command": "true", "name": "ev"}]))
    imported = daemon.cli("import", str(dump))
    assert imported.returncode == 1 and holder in imported.stderr, imported

    names = [j["name"] for j in daemon.get("/v1/jobs").json()["jobs"]]
    assert sorted(names) == ["ev", "ev2"]
    shown = daemon.cli("show", "ev", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["jobId"] == holder, shown
    assert [j["jobId"] for j in daemon.get("/v1/jobs?name=ev").json()["jobs"]] == [holder]

    # cancelling frees the name; `show ev` then finds the new holder
    assert daemon.cli("cancel", "ev").returncode == 0
    new = daemon.cli("add", "@every 1h", "--name", "ev", "--json", "--", "echo", "three")
    assert new.returncode == 0, new.stderr
    shown = daemon.cli("show", "ev", "--json")
    assert json.loads(shown.stdout)["jobId"] == json.loads(new.stdout)["jobId"]


def test_update_changes_a_job_in_place_and_validates_like_create(daemon: Daemon, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    job = daemon.add_job({"schedule": "* * * * * *", "command": f"echo old >> {out}", "name": "tick"})
    job_id = job["jobId"]
    wait_for(lambda: "old" in out.read_text(), what="the old command ran")

    upd = daemon.cli("update", "tick", "--max-attempts", "5", "--priority", "high", "--", f"echo new >> {out}")
    assert upd.returncode == 0 and f"Updated job {job_id} (tick)" in upd.stdout, upd
    got = daemon.get(f"/v1/jobs/{job_id}").json()
    assert got["target"] == {"command": f"echo new >> {out}"}
    assert (got["retryPolicy"]["maxAttempts"], got["priority"], got["schedule"]) == (5, "high", "* * * * * *")
    wait_for(lambda: out.read_text().splitlines()[-1:] == ["new"], what="the new command ran")
    assert any(e["status"] == "SUCCEEDED" for e in daemon.executions(job_id))  # history kept
    daemon.wait_event("job.updated", jobId=job_id)

    # a new schedule: next run recomputed; ticks claimed ahead for the old one are superseded
    r = daemon.request("PATCH", f"/v1/jobs/{job_id}", {"schedule": "0 0 1 1 *", "timezone": "Europe/Paris"})
    assert r.status == 200, r
    body = r.json()
    assert (body["jobId"], body["schedule"], body["timezone"]) == (job_id, "0 0 1 1 *", "Europe/Paris")
    assert body["nextRunAt"].endswith("-12-31T23:00:00.000Z"), body
    updated_at = body["updatedAt"]

    def settled() -> list[dict]:
        ex = daemon.executions(job_id)
        return ex if not any(e["status"] in ("PENDING", "RUNNING", "RETRY_WAIT") for e in ex) else []

    history = wait_for(settled, what="no live execution of the old schedule")
    later = [e for e in history if e["scheduledAt"] > updated_at]
    assert later, "the every-second job had ticks claimed ahead (claim-ahead 2 s) when it was updated"
    assert daemon.wait_event("job.updated", jobId=job_id, rescheduled=True)["superseded"] == len(later)
    assert all(e["status"] == "CANCELLED" and e["reason"].startswith("superseded") for e in later), later
    assert not [e for e in history if e["status"] == "SUCCEEDED" and e["startedAt"] > updated_at and e["scheduledAt"] > updated_at]

    # merge-patch: null removes an optional member; validation is the create body's
    assert daemon.request("PATCH", f"/v1/jobs/{job_id}", {"payload": {"a": 1}}).json()["payload"] == {"a": 1}
    cleared = daemon.request("PATCH", f"/v1/jobs/{job_id}", {"payload": None, "retryPolicy": {"multiplier": 3}}).json()
    assert cleared["payload"] is None and cleared["retryPolicy"]["maxAttempts"] == 5 and cleared["retryPolicy"]["multiplier"] == 3
    for patch, status, code in (
        ({"schedule": "61 * * * *"}, 400, "invalid_schedule"),
        ({"nope": 1}, 422, "unknown_field"),
        ({"timeoutSec": 0}, 422, "invalid_field"),
        ({"command": "true", "python": "m:f"}, 422, "invalid_target"),
        ({}, 422, "empty_patch"),
    ):
        r = daemon.request("PATCH", f"/v1/jobs/{job_id}", patch)
        assert (r.status, r.json()["code"]) == (status, code), (patch, r)
        assert r.headers["Content-Type"].startswith(PROBLEM)
    other = daemon.add_job({"schedule": "@daily", "command": "true", "name": "other"})
    r = daemon.request("PATCH", f"/v1/jobs/{job_id}", {"name": "other"})
    assert (r.status, r.json()["code"], r.json()["jobId"]) == (409, "name_taken", other["jobId"])
    assert daemon.request("PATCH", "/v1/jobs/jnosuch", {"payload": 1}).status == 404

    # a one-off turned recurring and back: exactly one of schedule/runAt at a time
    r = daemon.request("PATCH", f"/v1/jobs/{job_id}", {"runAt": "2099-01-01T00:00:00Z"})
    assert (r.status, r.json()["schedule"], r.json()["nextRunAt"]) == (200, None, "2099-01-01T00:00:00.000Z"), r

    # a one-off that has run: a new time zone does not run it again, a new instant does
    once = daemon.add_job({"runAt": "+0s", "command": f"echo once >> {out}.once"})
    wait_for(lambda: daemon.get(f"/v1/jobs/{once['jobId']}").json()["status"] == "SUCCEEDED", what="the one-off to run")
    r = daemon.request("PATCH", f"/v1/jobs/{once['jobId']}", {"timezone": "Asia/Tokyo"})
    assert (r.json()["status"], r.json()["nextRunAt"]) == ("SUCCEEDED", None), r
    r = daemon.request("PATCH", f"/v1/jobs/{once['jobId']}", {"runAt": "+0s"})
    assert r.json()["status"] == "ACTIVE" and r.json()["nextRunAt"] is not None, r
    wait_for(lambda: Path(f"{out}.once").read_text() == "once\nonce\n", what="the one-off to run again")

    # tenant-scoped: another tenant's job reads as absent
    assert daemon.post("/v1/tenants", {"name": "acme"}).status == 201
    token = daemon.post("/v1/tokens", {"tenant": "acme"}).json()["token"]
    assert daemon.request("PATCH", f"/v1/jobs/{job_id}", {"payload": 2}, token=token).status == 404

    # a cancelled job is never changed again
    daemon.request("DELETE", f"/v1/jobs/{job_id}")
    r = daemon.request("PATCH", f"/v1/jobs/{job_id}", {"payload": 3})
    assert (r.status, r.json()["code"]) == (409, "conflict"), r
    bad = daemon.cli("update", other["jobId"])
    assert bad.returncode == 2 and "nothing to change" in bad.stderr


def test_a_paused_job_starts_no_tick_it_had_claimed_ahead(daemon: Daemon) -> None:
    """`pause`: executions already started go on, nothing new starts, not even the ticks the
    scheduler claimed ahead of their instant (2 s here) before the pause."""
    job_id = daemon.add_job({"schedule": "* * * * * *", "command": "true", "name": "every-second"})["jobId"]
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in daemon.executions(job_id)), what="a run")
    paused = daemon.post(f"/v1/jobs/{job_id}/pause", {})
    assert paused.status == 200 and paused.json()["status"] == "PAUSED", paused
    paused_at = paused.json()["updatedAt"]

    def settled() -> list[dict]:
        ex = daemon.executions(job_id)
        return ex if not any(e["status"] in ("PENDING", "RUNNING", "RETRY_WAIT") for e in ex) else []

    history = wait_for(settled, what="no live execution of the paused job")
    assert not [e for e in history if e["scheduledAt"] > paused_at], history

    resumed = daemon.post(f"/v1/jobs/{job_id}/resume", {})
    assert resumed.status == 200, resumed
    resumed_at = resumed.json()["updatedAt"]
    wait_for(lambda: [e for e in daemon.executions(job_id) if e["status"] == "SUCCEEDED" and e["scheduledAt"] > resumed_at],
             what="a run after the resume")  # fmt: skip
