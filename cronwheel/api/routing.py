"""How the route table becomes aiohttp routes, so that every path answers for exactly its own
methods.

Two rules, both about ``Allow`` telling the truth:

* **A static segment wins over a variable one.** ``/v1/jobs/batch`` and ``/v1/jobs/{jobId}``
  both match the text ``/v1/jobs/batch``; left alone, the router would answer ``GET
  /v1/jobs/batch`` as "no job 'batch'" and list ``DELETE, GET, POST`` in a 405's ``Allow``.
  Each variable segment is therefore given a pattern that refuses its static siblings, computed
  from the table itself, so a route added later is covered without anyone remembering to.
* **OPTIONS is answered on every path**: 204 with ``Allow`` listing the path's methods and
  OPTIONS itself; any other method the path does not have gets 405 with the same ``Allow``.
  OPTIONS needs the same credentials as the path's own routes (an open path stays open), so
  probing learns nothing an unauthenticated caller may not know.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web

_VARIABLE = re.compile(r"^\{(\w+)\}$")


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def exclusive_path(path: str, paths: Iterable[str]) -> str:
    """``path`` with each ``{name}`` segment turned into ``{name:regex}`` that refuses the
    static segments other routes have at the same place under the same prefix."""
    others = [_segments(p) for p in set(paths) if p != path]
    own = _segments(path)
    out: list[str] = []
    for i, segment in enumerate(own):
        match = _VARIABLE.match(segment)
        if match is None:
            out.append(segment)
            continue
        siblings = sorted({
            other[i] for other in others
            if len(other) > i and other[:i] == own[:i] and _VARIABLE.match(other[i]) is None
        })
        if siblings:
            refused = "|".join(re.escape(s) for s in siblings)
            segment = f"{{{match.group(1)}:(?!(?:{refused})(?:/|$))[^/]+}}"
        out.append(segment)
    return "/" + "/".join(out)


def allowed_methods(routes: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """Path -> its methods plus OPTIONS (and HEAD where it has GET), sorted: the ``Allow``
    header of that path."""
    by_path: dict[str, set[str]] = defaultdict(set)
    for method, path in routes:
        by_path[path].update(with_head(method.upper()))
    return {path: tuple(sorted(methods | {"OPTIONS"})) for path, methods in by_path.items()}


def with_head(method: str) -> tuple[str, ...]:
    """The methods a route of ``method`` answers: a GET answers HEAD too (the same handler,
    the body left out), as HTTP asks and as monitors probing ``HEAD /healthz`` expect."""
    return (method, "HEAD") if method == "GET" else (method,)


def options_handler(allow: tuple[str, ...]) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``OPTIONS <path>``: 204 and the path's ``Allow``."""
    header = ", ".join(allow)

    async def options(request: web.Request) -> web.Response:
        return web.Response(status=204, headers={"Allow": header})

    return options


def query_parameters(openapi: dict[str, Any]) -> dict[tuple[str, str], frozenset[str]]:
    """(METHOD, path) -> the names of the query parameters the OpenAPI document gives the
    operation (its own and its path's, references resolved): what the route reads, no more."""
    shared = openapi.get("components", {}).get("parameters", {})

    def resolved(param: dict[str, Any]) -> dict[str, Any]:
        ref = param.get("$ref")
        return shared[ref.rsplit("/", 1)[-1]] if isinstance(ref, str) else param

    table: dict[tuple[str, str], frozenset[str]] = {}
    for path, item in openapi.get("paths", {}).items():
        common = item.get("parameters", [])
        for method, op in item.items():
            if method == "parameters":
                continue
            params = map(resolved, [*common, *op.get("parameters", [])])
            table[(method.upper(), path)] = frozenset(p["name"] for p in params if p.get("in") == "query")
    return table
