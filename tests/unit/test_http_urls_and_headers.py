"""The URL an HTTP target or a webhook calls, and the headers a target may send, pure: a host
the allow-list and the worker's client read alike, and the headers that are the worker's."""

from __future__ import annotations

import pytest

from cronwheel.core.httpheaders import header_problem
from cronwheel.core.urls import http_url_as_written, http_url_problem, parse_http_url


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
    ("http://[::1]x/", "'[::1]x' as its host and port"),  # urlsplit: ::1; aiohttp: Invalid IPv6 URL
    ("http://u@[::1]]:80/", "'[::1]]:80' as its host and port"),
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


def test_a_url_as_written_is_read_without_judging_its_host() -> None:
    """What the worker compares a stored target's Host header with."""
    old = http_url_as_written("https://B\u00fccher.de.:8443/")
    assert old is not None and (old.host, old.port) == ("b\u00fccher.de.", 8443)
    assert http_url_as_written("http://[::1]/") is not None and http_url_as_written("http://[::1]/").host == "[::1]"  # type: ignore[union-attr]
    assert http_url_as_written("ftp://h/") is None and http_url_as_written("http://h:99999/") is None


URL = parse_http_url("https://api.example.com/hook", 100)
ODD_PORT = parse_http_url("http://api.example.com:8080/hook", 100)


@pytest.mark.parametrize(("headers", "url"), [
    ({}, URL),
    ({"Authorization": "Bearer x", "Content-Type": "text/plain", "X-A": "caf\u00e9\tb"}, URL),
    ({"Host": "api.example.com"}, URL),
    ({"host": "API.example.com:443"}, URL),
    ({"HOST": "api.example.com:8080"}, ODD_PORT),
    ({"Host": "api.example.com"}, ODD_PORT),
    ({"Host": "[::1]:8080"}, parse_http_url("http://[::1]:8080/", 100)),
])
def test_headers_a_target_may_send(headers: dict[str, str], url: object) -> None:
    assert header_problem(headers, url) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(("headers", "name", "words"), [
    ({"Host": "admin.internal"}, "Host", "picks the virtual host"),
    ({"host": "api.example.com:8443"}, "host", "not 'api.example.com:8443'"),
    ({"Host": "api.example.com."}, "Host", "virtual host"),
    ({"Host": ""}, "Host", "virtual host"),
    ({"Content-Length": "0"}, "Content-Length", "frames the request body"),
    ({"TRANSFER-ENCODING": "chunked"}, "TRANSFER-ENCODING", "frames the request body"),
    ({"connection": "close"}, "connection", "hop-by-hop"),
    ({"Keep-Alive": "1"}, "Keep-Alive", "hop-by-hop"),
    ({"Upgrade": "h2c"}, "Upgrade", "hop-by-hop"),
    ({"te": "trailers"}, "te", "hop-by-hop"),
    ({"Trailer": "X"}, "Trailer", "hop-by-hop"),
    ({"Expect": "100-continue"}, "Expect", "request body back"),
    ({"Proxy-Authorization": "Basic x"}, "Proxy-Authorization", "a proxy"),
    ({"proxy-connection": "keep-alive"}, "proxy-connection", "a proxy"),
    ({"X-A": "1", "x-a": "2"}, "x-a", "given twice (X-A and x-a)"),
])
def test_headers_the_worker_keeps(headers: dict[str, str], name: str, words: str) -> None:
    problem = header_problem({"X-Fine": "1", **headers}, URL)
    assert problem is not None and problem[0] == name and words in problem[1], problem
