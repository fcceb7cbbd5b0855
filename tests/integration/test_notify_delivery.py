"""Notifications on a real daemon: signed webhooks delivered exactly once per (execution,
rule) even across a kill -9 in the middle of a delivery, the rules' events, the tenant's
allow-list, and the notifications' history and dead-letter queue."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from tests.support.daemon import Daemon
from tests.support.receiver import WebhookReceiver
from tests.support.threadserver import app_in_a_thread
from tests.support.wait import wait_for

SECRET = "s3cret-for-the-hmac-signature"


def hook(url: str, on: str, **extra: object) -> dict[str, object]:
    return {"on": on, "via": "webhook", "url": url, "secret": SECRET, **extra}


def notifications(d: Daemon, **query: str) -> list[dict]:
    q = "&".join(f"{k}={v}" for k, v in query.items())
    r = d.get(f"/v1/notifications?{q}")
    assert r.status == 200, r
    return r.json()["notifications"]


def test_kill_9_mid_delivery_still_tells_each_execution_and_rule_exactly_once(make_daemon: Callable[..., Daemon]) -> None:
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        rx.hold.set()  # the first deliveries hang until the daemon is dead
        job = d.add_job({
            "name": "fails", "runAt": "+0s", "command": "echo boom >&2; exit 3",
            "retryPolicy": {"maxAttempts": 1},
            "notify": [hook(rx.url, "failure"), hook(rx.url, "dead"), hook(rx.url, "success")],
        })
        wait_for(lambda: rx.held >= 1, 30, what="a delivery in flight")
        d.kill()  # kill -9 while the receiver holds a delivery open
        rx.release()
        d.start()
        wait_for(lambda: {n["status"] for n in notifications(d, jobId=job["jobId"])} == {"SENT"}
                 and len(notifications(d, jobId=job["jobId"])) == 2, 60, what="both notifications sent")  # fmt: skip
        seen = rx.unique()
        # one per (execution, rule): the failure and the dead rule fired, success did not
        assert sorted(ds[0].event for ds in seen.values()) == ["dead", "failure"]
        assert all(d_.signed for ds in seen.values() for d_ in ds)
        execution_ids = {ds[0].body["executionId"] for ds in seen.values()}
        assert len(execution_ids) == 1
        # the delivery cut short by the kill went out again under the same id
        assert any(len(ds) >= 2 for ds in seen.values()), [(k, len(v)) for k, v in seen.items()]
        body = next(iter(seen.values()))[0].body
        assert body["jobName"] == "fails" and body["exitCode"] == 3 and "boom" in body["output"]
        assert d.event("notification.recovered") is not None or d.event("notification.lease_expired") is not None


def test_failure_then_recovered_is_told_once_each(make_daemon: Callable[..., Daemon], tmp_path) -> None:
    flag = tmp_path / "ok"
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        job = d.add_job({
            "runAt": "+0s", "command": f"test -e {flag} || {{ touch {flag}; exit 1; }}",
            "retryPolicy": {"maxAttempts": 3, "initialBackoffSec": 0.2},
            "notify": [hook(rx.url, "failure"), hook(rx.url, "recovered"), hook(rx.url, "dead")],
        })
        wait_for(lambda: len(rx.unique()) == 2, 30, what="failure and recovered")
        assert sorted(ds[0].event for ds in rx.unique().values()) == ["failure", "recovered"]
        shown = d.get(f"/v1/jobs/{job['jobId']}").json()["notify"]
        assert shown[0]["secret"] == "********" and shown[0]["ruleId"].startswith("r_")


def test_an_unreachable_receiver_lands_in_the_notifications_dlq_and_replays(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    job = d.add_job({"runAt": "+0s", "command": "exit 1", "retryPolicy": {"maxAttempts": 1},
                     "notify": [hook("http://127.0.0.1:9/nobody", "dead", maxAttempts=2)]})  # fmt: skip
    dead = wait_for(lambda: notifications(d, status="DEAD"), 30, what="a dead-lettered notification")
    assert dead[0]["jobId"] == job["jobId"] and dead[0]["attempt"] == 2 and "webhook" in dead[0]["error"]
    d.wait_event("notification.retried")
    d.wait_event("notification.dead")
    nid = dead[0]["notificationId"]
    r = d.post(f"/v1/notifications/{nid}/replay")
    assert r.status == 200 and r.json()["status"] == "PENDING", r
    wait_for(lambda: notifications(d, status="DEAD") and notifications(d, status="DEAD")[0]["attempt"] == 2
             and len(d.events("notification.dead")) == 2, 30, what="dead again after the replay")  # fmt: skip
    assert d.post("/v1/notifications/nope/replay").status == 404
    metrics = d.get("/metrics").body.decode()
    assert 'cronwheel_notifications_delivered_total{outcome="dead",via="webhook"} 2.0' in metrics
    assert 'cronwheel_notifications_delivered_total{outcome="retried",via="webhook"} 2.0' in metrics
    # the receiver is gone for good: purge it, and the notifications' DLQ is empty again
    assert d.post("/v1/tenants", {"name": "other"}).status == 201
    other = d.post("/v1/tokens", {"tenant": "other", "role": "tenant"}).json()["token"]
    assert d.request("DELETE", f"/v1/notifications/{nid}", token=other).status == 404  # another tenant's
    out = d.cli("notifications", "purge", nid)
    assert out.returncode == 0 and f"Purged notification {nid}" in out.stdout, out
    assert notifications(d, status="DEAD") == [] and d.event("notification.purged", notificationId=nid)
    again = d.request("DELETE", f"/v1/notifications/{nid}")
    assert again.status == 404 and again.json()["code"] == "not_found", again


def test_webhooks_obey_the_tenants_allow_list(make_daemon: Callable[..., Daemon]) -> None:
    d = make_daemon()
    assert d.post("/v1/tenants", {"name": "acme", "httpAllow": ["hooks.example.com"]}).status == 201
    token = d.post("/v1/tokens", {"tenant": "acme", "role": "tenant"}).json()["token"]
    r = d.post("/v1/jobs", {"schedule": "@every 1h", "http": {"url": "https://hooks.example.com/x"},
                            "notify": [hook("http://127.0.0.1:9/evil", "failure")]}, token=token)  # fmt: skip
    assert r.status == 403 and r.json()["field"] == "notify[0].url", r
    r = d.post("/v1/jobs", {"schedule": "@every 1h", "http": {"url": "https://hooks.example.com/x"},
                            "notify": [{"on": "dead", "via": "command", "command": "true"}]}, token=token)  # fmt: skip
    assert r.status == 403 and r.json()["field"] == "notify[0].command", r
    r = d.post("/v1/jobs", {"schedule": "@every 1h", "command": "true", "notify": [{"on": "sometimes", "via": "webhook"}]})
    assert r.status == 422 and r.json()["field"] == "notify[0].on", r


def test_email_recipients_a_tenant_names_obey_its_allow_list(make_daemon: Callable[..., Daemon]) -> None:
    """A tenant held to its own hosts could have the operator's mail relay write to any
    address, in words of its choosing (a job's name, its output). Its allow-list bounds the
    domains of the recipients it names."""
    d = make_daemon()
    assert d.post("/v1/tenants", {"name": "acme", "httpAllow": ["example.com", "*.example.com"]}).status == 201
    token = d.post("/v1/tokens", {"tenant": "acme", "role": "tenant"}).json()["token"]
    http = {"schedule": "@every 1h", "http": {"url": "https://hooks.example.com/x"}}

    def mail(*to: str) -> dict[str, object]:
        return {**http, "notify": [{"on": "failure", "via": "email", "to": list(to)}]}

    assert d.post("/v1/jobs", mail("ops@example.com", "oncall@eu.example.com"), token=token).status == 201
    r = d.post("/v1/jobs", {**mail("ops@example.com", "victim@elsewhere.test"), "name": "BUY NOW"}, token=token)
    assert r.status == 403 and r.json()["field"] == "notify[0].to[1]", r
    assert "victim@elsewhere.test" in r.json()["detail"] and "allow-list" in r.json()["detail"]
    # an encoded word in the local part: its domain is example.com, but mail software decodes
    # it, and the message went out as "To: victim@elsewhere.test,@example.com" (sendmail -t
    # mails victim@elsewhere.test)
    # and the old source routes, which a relay that is example.com's own forwards on to
    # elsewhere.test (Postfix's allow_percent_hack, sendmail's UUCP rules)
    for word, why in (("=?utf-8?q?victim=40elsewhere.test=2C?=@example.com", "encoded word"),
                      ("=?utf-8?b?dmljdGltQGVsc2V3aGVyZS50ZXN0?=@example.com", "encoded word"),
                      ("victim%elsewhere.test@example.com", "source route"),
                      ("elsewhere.test!victim@example.com", "source route")):  # fmt: skip
        r = d.post("/v1/jobs", mail("ops@example.com", word), token=token)
        assert r.status == 422 and r.json()["field"] == "notify[0].to[1]" and why in r.json()["detail"], r
    # an admin's rules may name any address: a tenant's defaults are the operator's own
    assert d.request("PUT", "/v1/tenants/acme/notify",
                     {"notify": [{"on": "dead", "via": "email", "to": ["oncall@operator.test"]}]}).status == 200


def test_tenant_default_rules_set_by_the_cli_apply_to_jobs_without_rules(make_daemon: Callable[..., Daemon]) -> None:
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        out = d.cli("tenant", "notify", "default", "--notify", json.dumps(hook(rx.url, "dead")))
        assert out.returncode == 0 and "on dead via webhook" in out.stdout, out
        shown = d.cli("tenant", "notify", "default", "--json")
        assert json.loads(shown.stdout)[0]["secret"] == "********"
        d.add_job({"runAt": "+0s", "command": "exit 1", "retryPolicy": {"maxAttempts": 1}})
        wait_for(lambda: rx.unique(), 30, what="the default rule's notification")
        assert [ds[0].event for ds in rx.unique().values()] == ["dead"]
        listed = json.loads(d.cli("notifications", "--json").stdout)
        assert listed[0]["event"] == "dead" and listed[0]["status"] in ("RUNNING", "SENT")
        bad = d.cli("tenant", "notify", "default", "--notify", '{"on": "dead", "via": "pager"}')
        assert bad.returncode != 0 and "notify[0].via" in bad.stderr and "Traceback" not in bad.stderr
        assert d.cli("tenant", "notify", "nobody").returncode != 0


def test_patch_keeps_rules_it_does_not_name_and_replaces_those_it_does(make_daemon: Callable[..., Daemon]) -> None:
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        job = d.add_job({"schedule": "0 3 * * *", "command": "exit 1", "retryPolicy": {"maxAttempts": 1},
                         "notify": [hook(rx.url, "dead")]})  # fmt: skip
        r = d.request("PATCH", f"/v1/jobs/{job['jobId']}", {"priority": "high", "expectSuccessWithin": "1h"})
        assert r.status == 200 and r.json()["notify"][0]["on"] == "dead" and r.json()["expectSuccessWithin"] == "1h", r
        assert r.json()["window"]["overdue"] is False
        # the kept rule still signs with its secret: a run of the job is told, verified
        assert d.post(f"/v1/jobs/{job['jobId']}/trigger").status == 202
        wait_for(lambda: rx.unique(), 30, what="the dead notification")
        assert all(x.signed for ds in rx.unique().values() for x in ds)
        r = d.request("PATCH", f"/v1/jobs/{job['jobId']}", {"notify": [{"on": "dead", "via": "email"}]})
        assert r.status == 422 and r.json()["field"] == "notify[0].to", r
        r = d.request("PATCH", f"/v1/jobs/{job['jobId']}", {"notify": None, "expectSuccessWithin": None})
        assert r.status == 200 and r.json()["notify"] == [] and r.json()["window"] is None, r
        watched = d.post("/v1/jobs", {"expectSuccessWithin": "2h", "name": "watched"}).json()["jobId"]
        r = d.request("PATCH", f"/v1/jobs/{watched}", {"expectSuccessWithin": "3h"})
        assert r.status == 200 and r.json()["target"] == {"ping": {}} and r.json()["expectSuccessWithin"] == "3h", r


def test_a_rule_over_its_rate_holds_back_the_rest(make_daemon: Callable[..., Daemon]) -> None:
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        job = d.add_job({"schedule": "* * * * * *", "command": "exit 1", "retryPolicy": {"maxAttempts": 1},
                         "notify": [hook(rx.url, "failure", maxPerHour=2)]})  # fmt: skip
        held = wait_for(lambda: len(notifications(d, jobId=job["jobId"], status="HELD")) >= 3 and
                        notifications(d, jobId=job["jobId"], status="HELD"), 30, what="failures held back")  # fmt: skip
        assert all(n["event"] == "failure" for n in held)
        assert d.post(f"/v1/jobs/{job['jobId']}/pause").status == 200
        # the rate: two an hour went out, the rest are held (a summary follows when there is room)
        wait_for(lambda: len(rx.unique()) == 2, 10, what="the two within the rate delivered")
        wait_for(lambda: {n["status"] for n in notifications(d, jobId=job["jobId"])} == {"SENT", "HELD"}, 10,
                 what="nothing but sent and held")  # fmt: skip
        assert len(rx.unique()) == 2


def test_a_hanging_receiver_never_holds_up_dispatch(make_daemon: Callable[..., Daemon]) -> None:
    with WebhookReceiver(SECRET) as rx:
        rx.hold.set()  # every delivery hangs until its timeout
        d = make_daemon()
        d.add_job({"schedule": "* * * * * *", "command": "exit 1", "retryPolicy": {"maxAttempts": 1},
                   "notify": [hook(rx.url, "failure"), hook(rx.url, "dead")]})  # fmt: skip
        other = d.add_job({"schedule": "* * * * * *", "command": "true"})
        wait_for(lambda: rx.held >= 4, 30, what="deliveries hanging")
        before = len([e for e in d.executions(other["jobId"]) if e["status"] == "SUCCEEDED"])
        wait_for(lambda: len([e for e in d.executions(other["jobId"]) if e["status"] == "SUCCEEDED"]) >= before + 3, 15,
                 what="the other job to keep running every second")  # fmt: skip
        assert rx.hold.is_set() and rx.held >= 4  # still hanging all along
        rx.release()


def peak_rss_mb(pid: int) -> float:
    """The most memory the process ``pid`` has held so far (VmHWM), in MB."""
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def test_a_receiver_whose_answer_never_ends_gets_it_delivered_and_no_memory(make_daemon: Callable[..., Daemon]) -> None:
    """The daemon reads the status of a webhook's answer, not its body: a receiver (a tenant's
    own) that answers 200 and then streams without end was read whole, about 100 MB a second
    into the daemon's memory until the delivery's timeout, and the notification failed."""
    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=200)
        await resp.prepare(request)
        with contextlib.suppress(ConnectionError):
            while True:
                await resp.write(b"x" * 65536)
        return resp

    def app() -> web.Application:
        a = web.Application()
        a.router.add_post("/hook", endless)
        return a

    with app_in_a_thread(app) as base:
        d = make_daemon()
        before = peak_rss_mb(d.pid)
        job = d.add_job({"runAt": "+0s", "command": "exit 1", "retryPolicy": {"maxAttempts": 1},
                         "notify": [hook(f"{base}/hook", "failure", maxAttempts=1)]})  # fmt: skip
        sent = wait_for(lambda: [n for n in notifications(d, jobId=job["jobId"]) if n["status"] == "SENT"], 10,
                        what="the notification delivered on the receiver's 200")  # fmt: skip
        assert sent[0]["attempt"] == 1, sent
        assert peak_rss_mb(d.pid) < before + 100, (before, peak_rss_mb(d.pid))


def test_a_late_start_is_told_while_the_run_goes_on(make_daemon: Callable[..., Daemon], tmp_path) -> None:
    release = tmp_path / "release"
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 120))  # due two minutes ago
        d.add_job({"runAt": at, "command": f"while [ ! -e {release} ]; do sleep 0.05; done",
                   "notify": [hook(rx.url, "late", afterSec=60), hook(rx.url, "success")]})  # fmt: skip
        [late] = wait_for(lambda: list(rx.unique().values()), 30, what="the late notification")
        assert late[0].event == "late" and late[0].body["status"] == "RUNNING" and late[0].body["lagMs"] > 60_000
        release.touch()
        wait_for(lambda: len(rx.unique()) == 2, 30, what="the success after it")


def test_a_webhook_url_password_is_hidden_in_answers_and_used_on_the_wire(make_daemon: Callable[..., Daemon]) -> None:
    with WebhookReceiver(SECRET) as rx:
        d = make_daemon()
        url = rx.url.replace("http://", "http://hookuser:url-pass-w0rd@")
        job = d.add_job({"name": "hooked", "runAt": "+0s", "command": "exit 1", "retryPolicy": {"maxAttempts": 1},
                         "notify": [hook(url, "dead")]})  # fmt: skip
        listed_job = next(j for j in d.get("/v1/jobs").json()["jobs"] if j["jobId"] == job["jobId"])
        for answer in (listed_job, d.get(f"/v1/jobs/{job['jobId']}").json()):
            (rule,) = answer["notify"]
            assert rule["url"] == rx.url.replace("http://", "http://hookuser:********@") and rule["secret"] == "********"
        shown = d.cli("show", job["jobId"])
        assert shown.returncode == 0 and "hookuser:********@" in shown.stdout, shown.stdout
        assert "url-pass-w0rd" not in shown.stdout + d.cli("show", job["jobId"], "--json").stdout
        # kept as given: the delivery authenticates with it
        wait_for(lambda: rx.unique(), 30, what="the dead notification")
        (first,) = (ds[0] for ds in rx.unique().values())
        assert first.signed and first.headers.get("Authorization", "").startswith("Basic ")
        assert "url-pass-w0rd" not in json.dumps(notifications(d, jobId=job["jobId"]))
