"""How a command's process is set up from its job's env, runAs, shell and stdin
(cronwheel.worker.launch). The euid is an argument, so the refusals of a daemon that does
not run as root are checked here as well as by a daemon running as root."""

from __future__ import annotations

import os
import pwd

import pytest

from cronwheel.worker.launch import LaunchError, plan_launch, resolve_account, run_as_refusal

BASE = {"PATH": "/usr/bin:/bin", "HOME": "/root", "KEEP": "daemon"}
RUN = {"CRONWHEEL_JOB_ID": "j1"}


def test_defaults_are_sh_and_the_payload() -> None:
    launch = plan_launch("echo hi", None, BASE, RUN, euid=1000)
    assert launch.argv == ["/bin/sh", "-c", "echo hi"]
    assert launch.env == {**BASE, **RUN} and launch.stdin is None and launch.popen == {}


def test_shell_env_and_stdin() -> None:
    process = {"shell": "/bin/bash", "env": {"PATH": "/opt/bin", "NEW": "x"}, "stdin": "é\n"}
    launch = plan_launch("cat", process, BASE, RUN, euid=1000)
    assert launch.argv == ["/bin/bash", "-c", "cat"]
    # as cron: SHELL= is also a variable; the job's env over the daemon's; CRONWHEEL_* last
    assert launch.env == {"PATH": "/opt/bin", "HOME": "/root", "KEEP": "daemon", "SHELL": "/bin/bash", "NEW": "x", **RUN}
    assert launch.stdin == "é\n".encode()


def test_run_as_needs_root() -> None:
    with pytest.raises(LaunchError, match=r"runAs 'nobody': this worker runs as uid 1000, and only root can switch users"):
        plan_launch("id", {"runAs": {"user": "nobody"}}, BASE, RUN, euid=1000)
    why = run_as_refusal("nobody", None, euid=1000)
    assert why is not None and "needs the daemon to run as root" in why and "uid 1000" in why


@pytest.mark.skipif(os.geteuid() != 0, reason="the account lookups are the same, but the switch plan is root's")
def test_run_as_plans_the_switch_like_cron() -> None:
    pw = pwd.getpwnam("nobody")
    launch = plan_launch("id", {"runAs": {"user": "nobody"}, "env": {"HOME": "/srv"}}, BASE, RUN, euid=0)
    assert launch.popen["user"] == pw.pw_uid and launch.popen["group"] == pw.pw_gid
    assert launch.popen["extra_groups"] == os.getgrouplist("nobody", pw.pw_gid)
    assert launch.popen["cwd"] == (pw.pw_dir if os.path.isdir(pw.pw_dir) else "/")
    # HOME, USER, LOGNAME from the password database, then the job's own env over them
    assert (launch.env["USER"], launch.env["LOGNAME"], launch.env["HOME"]) == ("nobody", "nobody", "/srv")
    assert run_as_refusal("nobody", None, euid=0) is None
    assert run_as_refusal("no-such-user-cw22", None, euid=0) == "runAs user 'no-such-user-cw22' does not exist on this node"


def test_unknown_accounts() -> None:
    with pytest.raises(LaunchError, match="runAs user 'no-such-user-cw22' does not exist on this node"):
        resolve_account("no-such-user-cw22")
    with pytest.raises(LaunchError, match="runAs group 'no-such-group-cw22' does not exist on this node"):
        resolve_account("root", "no-such-group-cw22")
