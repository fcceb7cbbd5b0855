"""How a command target's process is set up: the shell that runs it, the account it runs as,
its environment and its standard input — what a crontab says with ``SHELL=``, the user field
of a system crontab, ``NAME=value`` lines and ``%``.

As cron does it: a job with a ``runAs`` user runs with that user's uid, its primary group (or
the group named), its supplementary groups (initgroups), ``HOME``, ``USER`` and ``LOGNAME``
set from the password database, in its home directory (``/`` when that is missing). The
switch happens in the child, after fork and before exec (subprocess's ``user``, ``group`` and
``extra_groups``), so the worker itself keeps its privileges for the next run. Only a worker
running as root can switch; anything else is a failed attempt whose error says why, as is a
user or group that no longer exists when the run starts.

A command that is one simple command of plain words (``/usr/local/bin/backup --full``, not
``true``, ``a | b``, ``$HOME/x`` or ``echo "hi"``) is run without the shell in between when
the job's shell is the default: the program is looked up in the job's ``PATH`` and exec'd with
the words as its arguments and ``PWD`` set as the shell would export it. That is what the shell
itself would do once it had parsed the line (bash execs a lone simple command in place; dash
forks first), so the run is the same, one process instead of two. A word the shell would treat
in any way of its own (quotes, ``$``, globs, ``~``, redirections, an assignment, a reserved
word or a builtin) or a program not found leaves the line to the shell, as does a program the
kernel cannot exec (a script without ``#!``, which the shell runs itself).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import stat
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SHELL = "/bin/sh"

#: a line of plain words: no character the shell would quote, expand, redirect or split on
_PLAIN_LINE = re.compile(r"[ \t]*[A-Za-z0-9_./:,+@%=-]+(?:[ \t]+[A-Za-z0-9_./:,+@%=-]+)*[ \t]*")
_RESERVED_WORDS = "! case do done elif else esac fi for function if in select then time until while { } [[ ]] coproc"
_BUILTINS = (  # dash's, and bash's beyond them
    ". : [ alias bg break cd chdir command continue echo eval exec exit export false fc fg getopts "
    "hash jobs kill local printf pwd read readonly return set shift test times trap true type "
    "ulimit umask unalias unset wait bind builtin caller compgen complete compopt declare dirs "
    "disown enable help history let logout mapfile popd pushd readarray shopt source suspend typeset"
)
#: the words a POSIX shell (dash, or bash as sh) runs itself rather than exec'ing a program
_SHELL_WORDS = frozenset(f"{_RESERVED_WORDS} {_BUILTINS}".split())
#: dash's search path when the environment has no PATH
_SHELL_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class LaunchError(Exception):
    """A run that cannot start as its job asks; the message is the attempt's error."""


@dataclass(frozen=True, slots=True)
class Account:
    user: str
    uid: int
    gid: int
    groups: tuple[int, ...]  #: supplementary groups, as initgroups(3) would set them
    home: str


def resolve_account(user: str, group: str | None = None) -> Account:
    """The account ``user`` (and ``group``) name on this machine. Raises LaunchError."""
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        raise LaunchError(f"runAs user {user!r} does not exist on this node") from None
    gid = pw.pw_gid
    if group is not None:
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            raise LaunchError(f"runAs group {group!r} does not exist on this node") from None
    return Account(pw.pw_name, pw.pw_uid, gid, tuple(os.getgrouplist(pw.pw_name, gid)), pw.pw_dir)


def run_as_refusal(user: str, group: str | None, euid: int) -> str | None:
    """Why a job may not be created with ``runAs`` on a daemon running as ``euid`` (None: it
    may): switching users needs root, and a user that does not exist is refused now rather
    than failing at its first run."""
    if euid != 0:
        return (
            f"runAs {user!r} needs the daemon to run as root to switch users; this daemon runs as "
            f"uid {euid}: leave runAs out to run the job as the daemon's user"
        )
    try:
        resolve_account(user, group)
    except LaunchError as exc:
        return str(exc)
    return None


@dataclass(slots=True)
class Launch:
    """What to hand to ``create_subprocess_exec`` for one run."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None  #: None: the worker writes the payload as JSON, as for any command
    popen: dict[str, Any] = field(default_factory=dict)  #: user, group, extra_groups, cwd
    #: the program and its argv when the shell would only exec it (see the module's doc); None:
    #: through the shell. ``env`` then carries ``PWD`` as the shell would have exported it.
    direct: tuple[str, list[str]] | None = None


def plan_launch(
    command: str, process: dict[str, Any] | None, base_env: dict[str, str], run_env: dict[str, str],
    euid: int,
) -> Launch:
    """The launch of ``command`` for a grant whose job sets ``process`` (``{env, runAs, shell,
    stdin}``, any of them; None: defaults). ``base_env`` is the worker's environment,
    ``run_env`` the ``CRONWHEEL_*`` variables of the run, which nothing overrides. Raises
    LaunchError."""
    process = process or {}
    shell = process.get("shell") or DEFAULT_SHELL
    env = dict(base_env)
    popen: dict[str, Any] = {}
    run_as = process.get("runAs")
    if run_as is not None:
        if euid != 0:
            raise LaunchError(
                f"runAs {run_as['user']!r}: this worker runs as uid {euid}, and only root can switch users"
            )
        account = resolve_account(run_as["user"], run_as.get("group"))
        env.update(HOME=account.home, USER=account.user, LOGNAME=account.user)
        popen.update(user=account.uid, group=account.gid, extra_groups=list(account.groups),
                     cwd=account.home if os.path.isdir(account.home) else "/")  # fmt: skip
    if "shell" in process:
        env["SHELL"] = shell  # as cron: SHELL= is both the shell and a variable
    env.update(process.get("env") or {})
    env.update(run_env)
    stdin = process.get("stdin")
    launch = Launch([shell, "-c", command], env, None if stdin is None else stdin.encode(), popen)
    if shell == DEFAULT_SHELL:
        launch.direct = direct_exec(command, env.get("PATH", _SHELL_DEFAULT_PATH))
        if launch.direct is not None:
            cwd = popen.get("cwd")
            set_shell_pwd(env, cwd or os.getcwd(), physical=cwd is None)
    return launch


def direct_exec(command: str, search_path: str) -> tuple[str, list[str]] | None:
    """The program and argv the shell would exec for ``command`` when it is one simple command
    of plain words naming a program found in ``search_path``; None when the shell has more to
    do than that."""
    if _PLAIN_LINE.fullmatch(command) is None:
        return None
    words = command.split()
    name = words[0]
    if name in _SHELL_WORDS or "=" in name:  # a builtin, a reserved word, an assignment
        return None
    if "/" in name:  # a path: as it is when absolute; a relative one is left to the shell
        candidates = [name] if name.startswith("/") else []
    else:  # searched as the shell searches, in order, skipping what it could not exec
        dirs = search_path.split(":")
        if not all(d.startswith("/") for d in dirs):
            return None  # an entry relative to the directory ("" or "."): the shell's to resolve
        candidates = [os.path.join(d, name) for d in dirs]
    for path in candidates:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & 0o111:
            return path, words
    return None


def set_shell_pwd(env: dict[str, str], cwd: str, physical: bool = False) -> None:
    """Set ``PWD`` in ``env`` as a POSIX shell exports it to what it runs: the inherited value
    if it names ``cwd``, otherwise the physical path of ``cwd`` (``physical``: ``cwd`` is one
    already, as ``os.getcwd()`` gives it, so the lstat of each of its components is spared)."""
    pwd_var = env.get("PWD")
    if pwd_var and pwd_var.startswith("/"):
        try:
            if os.path.samefile(pwd_var, cwd):
                return
        except OSError:
            pass
    env["PWD"] = cwd if physical else os.path.realpath(cwd)
