"""Every file in examples/ runs as written, against a real daemon: the commands are read
from examples/README.md itself and run in bash after ``source .venv/bin/activate`` (what the
README asks for) from a directory that looks like the checkout (``examples/`` in it) and whose
``./.cronwheel`` is the daemon's, as under ``make serve``. Only what the text leaves to the
reader is replaced: a token it shows as cw_…, the daemon's address
(a free port here, not 7878: other daemons share this machine)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import REPO, Daemon, free_port
from tests.support.procs import alive
from tests.support.readme import (
    ACTIVATE,
    link_checkout,
    reader_env,
    run_as_reader,
    section,
    shell_lines,
)
from tests.support.threadserver import recording_endpoint
from tests.support.wait import wait_for

EXAMPLES = REPO / "examples"
README = EXAMPLES / "README.md"
VENV_BIN = str(Path(sys.executable).parent)


def as_written(heading: str, **replace: str) -> list[str]:
    """The commands under ``heading`` in examples/README.md, each ``old`` text replaced (and
    each one required to be there, so that the README cannot drift from this test)."""
    commands = shell_lines(section(README, heading))
    text = "\n".join(commands)
    for old in replace:
        assert old in text, f"{old!r} is no longer in {heading!r}: update this test"
    out = []
    for command in commands:
        for old, new in replace.items():
            command = command.replace(old, new)
        out.append(command)
    return out


def ok(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, (res.args, res.stdout, res.stderr)
    assert "Traceback" not in res.stdout + res.stderr, res.stderr
    return res.stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    where = tmp_path / "checkout"
    where.mkdir()
    link_checkout(where, "examples")
    return where


@pytest.fixture
def d(make_daemon: Callable[..., Daemon], checkout: Path) -> Daemon:
    # the daemon's own PATH does not have the venv (as under `make serve`, run from a shell
    # that never activated it): its jobs find `cronwheel` because the daemon adds its own
    # directory, not because this test put it there
    path = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p != VENV_BIN)
    return make_daemon("checkout/.cronwheel", env={"PATH": path})


def test_examples_readme_indexes_every_example() -> None:
    index = README.read_text()
    for path in EXAMPLES.iterdir():
        if path.name != "README.md" and not path.name.startswith(("__", ".")):  # __pycache__
            assert path.name in index, path.name
    readme = (REPO / "README.md").read_text()
    for doc in ("man/cronwheel.1", "man/cronwheel.5", "docs/operations.md", "docs/guarantees.md",
                "docs/security.md", "docs/state-machine.md", "examples/"):
        assert doc in readme, doc
        assert (REPO / doc).exists(), doc
    assert "make serve" in index and "source .venv/bin/activate" in index


# ---------------------------------------------------------------- backup-with-fencing.sh


def test_backup_with_fencing_uploads_once(d: Daemon, checkout: Path, tmp_path: Path) -> None:
    # exactly as written: the examples directory into ./backups of the checkout (it once
    # named /srv/data and /mnt/backups, which a fresh machine lacks or only root may make)
    src, dest = checkout / "examples", checkout / "backups"
    script = EXAMPLES / "backup-with-fencing.sh"
    add, run, listing = as_written("## backup-with-fencing.sh")
    ok(run_as_reader(add, checkout))
    ok(run_as_reader(run, checkout))
    job = d.get("/v1/jobs").json()["jobs"][0]
    assert job["name"] == "nightly-backup"
    [ex] = [e for e in d.executions(job["jobId"]) if e["status"] == "SUCCEEDED"]
    archives = sorted(dest.glob("backup-*.tar.gz"))
    assert len(archives) == 1 and not list(dest.glob(".*partial"))
    assert ok(run_as_reader(listing, checkout)).split() == [archives[0].name]
    with tarfile.open(archives[0]) as tar:
        assert "examples" in tar.getnames()
    before = archives[0].stat()

    # the same execution again by hand, as the script's header says (a redelivery, as a
    # retried attempt would see it): duplicate
    by_hand = (f"CRONWHEEL_URL={d.url} CRONWHEEL_TOKEN={d.admin_token} CRONWHEEL_EXECUTION_ID={ex['executionId']} "
               f"CRONWHEEL_LEASE_EPOCH={ex['leaseEpoch']} CRONWHEEL_SCHEDULED_AT={ex['scheduledAt']}")  # fmt: skip
    again = run_as_reader(f"{by_hand} {script} {src} {dest}", checkout)
    assert again.returncode == 0, again.stderr
    assert "duplicate" in again.stderr and "not uploading it again" in again.stdout
    after = sorted(dest.glob("backup-*.tar.gz"))
    assert after == archives and not list(dest.glob(".*partial"))
    assert (after[0].stat().st_ino, after[0].stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    # a zombie attempt (stale lease epoch) of an execution that is over uploads nothing: its
    # effect is a duplicate, or, for an effect nobody recorded yet, it is fenced (exit 4)
    zombie = by_hand.replace(f"CRONWHEEL_LEASE_EPOCH={ex['leaseEpoch']}", "CRONWHEEL_LEASE_EPOCH=0")
    stale = run_as_reader(f"{zombie} {script} {src} {dest}", checkout)
    assert stale.returncode == 0 and "duplicate" in stale.stderr, (stale.stdout, stale.stderr)
    zombie = zombie.replace(f"CRONWHEEL_SCHEDULED_AT={ex['scheduledAt']}", "CRONWHEEL_SCHEDULED_AT=2000-01-01T02:00:00.000Z")
    fenced = run_as_reader(f"{zombie} {script} {src} {dest}", checkout)
    assert fenced.returncode == 4 and "fenced" in fenced.stderr, (fenced.stdout, fenced.stderr)
    assert sorted(dest.glob("backup-*.tar.gz")) == archives and not list(dest.glob(".*partial"))
    assert (archives[0].stat().st_ino, archives[0].stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


# ---------------------------------------------------------------- http-target.json


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A tiny local HTTP endpoint in a thread: ``(base url, received requests)``."""
    with recording_endpoint() as endpoint:
        yield endpoint


def test_http_target_example(d: Daemon, checkout: Path, receiver: tuple[str, list[dict[str, Any]]]) -> None:
    base, got = receiver
    # "Edit the URL, then submit it": the reader's copy of the file, with their endpoint
    body = json.loads((EXAMPLES / "http-target.json").read_text())
    assert body["http"]["url"].startswith("http://127.0.0.1:8080/")
    body["http"]["url"] = body["http"]["url"].replace("http://127.0.0.1:8080", base)
    edited = checkout / "mine"
    (edited / "examples").mkdir(parents=True)
    (edited / "examples" / "http-target.json").write_text(json.dumps(body))
    (edited / ".cronwheel").symlink_to(d.data_dir)  # the reader's ./.cronwheel/admin-token
    script = "\n".join(as_written("## http-target.json", **{"localhost:7878": d.url}))  # one shell: $TOKEN
    job = json.loads(ok(run_as_reader(script, edited)))
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


# ---------------------------------------------------------------- tenant-setup.sh


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.runs_no_jobs
def test_tenant_setup_script(d: Daemon, checkout: Path) -> None:
    [command] = as_written("## tenant-setup.sh", **{"http://127.0.0.1:7878": d.url, " acme": " globex"})
    res = run_as_reader(command, checkout)
    job_id = ok(res).strip().splitlines()[-1]
    listing = json.loads(res.stdout.strip().splitlines()[-2])
    assert [j["jobId"] for j in listing["jobs"]] == [job_id]
    job = d.get(f"/v1/jobs/{job_id}").json()
    assert job["tenant"] == "globex" and job["name"] == "report"
    [tenant] = [t for t in d.get("/v1/tenants").json()["tenants"] if t["name"] == "globex"]
    assert tenant["weight"] == 2 and tenant["maxRunning"] == 4 and tenant["maxJobs"] == 1000
    assert "tenant token (shown once): " in res.stderr and "tenant globex created" in res.stderr
    again = run_as_reader(command, checkout)  # run twice: the tenant is brought to its settings, the job is the same
    assert ok(again).strip().splitlines()[-1] == job_id and "tenant globex updated" in again.stderr, again.stderr


# ---------------------------------------------------------------- fenced_ledger.py


def test_fenced_ledger_example(d: Daemon, checkout: Path) -> None:
    # exactly as written: ./ledger.db of the checkout (it once was /var/lib/ledger.db)
    add, run, dump = as_written("## fenced_ledger.py")
    ok(run_as_reader(add, checkout))
    ok(run_as_reader(run, checkout))
    assert (checkout / "ledger.db").is_file()
    [ex] = [e for e in d.executions(d.get("/v1/jobs").json()["jobs"][0]["jobId"]) if e["status"] == "SUCCEEDED"]
    applied = json.loads(ok(run_as_reader(dump, checkout)))
    assert ex["executionId"] in json.dumps(applied)


# ---------------------------------------------------------------- remote_worker.py


def test_remote_worker_example_runs_a_queue_job(d: Daemon, checkout: Path, tmp_path: Path) -> None:
    job = d.add_job({"runAt": "2000-01-01T00:00:00Z", "queue": "thumbnails", "payload": {"image": "cat.png"}})
    create, start = as_written("## `remote_worker.py` — a remote Python worker for queue targets",
                               **{"http://scheduler:7878": d.url})  # fmt: skip
    token = ok(run_as_reader(create, checkout)).split()[-1]
    assert token.startswith("cw_") and "CRONWHEEL_TOKEN=cw_…" in start
    start = start.replace("CRONWHEEL_TOKEN=cw_…", f"CRONWHEEL_TOKEN={token}")
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        # the handler writes under REMOTE_EXAMPLE_OUT (default /tmp/cronwheel-thumbnails): one per
        # test; `exec env` so that the worker itself gets the stop signal
        worker = subprocess.Popen(["bash", "-c", f"source {VENV_BIN}/activate && exec env {start}"], cwd=checkout,
                                  env={**reader_env(), "REMOTE_EXAMPLE_OUT": str(tmp_path / "out")},
                                  stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        done = wait_for(lambda: next((e for e in d.executions(job["jobId"]) if e["status"] == "SUCCEEDED"), None),
                        timeout=30, what="the remote worker to run the queue job")
        thumb = json.loads((tmp_path / "out" / "cat.png.thumb.json").read_text())
        assert thumb == {"image": "cat.png", "executionId": done["executionId"], "leaseEpoch": done["leaseEpoch"]}
        assert done["workerId"] not in d.status()["workers"]  # not a local worker
    finally:
        worker.terminate()
        assert worker.wait(30) == 0, log.read_text()


# ---------------------------------------------------------------- cluster-3-nodes.sh


@pytest.mark.postgres
def test_three_node_cluster_example_shares_the_buckets(postgres_dsn: str, checkout: Path) -> None:
    start, status, kill_one, stop = as_written("## `cluster-3-nodes.sh` — three nodes on one PostgreSQL",
                                               **{"postgresql://localhost/cronwheel": postgres_dsn})  # fmt: skip
    ok(run_as_reader(start, checkout))
    base = checkout / "cluster"
    pids = [int((base / f"node{i}.pid").read_text()) for i in (1, 2, 3)]
    try:
        def cluster() -> dict[str, Any] | None:
            out = run_as_reader(status.replace("status", "status --json", 1), checkout)
            if out.returncode != 0:
                return None
            info = json.loads(out.stdout).get("cluster") or {}
            owners = info.get("buckets") or {}
            return info if len(owners) == 3 and sum(owners.values()) == 64 else None

        info = wait_for(cluster, timeout=60, what="three nodes sharing the 64 buckets")
        assert sorted(info["buckets"]) == ["node1", "node2", "node3"]
        ok(run_as_reader(kill_one, checkout))
        wait_for(lambda: not alive(pids[1]), timeout=20, what="node2 to die")
        ok(run_as_reader(stop.replace("node*", "node[13]"), checkout))  # node2's pid is gone already
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
        for pid in pids:
            wait_for(lambda pid=pid: not alive(pid), timeout=40, what=f"node pid {pid} to stop")


# ---------------------------------------------------------------- webhook_receiver.py


def test_webhook_receiver_verifies_what_the_daemon_sends(d: Daemon, checkout: Path, tmp_path: Path) -> None:
    port = str(free_port())
    serve, add = as_written("## `webhook_receiver.py` — verify signed webhook notifications",
                            **{"8099": port, "@every 1m": "@every 1s"})  # a free port; a tick now, not in a minute
    log = open(tmp_path / "receiver.log", "w")  # noqa: SIM115 - the receiver's own output, read below
    receiver = subprocess.Popen(["bash", "-c", f"source {ACTIVATE} && {serve}"], cwd=checkout, env=reader_env(),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        wait_for(lambda: _listening(int(port)), 20, what="the example receiver to listen")
        ok(run_as_reader(add, checkout))
        told = wait_for(lambda: "failure: job" in (text := (tmp_path / "receiver.log").read_text()) and text,
                        60, what="the receiver to verify and handle a failure notification")
        assert '" 401' not in told, told  # every delivery's signature verified (the access log says 204)
    finally:
        os.killpg(receiver.pid, signal.SIGTERM)  # bash and the receiver it started
        receiver.wait(10)
        log.close()


def _listening(port: int) -> bool:
    import socket

    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False
