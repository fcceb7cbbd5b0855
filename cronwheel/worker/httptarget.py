"""An HTTP target's run, ``{"http": {url, method="POST", headers={}, timeoutSec?}}``: the
payload as a JSON body (none for GET and HEAD), the job's headers and the run's own
(``Cronwheel-*``, ``Idempotency-Key``); the answer's body is the run's output, a 2xx succeeds,
any other status fails the run with it.

Redirects are followed here, one request per hop, never by aiohttp: its own following would
call whatever Location the server names. ``core.redirects`` judges each hop's URL as the job's
own was judged (the URL rules, the tenant's allow-list that came with the grant) and says
what the next request is; a hop it refuses ends the run, failed, with the reason, and is
never called. The whole chain counts against the run's timeout.

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
from cronwheel.core.redirects import (
    REDIRECT_STATUSES,
    Hop,
    HopRules,
    RedirectRefused,
    follow,
    shown,
)
from cronwheel.core.urls import http_url_as_written
from cronwheel.worker.httpfailures import http_failure
from cronwheel.worker.results import Result, Tail, bounded_tail, timed_out

READ_CHUNK = 64 * 1024


def new_session(slots: int) -> aiohttp.ClientSession:
    """The session a worker's HTTP targets share (its connection pool). It keeps no cookies, as
    curl keeps none unless asked: a jar in it would send a cookie one answer set with every
    later request to that host, another tenant's run included."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max(100, slots)),
        timeout=aiohttp.ClientTimeout(total=None),
        cookie_jar=aiohttp.DummyCookieJar(),
    )


async def run_http(session: aiohttp.ClientSession, g: Grant, spec: dict[str, Any], ours: dict[str, str]) -> Result:
    """Run ``g``'s HTTP target ``spec``, sending ``ours`` (the run's identity) to every hop."""
    url = spec.get("url")
    method = spec.get("method") or "POST"
    headers = spec.get("headers") or {}
    if not isinstance(url, str) or not isinstance(method, str) or not isinstance(headers, dict):
        return Result("failed", error="http target needs url (string), method (string), headers (map)")
    method = method.upper()
    own = {str(k): str(v) for k, v in headers.items()}
    parsed = http_url_as_written(url)
    if parsed is None:  # no http(s) host at all (the API never took such a URL): nothing to call
        return Result("failed", error=f"not a URL that can be called: {shown(url)}")
    problem = header_problem(own, parsed)
    if problem is not None:  # a job saved before the API refused it: not sent either
        return Result("failed", error=f"not sent: the header {problem[0]} {problem[1]}")
    hop = Hop(method, url, parsed, method not in ("GET", "HEAD"), tuple(own.items()))
    timeout_sec = float(g.timeout_sec)
    t = spec.get("timeoutSec")
    if isinstance(t, int | float) and not isinstance(t, bool) and t > 0:
        timeout_sec = min(timeout_sec, float(t))
    body = json.dumps(g.payload, ensure_ascii=False).encode()
    tail = Tail()
    try:
        async with asyncio.timeout(timeout_sec):
            answer = await _follow(session, hop, HopRules(g.tenant, g.http_allow, parsed.host), body, ours, tail)
    except TimeoutError:
        return timed_out(timeout_sec, None, tail.text() or None)
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        return Result("failed", None, bounded_tail(http_failure(exc)), tail.text() or None)
    if isinstance(answer, Result):  # a redirect refused
        return answer
    status, reason = answer
    output = tail.text()
    if 200 <= status < 300:
        return Result("succeeded", status, None, output)
    return Result("failed", status, f"HTTP {status} {reason or ''}".rstrip(), output)


async def _follow(session: aiohttp.ClientSession, hop: Hop, rules: HopRules, body: bytes, ours: dict[str, str],
                  tail: Tail) -> tuple[int, str | None] | Result:
    """Send ``hop``, then each redirect ``rules`` let it follow: the last answer's status and
    reason (its body into ``tail``), or the failed result of a redirect it refused."""
    while True:
        async with session.request(hop.method, hop.url, data=body if hop.body else None, headers=_headers(hop, ours),
                                   allow_redirects=False) as resp:  # fmt: skip
            location = resp.headers.get("Location")
            if resp.status not in REDIRECT_STATUSES or location is None:
                return await _read(resp, tail)
            try:
                hop = follow(hop, resp.status, location, rules)
            except RedirectRefused as exc:
                return Result("failed", resp.status, bounded_tail(str(exc)))


async def _read(resp: aiohttp.ClientResponse, tail: Tail) -> tuple[int, str | None]:
    async for chunk in resp.content.iter_chunked(READ_CHUNK):
        tail.add(chunk)
    return resp.status, resp.reason


def _headers(hop: Hop, ours: dict[str, str]) -> CIMultiDict[str]:
    h: CIMultiDict[str] = CIMultiDict(hop.headers)
    h.update(ours)  # ours win, whatever the case of the job's header names
    if hop.body:
        h.setdefault("Content-Type", "application/json")  # case-insensitive
    return h
