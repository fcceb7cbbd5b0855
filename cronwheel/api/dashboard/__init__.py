"""The web dashboard's static files (``GET /`` and ``GET /ui/{asset}``), shipped as package data.

The page and its assets hold no data, so they are served without credentials (``Access.OPEN``);
the page's script calls the ``/v1`` API, where every call goes through the same bearer-token
(TCP) or peer-uid (Unix socket) check as any other client's. No build step: plain HTML, CSS and
ES modules, read from ``static/`` (only the files that are there, so a request names no path).

Every response carries a strict Content-Security-Policy: scripts and styles only from this
origin, no inline script, no framing, no plugins. Together with the script building its DOM
with ``textContent`` (never ``innerHTML`` with data), a job named ``<script>…`` stays text.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from aiohttp import web

STATIC = Path(__file__).with_name("static")

#: the types of what ``static/`` holds; any other file there is not served
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}

CSP = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))

SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",  # for browsers that predate frame-ancestors
    "Referrer-Policy": "no-referrer",
    # revalidate every time (cheap: ETag), so an upgraded daemon never serves a stale script
    "Cache-Control": "no-cache",
}


@cache
def _files() -> dict[str, tuple[bytes, str, str]]:
    """name -> (body, content type, ETag) of every servable file in ``static/``, read once:
    they are package data and do not change under a running daemon. (A table of what exists,
    not a cache keyed by the requested name: random names must not grow memory.)"""
    files: dict[str, tuple[bytes, str, str]] = {}
    for path in STATIC.iterdir():
        ctype = CONTENT_TYPES.get(path.suffix)
        if ctype is None or path.name.startswith(".") or not path.is_file():
            continue
        body = path.read_bytes()
        files[path.name] = (body, ctype, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    return files


def _load(name: str) -> tuple[bytes, str, str] | None:
    return _files().get(name)


def _serve(request: web.Request, name: str) -> web.Response:
    found = _load(name)
    if found is None:
        raise web.HTTPNotFound()
    body, ctype, etag = found
    headers = {**SECURITY_HEADERS, "ETag": etag}
    if etag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, headers={**headers, "Content-Type": ctype})


async def index(request: web.Request) -> web.Response:
    """The dashboard page (its views are URL fragments: ``#/jobs``, ``#/dlq``)."""
    return _serve(request, "index.html")


async def asset(request: web.Request) -> web.Response:
    """A script, stylesheet or icon of the page, by file name."""
    return _serve(request, request.match_info["asset"])
