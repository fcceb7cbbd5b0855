"""What counts as an http(s) URL, the same for a job's HTTP target and a webhook rule.

One rule for both, because a URL that one part of the API takes and another refuses reads as a bug:
at most ``max_chars`` characters, no spaces or unprintable characters (they would end up in a
request line), a port in range, and an ``http``/``https`` scheme with a host.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def http_url_problem(url: str, max_chars: int) -> str | None:
    """Why ``url`` is not an absolute http(s) URL we can call, or None when it is."""
    if len(url) > max_chars or any(c.isspace() or not c.isprintable() for c in url):
        return f"must be at most {max_chars} characters, without spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"is not a valid URL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an absolute http:// or https:// URL"
    return None
