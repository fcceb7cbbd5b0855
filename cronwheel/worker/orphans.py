"""The command runs a dead worker leaves behind.

A worker starts each command in a session of its own (``children.py``), so that a timeout or
an abort kills the command's whole process group and a terminal's signals never reach it. The
flip side: when the worker itself dies without cleaning up (SIGKILL, the OOM killer, a crash),
nothing kills those groups, and a run the daemon has already failed (and may retry) would go
on beside its retry. The daemon finds them after the worker is gone: every command run carries
``CRONWHEEL_WORKER_ID`` and ``CRONWHEEL_EXECUTION_ID`` in its environment, so the processes
still carrying the dead worker's id and one of its in-flight execution ids are its runs (or
their children), and their process groups are killed. A background process that an earlier,
finished run detached is left alone: its execution is not in flight. The same goes for the
runs of a whole node that was killed (kill -9, the OOM killer, a crash without systemd to
clean up after it): the node, restarted, finds them by its previous workers' ids.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Collection
from pathlib import Path

_WORKER = b"CRONWHEEL_WORKER_ID="
_EXECUTION = b"CRONWHEEL_EXECUTION_ID="


def run_groups(worker_id: str, execution_ids: Collection[str], proc: Path = Path("/proc")) -> set[int]:
    """The process groups of live processes started for ``execution_ids`` by ``worker_id``
    (read from each process's initial environment in ``proc``). Processes this one may not
    read (another user's, without privileges) and ones that exit meanwhile are skipped."""
    worker = _WORKER + worker_id.encode()
    wanted = {_EXECUTION + x.encode() for x in execution_ids}
    own = {os.getpgrp(), 0, 1}
    groups: set[int] = set()
    with os.scandir(proc) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                env = (proc / entry.name / "environ").read_bytes()
                if worker not in env:  # (a cheap test before the split)
                    continue
                variables = env.split(b"\0")
                if worker not in variables or wanted.isdisjoint(variables):
                    continue
                stat = (proc / entry.name / "stat").read_bytes()
            except OSError:
                continue
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
            pgid = int(stat[stat.rindex(b")") + 2 :].split()[2])
            if pgid not in own:
                groups.add(pgid)
    return groups


def kill_groups(groups: Collection[int]) -> int:
    """SIGKILL each process group; how many were still there."""
    killed = 0
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed += 1
    return killed


def kill_runs_left_behind(runs: Collection[tuple[str, str]]) -> dict[str, int]:
    """``runs``: (worker id, execution id) of command runs whose workers are gone. Their
    process groups killed; how many, by worker (those with none left out)."""
    by_worker: dict[str, list[str]] = {}
    for worker_id, execution_id in runs:
        by_worker.setdefault(worker_id, []).append(execution_id)
    killed = {worker_id: kill_groups(run_groups(worker_id, ids)) for worker_id, ids in by_worker.items()}
    return {worker_id: n for worker_id, n in killed.items() if n}

