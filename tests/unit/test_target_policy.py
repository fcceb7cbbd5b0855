"""Who may run what, pure: bearer parsing, token hashing, host allow-lists, target policy."""

from __future__ import annotations

import pytest

from cronwheel.core.tenants import (
    ADMIN,
    Principal,
    Role,
    Tenant,
    effective_http_allow,
    hash_token,
    host_allowed,
    new_token_id,
    new_token_secret,
    normalise_host,
    parse_bearer,
    target_refusal,
    valid_tenant_name,
)
from cronwheel.core.urls import parse_http_url


def test_tokens_are_long_random_and_stored_as_sha256() -> None:
    secrets = {new_token_secret() for _ in range(100)}
    assert len(secrets) == 100
    assert all(s.startswith("cw_") and len(s) == 3 + 43 for s in secrets)  # 256 bits, url-safe base64
    s = next(iter(secrets))
    assert hash_token(s) == hash_token(s) and len(hash_token(s)) == 64 and s not in hash_token(s)
    assert new_token_id().startswith("tk_") and len(new_token_id()) == 19


@pytest.mark.parametrize(("header", "token"), [(None, None), ("Bearer abc", "abc"), ("bearer  abc ", "abc")])
def test_parse_bearer(header: str | None, token: str | None) -> None:
    assert parse_bearer(header) == token


@pytest.mark.parametrize("header", ["Basic dXNlcg==", "Bearer", "Bearer a b", "Bearer " + "x" * 201, "Bearer caf\u00e9", "Token abc"])
def test_parse_bearer_refuses_malformed(header: str) -> None:
    with pytest.raises(ValueError):
        parse_bearer(header)


@pytest.mark.parametrize(("entry", "norm"), [("API.Example.com.", "api.example.com"), ("*.acme.test", "*.acme.test"),
                                             ("10.0.0.1", "10.0.0.1"), ("[::1]", "::1"), ("localhost", "localhost"),
                                             ("my_service", "my_service"), ("*.svc_a.Internal", "*.svc_a.internal")])
def test_normalise_host(entry: str, norm: str) -> None:
    assert normalise_host(entry) == norm


def test_every_host_a_url_may_name_is_one_an_allow_list_may_hold() -> None:
    """A URL's host may have underscores (a container's name, some internal DNS names), but
    the allow-list refused them, so `http://my_service:8080/` could only be allowed by a
    wildcard or by allowing every host."""
    for url in ("http://my_service:8080/hook", "https://a_b.svc_a.internal/x"):
        host = parse_http_url(url, 2048).host
        assert host_allowed(host, (normalise_host(host),))


@pytest.mark.parametrize("entry", ["", "a b", "http://x.com", "x.com/path", "*.", "*", "a..b", "-x.com", "x" * 300,
                                   "127.1", "0x7f.1", "2130706433", "*.127.0.0.1", "fe80::1%eth0", "[fe80::1%25eth0]"])
def test_normalise_host_refuses(entry: str) -> None:
    with pytest.raises(ValueError):
        normalise_host(entry)


def test_host_allowed() -> None:
    allow = ("api.example.com", "*.acme.test", "10.0.0.1", "::1")
    assert host_allowed("anything.at.all", None), "no list: every host"
    assert not host_allowed("anything.at.all", ()), "an empty list: no host"
    assert host_allowed("API.example.com", allow)
    assert host_allowed("a.acme.test", allow) and host_allowed("a.b.acme.test", allow)
    assert not host_allowed("acme.test", allow), "*.domain is for subdomains"
    assert not host_allowed("evilacme.test", allow) and not host_allowed("acme.test.evil.com", allow)
    assert host_allowed("10.0.0.1", allow) and host_allowed("[::1]", allow)
    assert not host_allowed("10.0.0.2", allow) and not host_allowed("example.com", allow)


def test_target_policy() -> None:
    tenant = Principal(Role.TENANT, "acme")
    shell = Principal(Role.TENANT, "acme", allow_shell=True, http_allow=("*.acme.test",))
    for target in ({"command": "id"}, {"python": "os:getcwd"}):
        refusal = target_refusal(target, tenant)
        assert refusal is not None and refusal.field in ("command", "python")
        assert target_refusal(target, shell) is None
        assert target_refusal(target, ADMIN) is None
    assert target_refusal({"queue": "q"}, tenant) is None
    assert target_refusal({"http": {"url": "https://x.acme.test/a"}}, shell) is None
    refusal = target_refusal({"http": {"url": "https://169.254.169.254/"}}, shell)
    assert refusal is not None and refusal.field == "http.url"
    assert target_refusal({"http": {"url": "https://169.254.169.254/"}}, ADMIN) is None


def test_a_tenants_own_list_wins_over_the_daemons() -> None:
    assert effective_http_allow(Tenant("a", http_allow=("x.test",)), ("y.test",)) == ("x.test",)
    assert effective_http_allow(Tenant("a"), ("y.test",)) == ("y.test",)
    assert effective_http_allow(None, ()) == ()
    assert effective_http_allow(Tenant("a"), None) is None
    # a tenant with no list of its own (None): the daemon's empty one closes it too
    assert effective_http_allow(Tenant("a"), ()) == ()
    # a tenant's own empty list closes it to every host, whatever the daemon's says
    assert effective_http_allow(Tenant("a", http_allow=()), ("y.test",)) == ()
    assert effective_http_allow(Tenant("a", http_allow=()), None) == ()


def test_a_tenants_own_empty_list_allows_no_host_and_says_how_to_open_it() -> None:
    closed = Principal(Role.TENANT, "acme", http_allow=(), http_allow_own=True)
    refusal = target_refusal({"http": {"url": "https://api.example.com/x"}}, closed)
    assert refusal is not None and refusal.field == "http.url"
    assert refusal.detail == (
        "HTTP targets of tenant 'acme' may call no host (tenant 'acme''s httpAllow is empty: "
        "`cronwheel tenant set acme --http-allow HOST,...` opens it to those hosts, `--http-allow-inherit` "
        "to the daemon's list); not 'api.example.com'"), refusal.detail


def test_the_daemons_empty_list_allows_no_host_and_says_so() -> None:
    closed = Principal(Role.TENANT, "acme", http_allow=())
    refusal = target_refusal({"http": {"url": "https://evil.example.net/x"}}, closed)
    assert refusal is not None and refusal.field == "http.url"
    assert "may call no host (the daemon's http_allow is empty)" in refusal.detail, refusal.detail
    assert target_refusal({"http": {"url": "https://evil.example.net/x"}}, Principal(Role.TENANT, "acme")) is None


@pytest.mark.parametrize(("name", "ok"), [("acme", True), ("a.b-c_d", True), ("A1", True), ("", False), ("-x", False),
                                          ("a b", False), ("x" * 65, False), ("caf\u00e9", False), ("acme\n", False)])
def test_tenant_names(name: str, ok: bool) -> None:
    assert valid_tenant_name(name) is ok


def test_an_email_rules_recipients_obey_the_allow_list_by_their_domain() -> None:
    from cronwheel.core import notify as nt

    rule = nt.rule_from_json({"on": "failure", "via": "email", "to": ["ops@acme.test", "x@mail.acme.test", "v@evil.test"]})
    assert nt.unallowed_recipient(rule, ("acme.test", "*.acme.test")) == "v@evil.test"
    assert nt.unallowed_recipient(rule, None) is None  # no list: any host, any domain
    assert nt.unallowed_recipient(rule, ()) == "ops@acme.test"  # an empty list: none
    restricted = Principal(Role.TENANT, "acme", http_allow=("acme.test",))
    refusal = nt.rules_refusal((rule,), restricted)
    assert refusal is not None and refusal.field == "notify[0].to[1]" and "'x@mail.acme.test'" in refusal.detail
    assert nt.rules_refusal((rule,), Principal(Role.ADMIN)) is None
    assert nt.rules_refusal((rule,), Principal(Role.TENANT, "acme")) is None
