"""What a command's start imports: the root group loads a command's module when the command is
looked up, so ``cronwheel serve`` (and every daemon a test starts) and ``cronwheel ls`` do not
pay for the modules of the other commands."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.daemon import REPO

#: the modules of client commands that neither serve nor ls use
OTHERS = ("cronwheel.cli.jobs_as_code", "cronwheel.cli.transfer", "cronwheel.cli.dlq", "cronwheel.cli.exporting",
          "cronwheel.cli.admin")
#: and those that ls uses (cli.jobs imports them) but serve does not
CLIENT = ("cronwheel.cli.jobs", "cronwheel.cli.beyondcron", "cronwheel.cli.jobedit", "cronwheel.cli.notify")


def _loaded_after_lookup(command: str) -> set[str]:
    code = ("import sys, click\n"
            "from cronwheel.cli.main import cli\n"
            f"assert cli.get_command(click.Context(cli), {command!r}) is not None\n"
            "print(*sorted(m for m in sys.modules if m.startswith('cronwheel.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(("command", "module"), [("serve", "cronwheel.cli.node"), ("ls", "cronwheel.cli.jobs")])
def test_a_command_loads_its_own_module_and_not_the_others(command: str, module: str) -> None:
    loaded = _loaded_after_lookup(command)
    assert module in loaded
    assert loaded.isdisjoint(OTHERS), sorted(loaded & set(OTHERS))
    if command == "serve":
        assert loaded.isdisjoint(CLIENT), sorted(loaded & set(CLIENT))


def test_listing_the_commands_loads_every_one() -> None:
    from cronwheel.cli.main import cli

    commands = dict(cli.commands.items())
    assert {"serve", "ls", "import", "import-crontab", "calendar", "apply", "tenant"} <= commands.keys()
    assert commands["import"].name == "import" and "import-crontab" in (commands["import"].help or "")
    assert isinstance(commands["tenant"], type(commands["dlq"])) and "notify" in commands["tenant"].commands  # type: ignore[attr-defined]
