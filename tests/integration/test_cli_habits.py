"""The CLI's habits on a real daemon: `ls` with LEFT and LAST like `systemctl list-timers`,
shell completion of job names and ids (bash, zsh, fish) asked of the daemon, and import's
progress bar on a terminal and silence when piped."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

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


def _crontab(n: int) -> str:
    return "".join(f"{i % 60} 3 * * * echo line{i}\n" for i in range(n))


def test_import_shows_progress_on_a_terminal_only(tmp_path, daemon: Daemon) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text(_crontab(1200))
    piped = daemon.cli("import", str(crontab))
    assert piped.returncode == 0 and "importing" not in piped.stderr and "━" not in piped.stderr
    crontab.write_text(_crontab(1300))  # 100 new lines and 1,200 already there

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
    assert "importing" in text and "100 jobs created, 1200 already there" in text

