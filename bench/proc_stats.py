"""CPU time of a process tree from /proc, for benchmarks on a shared machine.

Wall-clock figures move with whatever else runs on the two cores; the CPU seconds a run
costs the daemon and its workers move much less, so every herd/load benchmark reports both.
"""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of one process (0.0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15)


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def tree_cpu(pid: int) -> tuple[float, float]:
    """(the process's CPU seconds, its live children's CPU seconds)."""
    return cpu_seconds(pid), sum(cpu_seconds(c) for c in children(pid))
