"""Which redirects an HTTP target's run follows, and the request each makes (core.redirects):
pure, no server. The worker's side runs against real servers in
tests/integration/test_http_target_redirects.py."""

from __future__ import annotations

import pytest

from cronwheel.core.limits import MAX_REDIRECTS, MAX_URL_CHARS
from cronwheel.core.redirects import (
    Hop,
    HopRules,
    RedirectRefused,
    follow,
    granted_allow,
    redirected_method,
    shown,
)
from cronwheel.core.urls import parse_http_url

JOB = "https://api.acme.test/hook"
HEADERS = (("Authorization", "Bearer s"), ("X-Api-Key", "k"), ("Content-Type", "text/plain"), ("Host", "api.acme.test"))


def first(url: str = JOB, method: str = "POST", headers: tuple[tuple[str, str], ...] = HEADERS) -> Hop:
    return Hop(method, url, parse_http_url(url, MAX_URL_CHARS), method not in ("GET", "HEAD"), headers)


def rules(allow: tuple[str, ...] | None = ("api.acme.test", "*.hooks.acme.test"), job: str = JOB) -> HopRules:
    return HopRules("acme", allow, parse_http_url(job, MAX_URL_CHARS).host)


def refusal(hop: Hop, location: str, r: HopRules | None = None, status: int = 302) -> str:
    with pytest.raises(RedirectRefused) as info:
        follow(hop, status, location, r or rules())
    return str(info.value)


@pytest.mark.parametrize(("status", "method", "then", "body"), [
    (301, "POST", "GET", False), (302, "POST", "GET", False), (303, "POST", "GET", False),
    (303, "PUT", "GET", False), (303, "DELETE", "GET", False), (303, "HEAD", "HEAD", True), (303, "GET", "GET", True),
    (301, "PUT", "PUT", True), (302, "DELETE", "DELETE", True), (307, "POST", "POST", True), (308, "PATCH", "PATCH", True),
])  # fmt: skip
def test_the_method_changes_as_browsers_change_it(status: int, method: str, then: str, body: bool) -> None:
    assert redirected_method(status, method) == (then, body)


def test_a_hop_resolves_against_the_url_it_answers() -> None:
    assert follow(first(), 307, "/next?a=1", rules()).url == "https://api.acme.test/next?a=1"
    assert follow(first(), 307, "again", rules()).url == "https://api.acme.test/again"
    assert follow(first(), 307, "//x.hooks.acme.test/y", rules()).url == "https://x.hooks.acme.test/y"
    assert follow(first(), 307, "https:other", rules()).url == "https://api.acme.test/other"  # as browsers read it


def test_a_hop_must_be_on_the_tenants_list_unless_it_is_the_jobs_own_host() -> None:
    assert follow(first(), 302, "https://a.hooks.acme.test/", rules()).parsed.host == "a.hooks.acme.test"
    detail = refusal(first(), "http://169.254.169.254/latest/meta-data/")
    assert detail == ("redirect not followed: HTTP 302 to http://169.254.169.254/latest/meta-data/: the host 169.254.169.254 "
                      "is not on tenant 'acme''s HTTP allow-list (api.acme.test, *.hooks.acme.test)")
    # an admin's job to a host off the list (or a list narrowed since): its own host still goes
    own = "http://internal.test:8080/x"
    assert follow(first(own), 302, "/y", rules(job=own)).url == "http://internal.test:8080/y"
    assert follow(first(own), 302, "https://internal.test/z", rules(job=own)).parsed.port == 443
    assert "not on tenant 'acme''s" in refusal(first(own), "http://other.test/", rules(job=own))
    # no list at all: any host; an empty list (the daemon's http_allow = []): none but the
    # job's own; no list given to the worker: the job's own host only
    assert follow(first(), 302, "http://169.254.169.254/", rules(allow=granted_allow(None))).parsed.host == "169.254.169.254"
    assert "(empty: no host but the job's own; `cronwheel tenant set acme --http-allow HOST,...` opens it)" in refusal(
        first(), "https://a.hooks.acme.test/", rules(allow=granted_allow(())))
    assert follow(first(), 302, "/same", rules(allow=granted_allow(()))).url == "https://api.acme.test/same"
    assert follow(first(), 302, "/same", rules(allow=None)).url == "https://api.acme.test/same"
    assert "(its own host only)" in refusal(first(), "https://a.hooks.acme.test/", rules(allow=None))


@pytest.mark.parametrize(("location", "words"), [
    ("https://api.acme.test:0/", "the URL has port 0"),
    ("https://127.1/", "four decimal numbers"),
    ("https://api.acme.test./", "ends with a dot"),
    ("https://[fe80::1%25eth0]/", "zone id"),
    ("ftp://api.acme.test/", "the URL must be an absolute http:// or https:// URL"),
    # a Location that cannot even be joined to the URL it answers is refused, not a crash
    ("http://[::1/x", "the URL is not a valid URL: Invalid IPv6 URL"),
    ("//[zz]/", "the URL is not a valid URL"),
    ("https://api.acme.test/a b", "without spaces"),
    ("https://me:pw@api.acme.test/", "carries user information"),
])  # fmt: skip
def test_a_hop_obeys_the_url_rules_of_the_jobs_own(location: str, words: str) -> None:
    detail = refusal(first(), location)
    assert detail.startswith("redirect not followed: HTTP 302 to ") and words in detail, detail
    assert "pw@" not in detail


def test_the_jobs_headers_stay_with_its_origin_for_good() -> None:
    same = follow(first(), 307, "/b", rules())
    assert same.headers == HEADERS and same.body
    for other in ("https://a.hooks.acme.test/", "http://api.acme.test/", "https://api.acme.test:8443/"):
        hop = follow(first(), 307, other, rules())
        assert hop.headers == (("Content-Type", "text/plain"),) and hop.body, other  # the body's type goes with it
        back = follow(hop, 307, JOB, rules())  # back home: what was left out stays out
        assert back.headers == (("Content-Type", "text/plain"),)
    get = follow(first(), 303, "https://a.hooks.acme.test/", rules())
    assert (get.method, get.body, get.headers) == ("GET", False, ())
    # the body dropped on its own origin: its headers go, the others stay
    home = follow(first(), 302, "/b", rules())
    assert (home.method, home.body) == ("GET", False) and dict(home.headers).keys() == {"Authorization", "X-Api-Key", "Host"}
    assert follow(home, 307, "/c", rules()).body is False  # a body once dropped is not sent again


def test_at_most_ten_redirects_are_followed() -> None:
    hop = first()
    for _ in range(MAX_REDIRECTS):
        hop = follow(hop, 302, "/loop", rules())
    assert hop.redirects == MAX_REDIRECTS == 10
    assert refusal(hop, "/loop") == "redirect not followed: HTTP 302 to https://api.acme.test/loop: a run follows at most 10 redirects"


def test_a_shown_url_has_no_credentials_and_a_bound() -> None:
    assert shown("https://u:p@h.test/a@b?c=d@e") == "https://h.test/a@b?c=d@e"
    assert shown("https://u:p@x@h.test:1/") == "https://h.test:1/"
    assert shown("https://h.test/?next=u@h") == "https://h.test/?next=u@h"
    assert len(shown("https://h.test/" + "x" * 10_000)) == 501
