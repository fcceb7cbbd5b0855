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
"""

from __future__ import annotations

import grp
import os
import pwd
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SHELL = "/bin/sh"


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
    return Launch([shell, "-c", command], env, None if stdin is None else stdin.encode(), popen)
