"""The data directory's disk: free space for ``status`` and ``/metrics``, a warning before
writes start failing, and the SQLite WAL kept small.

Every ``DISK_CHECK_SEC`` the watch reads the free space of the data directory's file system
and asks the store to bound its log (``Store.maintain_log``: SQLite checkpoints its WAL once
it is over ``WAL_TARGET_BYTES``, sooner while the disk is low). When the free space falls
under the low mark (``--disk-low``, default 256 MiB) it logs ``store.disk_low`` (again at
most every ``DISK_LOW_REPEAT_SEC`` while it stays low) and ``store.disk_ok`` when it is back:
the operator hears of it while there is still room to act, and a full disk then fails
writes cleanly with 503 (nothing acknowledged is lost).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path

from cronwheel.core.ratelimit import OncePer
from cronwheel.engine.runner import StoreRunner
from cronwheel.obs.events import EventLog

DISK_CHECK_SEC = 5.0
DISK_LOW_BYTES = 256 * 1024 * 1024
DISK_LOW_REPEAT_SEC = 300.0


@dataclass
class DiskState:
    free_bytes: int | None = None
    total_bytes: int | None = None
    low: bool = False
    log_bytes: int | None = None  #: the store's log (SQLite: the WAL file), None if it has none
    checked_at: float = 0.0

    def to_json(self, low_mark: int) -> dict[str, object]:
        return {"freeBytes": self.free_bytes, "totalBytes": self.total_bytes, "low": self.low,
                "lowMarkBytes": low_mark, "walBytes": self.log_bytes}


class DiskWatch:
    def __init__(self, data_dir: Path, writer: StoreRunner, events: EventLog, low_bytes: int = DISK_LOW_BYTES) -> None:
        self.data_dir = data_dir
        self.writer = writer
        self.events = events
        self.low_bytes = low_bytes
        self.state = DiskState()
        self._repeat = OncePer(DISK_LOW_REPEAT_SEC)

    def read_free(self) -> None:
        try:
            st = os.statvfs(self.data_dir)
        except OSError:
            return
        self.state.free_bytes = st.f_bavail * st.f_frsize
        self.state.total_bytes = st.f_blocks * st.f_frsize
        self.state.checked_at = time.monotonic()

    async def check(self) -> None:
        """One look at the disk, and the log kept small."""
        self.read_free()
        free = self.state.free_bytes
        was_low = self.state.low
        self.state.low = free is not None and free < self.low_bytes
        if self.state.low and self._repeat.allow("low", time.monotonic()):
            self.events.emit("store.disk_low", dataDir=str(self.data_dir), freeBytes=free, lowMarkBytes=self.low_bytes,
                             totalBytes=self.state.total_bytes)
        elif was_low and not self.state.low:
            self._repeat = OncePer(DISK_LOW_REPEAT_SEC)  # the next episode is said at once
            self.events.emit("store.disk_ok", dataDir=str(self.data_dir), freeBytes=free, lowMarkBytes=self.low_bytes)
        low = self.state.low
        self.state.log_bytes = await self.writer.run(lambda s: s.maintain_log(low))

    async def run(self) -> None:
        while True:
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # watching the disk must never take the node down
                self.events.emit("store.disk_check_error", error=type(exc).__name__, detail=str(exc)[:300])
            await asyncio.sleep(DISK_CHECK_SEC)
