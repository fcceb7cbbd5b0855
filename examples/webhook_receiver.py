#!/usr/bin/env python3
"""A webhook receiver for cronwheel notifications, with nothing but the standard library.

It checks the ``Cronwheel-Signature`` header (HMAC-SHA256 of ``"<t>." + body`` keyed by the
rule's secret), refuses signatures older than five minutes (replays), and counts each
notification once: cronwheel delivers at least once (a delivery cut short by a crash is sent
again with the same id), so a receiver deduplicates on the id. It takes the id from the
signed body's ``notificationId``, never from the ``Cronwheel-Notification-Id`` header: the
signature does not cover the headers, so whoever replays a signed body can change them.

    CRONWHEEL_WEBHOOK_SECRET=… python3 webhook_receiver.py 8099
    cronwheel add '0 3 * * *' backup.sh   # with a rule:
      {"on": "failure", "via": "webhook", "url": "http://127.0.0.1:8099/", "secret": "…"}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

TOLERANCE_SEC = 300


def verify(secret: str, header: str, body: bytes, now: float | None = None, tolerance: int = TOLERANCE_SEC) -> bool:
    """Whether ``header`` (``t=<unix seconds>,v1=<hex>``) signs ``body`` with ``secret``."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        sent_at = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - sent_at) > tolerance:
        return False  # too old (or from the future): a replay, or a badly wrong clock
    expected = hmac.new(secret.encode(), f"{sent_at}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields.get("v1", ""))


class Receiver(BaseHTTPRequestHandler):
    secret = os.environ.get("CRONWHEEL_WEBHOOK_SECRET", "")
    seen: ClassVar[set[str]] = set()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verify(self.secret, self.headers.get("Cronwheel-Signature", ""), body):
            self.send_response(401)
            self.end_headers()
            return
        event = json.loads(body)
        # the id the signature covers: a header could be rewritten by whoever replays the body
        nid = str(event.get("notificationId", ""))
        if nid not in self.seen:  # a repeat of a notification already handled: acknowledge only
            self.seen.add(nid)
            print(f"{event['event']}: job {event.get('jobName') or event['jobId']} {event.get('error') or ''}", flush=True)
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8099
    ThreadingHTTPServer(("127.0.0.1", port), Receiver).serve_forever()
