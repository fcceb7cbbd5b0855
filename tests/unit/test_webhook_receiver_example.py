"""examples/webhook_receiver.py deduplicates on what the signature covers: a signed body
replayed with other headers (another ``Cronwheel-Notification-Id``) is handled once."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cronwheel.core import signing

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "webhook_receiver.py"
SECRET = "a-long-random-secret"

_spec = importlib.util.spec_from_file_location("webhook_receiver_example", EXAMPLE)
assert _spec is not None and _spec.loader is not None
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[str]]]:
    handled: list[str] = []

    class Counting(example.Receiver):  # type: ignore[name-defined,misc]
        secret = SECRET
        seen: ClassVar[set[str]] = set()

        def log_message(self, *args: Any) -> None:
            pass

    # what the example prints is what it handled: count the prints, not the requests
    example.print = lambda *a, **k: handled.append(" ".join(map(str, a)))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", handled
    finally:
        server.shutdown()
        server.server_close()
        del example.print


def post(url: str, body: bytes, headers: dict[str, str]) -> int:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_replayed_signed_body_with_other_headers_is_handled_once(receiver: tuple[str, list[str]]) -> None:
    url, handled = receiver
    nid = "jq3:1764460800000@r_5f0c"
    body = json.dumps({"notificationId": nid, "event": "dead", "ruleId": "r_5f0c", "jobId": "jq3",
                       "jobName": "nightly", "error": "exit code 2"}).encode()  # fmt: skip
    signature = signing.sign(SECRET, int(time.time()), body)
    for header_id in (nid, "forged-1", "forged-2"):
        headers = {"Content-Type": "application/json", signing.SIGNATURE_HEADER: signature,
                   "Cronwheel-Notification-Id": header_id, "Cronwheel-Event": "dead"}  # fmt: skip
        assert post(url, body, headers) == 204  # acknowledged every time: a repeat is not an error
    assert handled == ["dead: job nightly exit code 2"]
    # a body that is not signed is refused, and not handled
    assert post(url, body.replace(b"nightly", b"other"), {signing.SIGNATURE_HEADER: signature}) == 401
    assert len(handled) == 1
