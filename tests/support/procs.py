"""Processes as the failure tests see them."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def alive(pid: int) -> bool:
    """True if ``pid`` runs. A zombie (exited, not yet reaped by whoever adopted it) counts as
    dead. The state is the field after the command's name, which is in parentheses and may
    itself hold spaces and parentheses: hence the last ``)``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rindex(b")") + 2 :].split()[0] not in (b"Z", b"X")


def open_files(pid: int) -> list[Path]:
    """What ``pid`` has open, as paths (``/proc/PID/fd``)."""
    out = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            out.append(Path(os.readlink(fd)))
    return out


#: set in the test session's environment (tests/conftest.py), inherited by every process it
#: starts (daemons, workers, their jobs, CLIs, PostgreSQL clusters): what carries it is ours
SESSION_VAR = "CWTEST_SESSION"
#: the test that was being set up, run or torn down when a process started
STARTED_BY_VAR = "CWTEST_STARTED_BY"


def carrying(var: str, value: str) -> dict[int, str]:
    """The live processes (zombies excepted) whose environment holds ``var=value``, but this
    one: pid -> what they are (command line, working directory, the test that started them).
    A process that has left since it was listed is skipped."""
    needle = f"{var}={value}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            if needle not in environ or not alive(int(entry.name)):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        by = next((v.split(b"=", 1)[1].decode(errors="replace") for v in environ
                   if v.startswith(STARTED_BY_VAR.encode() + b"=")), "?")
        found[int(entry.name)] = f"{cmdline[:200]} (in {cwd}, started by {by})"
    return found
