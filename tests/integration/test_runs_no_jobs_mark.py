"""The ``runs_no_jobs`` mark (tests/conftest.py): its daemons start with no local worker, and a
test so marked that does run a job fails, naming the mark, rather than passing on a daemon that
ran nothing."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INNER = '''
import pytest
from tests.support.wait import wait_for


@pytest.mark.runs_no_jobs
def test_marked_but_runs_a_job(daemon):
    assert daemon.workers == 0
    job = daemon.add_job({"runAt": "+0s", "command": "true", "retryPolicy": {"maxAttempts": 1}})
    wait_for(lambda: daemon.executions(job["jobId"]), timeout=10, what="its execution to exist")


@pytest.mark.runs_no_jobs
def test_marked_and_runs_none(daemon):
    assert daemon.workers == 0
    daemon.add_job({"schedule": "0 0 1 1 *", "command": "true"})


@pytest.mark.runs_no_jobs
def test_marked_but_asks_for_workers(make_daemon):
    assert make_daemon(workers=1).workers == 1
'''


def test_a_marked_test_that_runs_a_job_fails_naming_the_mark(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_inprocess("-p", "tests.conftest", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_marked_but_runs_a_job*",
                                 "*due executions waited for a worker on node (1): the test is marked runs_no_jobs, yet it runs jobs*"])
