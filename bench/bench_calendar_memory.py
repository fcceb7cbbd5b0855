"""What concurrent calendar listings cost the daemon's memory: a real daemon on a throwaway data
directory, ``--calendars`` calendars of 5,000 dates each, then ``--listings`` listings of
``GET /v1/calendars`` at once, the daemon's RSS read from /proc every 50 ms.

    .venv/bin/python bench/bench_calendar_memory.py --calendars 300 --listings 8
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repository on sys.path)
import aiohttp

DATES = [(datetime.date(2030, 1, 1) + datetime.timedelta(days=i)).isoformat() for i in range(5000)]


def rss_mib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0


async def measure(url: str, token: str, pid: int, calendars: int, listings: int) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for i in range(calendars):
            async with session.put(f"{url}/v1/calendars/c{i:04d}", json={"dates": DATES}, headers=headers) as r:
                r.raise_for_status()
        before, peak, done = rss_mib(pid), [0], asyncio.Event()

        async def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], rss_mib(pid))
                await asyncio.sleep(0.05)

        async def listing() -> int:
            async with session.get(f"{url}/v1/calendars", headers=headers) as r:
                return len(await r.read())

        watcher = asyncio.create_task(watch())
        began = time.monotonic()
        sizes = await asyncio.gather(*(listing() for _ in range(listings)))
        elapsed = time.monotonic() - began
        done.set()
        await watcher
    return (f"{calendars} calendars, {listings} listings of {sizes[0] / 1e6:.1f} MB at once, answered in {elapsed:.1f} s: "
            f"daemon RSS {before} MiB before, {max(peak[0], before)} MiB at the peak")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calendars", type=int, default=300)
    ap.add_argument("--listings", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        daemon = subprocess.Popen([sys.executable, "-m", "cronwheel", "serve", "--data-dir", str(data), "--http", "127.0.0.1:0"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
        try:
            deadline = time.monotonic() + 30
            while not (data / "http.addr").exists() or not (data / "admin-token").exists():
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise SystemExit("the daemon did not start")
                time.sleep(0.05)
            url = (data / "http.addr").read_text().strip()  # http://HOST:PORT
            token = (data / "admin-token").read_text().strip()
            print(asyncio.run(measure(url, token, daemon.pid, args.calendars, args.listings)))
        finally:
            daemon.terminate()
            daemon.wait(30)


if __name__ == "__main__":
    main()
