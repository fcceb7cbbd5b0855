"""An HTTP target's run, ``{"http": {url, method="POST", headers={}, timeoutSec?}}``: the
payload as a JSON body (none for GET and HEAD), the job's headers and the run's own
(``Cronwheel-*``, ``Idempotency-Key``); the answer's body is the run's output, a 2xx succeeds,
any other status fails the run with it.

A target whose headers ``core.httpheaders`` keeps to the worker (``Host``, ``Content-Length``…)
fails unsent: the API refuses them now, but a job saved before it did still has them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from multidict import CIMultiDict

from cronwheel.core.httpheaders import header_problem
from cronwheel.core.model import Grant
from cronwheel.core.urls import http_url_as_written
from cronwheel.worker.httpfailures import http_failure
from cronwheel.worker.results import Result, Tail, bounded_tail, timed_out

READ_CHUNK = 64 * 1024


def new_session(slots: int) -> aiohttp.ClientSession:
    """The session a worker's HTTP targets share (its connection pool)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max(100, slots)),
        timeout=aiohttp.ClientTimeout(total=None),
    )


async def run_http(session: aiohttp.ClientSession, g: Grant, spec: dict[str, Any], ours: dict[str, str]) -> Result:
    """Run ``g``'s HTTP target ``spec``, sending ``ours`` (the run's identity) with it."""
    url = spec.get("url")
    method = spec.get("method") or "POST"
    headers = spec.get("headers") or {}
    if not isinstance(url, str) or not isinstance(method, str) or not isinstance(headers, dict):
        return Result("failed", error="http target needs url (string), method (string), headers (map)")
    method = method.upper()
    own = {str(k): str(v) for k, v in headers.items()}
    parsed = http_url_as_written(url)
    problem = None if parsed is None else header_problem(own, parsed)
    if problem is not None:  # a job saved before the API refused it: not sent either
        return Result("failed", error=f"not sent: the header {problem[0]} {problem[1]}")
    timeout_sec = float(g.timeout_sec)
    t = spec.get("timeoutSec")
    if isinstance(t, int | float) and not isinstance(t, bool) and t > 0:
        timeout_sec = min(timeout_sec, float(t))
    h: CIMultiDict[str] = CIMultiDict(own)
    h.update(ours)  # ours win, whatever the case of the job's header names
    body: bytes | None = None
    if method not in ("GET", "HEAD"):
        body = json.dumps(g.payload, ensure_ascii=False).encode()
        h.setdefault("Content-Type", "application/json")  # case-insensitive
    tail = Tail()
    try:
        async with asyncio.timeout(timeout_sec):
            async with session.request(method, url, data=body, headers=h) as resp:
                async for chunk in resp.content.iter_chunked(READ_CHUNK):
                    tail.add(chunk)
                status, reason = resp.status, resp.reason
    except TimeoutError:
        return timed_out(timeout_sec, None, tail.text() or None)
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        return Result("failed", None, bounded_tail(http_failure(exc)), tail.text() or None)
    output = tail.text()
    if 200 <= status < 300:
        return Result("succeeded", status, None, output)
    return Result("failed", status, f"HTTP {status} {reason or ''}".rstrip(), output)
