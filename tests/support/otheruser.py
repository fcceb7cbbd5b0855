"""``cronwheel`` run as another local user than the test's (root): the CLI of a user who is
not the daemon's, or a daemon of a service's own user. setpriv to a uid of nobody's, with a
Python that uid may run (the test's own may live in root's home) and this environment's
packages. Tests that need it are skipped where it cannot be done (not root, no setpriv, no
system python3, a checkout other users cannot read)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from typing import Any

import pytest

from tests.support.daemon import REPO

#: a uid of nobody's (below the range systemd's DynamicUser= allocates from)
OTHER_UID = 61_998


def command(*args: str, uid: int = OTHER_UID) -> list[str]:
    """``python3 -m cronwheel ARGS`` as ``uid``; skips the test when that cannot run here."""
    python = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)
    if os.geteuid() != 0 or shutil.which("setpriv") is None or python is None:
        pytest.skip("running cronwheel as another user needs root, setpriv and a system python3")
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", python, "-m", "cronwheel", *args]


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    path = os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": path, "CRONWHEEL_CONFIG": "", **(extra or {})}


def run(*args: str, env: dict[str, str] | None = None, uid: int = OTHER_UID, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args, uid=uid), capture_output=True, text=True, env=environment(env), timeout=timeout,
                          cwd="/")


def popen(*args: str, env: dict[str, str] | None = None, uid: int = OTHER_UID, **kw: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command(*args, uid=uid), env=environment(env), cwd="/", **kw)


def require() -> None:
    """Skip unless this checkout runs as ``OTHER_UID`` (it may sit in a directory only root enters)."""
    probe = run("next", "@daily")
    if probe.returncode != 0:
        pytest.skip(f"this checkout cannot be run by another user: {probe.stderr[-300:]}")
