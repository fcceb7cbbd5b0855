"""crontab(5) parsing and export, as a table (no daemon, no clock)."""

from __future__ import annotations

import pytest

from cronwheel.core.crontab import (
    Entry,
    crontab_line,
    job_request,
    keyed,
    keyed_requests,
    looks_like_json,
    parse_crontab,
    parse_json_requests,
    unexported_rules,
)

CRONTAB = """\
# m h  dom mon dow   command
*/5 *  *   *   *     /usr/local/bin/poll --fast

0   3  *   *   1-5   backup.sh   >> /var/log/backup.log 2>&1
@hourly echo "date: $(date +\\%F)"
@DAILY	rotate
   # an indented comment
15 10 1 jan,jul sun  echo twice a year or on sundays
"""


def test_a_crontab_parses_into_entries() -> None:
    entries, errors = parse_crontab(CRONTAB)
    assert errors == []
    assert [(e.line_no, e.schedule, e.command) for e in entries] == [
        (2, "*/5 * * * *", "/usr/local/bin/poll --fast"),
        (4, "0 3 * * 1-5", "backup.sh   >> /var/log/backup.log 2>&1"),
        (5, "@hourly", 'echo "date: $(date +%F)"'),
        (6, "@daily", "rotate"),
        (8, "15 10 1 jan,jul sun", "echo twice a year or on sundays"),
    ]
    assert entries[0].request() == {"schedule": "*/5 * * * *", "command": "/usr/local/bin/poll --fast"}
    assert entries[0].request("Europe/Paris")["timezone"] == "Europe/Paris"
    assert entries[0].text == "*/5 *  *   *   *     /usr/local/bin/poll --fast"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("MAILTO=ops@example.com", "environment setting MAILTO="),
        ("SHELL = /bin/bash", "environment setting SHELL="),
        ('"PATH"=/usr/bin', "environment setting PATH="),
        ("CRON_TZ=Europe/Paris", "environment setting CRON_TZ="),
        ("@reboot /usr/local/bin/start", "@reboot is not supported"),
        ("@fortnightly x", "unknown macro '@fortnightly'"),
        ("@hourly", "no command after the schedule '@hourly'"),
        ("0 * * * *", "no command after the schedule"),
        ("0 * * *", "expected five time fields and a command, got 4"),
        ("61 * * * * echo", "minute"),
        ("0 0 30 2 * echo", "never"),
        ("0 * * * * echo 100%", "unescaped '%'"),
        ("0 * * * * mail -s hi root%body%", "standard input"),
    ],
)
def test_refused_lines_name_their_line(line: str, message: str) -> None:
    entries, errors = parse_crontab(f"# header\n\n{line}\n0 * * * * ok\n")
    assert [e.command for e in entries] == ["ok"]  # the good line still parses
    (err,) = errors
    assert err.line_no == 3 and err.text == line
    assert str(err).startswith("line 3: ")
    assert message in str(err), str(err)


def test_every_error_is_reported_at_once() -> None:
    _, errors = parse_crontab("A=1\n@reboot x\n0 * * * * y\n99 * * * * z\n")
    assert [e.line_no for e in errors] == [1, 2, 4]


def test_keys_follow_content_not_line_numbers() -> None:
    a, _ = parse_crontab("0 * * * * one\n0 * * * * two\n")
    b, _ = parse_crontab("# a new comment on top\n\n0  *  * * *   one\n0 * * * * two\n")
    assert [k for _, k in keyed("/etc/crontab", a)] == [k for _, k in keyed("/etc/crontab", b)]
    assert keyed("/etc/crontab", a)[0][1] != keyed("/other", a)[0][1]
    twice, _ = parse_crontab("0 * * * * same\n0 * * * * same\n")
    keys = [k for _, k in keyed("f", twice)]
    assert len(set(keys)) == 2  # cron runs a line written twice twice
    assert all(k.startswith("import-") and len(k) <= 200 and k.isascii() for k in keys)


JOB = {
    "jobId": "jabc", "name": "backup", "tenant": "default", "status": "ACTIVE",
    "schedule": "0 3 * * *", "runAt": None, "timezone": "UTC", "nextRunAt": "2026-01-01T03:00:00.000Z",
    "target": {"command": "backup.sh --full"}, "payload": None,
    "retryPolicy": {"maxAttempts": 5, "initialBackoffSec": 1.0, "maxBackoffSec": 300.0, "multiplier": 2.0, "jitter": 0.2},
    "timeoutSec": 3600.0, "leaseSec": 60.0, "priority": "default", "overlap": "forbid", "misfire": "run_once",
    "jitterSec": 0, "bucketId": 3, "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
}


def test_job_request_round_trips_what_a_job_holds() -> None:
    body = job_request(JOB)
    assert body == {
        "name": "backup", "schedule": "0 3 * * *", "command": "backup.sh --full",
        "retryPolicy": JOB["retryPolicy"], "timeoutSec": 3600.0, "leaseSec": 60.0,
        "priority": "default", "overlap": "forbid", "misfire": "run_once", "jitterSec": 0,
    }
    paris = job_request({**JOB, "timezone": "Europe/Paris", "target": {"http": {"url": "https://x.test/"}}})
    assert paris["timezone"] == "Europe/Paris" and paris["http"] == {"url": "https://x.test/"}
    once = job_request({**JOB, "schedule": None, "runAt": "2030-01-01T00:00:00.000Z"})
    assert once["runAt"] == "2030-01-01T00:00:00.000Z" and "schedule" not in once



def test_job_request_keeps_rules_and_windows_but_not_webhook_secrets() -> None:
    email = {"on": "failure", "via": "email", "to": ["ops@example.com"], "maxPerHour": 30, "maxAttempts": 8, "ruleId": "r_1"}
    hook = {"on": "dead", "via": "webhook", "url": "https://h.test/", "secret": "********", "ruleId": "r_2"}
    watched = {**JOB, "schedule": None, "target": {"ping": {}}, "expectSuccessWithin": "26h", "notify": [email, hook]}
    body = job_request(watched)
    assert body["expectSuccessWithin"] == "26h" and "ping" not in body and "command" not in body
    assert body["notify"] == [{k: v for k, v in email.items() if k != "ruleId"}]
    assert unexported_rules(watched) == 1


@pytest.mark.parametrize(
    ("change", "line", "why"),
    [
        ({}, "0 3 * * * backup.sh --full", None),
        ({"schedule": "0  3 * *   *"}, "0 3 * * * backup.sh --full", None),
        ({"schedule": "@daily"}, "@daily backup.sh --full", None),
        ({"target": {"command": "date +%F"}}, "0 3 * * * date +\\%F", None),
        ({"schedule": "@every 5m"}, None, "@every has no crontab form"),
        ({"schedule": "*/10 * * * * *"}, None, "6-field"),
        ({"schedule": None, "runAt": "2030-01-01T00:00:00.000Z"}, None, "one-off"),
        ({"target": {"python": "m:f"}}, None, "only command targets"),
        ({"timezone": "Europe/Paris"}, None, "time zone Europe/Paris"),
        ({"target": {"command": "a\nb"}}, None, "newline"),
    ],
)
def test_crontab_line(change: dict, line: str | None, why: str | None) -> None:
    got, reason = crontab_line({**JOB, **change})
    assert got == line
    assert (reason is None) if why is None else (why in (reason or ""))


def test_exported_lines_import_back_to_the_same_jobs() -> None:
    jobs = [
        JOB,
        {**JOB, "schedule": "*/5 9-17 * * MON-FRI", "target": {"command": "echo 50% done; printf '%s\\n' x"}},
        {**JOB, "schedule": "@weekly", "target": {"command": "tidy"}},
    ]
    text = "\n".join(line for line, _ in map(crontab_line, jobs) if line) + "\n"
    entries, errors = parse_crontab(text)
    assert errors == []
    assert [(e.schedule, e.command) for e in entries] == [
        (" ".join(j["schedule"].split()), j["target"]["command"]) for j in jobs
    ]


def test_json_import() -> None:
    assert looks_like_json('  [{"schedule": "@daily"}]') and not looks_like_json("@daily x")
    bodies = parse_json_requests('[{"schedule": "@daily", "command": "x"}, {"command": "x", "schedule": "@daily"}]')
    keys = [k for _, k in keyed_requests(bodies)]
    assert len(set(keys)) == 2  # identical jobs stay two jobs
    assert keyed_requests(bodies[:1])[0][1] == keys[0]
    for bad in ("[1, 2]", '{"a": 1}', "[{"):
        with pytest.raises(ValueError):
            parse_json_requests(bad)


def test_entry_is_hashable_data() -> None:
    e = Entry(1, "@daily", "x", "@daily x")
    assert {e: 1}[Entry(1, "@daily", "x", "@daily x")] == 1
