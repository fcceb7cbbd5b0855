"""Python targets used by the failure tests (imported inside real worker processes)."""

from __future__ import annotations

import os
import signal
from typing import Any


def crash_worker(**_: Any) -> None:
    """A poison pill that takes its worker process down with it, every time."""
    os.kill(os.getpid(), signal.SIGKILL)
