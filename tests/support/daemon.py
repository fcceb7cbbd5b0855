"""A real ``cronwheel serve`` in a subprocess, on a temporary data dir, driven over HTTP and
the CLI. Tests kill it for real (SIGKILL, SIGSTOP) when that is the point."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cronwheel.engine.config import NodeConfig
from tests.support.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
#: how long past its grace a stopping daemon may take: after the grace its workers get SIGTERM
#: then SIGKILL (2 s), and it closes its store, streams and sockets; the rest is a loaded
#: machine's slack. A daemon that outlives grace + this does not stop: a defect, not slowness.
STOP_MARGIN_SEC = 15.0
#: ``Daemon.request(token=ADMIN)``: the daemon's own ``<data-dir>/admin-token`` (the default)
ADMIN = "<admin>"


class ApiResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def __repr__(self) -> str:
        return f"<{self.status} {self.body[:300]!r}>"


class Daemon:
    #: past its grace, how long its stop may take (a test of the fixture itself shortens it)
    stop_margin_sec = STOP_MARGIN_SEC

    def __init__(
        self,
        data_dir: Path,
        *,
        workers: int = 2,
        slots: int = 4,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        nofile: int | tuple[int, int] | None = None,
        runs_no_jobs: bool = False,
        stop_grace: float | None = None,
    ) -> None:
        """``nofile``: start the daemon with this file limit, soft and hard (an int), or
        ``(soft, hard)``: a soft limit below the hard one, which the daemon should raise.
        ``runs_no_jobs``: the test means it to run nothing; ``stop`` counts the due executions
        still waiting for a slot (``due_at_stop``), which such a daemon should never have.
        ``stop_grace``: how long its stop may hold running executions, when the test knows
        better than the daemon's configured grace (which ``start`` reads: ``grace_sec``)."""
        self.data_dir = data_dir
        self.workers = workers
        self.slots = slots
        self.args = args
        self.env = env or {}
        self.nofile = nofile
        self.runs_no_jobs = runs_no_jobs
        self.due_at_stop = 0
        self.stop_grace = stop_grace
        self.grace_sec: float = NodeConfig.grace_sec if stop_grace is None else stop_grace
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}.log"
        self.url = ""
        self._log_offset = 0
        self._events: list[dict[str, Any]] = []

    # ---- lifecycle
    def start(self, timeout: float = 30) -> Daemon:
        self.launch()

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.log_tail()}")
            addr = self.data_dir / "http.addr"
            if not addr.exists():
                return False
            self.url = addr.read_text().strip()
            return self.get("/healthz", token=None).status == 200

        wait_for(up, timeout, what="daemon to answer /healthz")
        wait_for(lambda: self.event("node.started"), timeout, what="node.started event")
        wait_for(lambda: (self.status().get("workers") or {}).get("count", 0) >= self.workers, timeout, what="workers connected")
        if self.stop_grace is None:
            self.grace_sec = self.configured_grace()
        return self

    def configured_grace(self) -> float:
        """The stop grace the daemon runs with (its flag, environment or file), as it says."""
        answer = self.get("/v1/config")
        if answer.status != 200:  # a test that revoked or replaced the admin token: the default
            return NodeConfig.grace_sec
        value = next((k["value"] for k in answer.json()["keys"] if k["key"] == "grace_sec"), None)
        return NodeConfig.grace_sec if value is None else float(value)

    def launch(self) -> None:
        """Start the process, waiting for nothing (``start`` waits until it serves)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "http.addr").unlink(missing_ok=True)
        env = {**os.environ, "PYTHONPATH": str(REPO), **self.env}
        env.pop("CRONWHEEL_URL", None)
        cmd = [
            sys.executable, "-m", "cronwheel", "serve",
            "--data-dir", str(self.data_dir), "--http", "127.0.0.1:0",
            "--workers", str(self.workers), "--slots", str(self.slots),
            "--log-format", "json", *self.args,
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it
        limit = (self.nofile, self.nofile) if isinstance(self.nofile, int) else self.nofile

        def low_file_limit() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, limit)

        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.data_dir.parent,
                                     start_new_session=True, preexec_fn=low_file_limit if limit is not None else None)
        log.close()

    def stop(self, timeout: float | None = None) -> int:
        """SIGTERM, then wait for the exit up to ``timeout`` (default: its grace and
        its margin); past it the daemon is killed and the test fails with its log."""
        if timeout is None:
            timeout = self.grace_sec + self.stop_margin_sec
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        if self.runs_no_jobs:
            with contextlib.suppress(OSError):  # not answering: whatever ails it fails the test elsewhere
                self.due_at_stop = sum((self.status().get("queue") or {}).values())
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"daemon {self.data_dir.name} (pid {self.proc.pid}) did not stop on SIGTERM within {timeout:g}s "
                                 f"(its grace is {self.grace_sec:g}s): killed; its log's last lines:\n{self.log_tail()}") from None

    def kill(self) -> None:
        """kill -9 the daemon (its workers notice the socket closing and exit)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def worker_pids(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.pid), "-f", "cronwheel.worker"], capture_output=True, text=True)
        return [int(x) for x in out.stdout.split()]

    # ---- HTTP
    @property
    def admin_token(self) -> str:
        """The admin token the daemon wrote to ``<data-dir>/admin-token`` on its first start."""
        return (self.data_dir / "admin-token").read_text().strip()

    def auth(self, token: str | None = ADMIN) -> dict[str, str]:
        """The Authorization header for ``token`` (ADMIN: the daemon's admin token; None: none)."""
        if token is None:
            return {}
        return {"Authorization": f"Bearer {self.admin_token if token == ADMIN else token}"}

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        token: str | None = ADMIN,
        timeout: float = 30,
    ) -> ApiResponse:
        """One HTTP call over TCP, as admin unless ``token`` says otherwise (None: no token);
        ``timeout``: how long the client waits for the answer (socket.timeout after it)."""
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        hdrs = {"Content-Type": "application/json", **self.auth(token), **(headers or {})}
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return ApiResponse(resp.status, dict(resp.getheaders()), resp.read())
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.request("POST", path, body if body is not None else {}, **kw)

    def status(self) -> dict[str, Any]:
        r = self.get("/v1/status")
        return r.json() if r.status == 200 else {}

    def add_job(self, body: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        r = self.post("/v1/jobs", body, headers={"Idempotency-Key": key} if key else None)
        assert r.status == 201, r
        return r.json()

    def executions(self, job_id: str, limit: int = 200) -> list[dict[str, Any]]:
        r = self.get(f"/v1/jobs/{job_id}/executions?limit={limit}")
        assert r.status == 200, r
        return r.json()["executions"]

    # ---- CLI
    def cli_env(self) -> dict[str, str]:
        # over TCP the CLI finds the admin token in the data dir, as a local operator's would
        env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_URL": self.url, "CRONWHEEL_DATA_DIR": str(self.data_dir)}
        env.pop("CRONWHEEL_TOKEN", None)
        return env

    def cli(self, *args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cronwheel", *args], capture_output=True, text=True,
                              env=self.cli_env(), input=input, timeout=timeout)

    def cli_popen(self, *args: str, text: bool = True) -> subprocess.Popen[Any]:
        """A CLI command left running (``logs -f``), its stdout and stderr piped; ``reap`` it.
        It gets SIGINT at its default, as a shell's foreground command does, for the tests'
        Ctrl-C: a suite run in the background (``nohup make test &``) ignores SIGINT, and so
        would every command it started."""
        return subprocess.Popen([sys.executable, "-m", "cronwheel", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=text, env=self.cli_env(), preexec_fn=_ctrl_c_default)

    # ---- the event log
    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        with open(self.log_path, "rb") as fh:
            fh.seek(self._log_offset)
            chunk = fh.read()
        complete, _, _ = chunk.rpartition(b"\n")
        if complete:
            self._log_offset += len(complete) + 1
            for line in complete.split(b"\n"):
                try:  # under journald each line starts with its priority, <6>{...}
                    record = json.loads(line[3:] if line[:1] == b"<" and line[2:3] == b">" else line)
                except ValueError:
                    continue  # a traceback or a stray print: kept in the log file for humans
                if isinstance(record, dict) and "event" in record:
                    self._events.append(record)
        return [e for e in self._events if name is None or e["event"] == name]

    def event(self, name: str, **match: Any) -> dict[str, Any] | None:
        for e in self.events(name):
            if all(e.get(k) == v for k, v in match.items()):
                return e
        return None

    def wait_event(self, name: str, timeout: float = 20.0, **match: Any) -> dict[str, Any]:
        """The first ``name`` event matching ``match``, waited for: an event line is written after
        the commit it tells of, so a state already seen through the API may not be logged yet."""
        return wait_for(lambda: self.event(name, **match), timeout, what=f"a {name} event matching {match}")

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return "(no log)"


def _ctrl_c_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reap(p: subprocess.Popen[Any]) -> None:
    """End a process from ``Daemon.cli_popen`` (if it still runs) and close its pipes."""
    if p.poll() is None:
        p.kill()
    p.wait(10)
    for stream in (p.stdout, p.stderr):
        if stream is not None:
            stream.close()


def gated_run(daemon: Daemon, tmp_path: Path, **fields: Any) -> tuple[str, Path]:
    """A one-off job (one attempt) whose run starts now and holds until the file it returns is
    created; returns once the run has started. ``fields``: more of the job's fields."""
    started, release = tmp_path / "gate-started", tmp_path / "gate-release"
    command = f"touch {started}; while [ ! -e {release} ]; do sleep 0.05; done"
    job = daemon.add_job({"runAt": "+0s", "command": command, "retryPolicy": {"maxAttempts": 1}, **fields})
    wait_for(started.exists, what="the gated run to start")
    return job["jobId"], release


def assert_ran_once_unreaped(daemon: Daemon, job_id: str) -> None:
    """The job's one execution ends SUCCEEDED at its first epoch, its lease never reaped."""
    ended = wait_for(lambda: [e for e in daemon.executions(job_id) if e["status"] != "RUNNING"], timeout=30,
                     what="the run to end")
    assert [(e["status"], e["leaseEpoch"], e["attempt"]) for e in ended] == [("SUCCEEDED", 1, 1)], ended
    assert daemon.events("lease.expired") == []

