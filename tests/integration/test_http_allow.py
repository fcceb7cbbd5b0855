"""The daemon's ``http_allow`` in the configuration file: not set, tenants without a list of
their own may call any host; set to an empty list, none (it allowed every host), at the start
and after a SIGHUP. A real daemon."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_auth import problem, tenant_token
from tests.support.daemon import Daemon
from tests.support.wait import wait_for


def _tenant_submits(d: Daemon, url: str) -> Any:
    token = tenant_token(d, "acme")
    return d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "http": {"url": url}}, token=token)


def test_an_empty_http_allow_allows_no_host(tmp_path: Path, make_daemon: Callable[..., Daemon]) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text("http_allow = []\n")
    d = make_daemon(args=("--config", str(conf)))
    refused = problem(_tenant_submits(d, "https://evil.example.net/x"), 403)
    assert refused["field"] == "http.url" and "no host (the daemon's http_allow is empty)" in refused["detail"], refused
    # admins are not bound by it (they can run commands anyway), as with any list
    assert d.post("/v1/jobs", {"schedule": "0 0 1 1 *", "http": {"url": "https://evil.example.net/x"}}).status == 201


@pytest.mark.runs_no_jobs
def test_a_reload_to_an_empty_http_allow_closes_every_host(tmp_path: Path, make_daemon: Callable[..., Daemon]) -> None:
    conf = tmp_path / "cronwheel.toml"
    conf.write_text('http_allow = ["api.example.com"]\n')
    d = make_daemon(args=("--config", str(conf)))
    assert _tenant_submits(d, "https://api.example.com/x").status == 201
    conf.write_text("http_allow = []\n")
    os.kill(d.pid, signal.SIGHUP)
    done = wait_for(lambda: d.event("config.reloaded"), 20, what="config.reloaded")
    assert done["changed"]["http_allow"] == {"from": "api.example.com", "fromSource": f"{conf}:1", "to": "",
                                             "toSource": f"{conf}:1"}, done
    assert problem(_tenant_submits(d, "https://api.example.com/x"), 403)["field"] == "http.url"
    # and unset again: no list, every host
    conf.write_text("")
    os.kill(d.pid, signal.SIGHUP)
    wait_for(lambda: len(d.events("config.reloaded")) >= 2, 20, what="the second config.reloaded")
    assert _tenant_submits(d, "https://elsewhere.example.org/").status == 201
