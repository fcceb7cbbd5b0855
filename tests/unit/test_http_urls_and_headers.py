"""The URL an HTTP target or a webhook calls, pure: a host the allow-list and the worker's client
read alike."""

from __future__ import annotations

import pytest

from cronwheel.core.urls import http_url_problem, parse_http_url


@pytest.mark.parametrize(("url", "host", "port"), [
    ("http://api.example.com/x", "api.example.com", 80),
    ("HTTPS://API.Example.com:8443", "api.example.com", 8443),
    ("https://x_y.internal/", "x_y.internal", 443),
    ("http://10.0.0.1:1/", "10.0.0.1", 1),
    ("http://[::1]:65535/", "[::1]", 65535),
    ("http://[::FFFF:10.0.0.1]/", "[::ffff:10.0.0.1]", 80),
    ("http://h:/", "h", 80),  # an empty port is the scheme's
    ("http://a1.b2.xn--bcher-kva.de/", "a1.b2.xn--bcher-kva.de", 80),
])
def test_urls_taken_and_how_they_are_called(url: str, host: str, port: int) -> None:
    parsed = parse_http_url(url, 100)
    assert (parsed.host, parsed.port, parsed.has_userinfo) == (host, port, False)
    assert http_url_problem(url, 100) is None


@pytest.mark.parametrize(("url", "words"), [
    ("http://h:0/", "has port 0"),
    ("http://h:65536/", "Port out of range"),
    ("http://h:+80/", "not a valid URL"),
    ("http://h:\u0668\u0660/", "not a valid URL"),  # Arabic-Indic digits: int() takes them
    ("http:///x", "absolute http"),
    ("file:///etc/passwd", "absolute http"),
    ("http://h /", "without spaces"),
    ("http://h/\x85", "control characters"),
    ("http://" + "h" * 300, "at most 300 characters"),
    ("http://[fe80::1%25eth0]/", "zone id ('%25eth0')"),
    ("http://[v1.x]/", "not an IPv6 address"),
    ("http://[zz]/", "not a valid URL"),
    ("http://api.example.com./", "ends with a dot"),
    ("http://b\u00fccher.de/", "IDNA form ('xn--bcher-kva.de')"),
    ("http://\uff41pi.example.com/", "not ASCII"),
    ("http://%61pi.example.com/", "neither an IP address nor a host name"),
    ("http://a..b/", "neither an IP address"),
    ("http://-a.b/", "neither an IP address"),
    ("http://a-.b/", "neither an IP address"),
    ("http://" + "a" * 64 + ".b/", "neither an IP address"),
    ("http://" + "a." * 127 + "bc/", "neither an IP address"),  # 256 characters
    ("http://127.1/", "four decimal numbers"),
    ("http://2130706433/", "four decimal numbers"),
    ("http://0x7f.0.0.1/", "four decimal numbers"),
    ("http://010.0.0.1/", "four decimal numbers"),  # octal to inet_aton
    ("http://256.0.0.1/", "four decimal numbers"),
    ("http://host.0x1f/", "four decimal numbers"),
])
def test_urls_refused_say_why(url: str, words: str) -> None:
    problem = http_url_problem(url, 300)
    assert problem is not None and words in problem, problem


def test_user_information_is_noted_not_refused_here() -> None:
    """A webhook may carry it; a target refuses it (``api/targets.py``)."""
    assert http_url_problem("https://u:p@h.example/", 100) is None
    assert parse_http_url("https://u:p@h.example/", 100).has_userinfo
    assert parse_http_url("https://@h.example/", 100).has_userinfo
