from __future__ import annotations

import contextlib
import os
import secrets
import signal
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon
from tests.support.postgres import PostgresServer, session_server
from tests.support.procs import SESSION_VAR, STARTED_BY_VAR, carrying
from tests.support.wait import Timeout, wait_for

# a host's /etc/cronwheel/cronwheel.toml must not reach the daemons and CLIs the tests start
os.environ.setdefault("CRONWHEEL_CONFIG", "")


def _bytecode_cache() -> str:
    """A directory of our own in /tmp, kept across runs; one another user made is not trusted
    (its bytecode would run as ours): a fresh one replaces it."""
    path = os.path.join(tempfile.gettempdir(), f"cronwheel-tests-pycache-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return tempfile.mkdtemp(prefix="cronwheel-tests-pycache-")
    return path


# Every daemon, local worker and CLI the tests start (hundreds of processes) imports the package afresh.
# Under PYTHONDONTWRITEBYTECODE (set in many containers) each would compile it from source
# again: ~0.2 CPU-s more per daemon start. They cache their bytecode outside the checkout
# instead, so that the source tree stays as the developer asked; stale files are never read
# (Python checks each against its source).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) and "PYTHONPYCACHEPREFIX" not in os.environ:
    os.environ["PYTHONPYCACHEPREFIX"] = _bytecode_cache()


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """Fail the session's last test if a process the session started (a daemon, a worker, a
    job, a CLI, a PostgreSQL cluster) is still alive when every fixture has been torn down,
    and kill it: one left running slows every later test and can hold their ports and files.
    The first fixture of the session, so the last torn down. Every process started meanwhile
    inherits a variable naming this session (a pytester run in this process nests one of its
    own), which is how they are found: a /proc scan, a few milliseconds."""
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    with _environ_set(SESSION_VAR, token):
        yield
        if carrying(SESSION_VAR, token):  # some may still be on their way out (a killed daemon's workers)
            with contextlib.suppress(Timeout):
                wait_for(lambda: not carrying(SESSION_VAR, token), LEFT_EXIT_SEC, interval=0.1, what="")
        left = carrying(SESSION_VAR, token)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if left:
            pytest.fail("processes the tests started outlived the session (killed now):\n"
                        + "\n".join(f"  {pid}: {what}" for pid, what in sorted(left.items())), pytrace=False)


#: how long the session's processes get to end after its last teardown
LEFT_EXIT_SEC = 10


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[Any]:
    """Each process the test starts carries its id: the session's end names the test that
    left one behind."""
    with _environ_set(STARTED_BY_VAR, item.nodeid):
        return (yield)


@contextlib.contextmanager
def _environ_set(name: str, value: str) -> Iterator[None]:
    """``os.environ[name] = value`` for the block, then as it was (a pytester session nests)."""
    outer = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if outer is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = outer


@pytest.fixture
def make_daemon(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Start real daemons on temporary data dirs; every one is stopped afterwards. One that
    has not stopped within its grace and a margin (Daemon.stop) fails the test with its last
    log lines, and is killed: a daemon that will not stop is a defect, never a slow test.

    In a test marked ``runs_no_jobs`` a daemon starts with no local worker unless ``workers``
    is given (its two default workers cost ~0.2 CPU-s to start, a third of the daemon's own
    start); one that still has a due execution waiting for a slot when it stops fails the test,
    so a test that does run jobs cannot pass on a daemon that ran none."""
    started: list[Daemon] = []
    idle = request.node.get_closest_marker("runs_no_jobs") is not None

    def make(name: str = "node", **kw) -> Daemon:
        if idle and "workers" not in kw:
            kw.update(workers=0, runs_no_jobs=True)
        d = Daemon(tmp_path / name, **kw)
        started.append(d)
        return d.start()

    yield make
    workers: dict[int, str] = {}
    failures: list[str] = []
    for d in started:
        running = d.proc is not None and d.proc.poll() is None
        workers.update(dict.fromkeys(d.worker_pids() if running else [], d.data_dir.name))
        try:  # within its grace and a margin (Daemon.stop): one that will not stop is a defect
            d.stop()
        except AssertionError as exc:  # killed by stop(), so that nothing is left behind
            failures.append(str(exc))
    # a worker outlives its daemon only by a bug (one did, idle and deaf to SIGTERM, until a
    # stop's bye met a grant): each has its deadline (worker/lifeline.py) to see its daemon gone
    left = _outliving_workers(workers, WORKER_EXIT_SEC)
    if left:
        failures.append(f"local workers outlived their daemons: {left} (killed now)")
    waiting = [f"{d.data_dir.name} ({d.due_at_stop})" for d in started if d.due_at_stop]
    if waiting:
        failures.append(f"due executions waited for a worker on {', '.join(waiting)}: the test is marked runs_no_jobs, "
                        "yet it runs jobs; drop the mark, or give that daemon workers")
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


#: how long a daemon's local workers may take to end after it: their stop deadline and more
WORKER_EXIT_SEC = 20


def _outliving_workers(workers: dict[int, str], within_sec: float) -> list[str]:
    """The workers of ``workers`` (pid: daemon) still alive after ``within_sec``, killed."""
    def alive() -> list[int]:
        out = []
        for pid in workers:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"cronwheel.worker" in cmdline and Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z":
                out.append(pid)
        return out

    with contextlib.suppress(Timeout):
        wait_for(lambda: not alive(), within_sec, interval=0.1, what="local workers to end")
    pids = alive()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return [f"{pid} of {workers[pid]}" for pid in pids]


@pytest.fixture
def daemon(make_daemon: Callable[..., Daemon]) -> Daemon:
    return make_daemon()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL (tests/support/postgres.py): skipped loudly when there is
    none, failed instead when CRONWHEEL_REQUIRE_POSTGRES=1. Started on first use only."""
    with session_server() as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database at the latest schema, for this test alone."""
    with postgres_server.database() as dsn:
        yield dsn
