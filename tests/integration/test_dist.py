"""`make dist`: the wheel and the single-file executable (shiv zipapp), run by a Python that
has nothing else installed."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemon import REPO
from tests.support.wait import wait_for

pytestmark = pytest.mark.slow


def bare_python() -> list[str]:
    """A Python of the same minor version without our dependencies (a machine with only
    Python), else this one in isolated mode."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if not os.access(candidate, os.X_OK):
            continue
        probe = subprocess.run(
            [candidate, "-I", "-c", f"import sys; print(sys.version_info[:2] == {tuple(sys.version_info[:2])!r}); import click"],
            capture_output=True, text=True, timeout=30,
        )
        if probe.stdout.strip() == "True" and "ModuleNotFoundError" in probe.stderr:
            return [candidate, "-I"]
    return [sys.executable, "-I"]


def make(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``make -C REPO ARGS``, one at a time across the test workers: `make dist` builds the
    wheel in the checkout's build/, which a concurrent one would delete under it."""
    lock = Path(tempfile.gettempdir()) / f"cronwheel-make-{hashlib.sha256(bytes(REPO)).hexdigest()[:12]}.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        return subprocess.run(["make", "-C", str(REPO), *args], capture_output=True, text=True, timeout=timeout)


def get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return int(resp.status)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `make dist` for the module's tests: the wheel and the zipapp, in a directory of their own."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = tmp_path_factory.mktemp("dist")
    venv_bin = Path(sys.executable).parent
    build = make("-o", ".venv/.installed", "dist", f"DIST={out}", f"PY={sys.executable}", f"SHIV={venv_bin / 'shiv'}",
                 "STAMP=.venv/.installed")
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return out


def bare_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "SHIV_ROOT": str(tmp_path / "shiv"), "LANG": "C.UTF-8"}


@contextlib.contextmanager
def zipapp_daemon(pyz: Path, tmp_path: Path, *args: str) -> Iterator[tuple[str, dict[str, str]]]:
    """`python3 cronwheel.pyz serve ARGS` by a bare Python: (its URL, an admin Authorization
    header) once it answers; stopped with SIGTERM after, which must end it cleanly."""
    data = tmp_path / "data"
    log_path = tmp_path / "serve.log"
    log = open(log_path, "wb")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(
        [*bare_python(), str(pyz), "serve", "--data-dir", str(data), "--http", "127.0.0.1:0", "--workers", "1",
         "--log-format", "json", *args],
        stdout=log, stderr=subprocess.STDOUT, env=bare_env(tmp_path), start_new_session=True,
    )
    log.close()
    try:
        def up() -> bool:
            assert proc.poll() is None, log_path.read_text()[-3000:]
            addr = data / "http.addr"
            return addr.exists() and get(addr.read_text().strip() + "/healthz") == 200

        wait_for(up, 60, what="the zipapp's daemon to answer /healthz")
        yield (data / "http.addr").read_text().strip(), {"Authorization": "Bearer " + (data / "admin-token").read_text().strip()}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert b'"event":"node.stopped"' in log_path.read_bytes()


def run_a_job(url: str, auth: dict[str, str]) -> None:
    """A job runs: the workers, started through the zipapp, work too."""
    req = urllib.request.Request(
        url + "/v1/jobs", method="POST", headers={"Content-Type": "application/json", **auth},
        data=json.dumps({"runAt": "2000-01-01T00:00:00Z", "command": "echo from-pyz"}).encode(),
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        job_id = json.loads(resp.read())["jobId"]

    def succeeded() -> bool:
        with urllib.request.urlopen(urllib.request.Request(f"{url}/v1/jobs/{job_id}/executions", headers=auth), timeout=5) as resp:
            return any(e["status"] == "SUCCEEDED" for e in json.loads(resp.read())["executions"])

    wait_for(succeeded, 30, what="a job to run under the zipapp")


def test_make_dist_builds_a_wheel_and_a_zipapp_that_serves(dist: Path, tmp_path: Path) -> None:
    wheels = list(dist.glob("cronwheel-*.whl"))
    pyz = dist / "cronwheel.pyz"
    assert len(wheels) == 1 and pyz.exists() and os.access(pyz, os.X_OK)
    res = subprocess.run([*bare_python(), str(pyz), "next", "0 * * * *", "-n", "2", "--json"], capture_output=True,
                         text=True, env=bare_env(tmp_path), timeout=60)
    assert res.returncode == 0, res.stderr
    fires = json.loads(res.stdout)
    assert len(fires) == 2 and all(f.endswith(":00:00.000Z") for f in fires)

    with zipapp_daemon(pyz, tmp_path) as (url, auth):
        run_a_job(url, auth)
        # the dashboard's static files are package data: the wheel (hence the zipapp) has them
        for path in ("/", "/ui/app.js", "/ui/api.js", "/ui/dom.js", "/ui/overview.js", "/ui/style.css", "/ui/favicon.svg"):
            assert get(url + path) == 200, path


@pytest.mark.postgres
def test_the_zipapp_carries_psycopg_and_serves_a_postgresql_store(dist: Path, tmp_path: Path, postgres_dsn: str) -> None:
    """The installed single file offered PostgreSQL stores (the shipped configuration,
    docs/scaling.md) and refused them: "the PostgreSQL store needs psycopg". It carries the
    postgres extra, its compiled libpq included, and runs a job on PostgreSQL with nothing
    else installed."""
    pyz = dist / "cronwheel.pyz"
    with zipfile.ZipFile(pyz) as zf:
        packages = {n.split("/")[1] for n in zf.namelist() if n.startswith("site-packages/") and n.count("/") > 1}
    assert {"psycopg", "psycopg_binary"} <= packages, sorted(packages)
    with zipapp_daemon(pyz, tmp_path, "--store", postgres_dsn) as (url, auth):
        with urllib.request.urlopen(urllib.request.Request(url + "/v1/status", headers=auth), timeout=10) as resp:
            assert json.loads(resp.read())["store"]["kind"] == "postgresql"
        run_a_job(url, auth)
