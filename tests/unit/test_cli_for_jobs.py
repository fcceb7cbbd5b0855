"""What jobs get to find `cronwheel`: the daemon's own executable, appended to PATH."""

from __future__ import annotations

import zipfile
from pathlib import Path

from cronwheel.daemon.options import cli_for_jobs


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_venv_script_is_appended_to_path(tmp_path: Path) -> None:
    script = _exe(tmp_path / "venv" / "bin" / "cronwheel")
    env = cli_for_jobs(str(script), str(tmp_path / "venv" / "bin" / "python"), "/usr/bin:/bin")
    assert env == {"CRONWHEEL_CLI": str(script), "PATH": f"/usr/bin:/bin:{script.parent}"}


def test_python_m_cronwheel_finds_the_script_next_to_the_interpreter(tmp_path: Path) -> None:
    script = _exe(tmp_path / "bin" / "cronwheel")
    env = cli_for_jobs("/src/cronwheel/__main__.py", str(tmp_path / "bin" / "python3"), f"{tmp_path / 'bin'}:/bin")
    assert env == {"CRONWHEEL_CLI": str(script)}  # already on PATH: left as it is


def test_a_zipapp_is_run_through_the_interpreter(tmp_path: Path) -> None:
    app = tmp_path / "cronwheel.pyz"
    with zipfile.ZipFile(app, "w") as z:
        z.writestr("__main__.py", "")
    assert cli_for_jobs(str(app), "/usr/bin/python3", "/bin") == {"CRONWHEEL_CLI": f"/usr/bin/python3 {app}"}


def test_nothing_found_adds_nothing(tmp_path: Path) -> None:
    assert cli_for_jobs("/src/cronwheel/__main__.py", str(tmp_path / "python3"), "/bin") == {}
