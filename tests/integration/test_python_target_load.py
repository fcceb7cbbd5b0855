"""A python target whose ``module:function`` does not load, run by a real daemon's workers:
the run's error names the cause a user can act on, and ``dlq ls`` and ``logs`` show it.

It used to be a traceback of the worker's own frames (``cannot load os:nope: Traceback (most
recent call last): File ".../cronwheel/worker/targets.py" …``), which ``dlq ls`` cut before
the cause."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

#: spec -> the error its run must end with
CASES = {
    "os:nonexistent_fn": "cannot load os:nonexistent_fn: AttributeError: module 'os' has no attribute 'nonexistent_fn'",
    "nosuch_module_cw:f": "cannot load nosuch_module_cw:f: ModuleNotFoundError: No module named 'nosuch_module_cw'",
    "bad_syntax_cw:f": "cannot load bad_syntax_cw:f: SyntaxError: invalid syntax (bad_syntax_cw.py, line 2)",
    "broken_dep_cw:f": "cannot load broken_dep_cw:f: ModuleNotFoundError: No module named 'missing_dep_cw'",
    "os:sep": "cannot load os:sep: TypeError: 'str' object is not callable",
}


def test_a_python_target_that_does_not_load_says_why(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "bad_syntax_cw.py").write_text("x = 1\ndef f(:\n    pass\n")
    (modules / "broken_dep_cw.py").write_text('"""needs a package that is not installed"""\nimport missing_dep_cw\n\n\ndef f():\n    pass\n')
    d = make_daemon(env={"PYTHONPATH": os.pathsep.join((str(REPO), str(modules)))})
    jobs = {spec: d.add_job({"runAt": "+0s", "python": spec, "retryPolicy": {"maxAttempts": 1}})["jobId"] for spec in CASES}

    def all_dead() -> dict[str, dict] | None:
        runs = {spec: d.executions(job) for spec, job in jobs.items()}
        if all(len(r) == 1 and r[0]["status"] == "DEAD" for r in runs.values()):
            return {spec: r[0] for spec, r in runs.items()}
        return None

    dead = wait_for(all_dead, 30, what="every run dead-lettered")
    for spec, error in CASES.items():
        assert dead[spec]["error"] == error, dead[spec]
        run = d.get(f"/v1/executions/{dead[spec]['executionId']}").json()
        assert run["error"] == error
        # what the module's own code adds is the output, never the worker's frames
        assert "cronwheel" not in (run.get("output") or ""), run
    outputs = {spec: d.get(f"/v1/executions/{dead[spec]['executionId']}").json().get("output") for spec in CASES}
    assert outputs["os:nonexistent_fn"] is None and outputs["nosuch_module_cw:f"] is None and outputs["os:sep"] is None
    assert 'bad_syntax_cw.py", line 2' in outputs["bad_syntax_cw:f"] and "def f(:" in outputs["bad_syntax_cw:f"]
    assert outputs["broken_dep_cw:f"].splitlines() == [
        "Traceback (most recent call last):",
        f'  File "{modules / "broken_dep_cw.py"}", line 2, in <module>',
        "    import missing_dep_cw",
        "ModuleNotFoundError: No module named 'missing_dep_cw'",
    ]

    listed = d.cli("dlq", "ls")
    assert listed.returncode == 0, listed.stderr
    for spec, error in CASES.items():  # whole, on the row of its execution
        (row,) = [line for line in listed.stdout.splitlines() if dead[spec]["executionId"] in line]
        assert row.endswith(error), row

    history = d.cli("history", jobs["os:nonexistent_fn"], "--json")
    assert history.returncode == 0 and json.loads(history.stdout)[0]["error"] == CASES["os:nonexistent_fn"], history

    shown = d.cli("logs", dead["broken_dep_cw:f"]["executionId"])
    assert shown.returncode == 0, shown.stderr
    assert "    import missing_dep_cw" in shown.stdout
    assert f"DEAD: {CASES['broken_dep_cw:f']}" in shown.stderr
