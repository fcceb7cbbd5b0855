"""Project hygiene that is easy to let drift: one version (the package metadata, from
pyproject.toml) everywhere it is shown, the licence text matching the declared licence, and
the pre-commit hooks running exactly what `make lint` runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

from click.testing import CliRunner

from cronwheel import __version__
from cronwheel.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_one_version_source() -> None:
    assert __version__ == PYPROJECT["project"]["version"]
    assert CliRunner().invoke(cli, ["--version"]).output.strip() == f"cronwheel, version {__version__}"
    for page in REPO.glob("man/*.[0-9]"):
        th = page.read_text().splitlines()[0]
        assert f'"cronwheel {__version__}"' in th, f"{page.name}: {th}"


def test_workers_and_the_cli_read_the_version_only_when_asked() -> None:
    """importlib.metadata costs every process ~20 ms and a few MiB (each worker of a node).
    Run without site (a development install's finder imports it at start-up)."""
    code = ("import sys, cronwheel, cronwheel.worker.process, cronwheel.cli.main;"
            "print('importlib.metadata' in sys.modules, cronwheel.__version__)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])}
    out = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout.split()  # fmt: skip
    assert out == ["False", __version__]


def test_licence_file_matches_pyproject() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_pre_commit_runs_what_make_lint_runs() -> None:
    makefile = (REPO / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    make_cmds = [line.strip().replace("$(VENV)", ".venv") for line in lint.splitlines()[1:] if line.startswith("\t")]
    hooks = re.findall(r"^\s+entry: (.+)$", (REPO / ".pre-commit-config.yaml").read_text(), re.M)
    assert hooks == make_cmds


def test_changelog_has_this_version() -> None:
    assert re.search(rf"^## \[{re.escape(__version__)}\]", (REPO / "CHANGELOG.md").read_text(), re.M)


def test_no_document_speaks_of_the_retired_completed_job_state() -> None:
    # a job is SUCCEEDED or FAILED once it has no further tick (docs/state-machine.md); the
    # COMPLETED state is gone, and a page or a help text that still names it misleads
    places = [*REPO.glob("man/*.[0-9]"), *REPO.glob("docs/*.md"), REPO / "README.md", REPO / "cronwheel/api/openapi.json",
              *REPO.glob("cronwheel/cli/*.py"), *REPO.glob("cronwheel/api/dashboard/static/*"), *REPO.glob("examples/*")]
    stale = [p.relative_to(REPO).as_posix() for p in places if p.is_file() and re.search(r"\bCOMPLETED\b", p.read_text())]
    assert stale == []


def test_what_people_read_has_counted_nouns() -> None:
    # "1 job", "2 jobs" (core/words.py counted), never "job(s)": the text is built with the count
    lazy = []
    for path in REPO.glob("cronwheel/**/*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            # what is written in string literals, not the code inside an f-string's braces
            text = re.sub(r"\{[^}]*\}", "", "".join(re.findall(r'"[^"]*"', line)))
            if re.search(r"[a-z]\((?:s|es)\)", text.replace("http(s)", "")) and "never" not in text:
                lazy.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert lazy == []
