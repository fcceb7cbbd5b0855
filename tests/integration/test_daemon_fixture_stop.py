"""The real-daemon fixture's stop (tests/conftest.py, tests/support/daemon.py): each daemon
gets its own grace, as it runs with it (or as its test says), and one that outlives its grace
and a margin fails its test, with its last log lines, and is killed all the same."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.procs import alive

pytest_plugins = ["pytester"]

INNER = '''
import os
import signal



def test_a_daemon_that_will_not_stop(daemon):
    daemon.stop_margin_sec = 1.0  # not the 15 s a loaded machine may need
    pid = daemon.pid
    with open(os.path.join(os.path.dirname(__file__), "daemon.pid"), "w") as fh:
        fh.write(str(pid))
    os.kill(pid, signal.SIGSTOP)  # deaf to SIGTERM: as hung as a daemon gets
'''


@pytest.mark.runs_no_jobs
def test_a_daemon_that_outlives_its_grace_fails_its_test_and_is_killed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef daemon(make_daemon):\n"
                          "    return make_daemon(args=('--grace-sec', '0'))\n")
    result = pytester.runpytest_inprocess("-p", "tests.conftest", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_a_daemon_that_will_not_stop*",
                                 "*daemon node (pid *) did not stop on SIGTERM within 1s (its grace is 0s): killed*",
                                 '*"event":"node.started"*'])
    pid = int((pytester.path / "daemon.pid").read_text())
    assert not alive(pid), f"the daemon {pid} was left running"


@pytest.mark.runs_no_jobs
def test_each_daemon_s_grace_is_the_one_it_runs_with_unless_its_test_says(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text("grace_sec = 7\n")
    assert make_daemon("flag", args=("--grace-sec", "2.5")).grace_sec == 2.5
    assert make_daemon("file", args=("--config", str(conf))).grace_sec == 7
    assert make_daemon("default").grace_sec == 30  # the daemon's default
    assert make_daemon("told", stop_grace=4).grace_sec == 4
