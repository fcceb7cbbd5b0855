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
