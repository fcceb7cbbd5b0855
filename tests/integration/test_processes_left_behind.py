"""The session's end (tests/conftest.py: nothing_left_behind): a process a test started and
left running fails the session's last test, naming it and the test that started it, and is
killed, so that no later run finds it."""

from __future__ import annotations

import pytest

from tests.support.procs import alive

pytest_plugins = ["pytester"]

INNER = '''
import os
import subprocess


def test_leaves_a_process_behind():
    # in the background of a shell that ends: an orphan, as a daemon's job outliving it is
    out = subprocess.run(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True, check=True)
    with open(os.path.join(os.path.dirname(__file__), "stray.pid"), "w") as fh:
        fh.write(out.stdout.strip())


def test_starts_and_ends_one():
    subprocess.run(["true"], check=True)
'''


def test_a_process_left_running_fails_the_session_and_is_killed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_inprocess("-p", "tests.conftest", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=1)
    pid = int((pytester.path / "stray.pid").read_text())
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_starts_and_ends_one*",
                                 "*processes the tests started outlived the session (killed now):*",
                                 f"*{pid}: sleep 300 (in *, started by test_inner.py::test_leaves_a_process_behind)*"])
    assert not alive(pid), f"the stray {pid} was left running"
