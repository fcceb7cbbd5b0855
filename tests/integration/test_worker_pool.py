"""The worker pool with REAL worker processes on a real Unix socket.

Every test runs its own event loop (``asyncio.run``) and pool in a short temporary directory
(AF_UNIX paths are limited to 107 bytes). Waits are on conditions with deadlines, never bare
sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest
from aiohttp import web

from cronwheel.core.model import Grant, Priority
from cronwheel.core.records import Completion, Outcome
from cronwheel.worker.framing import FROM_WORKER, encode_frame, read_frame
from cronwheel.worker.pool import WorkerPool
from cronwheel.worker.protocol import MAX_FRAME, PROTOCOL_VERSION, Beats, Grants, Hello, Welcome
from tests.support.procs import alive

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
_seq = itertools.count(1)


# ---------------------------------------------------------------- helpers


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


async def until(pred: Callable[[], Any], timeout_sec: float = 15.0, what: str = "condition") -> Any:
    """Poll ``pred`` until it is truthy; fail the test after ``timeout_sec`` seconds."""
    deadline = time.monotonic() + timeout_sec
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def read_pids(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text().split()]
    except FileNotFoundError:
        return []


def grant(
    target: dict[str, Any],
    *,
    payload: Any = None,
    timeout_sec: float = 30.0,
    lease_sec: float = 60.0,
    epoch: int = 1,
    attempt: int = 1,
) -> Grant:
    at = T0 + next(_seq)
    return Grant(
        execution_id=f"jtest:{at}",
        job_id="jtest",
        tenant="default",
        priority=Priority.DEFAULT,
        scheduled_at=at,
        attempt=attempt,
        lease_epoch=epoch,
        lease_until=at + int(lease_sec * 1000),
        lease_sec=lease_sec,
        timeout_sec=timeout_sec,
        target=target,
        payload=payload,
    )


class Recorder:
    """A PoolHandler that remembers everything and can be told to refuse leases."""

    def __init__(self) -> None:
        self.results: dict[str, Completion] = {}
        self.result_batches: list[list[Completion]] = []
        self.beats: list[tuple[str, int]] = []
        self.lost: list[tuple[str, list[tuple[str, int]]]] = []
        self.refuse: dict[str, str] = {}  # execution_id -> reason to answer its heartbeat with
        self.capacity_calls = 0
        self.output: dict[str, bytearray] = {}  # execution_id -> live output received

    async def on_results(self, worker_id: str, results: list[Completion]) -> None:
        self.result_batches.append(results)
        for r in results:
            self.results[r.execution_id] = r

    async def on_heartbeats(self, worker_id: str, beats: list[tuple[str, int]]) -> list[tuple[str, str]]:
        self.beats.extend(beats)
        return [(x, self.refuse[x]) for x, _ in beats if x in self.refuse]

    async def on_worker_lost(self, worker_id: str, execution_ids: list[tuple[str, int]]) -> None:
        self.lost.append((worker_id, execution_ids))

    def on_output(self, execution_id: str, lease_epoch: int, data: bytes) -> None:
        self.output.setdefault(execution_id, bytearray()).extend(data)

    def on_capacity(self) -> None:
        self.capacity_calls += 1


class Harness:
    def __init__(self, pool: WorkerPool, handler: Recorder, tmp: Path, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.pool = pool
        self.h = handler
        self.tmp = tmp
        self.events = events

    def send(self, g: Grant) -> str:
        [(worker_id, n)] = self.pool.assign(1)
        assert n == 1
        self.pool.send_grants(worker_id, [g])
        return worker_id

    async def result(self, g: Grant, timeout_sec: float = 15.0) -> Completion:
        return await until(lambda: self.h.results.get(g.execution_id), timeout_sec, f"result of {g.execution_id}")

    async def run_one(self, g: Grant, timeout_sec: float = 15.0) -> Completion:
        self.send(g)
        return await self.result(g, timeout_sec)

    def logged(self, event: str, **match: Any) -> list[dict[str, Any]]:
        return [f for e, f in self.events if e == event and all(f.get(k) == v for k, v in match.items())]


@contextlib.asynccontextmanager
async def pool_running(
    n_workers: int = 1, slots: int = 4, handler: Recorder | None = None, subdir: str = "", **kw: Any
) -> AsyncIterator[Harness]:
    tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
    if subdir:
        (tmp / subdir).mkdir(parents=True)
    handler = handler or Recorder()
    events: list[tuple[str, dict[str, Any]]] = []
    env = {"PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]), "CRONWHEEL_URL": "http://127.0.0.1:9/"}
    env.update(kw.pop("env", {}))
    pool = WorkerPool(
        tmp / subdir / "w.sock", handler, n_workers=n_workers, slots=slots, env=env, node_id="test",
        log=lambda event, fields: events.append((event, fields)), **kw,
    )
    try:
        await pool.start()
        await pool.wait_ready(timeout_sec=30)
        yield Harness(pool, handler, tmp, events)
    finally:
        await pool.stop(grace_sec=5)
        shutil.rmtree(tmp, ignore_errors=True)


def shell(text: str) -> dict[str, Any]:
    return {"command": text}


# ---------------------------------------------------------------- shell commands


def test_shell_result_env_payload_and_socket_mode() -> None:
    async def main() -> None:
        async with pool_running() as t:
            mode = stat.S_IMODE(t.pool.socket_path.stat().st_mode)
            assert mode == 0o600
            g = grant(shell("env | grep '^CRONWHEEL_' | sort; cat"), payload={"answer": 42, "s": "é"},
                      epoch=7, attempt=3)
            c = await t.run_one(g)
            assert c.outcome is Outcome.SUCCEEDED and c.exit_code == 0 and c.error is None
            assert c.worker_id == f"test-{t.pool.incarnation}-w0-0" and c.lease_epoch == 7
            lines = c.output.splitlines()
            env = dict(line.split("=", 1) for line in lines if line.startswith("CRONWHEEL_"))
            assert env["CRONWHEEL_JOB_ID"] == "jtest"
            assert env["CRONWHEEL_EXECUTION_ID"] == g.execution_id
            assert env["CRONWHEEL_LEASE_EPOCH"] == "7"
            assert env["CRONWHEEL_ATTEMPT"] == "3"
            ms = g.scheduled_at - T0
            assert env["CRONWHEEL_SCHEDULED_AT"] == f"2026-01-01T00:00:00.{ms:03d}Z"
            assert env["CRONWHEEL_URL"] == "http://127.0.0.1:9/"
            assert json.loads(lines[-1]) == {"answer": 42, "s": "é"}  # the payload, on stdin
            assert t.pool.in_flight() == {} and t.pool.free_slots() == 4

    run(main())


def _inherited_ignored() -> int:
    """The signals this process was started with ignored (SigIgn, but SIGPIPE and SIGXFSZ,
    which Python itself ignores), as a mask of /proc's: bit n-1 for signal n."""
    with open("/proc/self/status") as fh:
        mask = next(int(line.split()[1], 16) for line in fh if line.startswith("SigIgn:"))
    return mask & ~((1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1)))


def test_a_command_starts_clean_as_popen_would_start_it() -> None:
    """A command's process is started with posix_spawn, not subprocess (worker/children.py):
    it must still lead its own session, see only its stdin and output of the worker's
    descriptors, and have no signal ignored or blocked (Python ignores SIGPIPE and SIGXFSZ)."""
    probe = (
        "set -- $(cut -d' ' -f6 /proc/$$/stat); echo session=$(( $1 == $$ ));"
        " ls /proc/$$/fd | tr '\\n' ' '; echo;"
        " grep -E '^Sig(Blk|Ign):' /proc/self/status"
    )

    async def main() -> None:
        async with pool_running() as t:
            c = await t.run_one(grant(shell(probe)))
            assert c.outcome is Outcome.SUCCEEDED, c
            session, fds, blocked, ignored = c.output.splitlines()
            assert session == "session=1"
            assert fds.split() == ["0", "1", "2"]
            assert blocked.split() == ["SigBlk:", "0000000000000000"]
            # glibc's posix_spawn leaves its two internal signals (32 and 33, below SIGRTMIN and
            # usable by no program built on glibc) ignored; every signal a program can use is
            # not, unless whoever started the tests ignored it (nohup: SIGHUP; a shell's
            # background job: SIGINT, SIGQUIT), which Popen too would hand on
            internal = (1 << 31) | (1 << 32)
            assert ignored.split()[0] == "SigIgn:" and int(ignored.split()[1], 16) & ~internal & ~_inherited_ignored() == 0, ignored

    run(main())


def test_stdin_larger_than_the_pipe_and_commands_that_never_read_it() -> None:
    """The payload is written as the command reads it (more than a pipe holds); a command that
    never reads its stdin, or closes it at once, still ends with its own result; a shell that
    does not exist is a failed attempt saying why."""
    big = {"blob": "é" * 150_000}
    expected = len(json.dumps(big, ensure_ascii=False).encode()) + 1

    async def main() -> None:
        async with pool_running() as t:
            read_all = await t.run_one(grant(shell("sleep 0.1; wc -c"), payload=big))
            assert read_all.outcome is Outcome.SUCCEEDED and read_all.output.strip() == str(expected), read_all
            never = await t.run_one(grant(shell("exec 0<&-; echo closed; exit 3"), payload=big))
            assert never.outcome is Outcome.FAILED and never.exit_code == 3 and never.output == "closed\n", never
            ignored = await t.run_one(grant(shell("echo ignored"), payload=big))
            assert ignored.outcome is Outcome.SUCCEEDED and ignored.output == "ignored\n", ignored

    run(main())


def test_a_worker_keeps_no_descriptor_of_a_run_however_it_ended() -> None:
    """Each run's pipes and pidfd are watched in the worker's own epoll set (worker/children.py)
    and closed when it ends, whichever way: a small payload written before the start, a large
    one fed as read, a command that never reads it, a program that cannot start, a timeout,
    an abort. Afterwards the worker holds exactly the descriptors it held before them."""
    big = {"blob": "x" * 100_000}

    def fds(pid: int) -> set[str]:
        return set(os.listdir(f"/proc/{pid}/fd"))

    async def main() -> None:
        async with pool_running(slots=8) as t:
            [pid] = t.pool.worker_pids().values()
            assert (await t.run_one(grant(shell("true")))).outcome is Outcome.SUCCEEDED  # warmed up
            before = fds(pid)
            no_shell = msgspec.structs.replace(grant(shell("true")), process={"shell": "/nonexistent/sh"})
            runs = [
                (grant(shell("cat"), payload={"small": "é"}), Outcome.SUCCEEDED),
                (grant(shell("wc -c"), payload=big), Outcome.SUCCEEDED),
                (grant(shell("exec 0<&-; exit 4"), payload=big), Outcome.FAILED),
                (grant(shell("exit 5"), payload={"small": 1}), Outcome.FAILED),
                (no_shell, Outcome.FAILED),
                (grant(shell("sleep 30"), timeout_sec=0.3), Outcome.TIMED_OUT),
            ]
            t.pool.send_grants(t.pool.assign(1)[0][0], [g for g, _ in runs])
            for g, outcome in runs:
                c = await t.result(g)
                assert c.outcome is outcome, c
            assert "cannot start /nonexistent/sh" in (t.h.results[no_shell.execution_id].error or "")
            aborted = grant(shell("sleep 30"))
            t.send(aborted)
            await until(lambda: len(fds(pid)) > len(before), what="the aborted run to start")
            assert t.pool.abort(aborted.execution_id, "cancelled")
            await until(lambda: fds(pid) == before, 10, "the worker to hold only what it held before")

    run(main())


def test_a_plain_command_runs_without_the_shell_and_sees_what_the_shell_would_give_it() -> None:
    """A lone simple command of plain words is exec'd directly (worker/launch.py): the program
    itself leads the run's session, with the environment and arguments the shell would have
    given it ('env' quoted is the same program through the shell); a program the kernel cannot
    exec (a script without #!) falls back to the shell, which runs it."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "no-shebang"
        script.write_text("echo from the script $#\n")
        script.chmod(0o755)

        async def main() -> None:
            async with pool_running() as t:
                direct = await t.run_one(grant(shell("cat /proc/self/stat")))
                fields = direct.output.split()
                assert direct.outcome is Outcome.SUCCEEDED and fields[1] == "(cat)", direct
                assert fields[5] == fields[0], "the program leads its own session: no shell in between"
                shelled = await t.run_one(grant(shell("'cat' /proc/self/stat")))
                assert shelled.output.split()[5] != shelled.output.split()[0]  # cat is the shell's child
                envs = []
                for command in ("env", "'env'"):
                    c = await t.run_one(grant(shell(command)))
                    assert c.outcome is Outcome.SUCCEEDED, c
                    envs.append(sorted(line for line in c.output.splitlines() if not line.startswith("CRONWHEEL_")))
                assert envs[0] == envs[1] and any(line.startswith("PWD=/") for line in envs[0])
                ran = await t.run_one(grant(shell(f"{script} a b")))
                assert ran.outcome is Outcome.SUCCEEDED and ran.output == "from the script 2\n", ran
                failed = await t.run_one(grant(shell("/usr/bin/env false")))
                assert failed.outcome is Outcome.FAILED and failed.exit_code == 1 and failed.error == "exit code 1"
                # the program is the run's process: its timeout's SIGTERM reaches it, not a shell
                slow = await t.run_one(grant(shell("sleep 600"), timeout_sec=0.5))
                assert slow.outcome is Outcome.TIMED_OUT and slow.exit_code == -signal.SIGTERM, slow

        run(main())


def test_socket_path_longer_than_sun_path_works() -> None:
    async def main() -> None:
        async with pool_running(subdir="d" * 60 + "/" + "e" * 60) as t:
            assert len(str(t.pool.socket_path)) > 108
            c = await t.run_one(grant(shell("echo deep")))
            assert c.output == "deep\n"

    run(main())


def test_shell_failure_signal_and_bounded_output_tail() -> None:
    async def main() -> None:
        async with pool_running(slots=3) as t:
            fail = grant(shell("echo to-stdout; echo to-stderr >&2; exit 3"))
            killed = grant(shell("kill -9 $$"))
            # ~300 KiB of numbered lines: only the last 64 KiB may come back
            big = grant(shell("i=0; while [ $i -lt 40000 ]; do echo line-$i; i=$((i+1)); done"))
            t.pool.send_grants(t.pool.assign(1)[0][0], [fail, killed, big])
            c = await t.result(fail)
            assert c.outcome is Outcome.FAILED and c.exit_code == 3
            assert "to-stdout" in c.output and "to-stderr" in c.output
            c = await t.result(killed)
            assert c.outcome is Outcome.FAILED and c.exit_code == -9
            c = await t.result(big, timeout_sec=60)
            assert c.outcome is Outcome.SUCCEEDED
            assert len(c.output.encode()) <= 64 * 1024
            assert c.output.endswith("line-39999\n")
            assert "line-0\n" not in c.output

    run(main())


def test_output_a_store_cannot_keep_is_marked_and_costs_no_neighbour() -> None:
    """A NUL, or bytes that are not UTF-8, in a run's output: the run is reported with its own
    outcome, those bytes as U+FFFD; the worker, and a neighbour's run on it, go on."""
    async def main() -> None:
        async with pool_running(n_workers=1, slots=2) as t:
            neighbour = grant(shell("sleep 0.5; echo fine"))
            odd = grant(shell(r"printf 'a\000b\377c'"))
            t.pool.send_grants(t.pool.assign(1)[0][0], [neighbour, odd])
            c = await t.result(odd)
            assert (c.outcome, c.exit_code, c.output) == (Outcome.SUCCEEDED, 0, "a\ufffdb\ufffdc")
            c = await t.result(neighbour)
            assert (c.outcome, c.output) == (Outcome.SUCCEEDED, "fine\n")
            assert t.h.lost == [] and not t.logged("pool.protocol_error")

    run(main())


def test_timeout_kills_the_whole_process_group() -> None:
    async def main() -> None:
        async with pool_running() as t:
            pids = t.tmp / "pids"
            # children that ignore SIGTERM: only the SIGKILL escalation gets rid of them
            cmd = f"trap '' TERM; sleep 1000 & echo $! >> {pids}; (sleep 1000; true) & echo $! >> {pids}; echo $$ >> {pids}; wait"
            g = grant(shell(cmd), timeout_sec=1.0)
            started = time.monotonic()
            c = await t.run_one(g)
            assert c.outcome is Outcome.TIMED_OUT
            assert c.exit_code == -signal.SIGKILL
            assert time.monotonic() - started < 10
            found = read_pids(pids)
            assert len(found) == 3
            await until(lambda: not any(alive(p) for p in found), 5, "the job's processes to die")

    run(main())


def test_shell_exit_kills_leftover_background_processes() -> None:
    async def main() -> None:
        async with pool_running() as t:
            pids = t.tmp / "pids"
            c = await t.run_one(grant(shell(f"sleep 1000 & echo $! > {pids}; echo bye")))
            assert c.outcome is Outcome.SUCCEEDED and c.output == "bye\n"
            [pid] = read_pids(pids)
            await until(lambda: not alive(pid), 5, "the background sleep to die")

    run(main())


def test_abort_kills_at_once_and_sends_no_result() -> None:
    async def main() -> None:
        async with pool_running(slots=1) as t:
            pids = t.tmp / "pids"
            g = grant(shell(f"sleep 1000 & echo $! >> {pids}; echo $$ >> {pids}; wait"))
            t.send(g)
            found = await until(lambda: len(read_pids(pids)) == 2 and read_pids(pids), what="job start")
            assert t.pool.free_slots() == 0
            calls = t.h.capacity_calls
            assert t.pool.abort(g.execution_id, "cancelled")
            assert t.pool.free_slots() == 1 and g.execution_id not in t.pool.in_flight()
            await until(lambda: t.h.capacity_calls > calls, 5, "on_capacity")
            await until(lambda: not any(alive(p) for p in found), 5, "the aborted job to die")
            assert not t.pool.abort(g.execution_id, "again")
            # the slot is usable at once; the worker sent nothing for the aborted run
            c = await t.run_one(grant(shell("echo next")))
            assert c.outcome is Outcome.SUCCEEDED
            assert g.execution_id not in t.h.results
            assert not t.logged("pool.result_dropped", executionId=g.execution_id)

    run(main())


def test_heartbeats_renew_and_a_lost_lease_kills_the_job() -> None:
    async def main() -> None:
        async with pool_running(slots=2) as t:
            ok = grant(shell("sleep 0.6; echo done"), lease_sec=0.2, epoch=4)
            c = await t.run_one(ok)
            assert c.outcome is Outcome.SUCCEEDED
            beats = [b for b in t.h.beats if b[0] == ok.execution_id]
            assert len(beats) >= 3 and set(beats) == {(ok.execution_id, 4)}

            pids = t.tmp / "pids"
            doomed = grant(shell(f"echo $$ > {pids}; sleep 1000"), lease_sec=0.2, epoch=2)
            t.send(doomed)
            [pid] = await until(lambda: read_pids(pids), what="job start")
            t.h.refuse[doomed.execution_id] = "lease_lost"
            await until(lambda: not alive(pid), 5, "the fenced job to die")
            await until(lambda: doomed.execution_id not in t.pool.in_flight(), 5, "slot freed")
            assert t.pool.free_slots() == 2
            c = await t.run_one(grant(shell("true")))
            assert c.outcome is Outcome.SUCCEEDED
            assert doomed.execution_id not in t.h.results

    run(main())


def test_worker_slots_are_never_exceeded() -> None:
    async def main() -> None:
        async with pool_running(slots=2) as t:
            stamps = "date +%s.%N; sleep 0.4; date +%s.%N"
            gs = [grant(shell(stamps)) for _ in range(4)]
            t.pool.send_grants(t.pool.assign(1)[0][0], gs)  # more than its 2 slots: it must queue
            done = [await t.result(g) for g in gs]
            spans = [tuple(float(x) for x in c.output.split()) for c in done]
            points = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
            running = peak = 0
            for _, step in points:
                running += step
                peak = max(peak, running)
            assert peak == 2

    run(main())


def test_assign_spreads_over_workers_least_loaded_first() -> None:
    async def main() -> None:
        async with pool_running(n_workers=3, slots=2) as t:
            assert t.pool.free_slots() == 6
            plan = dict(t.pool.assign(4))
            assert sorted(plan.values()) == [1, 1, 2]
            assert dict(t.pool.assign(100)) == {w: 2 for w in t.pool.worker_pids()}
            # load one worker: it is chosen last
            [(busy, _)] = t.pool.assign(1)
            g = grant(shell("sleep 1000"))
            t.pool.send_grants(busy, [g])
            assert t.pool.free_slots() == 5
            assert busy not in dict(t.pool.assign(2))
            assert t.pool.in_flight()[g.execution_id] == (busy, 1)
            assert t.pool.abort(g.execution_id, "done with it")

    run(main())


def test_killed_worker_is_reported_lost_and_respawned_and_its_runs_killed() -> None:
    async def main() -> None:
        async with pool_running(n_workers=1, slots=2) as t:
            pids = t.tmp / "pids"
            g = grant(shell(f"echo $$ > {pids}; sleep 1000 & sleep 1000"), epoch=5)
            old_id = t.send(g)
            [job_pid] = await until(lambda: read_pids(pids), what="job start")
            # what an earlier run of this worker detached (setsid) before it ended: its
            # environment names the worker, and an execution no longer in flight
            earlier = grant(shell("true"))
            detached = await asyncio.create_subprocess_exec(
                "sleep", "1000", start_new_session=True,
                env={**os.environ, "CRONWHEEL_WORKER_ID": old_id, "CRONWHEEL_EXECUTION_ID": earlier.execution_id},
            )  # fmt: skip
            try:
                old_pid = t.pool.worker_pids()[old_id]
                os.kill(old_pid, signal.SIGKILL)
                await until(lambda: t.h.lost, 10, "on_worker_lost")
                assert t.h.lost == [(old_id, [(g.execution_id, 5)])]
                assert t.pool.in_flight() == {}
                # the run it left behind is killed, its whole group, not the earlier run's detached process
                await until(lambda: not alive(job_pid), 10, "the lost run's process killed")
                assert t.logged("pool.worker_orphans_killed")
                assert _live_in_group(job_pid) == []
                assert detached.returncode is None
                await t.pool.wait_ready(1, timeout_sec=30)
                [(new_id, new_pid)] = t.pool.worker_pids().items()
                assert new_id == f"test-{t.pool.incarnation}-w0-1" and new_id != old_id and new_pid != old_pid
                c = await t.run_one(grant(shell("echo reborn")))
                assert c.worker_id == new_id and c.output == "reborn\n"
            finally:  # whatever the test's outcome, leave nothing running
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job_pid, signal.SIGKILL)
                detached.kill()
                await detached.wait()

    run(main())


def _live_in_group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_bytes() if proc.name.isdigit() else b""
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split() if stat else []
        if fields and fields[0] != b"Z" and int(fields[2]) == pgid:
            found.append(int(proc.name))
    return found


class FlakyRecorder(Recorder):
    """Its first on_results and on_heartbeats raise, as a store hiccup would."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: set[str] = set()

    async def on_results(self, worker_id: str, results: list[Completion]) -> None:
        if "results" not in self.failed:
            self.failed.add("results")
            raise RuntimeError("store unavailable")
        await super().on_results(worker_id, results)

    async def on_heartbeats(self, worker_id: str, beats: list[tuple[str, int]]) -> list[tuple[str, str]]:
        if "beats" not in self.failed:
            self.failed.add("beats")
            raise RuntimeError("store unavailable")
        return await super().on_heartbeats(worker_id, beats)


def test_handler_errors_do_not_cost_the_worker() -> None:
    async def main() -> None:
        async with pool_running(handler=FlakyRecorder()) as t:
            first = grant(shell("sleep 0.3"), lease_sec=0.2)
            t.send(first)
            await until(lambda: len(t.logged("pool.handler_error")) == 2, what="both handler errors")
            assert {f["call"] for f in t.logged("pool.handler_error")} == {"on_results", "on_heartbeats"}
            assert first.execution_id not in t.h.results  # that one was lost with the error
            c = await t.run_one(grant(shell("echo fine")))
            assert c.output == "fine\n" and c.worker_id == f"test-{t.pool.incarnation}-w0-0"
            assert t.h.lost == [] and not t.logged("pool.worker_lost")

    run(main())


def test_grant_to_a_gone_worker_is_reported_lost() -> None:
    async def main() -> None:
        async with pool_running() as t:
            g = grant(shell("true"))
            t.pool.send_grants(f"test-{t.pool.incarnation}-w9-9", [g])
            await until(lambda: t.h.lost, 5, "on_worker_lost")
            assert t.h.lost == [(f"test-{t.pool.incarnation}-w9-9", [(g.execution_id, 1)])]

    run(main())


def test_grant_too_big_for_a_frame_is_failed_by_the_pool() -> None:
    async def main() -> None:
        async with pool_running() as t:
            g = grant(shell("true"), payload="x" * (MAX_FRAME + 1))
            t.send(g)
            c = await t.result(g)
            assert c.worker_id is None and c.outcome is Outcome.FAILED and "frame" in c.error
            assert t.pool.in_flight() == {}

    run(main())


def test_many_grants_are_batched_into_frames_under_the_limit() -> None:
    async def main() -> None:
        async with pool_running(slots=40) as t:
            gs = [grant({"python": "worker_callables:no_args"}, payload="p" * 60_000) for _ in range(40)]
            t.pool.send_grants(t.pool.assign(1)[0][0], gs)  # ~2.4 MB of grants: several frames
            for g in gs:
                assert (await t.result(g)).output == '"fine"'

    run(main())


# ---------------------------------------------------------------- python callables


def test_python_callables_sync_async_errors_and_timeouts() -> None:
    async def main() -> None:
        async with pool_running(slots=8) as t:
            sync = grant({"python": "worker_callables:echo_sync"}, payload=[1, 2], epoch=3)
            asy = grant({"python": "worker_callables:echo_async"}, payload={"k": "v"})
            noargs = grant({"python": "worker_callables:no_args"})
            odd = grant({"python": "worker_callables:not_json"})
            boom = grant({"python": "worker_callables:boom"}, payload="x")
            missing = grant({"python": "worker_callables:nope"})
            slow = grant({"python": "worker_callables:sleepy"}, payload=60, timeout_sec=0.5)
            for g in (sync, asy, noargs, odd, boom, missing, slow):
                t.pool.send_grants(f"test-{t.pool.incarnation}-w0-0", [g])

            c = await t.result(sync)
            assert c.outcome is Outcome.SUCCEEDED
            assert json.loads(c.output) == {"execution_id": sync.execution_id, "lease_epoch": 3,
                                            "payload": [1, 2], "kind": "sync"}
            c = await t.result(asy)
            out = json.loads(c.output)
            assert out == {"kind": "async", "execution_id": asy.execution_id, "job_id": "jtest",
                           "lease_epoch": 1, "worker_id": f"test-{t.pool.incarnation}-w0-0", "attempt": 1,
                           "scheduled_at": asy.scheduled_at, "payload": {"k": "v"}}
            assert (await t.result(noargs)).output == '"fine"'
            assert (await t.result(odd)).output == "{1, 2, 3}"
            c = await t.result(boom)
            # the exception is the error; the callable's own frames (not the worker's) the output
            assert c.outcome is Outcome.FAILED and c.error == "RuntimeError: boom with 'x'"
            assert c.output is not None and "raise RuntimeError" in c.output and os.path.join("cronwheel", "worker") not in c.output
            c = await t.result(missing)
            assert c.outcome is Outcome.FAILED and "nope" in c.error
            c = await t.result(slow)
            assert c.outcome is Outcome.TIMED_OUT

    run(main())


def test_a_callable_that_overruns_is_timed_out_once_and_one_that_raises_timeouterror_failed() -> None:
    async def main() -> None:
        async with pool_running(slots=1) as t:  # one thread: the next call waits for it
            overrun = grant({"python": "worker_callables:sleepy_sync"}, payload=1.5, timeout_sec=0.3)
            awaited = grant({"python": "worker_callables:lazy_sleeper"}, payload=60, timeout_sec=0.3)
            t.pool.send_grants(f"test-{t.pool.incarnation}-w0-0", [overrun, awaited])
            for g in (overrun, awaited):
                c = await t.result(g)
                assert c.outcome is Outcome.TIMED_OUT and c.error == "timed out after 0.3s"
            # the thread returns later ("woke"): that result goes nowhere, and the thread
            # takes the next call
            after = grant({"python": "worker_callables:no_args"})
            t.pool.send_grants(f"test-{t.pool.incarnation}-w0-0", [after])
            assert (await t.result(after)).output == '"fine"'
            sent = [r.outcome for batch in t.h.result_batches for r in batch if r.execution_id == overrun.execution_id]
            assert sent == [Outcome.TIMED_OUT]
            # a TimeoutError the callable raises itself is its failure, not the job's timeout
            for name in ("own_timeout", "own_timeout_async"):
                g = grant({"python": f"worker_callables:{name}"}, timeout_sec=60)
                t.pool.send_grants(f"test-{t.pool.incarnation}-w0-0", [g])
                c = await t.result(g)
                assert c.outcome is Outcome.FAILED, name
                assert c.error == "TimeoutError: the upstream API did not answer", c.error

    run(main())


def test_python_async_callable_is_cancelled_on_abort() -> None:
    async def main() -> None:
        async with pool_running(slots=1) as t:
            g = grant({"python": "worker_callables:sleepy"}, payload=1000, lease_sec=0.2)
            t.send(g)
            await until(lambda: any(b[0] == g.execution_id for b in t.h.beats), what="a heartbeat")
            assert t.pool.abort(g.execution_id, "cancelled")
            c = await t.run_one(grant({"python": "worker_callables:no_args"}))
            assert c.output == '"fine"'
            assert g.execution_id not in t.h.results

    run(main())


def test_a_loaded_plain_callable_ends_the_same_on_the_path_with_no_task() -> None:
    """A callable's first call loads it, in a task; later calls of a loaded plain callable run
    with no task of their own (``Worker._call_plain``). Every way a call ends must come out the
    same on both: round 1 takes the first path, round 2 the second."""

    async def main() -> None:
        async with pool_running(slots=4) as t:
            for _ in range(2):
                cases = {
                    "echo": grant({"python": "worker_callables:echo_sync"}, payload=["é", 2**62], epoch=5),
                    "boom": grant({"python": "worker_callables:boom"}, payload="x"),
                    "odd": grant({"python": "worker_callables:not_json"}),
                    "own_timeout": grant({"python": "worker_callables:own_timeout"}),
                    "overrun": grant({"python": "worker_callables:sleepy_sync"}, payload=1.0, timeout_sec=0.2),
                    "awaitable": grant({"python": "worker_callables:lazy_sleeper"}, payload=0),
                    "awaitable_overrun": grant({"python": "worker_callables:lazy_sleeper"}, payload=60,
                                               timeout_sec=0.2),
                }
                t.pool.send_grants(f"test-{t.pool.incarnation}-w0-0", list(cases.values()))
                c = {name: await t.result(g) for name, g in cases.items()}
                assert c["echo"].outcome is Outcome.SUCCEEDED and c["echo"].lease_epoch == 5
                assert json.loads(c["echo"].output) == {"execution_id": cases["echo"].execution_id,
                                                        "lease_epoch": 5, "payload": ["é", 2**62],
                                                        "kind": "sync"}
                assert c["boom"].outcome is Outcome.FAILED and c["boom"].error == "RuntimeError: boom with 'x'"
                assert c["boom"].output is not None and os.path.join("cronwheel", "worker") not in c["boom"].output
                assert c["odd"].outcome is Outcome.SUCCEEDED and c["odd"].output == "{1, 2, 3}"
                assert c["own_timeout"].outcome is Outcome.FAILED
                assert c["own_timeout"].error == "TimeoutError: the upstream API did not answer"
                for name in ("overrun", "awaitable_overrun"):
                    assert c[name].outcome is Outcome.TIMED_OUT and c[name].error == "timed out after 0.2s", name
                assert c["awaitable"].outcome is Outcome.SUCCEEDED and c["awaitable"].output == '"woke"'
            sent = [r.execution_id for batch in t.h.result_batches for r in batch]
            assert len(sent) == len(set(sent)) == 14  # one result each, the overruns' late returns none

    run(main())


def test_an_aborted_plain_callable_sends_no_result_and_frees_its_slot() -> None:
    """Aborting a sync callable frees its slot at once and its result goes nowhere, though its
    thread runs on (a thread cannot be killed) and returns later. Twice: the second abort is of
    a loaded callable, on the path with no task."""

    async def main() -> None:
        async with pool_running(slots=1) as t:  # one thread: the next call waits for the aborted one
            for _ in range(2):
                g = grant({"python": "worker_callables:sleepy_sync"}, payload=0.5, lease_sec=0.2)
                t.send(g)
                await until(lambda g=g: any(b[0] == g.execution_id for b in t.h.beats), what="a heartbeat")
                assert t.pool.abort(g.execution_id, "cancelled")
                c = await t.run_one(grant({"python": "worker_callables:no_args"}))  # after it returned
                assert c.output == '"fine"'
                assert g.execution_id not in t.h.results

    run(main())


# ---------------------------------------------------------------- http


def test_http_target_headers_body_and_status() -> None:
    async def main() -> None:
        seen: list[tuple[str, Any, bytes]] = []
        release = asyncio.Event()

        async def hook(request: web.Request) -> web.Response:
            seen.append((request.path, request.headers.copy(), await request.read()))
            if request.path == "/slow":
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(release.wait(), 30)
            if request.path == "/fail":
                return web.Response(status=503, text="try later")
            return web.Response(text="ok " + "z" * 100_000 + " end")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", hook)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        # a port nobody listens on: bind one, and close it
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
        s.close()
        try:
            async with pool_running(slots=4) as t:
                ok = grant({"http": {"url": f"http://127.0.0.1:{port}/hook",
                                     "headers": {"X-Custom": "1", "idempotency-key": "mine"}}},
                           payload={"n": 1}, epoch=9, attempt=2)
                c = await t.run_one(ok)
                assert c.outcome is Outcome.SUCCEEDED and c.exit_code == 200
                assert c.output.endswith(" end") and len(c.output) <= 64 * 1024
                path, headers, body = seen[-1]
                assert path == "/hook" and json.loads(body) == {"n": 1}
                assert headers.getall("Idempotency-Key") == [ok.execution_id]  # not the user's "mine"
                assert headers.getall("Content-Type") == ["application/json"]
                assert headers["Cronwheel-Execution-Id"] == ok.execution_id
                assert headers["Cronwheel-Job-Id"] == "jtest"
                assert headers["Cronwheel-Lease-Epoch"] == "9"
                # the lease's holder, which an effect recorded for this run must name
                assert headers["Cronwheel-Worker-Id"] == c.worker_id and c.worker_id.startswith("test-")
                assert headers["Cronwheel-Attempt"] == "2"
                assert headers["Cronwheel-Scheduled-At"].startswith("2026-01-01T00:00:00.")
                assert headers["X-Custom"] == "1"
                assert headers["Content-Type"] == "application/json"

                fail = grant({"http": {"url": f"http://127.0.0.1:{port}/fail", "method": "PUT"}})
                c = await t.run_one(fail)
                assert c.outcome is Outcome.FAILED and c.exit_code == 503 and c.output == "try later"
                assert c.error == "HTTP 503 Service Unavailable"  # the wording `dlq ls` reads the status from
                assert seen[-1][0] == "/fail"

                refused = grant({"http": {"url": f"http://127.0.0.1:{dead_port}/"}})
                c = await t.run_one(refused)
                assert c.outcome is Outcome.FAILED and c.exit_code is None
                assert c.error == f"cannot connect to 127.0.0.1:{dead_port}: Connection refused", c.error

                slow = grant({"http": {"url": f"http://127.0.0.1:{port}/slow", "timeoutSec": 0.3}})
                c = await t.run_one(slow)
                assert c.outcome is Outcome.TIMED_OUT and "0.3" in c.error

                # a job saved before the API refused the headers the worker keeps: never sent
                calls = len(seen)
                for name, value in (("Host", "admin.internal"), ("content-length", "0")):
                    stored = grant({"http": {"url": f"http://127.0.0.1:{port}/hook", "headers": {name: value}}})
                    c = await t.run_one(stored)
                    assert c.outcome is Outcome.FAILED and c.exit_code is None, c
                    assert c.error.startswith(f"not sent: the header {name} "), c.error
                assert len(seen) == calls
                same = grant({"http": {"url": f"http://127.0.0.1:{port}/hook", "headers": {"Host": f"127.0.0.1:{port}"}}})
                assert (await t.run_one(same)).outcome is Outcome.SUCCEEDED and seen[-1][1]["Host"] == f"127.0.0.1:{port}"
                # nor a URL without an http(s) host, which the API never took: nothing to call
                for url in ("ftp://127.0.0.1/x", "http://:80/", "http://127.0.0.1:99999/"):
                    c = await t.run_one(grant({"http": {"url": url}}))
                    assert (c.outcome, c.error) == (Outcome.FAILED, f"not a URL that can be called: {url}"), c
        finally:
            release.set()
            await runner.cleanup()

    run(main())


# ---------------------------------------------------------------- hostile input on the socket


async def _connection_is_closed(path: Path, data: bytes) -> bool:
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(data)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        rest = await asyncio.wait_for(reader.read(), 15)  # EOF: the pool closed it
        return rest == b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def test_garbage_on_the_socket_closes_only_that_connection() -> None:
    async def main() -> None:
        async with pool_running(slots=2) as t:
            path = t.pool.socket_path
            hello = Hello(PROTOCOL_VERSION, f"test-{t.pool.incarnation}-w0-0", 1, 1)
            attacks = [
                os.urandom(4096),
                struct.pack(">I", 0xFFFFFFFF) + b"\0" * 64,  # huge length prefix
                struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1",  # never-used msgpack byte
                encode_frame(Beats([])),  # not a hello
                encode_frame(hello),  # impersonates a worker that is already connected
                encode_frame(Hello(PROTOCOL_VERSION, "stranger", 1, 1)),
                encode_frame(Hello(99, hello.worker_id, 1, 1)),
                struct.pack(">I", 100) + msgpack.packb(["hello"]),  # truncated, then EOF-less close
                encode_frame(Hello(PROTOCOL_VERSION, hello.worker_id, 1, 1))[:4] + msgpack.packb(  # protocol 1's map
                    {"t": "hello", "v": 1, "worker_id": hello.worker_id, "slots": 1, "pid": 1}),
            ]
            for data in attacks:
                assert await _connection_is_closed(path, data)
            # the real worker is unharmed and keeps working
            assert list(t.pool.worker_pids()) == [f"test-{t.pool.incarnation}-w0-0"]
            c = await t.run_one(grant(shell("echo still-here")))
            assert c.output == "still-here\n"
            assert t.h.lost == []

    run(main())


# A stand-in worker that says hello properly, then sends a malformed frame.
_BAD_WORKER = r"""
import os, socket, struct, sys, time
sys.path[:0] = os.environ["PYTHONPATH"].split(os.pathsep)
import msgpack
from cronwheel.worker.framing import encode_frame
from cronwheel.worker.protocol import PROTOCOL_VERSION, Hello
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
s = socket.socket(socket.AF_UNIX)
s.connect(args["--socket"])
s.sendall(encode_frame(Hello(PROTOCOL_VERSION, args["--worker-id"], 1, os.getpid())))
s.recv(100)  # welcome
body = msgpack.packb(["result", [["x:1", None, "not an int", "succeeded", 0, None, None]]])
s.sendall(struct.pack(">I", len(body)) + body)
time.sleep(1000)
"""


def test_worker_sending_a_bad_frame_is_killed_and_replaced() -> None:
    async def main() -> None:
        async with pool_running(worker_cmd=[sys.executable, "-c", _BAD_WORKER]) as t:
            await until(lambda: len(t.logged("pool.protocol_error")) >= 2, 20, "two bad workers")
            ids = [f["worker"] for f in t.logged("pool.protocol_error")]
            assert ids[:2] == [f"test-{t.pool.incarnation}-w0-0", f"test-{t.pool.incarnation}-w0-1"]
            exited = await until(lambda: t.logged("pool.worker_exited", worker=f"test-{t.pool.incarnation}-w0-0"), 10, "kill")
            assert exited[0]["code"] == -signal.SIGTERM

    run(main())


# ---------------------------------------------------------------- stopping


def test_stop_lets_running_jobs_finish_within_grace() -> None:
    async def main() -> None:
        tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
        h = Recorder()
        pool = WorkerPool(tmp / "w.sock", h, n_workers=2, slots=2, node_id="test",
                          env={"PYTHONPATH": str(REPO)})
        try:
            await pool.start()
            await pool.wait_ready(timeout_sec=30)
            pids = tmp / "pids"
            quick = grant(shell("sleep 0.3; echo finished"))
            stuck = grant(shell(f"echo $$ > {pids}; sleep 1000"))
            (w0, _), (w1, _) = pool.assign(2)
            pool.send_grants(w0, [quick])
            pool.send_grants(w1, [stuck])
            [pid] = await until(lambda: read_pids(pids), what="job start")
            started = time.monotonic()
            await pool.stop(grace_sec=1.5)
            assert time.monotonic() - started < 1.5 + 4
            assert h.results[quick.execution_id].outcome is Outcome.SUCCEEDED
            assert h.results[quick.execution_id].output == "finished\n"
            assert h.lost == [(w1, [(stuck.execution_id, 1)])]
            assert pool.worker_pids() == {}
            assert not (tmp / "w.sock").exists()
            # SIGTERM made the worker kill its job's process group
            await until(lambda: not alive(pid), 5, "the stuck job to die")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    run(main())


def test_a_worker_that_connects_after_the_stop_began_is_told_bye_not_taken_for_lost() -> None:
    async def main() -> None:
        tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
        gate = tmp / "gate"
        events: list[tuple[str, dict[str, Any]]] = []
        # each worker waits for the gate before it starts, so its hello comes after the stop's byes
        held = ["sh", "-c", f'while [ ! -e {gate} ]; do sleep 0.01; done; exec "$0" "$@"',
                sys.executable, "-m", "cronwheel.worker.process"]
        pool = WorkerPool(tmp / "w.sock", Recorder(), n_workers=2, slots=2, node_id="test", worker_cmd=held,
                          env={"PYTHONPATH": str(REPO)}, log=lambda event, fields: events.append((event, fields)))
        try:
            await pool.start()
            await until(lambda: len(pool.worker_pids()) == 2, what="both workers spawned")
            stopping = asyncio.ensure_future(pool.stop(grace_sec=10))
            await asyncio.sleep(0)  # the stop has sent its byes (to no one yet) and waits for the workers
            gate.touch()
            await asyncio.wait_for(stopping, 20)
            names = [event for event, _ in events]
            assert names.count("pool.worker_left") == 2, events
            assert "pool.worker_lost" not in names and "pool.connection_refused" not in names, events
            assert [f["code"] for e, f in events if e == "pool.worker_exited"] == [0, 0], events
        finally:
            gate.touch()
            shutil.rmtree(tmp, ignore_errors=True)

    run(main())


class GatedRecorder(Recorder):
    """Its first on_results waits for ``gate``: the connection's reader is held there (a slow
    store), and what the worker writes meanwhile stays unread on the socket."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.held = False

    async def on_results(self, worker_id: str, results: list[Completion]) -> None:
        if not self.held:
            self.held = True
            await self.gate.wait()
        await super().on_results(worker_id, results)


def test_results_a_worker_wrote_before_it_exited_are_applied_not_taken_for_lost_work() -> None:
    """A worker's exit and its last bytes on the socket reach the daemon in either order. A
    result still unread when the exit was seen used to be reported lost (and run again)
    although the worker had sent it: the pool now reads the connection to its end first."""

    async def main() -> None:
        tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
        h = GatedRecorder()
        events: list[tuple[str, dict[str, Any]]] = []
        pool = WorkerPool(tmp / "w.sock", h, n_workers=1, slots=2, node_id="test", env={"PYTHONPATH": str(REPO)},
                          log=lambda event, fields: events.append((event, fields)))  # fmt: skip
        try:
            await pool.start()
            await pool.wait_ready(timeout_sec=30)
            first, second = grant(shell("true")), grant(shell("sleep 0.3; echo second"))
            [(worker_id, n)] = pool.assign(2)
            assert n == 2
            pool.send_grants(worker_id, [first, second])
            await until(lambda: h.held, what="the first result, held in the handler")
            [pid] = pool.worker_pids().values()
            stopping = asyncio.ensure_future(pool.stop(grace_sec=10))  # bye: the worker ends its run, then exits
            await until(lambda: not alive(pid), what="the worker to exit with the second result unread")
            h.gate.set()
            await stopping
            assert h.lost == [], "a result the worker sent is not lost work"
            assert h.results[second.execution_id].outcome is Outcome.SUCCEEDED
            assert h.results[second.execution_id].output == "second\n"
            assert set(h.results) == {first.execution_id, second.execution_id}
        finally:
            h.gate.set()
            shutil.rmtree(tmp, ignore_errors=True)

    run(main())


def test_a_worker_that_died_takes_no_grants_while_its_connection_is_read_to_the_end() -> None:
    async def main() -> None:
        h = GatedRecorder()
        async with pool_running(n_workers=1, slots=2, handler=h) as t:
            first = grant(shell("true"))
            worker_id = t.send(first)
            await until(lambda: h.held, what="the result, held in the handler")
            os.kill(t.pool.worker_pids()[worker_id], signal.SIGKILL)
            await until(lambda: t.logged("pool.worker_exited"), what="the exit to be seen")
            assert t.pool.free_slots() == 0 and t.pool.assign(1) == [], "slots of a process that is gone"
            h.gate.set()
            done = await t.result(first)
            assert done.outcome is Outcome.SUCCEEDED and h.lost == []
            await until(lambda: t.pool.free_slots() == 2, 30, "its successor, ready")

    run(main())


def test_stale_socket_is_replaced_and_a_live_one_refused() -> None:
    async def main() -> None:
        tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
        path = tmp / "w.sock"
        try:
            stale = socket.socket(socket.AF_UNIX)
            stale.bind(str(path))
            stale.close()  # the file stays: a crashed daemon's leftover
            pool = WorkerPool(path, Recorder(), n_workers=0, slots=1)
            await pool.start()
            try:
                assert stat.S_IMODE(path.stat().st_mode) == 0o600
                other = WorkerPool(path, Recorder(), n_workers=0, slots=1)
                with pytest.raises(RuntimeError, match="another daemon"):
                    await other.start()
                assert path.exists()
            finally:
                await pool.stop(0)
            assert not path.exists()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    run(main())


# ---------------------------------------------------------------- the worker alone, facing a fake daemon


def test_worker_kills_its_jobs_and_exits_when_the_daemon_goes_away() -> None:
    async def main() -> None:
        tmp = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
        path = tmp / "d.sock"
        connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.get_running_loop().create_future()
        )

        async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            connected.set_result((r, w))

        server = await asyncio.start_unix_server(on_conn, path=str(path))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cronwheel.worker.process", "--socket", str(path),
            "--worker-id", "lonely-w0-0", "--slots", "2",
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            reader, writer = await asyncio.wait_for(connected, 30)
            hello = await asyncio.wait_for(read_frame(reader, FROM_WORKER), 10)
            assert hello == Hello(PROTOCOL_VERSION, "lonely-w0-0", 2, proc.pid)
            writer.write(encode_frame(Welcome(PROTOCOL_VERSION)))
            pids = tmp / "pids"
            g = grant(shell(f"echo $$ > {pids}; sleep 1000"), lease_sec=0.2, epoch=3)
            writer.write(encode_frame(Grants([g])))
            beat = await asyncio.wait_for(read_frame(reader, FROM_WORKER), 10)
            assert beat == Beats([(g.execution_id, 3)])
            [pid] = await until(lambda: read_pids(pids), what="job start")
            writer.close()  # the daemon dies
            assert await asyncio.wait_for(proc.wait(), 10) == 3
            await until(lambda: not alive(pid), 5, "the job to die with its worker")
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            server.close()
            await server.wait_closed()
            shutil.rmtree(tmp, ignore_errors=True)

    run(main())


# ---------------------------------------------------------------- a big burst is not a hung worker

#: grants whose frames together pass MAX_BACKLOG in one write: a herd of 60 KB payloads
BURST, BURST_PAYLOAD = 160, "x" * 60_000


def test_a_burst_of_big_grants_is_read_not_taken_for_a_hung_worker() -> None:
    """Over 9 MiB of grant frames are written at once, far more than the socket takes: the
    backlog passes MAX_BACKLOG while the worker reads as fast as it can. That was a verdict:
    the worker was lost, and every run it held lost an attempt (with a herd of big jobs, again
    and again, until they were dead-lettered)."""
    from cronwheel.worker.connections import MAX_BACKLOG

    async def main() -> None:
        async with pool_running(n_workers=1, slots=BURST) as t:
            grants = [grant(shell("cat > /dev/null"), payload=BURST_PAYLOAD) for _ in range(BURST)]
            [(worker_id, n)] = t.pool.assign(BURST)
            assert n == BURST
            t.pool.send_grants(worker_id, grants)
            [watched] = t.logged("pool.backlog_watched", worker=worker_id)
            assert watched["backlog"] > MAX_BACKLOG  # the burst did pass the mark
            done = await until(lambda: len(t.h.results) == BURST and t.h.results, 60, "every result")
            assert {c.outcome for c in done.values()} == {Outcome.SUCCEEDED}
            assert t.h.lost == [] and t.logged("pool.worker_hung") == []

    run(main())


def test_a_worker_that_stops_reading_above_the_mark_is_lost_once_it_takes_nothing() -> None:
    """SIGSTOP: the worker takes no byte. Above MAX_BACKLOG, that is a hung worker once it
    lasts the stall period (1 s here, 10 s in the daemon)."""

    async def main() -> None:
        async with pool_running(n_workers=1, slots=BURST, stall_sec=1.0) as t:
            [(worker_id, pid)] = t.pool.worker_pids().items()
            os.kill(pid, signal.SIGSTOP)
            try:
                t.pool.send_grants(worker_id, [grant(shell("true"), payload=BURST_PAYLOAD) for _ in range(BURST)])
                started = time.monotonic()
                [(lost_id, held)] = await until(lambda: t.h.lost, 30, "the stopped worker lost")
                assert lost_id == worker_id and len(held) == BURST
                assert time.monotonic() - started >= 0.9
                [hung] = t.logged("pool.worker_hung", worker=worker_id)
                assert hung["stalledSec"] >= 1.0
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    run(main())
