"""The README's two-minute tour, replayed against a real ``cronwheel serve`` exactly as
written: the commands are read from README.md itself, run in bash after the
``source .venv/bin/activate`` the README asks for, from a directory whose ``./.cronwheel``
is the daemon's (as under ``make serve``), with no other environment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.daemon import REPO, Daemon
from tests.support.readme import run_as_reader, section, shell_lines
from tests.support.wait import wait_for

README = REPO / "README.md"


def test_the_readme_tour_runs_as_written(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    tour = section(README, "## A two-minute tour")
    assert "make serve" in tour and "source .venv/bin/activate" in tour, "the tour's setup changed: update this test"
    commands = shell_lines(tour)
    assert len(commands) >= 10, commands
    # `make serve` is `cronwheel serve` on ./.cronwheel (a free port instead of 7878: this
    # machine may run other daemons)
    where = tmp_path / "checkout"
    where.mkdir()
    make_daemon("checkout/.cronwheel", workers=1)

    # in the order run: a command written twice (`cronwheel ls`) has an output each time
    outputs: list[tuple[str, str]] = []
    # what a reader waits to see before reading on: the every-second job has run
    awaited = {"cronwheel history ticker": "SUCCEEDED"}
    for command in commands:
        # a reader types at human speed: a command that needs a run to have happened (logs,
        # history) is retried until then
        def attempt(command: str = command) -> str | None:
            res = run_as_reader(command, where)
            text = res.stdout + res.stderr
            assert "Traceback" not in text, (command, res.stderr)
            if res.returncode != 0 or awaited.get(command, "") not in text:
                return None
            return text + "\n"  # a command with no output, such as mkdir, still counts as done

        outputs.append((command, wait_for(attempt, timeout=30, what=f"`{command}` to succeed")))

    def out(prefix: str, after: str | None = None) -> str:
        """The output of the first command starting with ``prefix`` (run after the first
        command starting with ``after``)."""
        start = 0 if after is None else next(i for i, (k, _) in enumerate(outputs) if k.startswith(after))
        return next(v for k, v in outputs[start:] if k.startswith(prefix))

    assert "ticker" in out("cronwheel ls") and "hello" in out("cronwheel ls")
    assert "SUCCEEDED" in out("cronwheel history ticker")
    assert "execution " in out("cronwheel logs ticker")
    assert "H" in out("cronwheel lint '0 * * * *'")

    # notifications and pings: the rule is saved, the watched job is pinged once as the
    # backup host's crontab line would, and that ping is a successful run of it
    assert "nightly" in out("cronwheel ls", after="cronwheel add '0 3 * * *' --name nightly --notify")
    watched = out("cronwheel watch offsite-backup 26h")
    assert "Watching job" in watched and "expects a success ping every 26h" in watched
    assert "Pinged" in out("cronwheel ping offsite-backup") and ": success" in out("cronwheel ping offsite-backup")
    assert "SUCCEEDED" in out("cronwheel history offsite-backup")
    row = next(line for line in out("cronwheel ls", after="cronwheel ping offsite-backup").splitlines()
               if "offsite-backup" in line)  # fmt: skip
    assert "pinged, every 26h" in row and "SUCCEEDED" in row and "OVERDUE" not in row, row
    assert "Traceback" not in out("cronwheel notifications")


def test_coming_from_cron_runs_as_written_on_a_machine_without_crontab(make_daemon: Callable[..., Daemon],
                                                                       tmp_path: Path) -> None:
    """A fresh machine has no `crontab` command (Debian's cron package): the section's
    example crontab stands in for the reader's, and every command of it works as written."""
    text = section(README, "## Coming from cron")
    commands = shell_lines(text)
    assert commands[0].startswith("crontab -l 2>/dev/null > mine.crontab || cat > mine.crontab <<'CRON'"), commands
    where = tmp_path / "checkout"
    where.mkdir()
    make_daemon("checkout/.cronwheel", workers=1)
    # no crontab, whatever this machine has: a function is found before any command on PATH
    absent = "crontab() { echo 'bash: crontab: command not found' >&2; return 127; }"
    outputs = []
    for command in commands:
        res = run_as_reader(f"{absent}; {command}", where)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (command, res)
        outputs.append(res.stdout + res.stderr)
    assert "2 jobs would be created" in outputs[1] and "2 jobs created" in outputs[2], outputs
    back = (where / "back.crontab").read_text()
    assert "*/15 * * * * /usr/local/bin/poll" in back and "CRON_TZ=Europe/Paris" in back, back
    again = run_as_reader("cronwheel import-crontab --dry-run back.crontab", where)
    assert again.returncode == 0 and "0 jobs would be created, 2 already there" in again.stderr, again
