#!/usr/bin/env python3
"""A remote worker: run queue-target jobs on any machine that can reach the daemon.

On the scheduler (once):

    cronwheel token create --tenant default --role worker          # prints the token
    cronwheel add '*/5 * * * *' --queue thumbnails --payload '{"image": "cat.png"}'

On the worker machine (with cronwheel installed, CRONWHEEL_TOKEN set to that token):

    python3 examples/remote_worker.py http://scheduler:7878 thumbnails

It is `cronwheel worker --url URL --queue QUEUE --handler remote_worker:make_thumbnail`
with the handler below: the worker long-polls `POST /v1/workers/claim`, heartbeats every
leaseSec/4, abandons a run at once if its lease is fenced (409), and reports the result.
The handler writes its output under a name that includes the lease epoch and renames it
into place, so a zombie run that wakes up late can never leave a half-written file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

OUT = Path(os.environ.get("REMOTE_EXAMPLE_OUT", "/tmp/cronwheel-thumbnails"))


def make_thumbnail(execution_id: str, lease_epoch: int, payload: Any) -> dict[str, Any]:
    image = (payload or {}).get("image", "unnamed.png")
    OUT.mkdir(parents=True, exist_ok=True)
    final = OUT / f"{image}.thumb.json"
    partial = OUT / f".{image}.{execution_id.replace(':', '_')}.{lease_epoch}.tmp"
    partial.write_text(json.dumps({"image": image, "executionId": execution_id, "leaseEpoch": lease_epoch}))
    partial.rename(final)  # atomic: readers see the old thumbnail or the new one
    return {"thumbnail": str(final)}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    url, queues = argv[0], argv[1:]
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "cronwheel", "worker", "--url", url, "--handler", "remote_worker:make_thumbnail"]
    for q in queues:
        cmd += ["--queue", q]
    os.execvpe(cmd[0], cmd, env)  # the worker handles SIGTERM itself: finish, report, exit


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
