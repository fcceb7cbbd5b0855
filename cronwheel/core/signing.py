"""How a webhook notification is signed, and how a receiver checks it (docs/notifications.md).

``Cronwheel-Signature: t=<unix seconds>,v1=<hex>``, where ``v1`` is HMAC-SHA256 keyed by the
rule's secret over ``<t>.`` followed by the body. A receiver refuses a signature more than
``SIGNATURE_TOLERANCE_SEC`` away from its own clock (a replay) and deduplicates on the body's
``notificationId``, which the signature covers. Pure: time is an argument.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "Cronwheel-Signature"
#: receivers should refuse signatures older (or newer) than this
SIGNATURE_TOLERANCE_SEC = 300


def sign(secret: str, timestamp_s: int, body: bytes) -> str:
    """The ``Cronwheel-Signature`` header value for ``body`` sent at ``timestamp_s``."""
    mac = hmac.new(secret.encode(), str(timestamp_s).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp_s},v1={mac}"


def verify(secret: str, header: str, body: bytes, now_s: int, tolerance_s: int = SIGNATURE_TOLERANCE_SEC) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance_s`` of ``now_s``."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        ts = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs(now_s - ts) > tolerance_s:
        return False
    expected = sign(secret, ts, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))
