"""obs/heap.py and the worker's exit: the collector settings of a long-running process, and
a job thread that never returns told apart from ones that were only finishing."""

from __future__ import annotations

import subprocess
import sys

from cronwheel.obs.heap import THRESHOLDS
from tests.support.daemon import REPO


def test_settle_heap_freezes_start_up_objects_and_raises_the_thresholds() -> None:
    code = ("import gc; from cronwheel.obs.heap import settle_heap; gc.collect(); tracked = len(gc.get_objects());"
            "settle_heap(); print(gc.get_threshold(), tracked, gc.get_freeze_count(), len(gc.get_objects()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout.split(")")
    assert out[0] + ")" == str(THRESHOLDS)
    tracked, frozen, still_walked = (int(n) for n in out[1].split())
    # the objects of start-up (modules, functions, classes) are frozen, none left to walk but
    # the few the probe itself makes
    assert tracked > 1000 and frozen >= tracked - 10 and still_walked < 10, out


#: run alone in a process of its own: the test process may have threads of other tests
THREADS_SCRIPT = """
import threading
from cronwheel.worker.process import _threads_left
release = threading.Event()
finishing = threading.Thread(target=release.wait)
finishing.start()
threading.Timer(0.05, release.set).start()  # returns while _threads_left waits for it
print(_threads_left(10.0), finishing.is_alive())
stuck_until = threading.Event()
threading.Thread(target=stuck_until.wait).start()
print(_threads_left(0.05))
stuck_until.set()
"""


def test_a_finishing_thread_is_waited_for_and_a_stuck_one_is_reported() -> None:
    out = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], capture_output=True, text=True, check=True, cwd=REPO,
                         timeout=60).stdout.split()  # fmt: skip
    assert out == ["False", "False", "True"]
