"""A stand-in for ``cronwheel worker`` that a test can take over (``CRONWHEEL_WORKER_CMD``).

Worker index 0 becomes a *puppet*: it records the id the pool gave it in
``$CWTEST_PUPPET_DIR/ids`` (not a ``CRONWHEEL_`` variable: the daemon keeps those from its workers) and waits, never connecting, so that a test can connect to the
worker socket under that id and misbehave as a worker that said hello properly. Every other
index execs the real worker."""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    args = sys.argv[1:]
    worker_id = args[args.index("--worker-id") + 1] if "--worker-id" in args else ""
    if "-w0-" not in worker_id:
        os.execv(sys.executable, [sys.executable, "-m", "cronwheel.worker.process", *args])
    with open(os.path.join(os.environ["CWTEST_PUPPET_DIR"], "ids"), "a") as fh:
        fh.write(worker_id + "\n")
    while True:
        signal.pause()  # until the pool terminates us


if __name__ == "__main__":
    main()
