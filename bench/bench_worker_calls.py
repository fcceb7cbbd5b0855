"""A local worker's own cost per run, with no daemon: a real ``cronwheel worker`` process,
connected to this script's socket, is sent N grants of a Python callable (the no-op by default)
in frames of ``--batch``, keeping at most ``--slots`` in flight as the daemon does, and its
results are read back. Prints runs/s, the worker process's CPU per run (from /proc, user and
system) and the threads it ended with; nothing of the daemon is in it.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_worker_calls.py --n 30000
    PYTHONPATH=$PWD .venv/bin/python bench/bench_worker_calls.py --n 30000 --command /usr/bin/true --slots 32

Alternate it with a ``git worktree`` of another commit (``--tree that/tree``) for an A/B: the
machine's noise moves a single run by ±10 %.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import uvloop

from cronwheel.core.model import Grant, Priority
from cronwheel.worker import protocol as wire
from cronwheel.worker.framing import (
    FROM_WORKER,
    HELLO,
    FrameDecoder,
    encode_frame,
    encode_grant_frames,
    read_frame,
)

NOOP = "cronwheel.worker.noop:noop"


def process_cpu(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


async def drive(args: argparse.Namespace, tree: Path) -> dict[str, float]:
    target = {"command": args.command} if args.command else {"python": args.python}
    with tempfile.TemporaryDirectory(prefix="cw-wbench-") as tmp:
        path = str(Path(tmp) / "w.sock")
        connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.get_running_loop().create_future()
        server = await asyncio.start_unix_server(lambda r, w: connected.set_result((r, w)), path)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cronwheel.worker.process", "--socket", path, "--worker-id", "bench-1-w0-1",
            "--slots", str(args.slots), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            reader, writer = await asyncio.wait_for(connected, 30)
            await read_frame(reader, HELLO)
            writer.write(encode_frame(wire.Welcome(wire.PROTOCOL_VERSION)))
            grants = [Grant(f"bench:{i}", "bench", "default", Priority.DEFAULT, i, 1, 1, 0, 60, 60, target, None)
                      for i in range(args.n + args.warmup)]  # fmt: skip
            decoder = FrameDecoder(FROM_WORKER)
            sent = done = 0

            async def run(count: int) -> None:
                nonlocal sent, done
                goal = done + count
                while done < goal:
                    room = min(args.slots - (sent - done), goal - sent)
                    while room > 0:  # the daemon grants in batches as slots free up
                        n = min(room, args.batch)
                        frames, bad = encode_grant_frames(grants[sent : sent + n])
                        assert not bad, bad
                        writer.writelines(frames)
                        sent += n
                        room -= n
                    data = await reader.read(1 << 16)
                    if not data:
                        raise SystemExit(f"the worker closed its socket: exit {await proc.wait()}")
                    for frame in decoder.feed(data):
                        if isinstance(frame, wire.Results):
                            for c in frame.results:
                                if c.outcome.value != "succeeded":
                                    raise SystemExit(f"{c.execution_id}: {c.outcome.value} {c.error}")
                            done += len(frame.results)

            await run(args.warmup)  # the callable loaded, the first threads started
            t0, (u0, s0) = time.perf_counter(), process_cpu(proc.pid)
            await run(args.n)
            t1, (u1, s1) = time.perf_counter(), process_cpu(proc.pid)
            threads = len(os.listdir(f"/proc/{proc.pid}/task"))
            writer.write(encode_frame(wire.Bye()))
            await writer.drain()
            await asyncio.wait_for(proc.wait(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            server.close()
    n = args.n
    return {"rate": n / (t1 - t0), "user": (u1 - u0) / n * 1e6, "sys": (s1 - s0) / n * 1e6, "threads": threads}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30_000, help="runs measured")
    ap.add_argument("--warmup", type=int, default=2_000, help="runs before measuring")
    ap.add_argument("--slots", type=int, default=256, help="the worker's slots (bench_herd.py's default)")
    ap.add_argument("--batch", type=int, default=128, help="grants per frame at most")
    ap.add_argument("--python", default=NOOP, help="the callable (module:function)")
    ap.add_argument("--command", help="a command instead of a callable")
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the source tree the worker runs from (another commit's worktree for an A/B)")
    args = ap.parse_args()
    r = uvloop.run(drive(args, args.tree.resolve()))
    what = args.command or args.python
    print(f"{args.n:,} runs of {what} ({args.tree}), {args.slots} slots: {r['rate']:,.0f}/s; worker CPU per run "
          f"{r['user'] + r['sys']:.1f} µs (user {r['user']:.1f}, system {r['sys']:.1f}); {r['threads']:.0f} threads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
