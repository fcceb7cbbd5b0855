"""Every file in examples/ runs as written, against a real daemon."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

EXAMPLES = REPO / "examples"
#: the daemon's jobs find `cronwheel` (this venv's) on their PATH, as an installed one would be
PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"


@pytest.fixture
def d(make_daemon: Callable[..., Daemon]) -> Daemon:
    return make_daemon(env={"PATH": PATH})


def test_examples_readme_indexes_every_example() -> None:
    index = (EXAMPLES / "README.md").read_text()
    for path in EXAMPLES.iterdir():
        if path.name != "README.md" and not path.name.startswith(("__", ".")):  # __pycache__
            assert path.name in index, path.name
    readme = (REPO / "README.md").read_text()
    for doc in ("man/cronwheel.1", "man/cronwheel.5", "docs/operations.md", "docs/guarantees.md",
                "docs/security.md", "docs/state-machine.md", "examples/"):
        assert doc in readme, doc
        assert (REPO / doc).exists(), doc


# ---------------------------------------------------------------- backup-with-fencing.sh


def test_backup_with_fencing_uploads_once(d: Daemon, tmp_path: Path) -> None:
    src = tmp_path / "data"
    src.mkdir()
    (src / "a.txt").write_text("precious\n")
    dest = tmp_path / "uploads"
    script = EXAMPLES / "backup-with-fencing.sh"
    job = d.add_job({"schedule": "H 2 * * *", "command": f"{script} {src} {dest}"})

    res = d.cli("run", job["jobId"], "--wait", timeout=120)
    assert res.returncode == 0, (res.stdout, res.stderr, d.log_tail())
    [ex] = [e for e in d.executions(job["jobId"]) if e["status"] == "SUCCEEDED"]
    archives = sorted(dest.glob("backup-*.tar.gz"))
    assert len(archives) == 1 and not list(dest.glob(".*partial"))
    with tarfile.open(archives[0]) as tar:
        assert "data/a.txt" in tar.getnames()
    before = archives[0].stat()

    # the same execution again (a redelivery, as a retried attempt would see it): duplicate
    env = {
        "PATH": PATH, "CRONWHEEL_URL": d.url, "CRONWHEEL_TOKEN": d.admin_token,
        "CRONWHEEL_EXECUTION_ID": ex["executionId"], "CRONWHEEL_LEASE_EPOCH": str(ex["leaseEpoch"]),
        "CRONWHEEL_SCHEDULED_AT": ex["scheduledAt"],
    }
    again = subprocess.run([str(script), str(src), str(dest)], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "duplicate" in again.stderr and "not uploading it again" in again.stdout
    after = sorted(dest.glob("backup-*.tar.gz"))
    assert after == archives and not list(dest.glob(".*partial"))
    assert (after[0].stat().st_ino, after[0].stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    # a zombie attempt (stale lease epoch) of an execution that is over uploads nothing: its
    # effect is a duplicate, or, for an effect nobody recorded yet, it is fenced (exit 4)
    zombie = {**env, "CRONWHEEL_LEASE_EPOCH": "0"}
    stale = subprocess.run([str(script), str(src), str(dest)], env=zombie, capture_output=True, text=True, timeout=60)
    assert stale.returncode == 0 and "duplicate" in stale.stderr, (stale.stdout, stale.stderr)
    zombie["CRONWHEEL_SCHEDULED_AT"] = "2000-01-01T02:00:00.000Z"
    fenced = subprocess.run([str(script), str(src), str(dest)], env=zombie, capture_output=True, text=True, timeout=60)
    assert fenced.returncode == 4 and "fenced" in fenced.stderr, (fenced.stdout, fenced.stderr)
    assert sorted(dest.glob("backup-*.tar.gz")) == archives and not list(dest.glob(".*partial"))
    assert (archives[0].stat().st_ino, archives[0].stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


# ---------------------------------------------------------------- http-target.json


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A tiny local HTTP endpoint in a thread: ``(base url, received requests)``."""
    got: list[dict[str, Any]] = []
    started = threading.Event()
    stop: list[Callable[[], None]] = []
    base: list[str] = []

    async def hook(request: web.Request) -> web.Response:
        got.append({"path": request.path, "method": request.method, "headers": dict(request.headers),
                    "body": await request.json()})
        return web.json_response({"ok": True})

    def serve() -> None:
        async def main() -> None:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", hook)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            base.append(f"http://127.0.0.1:{port}")
            done = asyncio.Event()
            loop = asyncio.get_running_loop()
            stop.append(lambda: loop.call_soon_threadsafe(done.set))
            started.set()
            await done.wait()
            await runner.cleanup()

        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield base[0], got
    finally:
        stop[0]()
        thread.join(10)


def test_http_target_example(d: Daemon, receiver: tuple[str, list[dict[str, Any]]]) -> None:
    base, got = receiver
    body = json.loads((EXAMPLES / "http-target.json").read_text())
    body["http"]["url"] = body["http"]["url"].replace("http://127.0.0.1:8080", base)
    job = d.add_job(body)
    res = d.cli("run", job["jobId"], "--wait", "--json", timeout=120)
    assert res.returncode == 0, (res.stdout, res.stderr)
    ex = json.loads(res.stdout)
    wait_for(lambda: got, 10, what="the HTTP target to be called")
    [req] = got
    assert req["method"] == "POST" and req["path"] == "/hooks/usage-report"
    assert req["body"] == {"report": "usage", "period": "15m"}
    assert req["headers"]["Idempotency-Key"] == ex["executionId"]
    assert req["headers"]["Cronwheel-Lease-Epoch"] == str(ex["leaseEpoch"]) == "1"
    assert req["headers"]["X-Source"] == "cronwheel"
    readme = (EXAMPLES / "README.md").read_text()
    assert "http-target.json" in readme and "-d @examples/http-target.json" in readme


# ---------------------------------------------------------------- tenant-setup.sh


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_tenant_setup_script(d: Daemon) -> None:
    env = {"PATH": PATH, "CRONWHEEL_URL": d.url, "CRONWHEEL_ADMIN_TOKEN": d.admin_token}
    res = subprocess.run([str(EXAMPLES / "tenant-setup.sh"), "globex"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, (res.stdout, res.stderr)
    job_id = res.stdout.strip().splitlines()[-1]
    listing = json.loads(res.stdout.strip().splitlines()[-2])
    assert [j["jobId"] for j in listing["jobs"]] == [job_id]
    job = d.get(f"/v1/jobs/{job_id}").json()
    assert job["tenant"] == "globex" and job["name"] == "report"
    [tenant] = [t for t in d.get("/v1/tenants").json()["tenants"] if t["name"] == "globex"]
    assert tenant["weight"] == 2 and tenant["maxRunning"] == 4 and tenant["maxJobs"] == 1000
    assert "tenant token (shown once): " in res.stderr


def test_remote_worker_example_runs_a_queue_job(d: Daemon, tmp_path: Path) -> None:
    job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "queue": "thumbnails", "payload": {"image": "cat.png"}})
    env = {**os.environ, "PATH": PATH, "PYTHONPATH": str(REPO), "CRONWHEEL_TOKEN": d.admin_token,
           "REMOTE_EXAMPLE_OUT": str(tmp_path / "out")}
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen([sys.executable, str(EXAMPLES / "remote_worker.py"), d.url, "thumbnails"], env=env,
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        done = wait_for(lambda: next((e for e in d.executions(job["jobId"]) if e["status"] == "SUCCEEDED"), None),
                        timeout=30, what="the remote worker to run the queue job")
        thumb = json.loads((tmp_path / "out" / "cat.png.thumb.json").read_text())
        assert thumb == {"image": "cat.png", "executionId": done["executionId"], "leaseEpoch": done["leaseEpoch"]}
        assert done["workerId"] not in d.status()["workers"]  # not a local worker
    finally:
        worker.terminate()
        assert worker.wait(30) == 0, log.read_text()


@pytest.mark.postgres
def test_three_node_cluster_example_shares_the_buckets(postgres_dsn: str, tmp_path: Path) -> None:
    base = tmp_path / "cluster"
    env = {**os.environ, "PATH": PATH, "PYTHONPATH": str(REPO), "PORT_BASE": "0",
           "CRONWHEEL": f"{sys.executable} -m cronwheel"}
    res = subprocess.run([str(EXAMPLES / "cluster-3-nodes.sh"), postgres_dsn, str(base)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    pids = [int((base / f"node{i}.pid").read_text()) for i in (1, 2, 3)]
    try:
        def cluster() -> dict[str, Any] | None:
            out = subprocess.run([sys.executable, "-m", "cronwheel", "--data-dir", str(base / "node1"), "status", "--json"],
                                 env=env, capture_output=True, text=True, timeout=30)
            if out.returncode != 0:
                return None
            info = json.loads(out.stdout).get("cluster") or {}
            owners = info.get("buckets") or {}
            return info if len(owners) == 3 and sum(owners.values()) == 64 else None

        info = wait_for(cluster, timeout=60, what="three nodes sharing the 64 buckets")
        assert sorted(info["buckets"]) == ["node1", "node2", "node3"]
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
        for pid in pids:
            wait_for(lambda pid=pid: not _alive(pid), timeout=40, what=f"node pid {pid} to stop")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False
