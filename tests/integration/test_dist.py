"""`make dist`: the wheel and the single-file executable (shiv zipapp), run by a Python that
has nothing else installed."""

from __future__ import annotations

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


def test_make_dist_builds_a_wheel_and_a_zipapp_that_serves(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dist = tmp_path / "dist"
    venv_bin = Path(sys.executable).parent
    build = make("-o", ".venv/.installed", "dist", f"DIST={dist}", f"PY={sys.executable}", f"SHIV={venv_bin / 'shiv'}",
                 "STAMP=.venv/.installed")
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    wheels = list(dist.glob("cronwheel-*.whl"))
    pyz = dist / "cronwheel.pyz"
    assert len(wheels) == 1 and pyz.exists() and os.access(pyz, os.X_OK)

    python = bare_python()
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "SHIV_ROOT": str(tmp_path / "shiv"), "LANG": "C.UTF-8"}
    res = subprocess.run([*python, str(pyz), "next", "0 * * * *", "-n", "2", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    fires = json.loads(res.stdout)
    assert len(fires) == 2 and all(f.endswith(":00:00.000Z") for f in fires)

    data = tmp_path / "data"
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(
        [*python, str(pyz), "serve", "--data-dir", str(data), "--http", "127.0.0.1:0", "--workers", "1", "--log-format", "json"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    log.close()
    try:
        def up() -> bool:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            addr = data / "http.addr"
            return addr.exists() and get(addr.read_text().strip() + "/healthz") == 200

        wait_for(up, 30, what="the zipapp's daemon to answer /healthz")
        url = (data / "http.addr").read_text().strip()
        # a job runs: the workers (started through the zipapp) work too
        auth = {"Authorization": "Bearer " + (data / "admin-token").read_text().strip()}
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
        # the dashboard's static files are package data: the wheel (hence the zipapp) has them
        for path in ("/", "/ui/app.js", "/ui/api.js", "/ui/dom.js", "/ui/overview.js", "/ui/style.css", "/ui/favicon.svg"):
            assert get(url + path) == 200, path
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert b'"event":"node.stopped"' in (tmp_path / "serve.log").read_bytes()
