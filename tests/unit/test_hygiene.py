"""Project hygiene that is easy to let drift: one version (the package metadata, from
pyproject.toml) everywhere it is shown, the licence text matching the declared licence, and
the pre-commit hooks running exactly what `make lint` runs."""

from __future__ import annotations

import re
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
