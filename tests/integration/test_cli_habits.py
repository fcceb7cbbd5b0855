"""The CLI's habits on a real daemon: `ls` with LEFT and LAST like `systemctl list-timers`,
shell completion of job names and ids (bash, zsh, fish) asked of the daemon, and import's
progress bar on a terminal and silence when piped."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import click
import pytest

from cronwheel.cli.listing import span
from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for


def test_ls_shows_left_and_last(daemon: Daemon) -> None:
    ran = daemon.add_job({"schedule": "@every 1s", "command": "true", "name": "often"})
    daemon.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"})
    wait_for(lambda: any(e.get("startedAt") for e in daemon.executions(ran["jobId"])), 20, what="a first run")
    res = daemon.cli("ls")
    assert res.returncode == 0, res.stderr
    header, *rows = res.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "STATUS", "SCHEDULE", "NEXT", "RUN", "LEFT", "LAST", "LAST", "RESULT", "TARGET"]
    often = next(r for r in rows if " often " in r)
    yearly = next(r for r in rows if " yearly " in r)
    assert " ago " in often  # LAST: it started a moment ago
    assert "days" in yearly and yearly.split()[-2] == "-"  # LEFT in days; never ran


def test_span_reads_like_systemd() -> None:
    assert [span(ms) for ms in (0, 999, 12_000, 3_900_000, 90_061_000, 3 * 86_400_000)] == [
        "0s", "0s", "12s", "1h 5min", "1 day 1h", "3 days"]


def _complete(d: Daemon, shell: str, words: str, incomplete: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_DATA_DIR": str(d.data_dir),
           "_CRONWHEEL_COMPLETE": f"{shell}_complete"}
    env.pop("CRONWHEEL_URL", None)
    if shell == "fish":  # fish passes the word being completed on its own
        env.update(COMP_WORDS=words, COMP_CWORD=incomplete)
    else:
        env.update(COMP_WORDS=f"{words} {incomplete}", COMP_CWORD=str(len(words.split())))
    res = subprocess.run([sys.executable, "-m", "cronwheel"], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.runs_no_jobs
def test_completion_offers_job_names_and_ids(daemon: Daemon) -> None:
    backup = daemon.add_job({"schedule": "@daily", "command": "true", "name": "backup"})
    daemon.add_job({"schedule": "@daily", "command": "true", "name": "report"})
    assert _complete(daemon, "bash", "cronwheel show", "ba").split() == ["plain,backup"]
    assert _complete(daemon, "bash", "cronwheel update", "rep").split() == ["plain,report"]
    zsh = _complete(daemon, "zsh", "cronwheel run", "").splitlines()
    assert "backup" in zsh and backup["jobId"] in zsh and "report" in zsh
    fish = _complete(daemon, "fish", "cronwheel history", backup["jobId"][:4]).splitlines()
    assert any(line.startswith(f"plain,{backup['jobId']}\tbackup") for line in fish), fish
    # no daemon: no completions, and no error on the screen
    daemon.stop()
    assert _complete(daemon, "bash", "cronwheel show", "ba").strip() == ""


def _job_params() -> list[tuple[str, click.Parameter]]:
    """Every argument and option of the command tree (groups' too) that takes a job: a
    metavar naming JOB. (Walked, not listed: a new one is checked without a word here.)"""
    from cronwheel.cli.main import cli

    found: list[tuple[str, click.Parameter]] = []

    def walk(command: click.Command, words: str) -> None:
        ctx = click.Context(command)
        found.extend((words, p) for p in command.params if re.search(r"\bJOB\b", p.make_metavar(ctx)))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, f"{words} {name}")

    walk(cli, "cronwheel")
    return found


@pytest.mark.runs_no_jobs
def test_every_job_argument_and_option_completes_job_names(daemon: Daemon) -> None:
    daemon.add_job({"schedule": "@daily", "command": "true", "name": "backup"})
    params = _job_params()
    # those the testers found silent, at least
    assert {"cronwheel backfill", "cronwheel ping", "cronwheel logs", "cronwheel chain", "cronwheel add"} <= {w for w, _ in params}
    silent = []
    for words, param in params:
        before = words if isinstance(param, click.Argument) else f"{words} {param.opts[0]}"
        if _complete(daemon, "bash", before, "ba").split() != ["plain,backup"]:
            silent.append(f"{before} ba<TAB>")
    assert _complete(daemon, "bash", "cronwheel chain backup --on-failure", "ba").split() == ["plain,backup"]
    assert silent == []


def _crontab(n: int) -> str:
    return "".join(f"{i % 60} 3 * * * echo line{i}\n" for i in range(n))


@pytest.mark.runs_no_jobs
def test_import_shows_progress_on_a_terminal_only(tmp_path, daemon: Daemon) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text(_crontab(1200))
    piped = daemon.cli("import", str(crontab))
    assert piped.returncode == 0 and "importing" not in piped.stderr and "━" not in piped.stderr
    crontab.write_text(_crontab(2500))  # 1,300 new lines (three batches) and 1,200 already there

    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_DATA_DIR": str(daemon.data_dir), "COLUMNS": "100"}
    env.pop("CRONWHEEL_URL", None)
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "cronwheel", "import", str(crontab)],
                            stdout=subprocess.DEVNULL, stderr=child, env=env)
    os.close(child)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(60) == 0
    os.close(main)
    text = seen.decode(errors="replace")
    assert "importing" in text and "1300 jobs created, 1200 already there" in text



def test_careless_words_get_an_answer_that_names_them(daemon: Daemon, tmp_path) -> None:
    """Each of these used to create something odd, blame the wrong argument, print a page of
    HTML or a traceback: now each is refused in words (or shown right), with a failing status."""
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        res = daemon.cli(*args)
        assert "Traceback" not in res.stderr, res
        return res

    res = run("add", "0 * * * *", "--", "--", "echo", "dd")  # one `--` too many
    assert res.returncode == 2 and "give '--' once" in res.stderr, res
    res = run("add", "--tz", "Mars/Olympus", "0 * * * *", "--", "echo")
    assert res.returncode == 2 and "Invalid value for '--tz'" in res.stderr, res
    res = run("add", "--name", "jbgrl2ehbe73gc55f", "@daily", "--", "echo")  # a name shaped like a job id
    assert res.returncode == 1 and "shape of a job id" in res.stderr, res
    for args in (("show", ""), ("calendar", "set", "", "--date", "2026-01-01")):
        res = run(*args)
        assert res.returncode == 1 and "an empty name or id" in res.stderr and "no route" not in res.stderr, res
    res = run("add", "+999999999d", "--", "echo", "far")
    assert res.returncode == 2 and "past the year 9899" in res.stderr, res
    res = run("next", "@daily", "--from", "+999999999d")
    assert res.returncode == 2 and "past the year 9899" in res.stderr, res
    res = run("lint", "@every 99999999999d")  # add refuses it: lint does not call it valid
    assert res.returncode == 1 and "never fires" in res.stderr and "ok:" not in res.stdout, res
    res = run("next", "@daily", "--from", "0999-01-01T00:00:00Z", "-n", "1")
    assert res.returncode == 2 and "is outside 1970..9899" in res.stderr, res
    assert daemon.get("/v1/jobs").json()["jobs"] == []
    # a server that is not a cronwheel daemon: its error page is not printed as the error
    with subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"], cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as server:  # fmt: skip
        try:
            port = wait_for(lambda: _port_of(server), what="the plain HTTP server")
            res = subprocess.run([sys.executable, "-m", "cronwheel", "--url", f"http://127.0.0.1:{port}", "ls"],
                                 capture_output=True, text=True, timeout=60, env=daemon.cli_env())  # fmt: skip
            assert res.returncode == 1 and "not an answer of a cronwheel daemon" in res.stderr, res
            assert "<" not in res.stderr, res
        finally:
            server.kill()


def _port_of(server: subprocess.Popen[str]) -> int | None:
    line = server.stdout.readline() if server.stdout else ""
    return int(line.split(" port ")[1].split()[0]) if " port " in line else None
