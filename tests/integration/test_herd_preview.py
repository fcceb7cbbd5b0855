"""The herd preview against a real daemon: GET /v1/herd and `cronwheel lint`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from cronwheel.core import schedule as sched
from tests.support.daemon import Daemon

NOOP = "cronwheel.worker.noop:noop"


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC).timestamp() * 1000)


def test_herd_preview_finds_the_top_of_the_hour(daemon: Daemon) -> None:
    hashed = []
    for _ in range(200):
        daemon.add_job({"schedule": "0 * * * *", "python": NOOP})
    for _ in range(50):
        hashed.append(daemon.add_job({"schedule": "H * * * *", "python": NOOP})["jobId"])
    for _ in range(10):
        daemon.add_job({"schedule": "* * * * * *", "python": NOOP})

    r = daemon.get("/v1/herd?window=3600&top=5")
    assert r.status == 200, r
    data = r.json()
    start = _ms(data["windowStart"])
    top_of_hour = (start // 3_600_000 + (start % 3_600_000 > 0)) * 3_600_000
    # H jobs whose hashed minute is 0 fire at the top of the hour too
    extra = sum(1 for j in hashed if sched.next_fire("H * * * *", j, "UTC", start - 1) == top_of_hour)
    assert data["jobs"] == 260 and data["skipped"] == 0
    assert data["ticks"] == 200 + 50 + 10 * 3600
    first = data["busiest"][0]
    assert _ms(first["at"]) == top_of_hour
    assert first["count"] == 210 + extra == data["maxPerSecond"]
    assert {"schedule": "0 * * * *", "jobs": 200} in first["schedules"]
    assert {"schedule": "* * * * * *", "jobs": 10} in first["schedules"]
    if extra:
        assert {"schedule": "H * * * *", "jobs": extra} in first["schedules"]
    assert len(data["perMinute"]) == 60 and sum(data["perMinute"]) == data["ticks"]

    res = daemon.cli("lint")
    assert res.returncode == 0, res.stderr
    at = datetime.fromtimestamp(top_of_hour / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    line = next(x for x in res.stdout.splitlines() if x.startswith(at))
    assert str(210 + extra) in line and "0 * * * *" in line
    assert "ticks per minute (each row: the 60 seconds from its time):" in res.stdout
    assert "hint:" in res.stderr and "'H * * * *'" in res.stderr and "jitter" in res.stderr

    res = daemon.cli("lint", "--json", "--threshold", "1000", "--top", "1")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["hint"] is None and len(doc["busiest"]) == 1 and doc["busiest"][0]["count"] == 210 + extra

    bad = daemon.get("/v1/herd?window=5")
    assert bad.status == 400 and bad.json()["field"] == "window"


def test_a_tenant_sees_only_its_own_herd(daemon: Daemon) -> None:
    assert daemon.post("/v1/tenants", {"name": "acme", "allowShell": True}).status == 201
    r = daemon.post("/v1/tokens", {"tenant": "acme", "role": "tenant"})
    assert r.status == 201, r
    token = r.json()["token"]
    for _ in range(3):
        daemon.add_job({"schedule": "0 * * * *", "python": NOOP})
    r = daemon.post("/v1/jobs", {"schedule": "30 * * * *", "python": NOOP}, token=token)
    assert r.status == 201, r
    mine = daemon.get("/v1/herd", token=token).json()
    assert mine["tenant"] == "acme" and mine["jobs"] == 1 and mine["ticks"] == 1
    assert mine["busiest"][0]["schedules"] == [{"schedule": "30 * * * *", "jobs": 1}]
    everyone = daemon.get("/v1/herd").json()
    assert everyone["tenant"] is None and everyone["jobs"] == 4


def test_lint_a_schedule_offline() -> None:
    import subprocess
    import sys

    from tests.support.daemon import REPO

    def lint(*args: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "CRONWHEEL_URL": "unix:/nonexistent/api.sock"}
        return subprocess.run([sys.executable, "-m", "cronwheel", "lint", *args], capture_output=True, text=True, env=env, timeout=60)

    res = lint("0 * * * *")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count(":00:00.000Z") == 5
    assert "'H * * * *'" in res.stderr
    res = lint("H/10 * * * *")
    assert res.returncode == 0 and "hint:" not in res.stderr
    res = lint("61 * * * *")
    assert res.returncode == 1 and "invalid schedule" in res.stderr


def test_a_herd_too_costly_to_count_is_refused_and_the_node_carries_on(daemon: Daemon) -> None:
    """Jobs with an active window are counted one by one, a schedule evaluation per tick: a
    day of five every-second ones passes the count's budget and is refused with a clear
    answer instead of taking the node's CPU and memory until it is done."""
    later = datetime.fromtimestamp(datetime.now(UTC).timestamp() + 600, UTC).isoformat()
    for _ in range(5):
        daemon.add_job({"schedule": "* * * * * *", "python": NOOP, "activeFrom": later})
    refused = daemon.get("/v1/herd?window=86400")
    assert refused.status == 422, refused
    body = refused.json()
    assert (body["code"], body["field"]) == ("herd_too_large", "window") and "shorter window" in body["detail"]
    hour = daemon.get("/v1/herd?window=3600")
    assert hour.status == 200, hour
    data = hour.json()  # the last 50 minutes of the hour, and the seconds this test took since
    assert data["maxPerSecond"] == 5 and 5 * 3000 <= data["ticks"] <= 5 * 3060, data
    assert daemon.get("/healthz").status == 200
