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


# ---------------------------------------------------------------- a lone simple command, without the shell


def test_plain_commands_are_exec_d_directly_as_the_shell_would() -> None:
    true = "/usr/bin/true" if os.path.exists("/usr/bin/true") else "/bin/true"
    launch = plan_launch(f"  {true} --x=1 a,b:c@d%e+f  ", None, BASE, RUN, euid=1000)
    assert launch.direct == (true, [true, "--x=1", "a,b:c@d%e+f"])
    assert launch.argv == ["/bin/sh", "-c", f"  {true} --x=1 a,b:c@d%e+f  "]  # the fallback
    by_name = plan_launch("env -0", None, BASE, RUN, euid=1000)
    assert by_name.direct is not None and by_name.direct[1] == ["env", "-0"]  # argv[0] as typed
    assert by_name.direct[0] in ("/usr/bin/env", "/bin/env")  # the first match along BASE's PATH
    # PWD as the shell exports it: the physical working directory, unless one naming it is inherited
    assert by_name.env["PWD"] == os.path.realpath(os.getcwd())
    kept = plan_launch("env", None, {**BASE, "PWD": os.getcwd()}, RUN, euid=1000)
    assert kept.direct is not None and kept.env["PWD"] == os.getcwd()


@pytest.mark.parametrize("command", [
    "true", "echo hi", "exit 3", "cd /tmp", "kill -9 1", "exec env", "if", "[ -f x ]", "test -f x",  # the shell's own
    "env | cat", "env; env", "env && env", "env > /dev/null", "env 2>&1", "env &",  # more than one simple command
    "env $HOME", "env ~", "env *", "env a?", "env [ab]", "env 'a'", 'env "a"', "env a\\ b", "env `id`",  # expansions
    "env # comment", "A=1 env", "env\nenv", "env (x)", "env {a,b}", "env ¡", "env\u00a0x",  # and the rest
    "no-such-program-cw17 x", "./env", "bin/env",  # not found, or a path the shell resolves
])
def test_anything_more_than_plain_words_naming_a_program_goes_to_the_shell(command: str) -> None:
    launch = plan_launch(command, None, BASE, RUN, euid=1000)
    assert launch.direct is None and launch.argv == ["/bin/sh", "-c", command] and "PWD" not in launch.env


def test_the_job_s_own_shell_and_relative_search_paths_keep_the_shell() -> None:
    assert plan_launch("env", {"shell": "/bin/bash"}, BASE, RUN, euid=1000).direct is None
    for path in (".:/usr/bin:/bin", "/usr/bin::/bin", ""):
        assert plan_launch("env", {"env": {"PATH": path}}, BASE, RUN, euid=1000).direct is None, path
