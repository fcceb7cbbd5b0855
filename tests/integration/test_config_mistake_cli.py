"""A mistake in the configuration file stops what needs it, not every command: ``serve`` and
``config`` refuse (exit 2, the file, line and key), a command that finds the daemon through
the file's data_dir refuses when that key is the one it cannot read, and the others (``next``,
``--help``, ``ls`` on a daemon the file does name) work after one warning line naming the
file, line and key. Real processes, a real daemon."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for


def cronwheel(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CRONWHEEL_CONFIG": str(config)}
    for name in ("CRONWHEEL_DATA_DIR", "STATE_DIRECTORY", "CRONWHEEL_URL", "CRONWHEEL_TOKEN"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "cronwheel", *args], capture_output=True, text=True, env=env,
                          timeout=60, cwd=config.parent)


def test_a_typo_in_another_key_warns_once_and_the_commands_go_on(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    d = make_daemon()
    d.add_job({"schedule": "0 0 1 1 *", "command": "true", "name": "yearly"})
    config = tmp_path / "cronwheel.toml"
    config.write_text(f'data_dir = "{d.data_dir}"\nworker = 4\n')
    warning = f"warning: {config}:2: key 'worker': unknown key (did you mean 'workers'?)"

    for args in (["next", "* * * * *", "-n", "1"], ["ls"], [f"--url={d.url}", "ls"]):
        res = cronwheel(config, *args)
        assert res.returncode == 0, (args, res.stderr)
        [line] = res.stderr.splitlines()
        assert line.startswith(warning) and "`cronwheel serve` refuses to start with it" in line, line
        assert ("yearly" in res.stdout) == (args[-1] == "ls"), res.stdout
    for args in (["config", "--help"], ["serve", "--help"]):
        res = cronwheel(config, *args)
        assert res.returncode == 0 and res.stderr == "" and "Usage:" in res.stdout, (args, res)
    # what starts the daemon, or checks the file for it, still refuses
    for args in (["config"], ["config", "--local"], ["serve", "--data-dir", str(tmp_path / "other"), "--http", "127.0.0.1:0"]):
        res = cronwheel(config, *args)
        assert res.returncode == 2, (args, res.stderr)
        [line] = res.stderr.splitlines()
        assert line.startswith(f"error: {config}:2: key 'worker': unknown key"), line
    assert not (tmp_path / "other").exists()


@pytest.mark.runs_no_jobs
def test_a_data_dir_it_cannot_read_refuses_what_needs_it(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    d = make_daemon()
    config = tmp_path / "cronwheel.toml"
    for text, where in (("workers = 2\ndata_dir = 5\n", f"{config}:2: key 'data_dir'"),
                        (f'data_dir = "{d.data_dir}"\nstore = "unterminated\n', f"{config}:2: not valid TOML")):
        config.write_text(text)
        res = cronwheel(config, "ls")
        assert res.returncode == 2, res.stderr
        warned, refused = res.stderr.splitlines()
        assert warned.startswith(f"warning: {where}"), warned
        assert refused == (f"error: the daemon's data directory is set in {config}, which cannot be used as it stands "
                           "(see the warning above): fix it, or give --data-dir or --url"), refused
        assert "Traceback" not in res.stderr and res.stdout == ""
        socket = f"unix:{d.data_dir / 'api.sock'}"
        for args in (["next", "0 0 * * *"], ["--data-dir", str(d.data_dir), "ls"], ["--url", socket, "status"]):
            res = cronwheel(config, *args)
            assert res.returncode == 0 and res.stderr.startswith(f"warning: {where}"), (args, res.stderr)


def test_workers_started_through_the_cli_outlive_a_mistake_in_the_file(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    """The single-file build starts its workers as ``cronwheel worker`` (options.worker_cmd),
    which reads the same configuration file as every command: a typo saved in it while the
    daemon ran made each replacement worker exit 2 at once, and the node ran nothing until
    the file was fixed."""
    config = tmp_path / "cronwheel.toml"
    config.write_text('retention = "30d"\n')
    d = make_daemon(workers=1, env={"CRONWHEEL_CONFIG": str(config),
                                    "CRONWHEEL_WORKER_CMD": f"{sys.executable} -m cronwheel worker"})
    [spawned] = wait_for(lambda: d.events("pool.worker_ready"), 30, what="the first worker")
    config.write_text('retention = "30d"\nwrokers = 2\n')
    os.kill(spawned["pid"], signal.SIGKILL)
    wait_for(lambda: [e for e in d.events("pool.worker_ready") if e["pid"] != spawned["pid"]], 30,
             what="a replacement worker, with the file's mistake in place")
    out = tmp_path / "ran"
    job = d.add_job({"schedule": "+1s", "command": f"touch {out}"})
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in d.executions(job["jobId"])), 30, what="the job to run")
    assert out.exists() and not [e for e in d.events("pool.worker_exited") if e.get("code") == 2]
