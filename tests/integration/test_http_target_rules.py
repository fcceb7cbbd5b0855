"""HTTP targets a tenant cannot aim where the admin did not allow, on a real daemon, as a tenant
with its own token and allow-list: a URL whose host the allow-list and the worker's client
would read differently, credentials in a URL, and headers that pick another virtual host or
steer the connection every tenant's targets share (docs/security.md). On every path a target
enters: a job, a batch, a patch, a webhook rule, `cronwheel import` and `cronwheel apply`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_auth import problem, tenant_token
from tests.support.daemon import Daemon
from tests.support.threadserver import recording_endpoint
from tests.support.wait import wait_for

HOURLY = {"schedule": "@hourly"}
GOOD = {"url": "https://api.acme.test/hook"}

#: (url, words of the refusal): each was taken before, as long as the allow-list matched
BAD_URLS = [
    ("https://api.acme.test:0/hook", "has port 0"),
    ("https://ops:pa55word@api.acme.test/hook", "carries user information"),
    ("https://token@api.acme.test/hook", "carries user information"),
    ("https://api.acme.test./hook", "ends with a dot"),
    ("https://b\u00fccher.acme.test/", "'xn--bcher-kva.acme.test'"),
    ("https://\uff41pi.acme.test/", "is not ASCII"),  # a fullwidth "a": api.acme.test once encoded
    ("https://evil.example%2f.acme.test/", "neither an IP address nor a host name"),
    ("https://x..acme.test/", "neither an IP address nor a host name"),
    ("https://a-.acme.test/", "neither an IP address nor a host name"),
    ("https://[fe80::1%25eth0]/", "zone id"),  # refused by the list before, as another host
    ("https://127.1/", "four decimal numbers"),  # 127.0.0.1 to the C resolver
    ("https://2130706433/", "four decimal numbers"),
    ("https://[v1.x]/", "not an IPv6 address"),
    ("https://[::1]x/", "neither [IPv6 address] nor"),  # read as ::1 by the list, refused by the worker's client
    ("https://[::1]]:8443/", "neither [IPv6 address] nor"),
]
#: refused before this rule too: kept so that every malformed URL docs/security.md names is pinned
STILL_REFUSED = [
    ("https://api.acme.test:65536/", "Port out of range"),
    ("https:///hook", "absolute http:// or https:// URL"),
    ("ftp://api.acme.test/", "absolute http:// or https:// URL"),
    ("https://api.acme.test /", "without spaces"),
    ("https://api.acme.test:+443/", "not a valid URL"),
]
#: (headers, the one named, words of the refusal)
BAD_HEADERS = [
    ({"Host": "admin.internal"}, "Host", "picks the virtual host"),
    ({"host": "admin.acme.test"}, "host", "picks the virtual host"),  # allowed by the list, yet not the URL's
    ({"HOST": "api.acme.test:8443"}, "HOST", "picks the virtual host"),  # another port
    ({"Content-Length": "0"}, "Content-Length", "frames the request body"),
    ({"transfer-encoding": "chunked"}, "transfer-encoding", "frames the request body"),
    ({"Connection": "keep-alive, Upgrade"}, "Connection", "hop-by-hop"),
    ({"Upgrade": "h2c"}, "Upgrade", "hop-by-hop"),
    ({"Keep-Alive": "timeout=600"}, "Keep-Alive", "hop-by-hop"),
    ({"TE": "trailers"}, "TE", "hop-by-hop"),
    ({"Trailer": "X-Sum"}, "Trailer", "hop-by-hop"),
    ({"Expect": "100-continue"}, "Expect", "hold the request body back"),
    ({"Proxy-Authorization": "Basic eDp5"}, "Proxy-Authorization", "a proxy"),
    ({"X-Token": "1", "x-token": "2"}, "x-token", "given twice"),
    ({"X-Note": "a\x01b"}, "X-Note", "without control characters"),
    ({"X-Note": "\x7f"}, "X-Note", "without control characters"),
    ({"X-Note": "a\x85b"}, "X-Note", "without control characters"),  # NEL, a line break to some
]


@pytest.fixture
def acme(make_daemon: Callable[..., Daemon]) -> tuple[Daemon, str]:
    """A daemon and a token of tenant acme, held to its own hosts (and the receiver's)."""
    d = make_daemon(workers=1)
    return d, tenant_token(d, "acme", httpAllow=["api.acme.test", "*.acme.test", "127.0.0.1"])


def refused(r: Any, field: str, words: str) -> None:
    body = problem(r, 422)
    assert body["field"] == field and words in body["detail"], body


def test_a_url_is_refused_unless_its_host_reads_one_way_only(acme: tuple[Daemon, str]) -> None:
    d, token = acme
    for url, words in BAD_URLS + STILL_REFUSED:
        refused(d.post("/v1/jobs", {**HOURLY, "http": {"url": url}}, token=token), "http.url", words)
        refused(d.post("/v1/jobs", {**HOURLY, "target": {"http": {"url": url}}}, token=token), "target.http.url", words)
    body = problem(d.post("/v1/jobs", {**HOURLY, "http": {"url": BAD_URLS[1][0]}}, token=token), 422)
    assert "pa55word" not in body["detail"]  # not echoed back: a refusal may be logged by the client
    assert d.get("/v1/jobs", token=token).json()["jobs"] == []
    # what stays taken: a port, an IPv4 and an IPv6 address, underscores, an empty port
    for url in ("https://api.acme.test:8443/x", "http://127.0.0.1/", "https://x_y.acme.test/", "https://api.acme.test:/"):
        assert d.post("/v1/jobs", {**HOURLY, "http": {"url": url}}, token=token).status == 201, url
    assert d.post("/v1/jobs", {**HOURLY, "http": {"url": "http://[::1]:8080/"}}).status == 201  # admin: no list
    refused(d.post("/v1/jobs", {**HOURLY, "http": {"url": "http://[::1]x:8080/"}}), "http.url", "neither [IPv6 address] nor")


def test_headers_that_steer_the_request_or_the_connection_are_refused(acme: tuple[Daemon, str]) -> None:
    d, token = acme
    for headers, name, words in BAD_HEADERS:
        r = d.post("/v1/jobs", {**HOURLY, "http": {**GOOD, "headers": headers}}, token=token)
        refused(r, f"http.headers.{name}", words)
    # admins too: the connections are every tenant's, and the Host is the URL's
    refused(d.post("/v1/jobs", {**HOURLY, "http": {**GOOD, "headers": {"Host": "x"}}}), "http.headers.Host", "virtual host")
    assert d.get("/v1/jobs", token=token).json()["jobs"] == []


def test_a_batch_and_a_patch_obey_the_same_rules(acme: tuple[Daemon, str]) -> None:
    d, token = acme
    jobs = [{**HOURLY, "http": GOOD}, {**HOURLY, "http": {**GOOD, "headers": {"Host": "admin.internal"}}}]
    refused(d.post("/v1/jobs/batch", {"jobs": jobs}, token=token), "jobs[1].http.headers.Host", "virtual host")
    jobs[1] = {**HOURLY, "http": {"url": "https://api.acme.test:0/"}}
    refused(d.post("/v1/jobs/batch", {"jobs": jobs}, token=token), "jobs[1].http.url", "port 0")
    assert d.get("/v1/jobs", token=token).json()["jobs"] == []  # all or nothing

    job = d.post("/v1/jobs", {**HOURLY, "http": GOOD}, token=token).json()["jobId"]
    patches = [({"http": {**GOOD, "headers": {"Transfer-Encoding": "chunked"}}}, "http.headers.Transfer-Encoding", "frames"),
               ({"http": {"url": "https://u:p@api.acme.test/"}}, "http.url", "user information"),
               ({"target": {"http": {"url": "https://api.acme.test./"}}}, "target.http.url", "ends with a dot")]
    for patch, field, words in patches:
        refused(d.request("PATCH", f"/v1/jobs/{job}", patch, token=token), field, words)
    assert d.get(f"/v1/jobs/{job}", token=token).json()["target"] == {"http": {**GOOD, "method": "GET", "headers": {}}}


def test_webhook_urls_share_the_url_rules_but_may_carry_credentials(acme: tuple[Daemon, str]) -> None:
    d, token = acme
    hook = {"on": "failure", "via": "webhook", "secret": "0123456789abcdef"}
    for url, words in [("https://hooks.acme.test:0/cw", "port 0"), ("https://hooks.acme.test./cw", "ends with a dot"),
                       ("https://127.1/cw", "four decimal numbers"),
                       # urlsplit reads hooks.acme.test; browsers and curl 127.0.0.1; the webhook's client refused it
                       # at each delivery, after it was saved ("not a URL that can be called")
                       ("https://127.0.0.1\\@hooks.acme.test/cw", "has a backslash"),
                       ("https://[::1]@hooks.acme.test/cw", "'[' or ']' in its user information")]:
        r = d.post("/v1/jobs", {**HOURLY, "http": GOOD, "notify": [{**hook, "url": url}]}, token=token)
        refused(r, "notify[0].url", words)
    # a webhook has no headers: its URL's credentials are taken, and shown as ********
    r = d.post("/v1/jobs", {**HOURLY, "http": GOOD, "notify": [{**hook, "url": "https://ops:pw@hooks.acme.test/cw"}]}, token=token)
    assert r.status == 201, r
    assert d.get(f"/v1/jobs/{r.json()['jobId']}", token=token).json()["notify"][0]["url"] == "https://ops:********@hooks.acme.test/cw"


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with recording_endpoint() as endpoint:
        yield endpoint


def test_a_host_header_that_repeats_the_urls_host_is_taken_and_sent(acme: tuple[Daemon, str],
                                                                    receiver: tuple[str, list[dict[str, Any]]]) -> None:
    d, token = acme
    base, got = receiver
    host = base.removeprefix("http://")  # 127.0.0.1:PORT
    refused(d.post("/v1/jobs", {**HOURLY, "http": {"url": f"{base}/hook", "headers": {"Host": "api.acme.test"}}}, token=token),
            "http.headers.Host", "virtual host")
    r = d.post("/v1/jobs", {**HOURLY, "http": {"url": f"{base}/hook", "headers": {"host": host.upper(), "X-Source": "cw"}}}, token=token)
    assert r.status == 201, r
    job = r.json()["jobId"]
    assert d.post(f"/v1/jobs/{job}/trigger", token=token).status in (200, 201, 202)
    wait_for(lambda: any(e["status"] == "SUCCEEDED" for e in d.get(f"/v1/jobs/{job}/executions", token=token).json()["executions"]),
             30, what="the triggered run to succeed")
    [request] = got
    headers = request["headers"]
    assert headers["Host"] == host.upper() and headers["X-Source"] == "cw"


def test_import_and_apply_refuse_them_too(acme: tuple[Daemon, str], tmp_path: Path) -> None:
    d, token = acme
    as_tenant = ("--token", token, "--url", d.url)
    dump = tmp_path / "jobs.json"
    dump.write_text(json.dumps([{**HOURLY, "name": "fine", "http": GOOD},
                                {**HOURLY, "name": "zero", "http": {"url": "https://api.acme.test:0/"}},
                                {**HOURLY, "name": "steered", "http": {**GOOD, "headers": {"Host": "admin.internal"}}}]))
    res = d.cli(*as_tenant, "import", str(dump))
    assert res.returncode == 1 and "http.url has port 0" in res.stderr, (res.stdout, res.stderr)
    assert "http.headers.Host picks the virtual host" in res.stderr
    assert [j["name"] for j in d.get("/v1/jobs", token=token).json()["jobs"]] == ["fine"]

    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "a.toml").write_text('[zero]\nschedule = "@hourly"\nhttp = { url = "https://api.acme.test:0/" }\n')
    res = d.cli(*as_tenant, "apply", str(jobs))  # checked by the API's own code, before any request
    assert res.returncode == 2 and f"{jobs / 'a.toml'}:3: key 'zero': " in res.stderr and "http.url has port 0" in res.stderr, res.stderr
    (jobs / "a.toml").write_text('[creds]\nschedule = "@hourly"\nhttp = { url = "https://me:pw@api.acme.test/" }\n')
    res = d.cli(*as_tenant, "apply", str(jobs))
    assert res.returncode == 2 and "http.url carries user information" in res.stderr, res.stderr
    assert [j["name"] for j in d.get("/v1/jobs", token=token).json()["jobs"]] == ["fine"]
