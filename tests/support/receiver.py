"""A local HTTP receiver for webhook notifications: it verifies each signature with the
verification code of examples/webhook_receiver.py, records every delivery, and can hold a
request open (to kill the daemon in the middle of a delivery)."""

from __future__ import annotations

import importlib.util
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.daemon import REPO

_spec = importlib.util.spec_from_file_location("webhook_receiver", REPO / "examples" / "webhook_receiver.py")
assert _spec is not None and _spec.loader is not None
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)


@dataclass
class Delivery:
    notification_id: str
    event: str
    signed: bool
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class WebhookReceiver:
    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.deliveries: list[Delivery] = []
        self.lock = threading.Lock()
        #: while set, requests are held (not answered) until ``release()``
        self.hold = threading.Event()
        self._released = threading.Event()
        self.held = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                signed = example.verify(receiver.secret, self.headers.get("Cronwheel-Signature", ""), body)
                doc = json.loads(body)
                # grouped by the signed body's id, as a receiver must (the header is not signed)
                d = Delivery(str(doc.get("notificationId", "")), self.headers.get("Cronwheel-Event", ""),
                             signed, doc, dict(self.headers))  # fmt: skip
                with receiver.lock:
                    receiver.deliveries.append(d)
                    holding = receiver.hold.is_set()
                    if holding:
                        receiver.held += 1
                if holding:
                    receiver._released.wait(60)
                try:
                    self.send_response(204 if signed else 401)
                    self.end_headers()
                except OSError:
                    pass  # the daemon died while we held it

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()

    def release(self) -> None:
        self.hold.clear()
        self._released.set()

    def unique(self) -> dict[str, list[Delivery]]:
        with self.lock:
            out: dict[str, list[Delivery]] = {}
            for d in self.deliveries:
                out.setdefault(d.notification_id, []).append(d)
            return out
