"""The man pages render without a warning, and cronwheel(1) names every command and option
the CLI has."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import click
import pytest

from cronwheel.cli.main import cli

MAN = Path(__file__).resolve().parents[2] / "man"


@pytest.mark.parametrize("page", ["cronwheel.1", "cronwheel.5", "cronwheel.toml.5"])
def test_renders_without_warnings(page: str) -> None:
    if shutil.which("groff") is None:
        pytest.skip("groff is not installed")
    res = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z", str(MAN / page)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0 and res.stderr == "", res.stderr


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    for name, cmd in group.commands.items():
        out.append((prefix + name, cmd))
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, prefix + name + " "))
    return out


def test_cronwheel_1_documents_every_command_and_option() -> None:
    text = (MAN / "cronwheel.1").read_text().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")
    missing = []
    for path, cmd in [("", cli), *_commands(cli)]:
        if path and path not in text:
            missing.append(f"command {path!r}")
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden:
                for opt in param.opts + param.secondary_opts:
                    if opt not in text:
                        missing.append(f"{path or 'global'} {opt}")
    assert not missing, "man/cronwheel.1 lacks: " + ", ".join(missing)


def test_exit_codes_in_the_man_page_match_the_cli() -> None:
    from cronwheel.cli import exits
    from cronwheel.daemon.options import EX_LASTING, EX_TEMPFAIL  # serve's refusals

    text = (MAN / "cronwheel.1").read_text()
    section = text.split(".SH EXIT STATUS", 1)[1].split(".SH", 1)[0]
    for code in (exits.EX_UNAVAILABLE, exits.EX_DUPLICATE, exits.EX_FENCED, exits.EX_WAIT_TIMEOUT, EX_LASTING, EX_TEMPFAIL):
        assert f".B {code}\n" in section, code
